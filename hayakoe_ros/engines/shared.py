# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""One loaded engine shared by several speakers (robots), served fairly (no ROS).

A fleet process loads its model once and gives each robot a view of it
(:meth:`SharedEngine.view`): an :class:`~.base.Engine` that the robot's own speech
scheduler uses as if it were alone. Every call that computes (``synthesize``,
``synthesize_timed``, each advance of ``synthesize_windows``, ``predict_pause``) takes
a turn of one :class:`~.arbiter.FairArbiter`: turns are granted one at a time, in the
order they were asked for, except that the turn of an utterance's first decoder window
goes ahead of later windows and segments (a bounded number of times). A scheduler has one
synthesis thread, so it asks for at most one turn at a time, and first-come first-served
over calls is round robin over robots: a robot's one-word reply waits behind at most one
call of each other robot that is already waiting (one segment, one decoder window or one
pause prediction), never behind a whole announcement; and robots starting at once each
get their first window before any of them gets its second.

Lookups that compute nothing (``is_cached``, ``check_voice``, the properties) take no
turn, and neither does a phrase-cache hit: the cache sits above the turns
(:meth:`SharedEngine.serve`, one cache for every robot, with its own lock), so a phrase
a robot has cached starts at once however busy the engine is; a miss takes its turns
below it.

Cancel stays per robot: a view's ``cancellable`` block records the robot's
:class:`~.base.CancelToken` for its thread; the calls inside wait for their turns on that
token (a cancel ends the wait at once with :class:`~.base.SynthesisCanceledError`) and
enter the engine's own ``cancellable`` only while the turn is held, so a cancel aborts
that robot's call in flight (ONNX Runtime's ``terminate`` flag) and nobody else's.

Batching seam: on a GPU one engine call could synthesise the segments of several robots
at once. The place for that is :meth:`~.arbiter.FairArbiter.turn` and
:class:`GatedEngine`: a batching arbiter would, when a turn is granted, take every
synthesis request waiting in its queue that fits one batch, run them as one call and hand
each view its own result. The queue already holds every waiting request in order; nothing
else changes. It is not built: the CPU engine gains nothing from batching.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator, Optional

import numpy as np

# The arbiter lives in its own module; it is still found here.
from .arbiter import ArbiterStats, FairArbiter
from .base import AudioWindow, CancelToken, Engine, EngineError, VoiceParams, WrappedEngine

__all__ = ['ArbiterStats', 'FairArbiter', 'GatedEngine', 'SharedEngine', 'SharedEngineView']

#: Slice of the wait of a deferred close for the call in flight (s).
_CLOSE_SLICE_S = 1.0


