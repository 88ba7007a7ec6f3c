# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Process-wide hooks on ONNX Runtime: session options, model files, run termination.

hayakoe builds its ONNX Runtime sessions itself and offers no way to pass options or run
options; these hooks set them from outside, on onnxruntime's own classes and on session
objects, and know nothing of hayakoe (:mod:`.hayakoe_internals` says which sessions are
hayakoe's, and checks that hayakoe still builds and runs them the way these hooks expect).
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, Callable, Iterator, Optional, Sequence

__all__ = ['SPINNING_KEY', 'SPINNING_STOP_KEY', 'onnx_session_hooks', 'session_config_entry',
           'share_cpu_arena', 'terminable_runs']

_PATCH_LOCK = threading.Lock()


#: ONNX Runtime session config key (onnxruntime_session_options_config_keys.h,
#: ``kOrtSessionOptionsConfigAllowIntraOpSpinning``): "1" (the default) lets idle intra-op
#: threads busy-wait for the next operator, "0" puts them to sleep at once.
SPINNING_KEY = 'session.intra_op.allow_spinning'

#: ONNX Runtime session config key (``kOrtSessionOptionsConfigForceSpinningStop``): "1"
#: stops a session's spinning threads as soon as its last concurrent ``Run()`` returns
#: (they spin again at the next run). Set with every spinning session here: the
#: synthesizer runs as many sessions one after the other (its first stage, 16 decoder
#: pieces), and a pool still spinning after its run took a core from the next session's
#: run (the decode 1.9 times slower; BENCHMARKS.md, "Where the windows' extra time
#: goes").
SPINNING_STOP_KEY = 'session.force_spinning_stop'


@contextlib.contextmanager
def onnx_session_hooks(num_threads: int = 0,
                       after_session: Optional[Callable[[], object]] = None,
                       model_source: Optional[Callable[[str, Any], str]] = None,
                       allow_spinning: Optional[bool] = None) -> Iterator[None]:
    """Control every ONNX Runtime session hayakoe creates inside the block.

    hayakoe builds its sessions with ``ort.SessionOptions()`` and
    ``ort.InferenceSession(...)`` and offers no way to pass options, so for the duration of
    the block ``onnxruntime.SessionOptions`` is replaced by a subclass that sets
    ``intra_op_num_threads`` (when ``num_threads`` > 0; 0 keeps the runtime default, one
    thread per physical core) and, when ``allow_spinning`` is not None, the session config
    entry :data:`SPINNING_KEY` (whether idle intra-op threads busy-wait for the next
    operator's work; when they do, :data:`SPINNING_STOP_KEY` too, so that they stop when
    the run returns), and ``onnxruntime.InferenceSession`` by a subclass that calls
    ``after_session()`` once each session is built (the engine returns the session's
    load-time garbage to the system there, so the next session's load does not stack on
    it). ``model_source(path, options)``, when given, is asked which file to load for each
    model hayakoe names by path (it may change ``options``: :mod:`.ort_cache` returns an
    offline-optimised copy and turns the optimiser off). Both attributes are restored when
    the block ends, also on an exception; blocks in different threads run one at a time.
    """
    if num_threads <= 0 and after_session is None and model_source is None \
            and allow_spinning is None:
        yield
        return
    import onnxruntime as ort

    with _PATCH_LOCK:
        options_cls, session_cls = ort.SessionOptions, ort.InferenceSession
        saved = {'SessionOptions': options_cls, 'InferenceSession': session_cls}
        if num_threads > 0 or allow_spinning is not None:
            class _ThreadedSessionOptions(options_cls):  # type: ignore[misc, valid-type]
                def __init__(self, *args, **kwargs):
                    super().__init__(*args, **kwargs)
                    if num_threads > 0:
                        self.intra_op_num_threads = num_threads
                    if allow_spinning is not None:
                        self.add_session_config_entry(SPINNING_KEY,
                                                      '1' if allow_spinning else '0')
                    if allow_spinning:
                        self.add_session_config_entry(SPINNING_STOP_KEY, '1')

            ort.SessionOptions = _ThreadedSessionOptions
        if after_session is not None or model_source is not None:
            class _HookedSession(session_cls):  # type: ignore[misc, valid-type]
                def __init__(self, model, sess_options=None, *args, **kwargs):
                    if model_source is not None and sess_options is not None and \
                            isinstance(model, (str, os.PathLike)):
                        model = model_source(os.fspath(model), sess_options)
                    super().__init__(model, sess_options, *args, **kwargs)
                    if after_session is not None:
                        after_session()

            ort.InferenceSession = _HookedSession
        try:
            yield
        finally:
            for name, value in saved.items():
                setattr(ort, name, value)


#: Session config key (``kOrtSessionOptionsConfigUseEnvAllocators``): "1" makes a session
#: allocate from the allocators registered with the process-wide environment.
ENV_ALLOCATORS_KEY = 'session.use_env_allocators'
_SHARED_ARENA: list = []
_ARENA_LOCK = threading.Lock()  # not _PATCH_LOCK: called inside onnx_session_hooks


def share_cpu_arena(options) -> None:
    """Make sessions built with ``options`` share one process-wide CPU arena.

    Each ONNX Runtime session otherwise keeps an arena of its own that grows to that
    session's largest working set and keeps it; sessions that always run one after the
    other (the pieces of one graph) then hold the sum of their peaks where the one graph
    held the largest (measured on the full-size decoder cut in 6 pieces: +230 MB after one
    short sentence, +480 MB after a 30-character one). The shared arena (registered once,
    ONNX Runtime's default arena settings) is reused from piece to piece.
    """
    import onnxruntime as ort

    with _ARENA_LOCK:
        if not _SHARED_ARENA:
            info = ort.OrtMemoryInfo('Cpu', ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0,
                                     ort.OrtMemType.DEFAULT)
            ort.create_and_register_allocator(info, ort.OrtArenaCfg(0, -1, -1, -1))
            _SHARED_ARENA.append(info)
    options.add_session_config_entry(ENV_ALLOCATORS_KEY, '1')


def session_config_entry(session, key: str) -> str:
    """The session config entry ``key`` a session was built with ('' when never set)."""
    try:
        return str(session.get_session_options().get_session_config_entry(key))
    except Exception:  # onnxruntime raises a plain exception for a key never set
        return ''


@contextlib.contextmanager
def terminable_runs(sessions: Sequence) -> Iterator[Callable[[], None]]:
    """Pass one ``RunOptions`` to every ``run`` of ``sessions`` inside the block.

    hayakoe calls ``session.run(None, feed)`` with no run options, so each session's
    ``run`` is shadowed by an instance attribute for the block that adds them; afterwards
    the session's ``run`` is what it was before (a wrapper someone else put on the
    instance, e.g. the benchmark's timers, stays). Yields ``terminate()``: callable from
    any thread, it sets ``RunOptions.terminate`` so that the run in flight, and every
    later run in the block, fails at once (ONNX Runtime raises, naming the terminate
    flag). Only the calling thread may run these sessions meanwhile (the engine's
    single-thread rule).
    """
    import onnxruntime as ort

    options = ort.RunOptions()
    patched = []
    try:
        for session in {id(s): s for s in sessions}.values():
            original = session.run
            shadowed = vars(session).get('run')  # None: the class's method

            def run(output_names, input_feed, run_options=None, _run=original):
                return _run(output_names, input_feed, run_options or options)

            session.run = run
            patched.append((session, shadowed))

        def terminate() -> None:
            options.terminate = True

        yield terminate
    finally:
        for session, shadowed in patched:
            if shadowed is None:
                del session.run
            else:
                session.run = shadowed