class SharedEngine:
    """One loaded engine for several users, each through a :class:`SharedEngineView`.

    The engine's calls go through :attr:`gated` (each a turn of :attr:`arbiter`); what
    the views call is :attr:`engine`: :attr:`gated`, or what :meth:`serve` put on top of
    it, e.g. a phrase cache, whose hits then take no turn.

    Args:
        engine: A loaded, warm engine (its resampler included). The shared engine owns
            it: :meth:`close` frees it.
    """

    def __init__(self, engine: Engine) -> None:
        self.arbiter = FairArbiter()
        self._local = threading.local()  # per thread: the token and owner of its calls
        self.gated = GatedEngine(self, engine)
        self._engine: Engine = self.gated
        self._lock = threading.Lock()
        self._views: dict = {}
        self._closed = False

    @property
    def engine(self) -> Engine:
        """The engine all views share (:attr:`gated`, or what :meth:`serve` gave)."""
        return self._engine

    def serve(self, engine: Engine) -> None:
        """Let the views call ``engine``, a wrapper of :attr:`gated` (before any view).

        A wrapper that answers some calls by itself (a phrase cache's hits) must be
        thread-safe: views call it from their threads at once.
        """
        self._engine = engine

    @property
    def owners(self) -> list:
        """Owners of the views open now, in the order they were opened."""
        with self._lock:
            return list(self._views)

    def caller(self) -> tuple:
        """``(token, owner)`` of this thread's ``cancellable`` block (None, '' outside)."""
        return getattr(self._local, 'token', None), getattr(self._local, 'owner', '')

    @contextlib.contextmanager
    def calling(self, token: CancelToken, owner: str) -> Iterator[None]:
        """Make this thread's calls inside the block wait for their turns on ``token``."""
        saved = self.caller()
        self._local.token, self._local.owner = token, owner
        try:
            yield
        finally:
            self._local.token, self._local.owner = saved

    def view(self, owner: str) -> 'SharedEngineView':
        """Open a view for ``owner`` (a robot); closing the view leaves the engine loaded.

        Raises:
            EngineError: the shared engine is closed.
        """
        with self._lock:
            if self._closed:
                raise EngineError('the shared engine is closed')
            view = SharedEngineView(self, owner)
            self._views[owner] = view
            return view

    def _release(self, view: 'SharedEngineView') -> None:
        with self._lock:
            if self._views.get(view.owner) is view:
                del self._views[view.owner]

    def close(self) -> None:
        """Free the engine once no call holds it; later calls of any view fail.

        Never waits for a call in flight (Open JTalk's cannot be aborted): the call that
        holds the engine when this is called frees it as its turn ends.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.arbiter.close()
        # A turn asked for after the arbiter closed fails, so this one is either granted
        # at once (nobody holds the engine) or never: close now, or when the holder ends.
        if self.arbiter.wait_free(0.0):
            self._engine.close()
        else:
            threading.Thread(target=self._close_when_free, name='shared-engine-close',
                             daemon=True).start()

    def _close_when_free(self) -> None:
        # Bounded slices: the call in flight ends when the engine returns, however long.
        while not self.arbiter.wait_free(_CLOSE_SLICE_S):
            pass
        self._engine.close()


class GatedEngine(WrappedEngine):
    """The shared engine's own calls, each in a turn of its arbiter.

    The turn is asked for with the token of the calling thread's ``cancellable`` block
    (:meth:`SharedEngine.calling`); the engine's own ``cancellable`` is entered only while
    the turn is held, so a cancel aborts this caller's call in flight and nobody else's.

    Args:
        shared: The shared engine.
        engine: The loaded engine.
    """

    def __init__(self, shared: SharedEngine, engine: Engine) -> None:
        super().__init__(engine)
        self._shared = shared

    @contextlib.contextmanager
    def _turn(self, first: bool = False) -> Iterator[None]:
        token, owner = self._shared.caller()
        with self._shared.arbiter.turn(token, owner, first=first):
            if token is None:
                yield
            else:
                with self._engine.cancellable(token):
                    yield

    @contextlib.contextmanager
    def cancellable(self, token: CancelToken) -> Iterator[None]:
        """Check ``token`` at the block's ends; calls inside take it from the caller.

        Raises:
            SynthesisCanceledError: ``token`` was canceled before or during the block.
        """
        token.check()
        yield
        token.check()

    def synthesize(self, text: str, voice: VoiceParams) -> np.ndarray:
        """The engine's synthesis, in one turn (see :meth:`Engine.synthesize`)."""
        with self._turn():
            return self._engine.synthesize(text, voice)

    def synthesize_timed(self, text: str, voice: VoiceParams) -> AudioWindow:
        """The engine's timed synthesis, in one turn."""
        with self._turn():
            return self._engine.synthesize_timed(text, voice)

    def synthesize_windows(self, text: str, voice: VoiceParams,
                           first_audio: bool = True) -> Iterator[AudioWindow]:
        """The engine's windows, one turn per window (other callers run between).

        With ``first_audio`` the first window's turn is a first-audio turn (it may go
        ahead of other robots' later windows and segments, :class:`~.arbiter.FairArbiter`);
        a later segment's windows (``first_audio`` False) wait their turn as segments do.
        """
        inner: Optional[Iterator[AudioWindow]] = None
        try:
            while True:
                with self._turn(first=first_audio and inner is None):
                    if inner is None:
                        inner = iter(self._engine.synthesize_windows(text, voice,
                                                                     first_audio))
                    window = next(inner, None)
                if window is None:
                    return
                yield window
        finally:
            close = getattr(inner, 'close', None)
            if close is not None:
                close()

    def predict_pause(self, left: str, right: str, voice: VoiceParams) -> float:
        """The engine's pause prediction (s), in one turn."""
        with self._turn():
            return self._engine.predict_pause(left, right, voice)

    def warmup(self) -> None:
        """Warm the engine up, in one turn."""
        with self._turn():
            self._engine.warmup()


class SharedEngineView(WrappedEngine):
    """One user's engine: the shared engine, its computing calls taken in fair turns.

    Made by :meth:`SharedEngine.view`. Used like any engine by one speech scheduler
    (calls from one synthesis thread; ``check_voice`` and ``is_cached`` from any).
    :meth:`warmup` does nothing (the shared engine was warmed once) and :meth:`close`
    closes the view only.

    Args:
        shared: The shared engine.
        owner: Who uses the view (a robot's name), for logs and errors.
    """

    def __init__(self, shared: SharedEngine, owner: str) -> None:
        super().__init__(shared.engine)
        self._shared = shared
        self.owner = owner
        self._closed = False

    @contextlib.contextmanager
    def cancellable(self, token: CancelToken) -> Iterator[None]:
        """Make the calls inside the block wait for their turns on ``token``.

        A cancel ends a wait for a turn at once, and aborts the call in flight the way
        the engine can (its own ``cancellable``, entered only while the turn is held).

        Raises:
            SynthesisCanceledError: ``token`` was canceled before or during the block.
            EngineError: the view is closed.
        """
        if self._closed:
            raise EngineError(f'the engine view of {self.owner!r} is closed')
        token.check()
        with self._shared.calling(token, self.owner):
            yield
        token.check()

    def _check_open(self) -> None:
        if self._closed:
            raise EngineError(f'the engine view of {self.owner!r} is closed')

    def synthesize(self, text: str, voice: VoiceParams) -> np.ndarray:
        """The shared engine's synthesis (see :meth:`Engine.synthesize`)."""
        self._check_open()
        return self._engine.synthesize(text, voice)

    def synthesize_timed(self, text: str, voice: VoiceParams) -> AudioWindow:
        """The shared engine's timed synthesis."""
        self._check_open()
        return self._engine.synthesize_timed(text, voice)

    def synthesize_windows(self, text: str, voice: VoiceParams,
                           first_audio: bool = True) -> Iterator[AudioWindow]:
        """The shared engine's windows."""
        self._check_open()
        return self._engine.synthesize_windows(text, voice, first_audio)

    def predict_pause(self, left: str, right: str, voice: VoiceParams) -> float:
        """The shared engine's pause prediction (s)."""
        self._check_open()
        return self._engine.predict_pause(left, right, voice)

    def warmup(self) -> None:
        """Nothing: the shared engine was warmed up when it was loaded."""

    def close(self) -> None:
        """Close this view (later calls fail); the shared engine stays loaded."""
        self._closed = True
        self._shared._release(self)
