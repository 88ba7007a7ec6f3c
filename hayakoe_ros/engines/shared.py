# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""One loaded engine shared by several speakers (robots), served fairly (no ROS).

A fleet process loads its model once and gives each robot a view of it
(:meth:`SharedEngine.view`): an :class:`~.base.Engine` that the robot's own speech
scheduler uses as if it were alone. Every call that computes (``synthesize``,
``synthesize_timed``, each advance of ``synthesize_windows``, ``predict_pause``) takes
a turn of one :class:`FairArbiter`: turns are granted one at a time, in the order they
were asked for. A scheduler has one synthesis thread, so it asks for at most one turn at
a time, and first-come first-served over calls is round robin over robots: a robot's
one-word reply waits behind at most one call of each other robot that is already
waiting (one segment, one decoder window or one pause prediction), never behind a whole
announcement.

Lookups that compute nothing (``is_cached``, ``check_voice``, the properties) take no
turn: the phrase cache has its own lock, and a turn would make every start-delay plan
wait for a segment of another robot.

Cancel stays per robot: a view remembers the :class:`~.base.CancelToken` of the
``cancellable`` block its thread is in, waits for its turn on that token (a cancel ends
the wait at once with :class:`~.base.SynthesisCanceledError`), and enters the engine's
own ``cancellable`` only while its turn is held, so a cancel aborts that robot's call in
flight (ONNX Runtime's ``terminate`` flag) and nobody else's.

Batching seam: on a GPU one engine call could synthesise the segments of several robots
at once. The place for that is :meth:`FairArbiter.turn` (and the view's ``_call``): a
batching arbiter would, when a turn is granted, take every synthesis request waiting in
its queue that fits one batch, run them as one call and hand each view its own result.
The queue already holds every waiting request in order; nothing else changes. It is not
built: the CPU engine gains nothing from batching.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from typing import Iterator, Optional

import numpy as np

from .base import (AudioWindow, CancelToken, Engine, EngineError, SynthesisCanceledError,
                   VoiceParams, WrappedEngine)

__all__ = ['ArbiterStats', 'FairArbiter', 'SharedEngine', 'SharedEngineView']

#: Longest single wait on the arbiter's condition (s): waits loop on it, so a missed
#: notification costs at most this long, never a hang.
_WAIT_SLICE_S = 0.1

#: Slice of the wait of a deferred close for the call in flight (s).
_CLOSE_SLICE_S = 1.0


class ArbiterStats:
    """What a :class:`FairArbiter` has granted: calls, their wait and hold times.

    Attributes:
        calls: Turns granted.
        canceled: Waits ended by a cancel before their turn came.
        wait_s: Seconds spent waiting for turns, all callers together.
        max_wait_s: Longest single wait (s).
        hold_s: Seconds turns were held (engine busy), all callers together.
    """

    def __init__(self) -> None:
        self.calls = 0
        self.canceled = 0
        self.wait_s = 0.0
        self.max_wait_s = 0.0
        self.hold_s = 0.0


class FairArbiter:
    """A first-come first-served ticket lock for one engine: one call at a time.

    Each :meth:`turn` takes a ticket at the back of a queue and runs when its ticket is at
    the front and nobody holds the engine. A waiter whose cancel token is canceled leaves
    the queue at once. An exception in a call (or while waiting) always gives the turn
    back.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: collections.deque = collections.deque()
        self._holder: Optional[object] = None
        self._closed = False
        self.stats = ArbiterStats()

    @property
    def waiting(self) -> int:
        """Callers waiting for a turn now (the holder not counted)."""
        with self._cond:
            return len(self._queue)

    @property
    def busy(self) -> bool:
        """True while a turn is held."""
        with self._cond:
            return self._holder is not None

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    @contextlib.contextmanager
    def turn(self, token: Optional[CancelToken] = None, owner: str = '') -> Iterator[None]:
        """Hold the engine for one call; wait for the turns asked for before this one.

        Args:
            token: Ends the wait when canceled (None: wait until the turn comes).
            owner: Who asks (for error messages only).

        Raises:
            SynthesisCanceledError: ``token`` was canceled before the turn came.
            EngineError: the arbiter was closed (the shared engine is freed).
        """
        ticket = object()
        t0 = time.monotonic()
        hook = token.hook(self._wake) if token is not None else contextlib.nullcontext()
        with self._cond:
            if self._closed:
                raise EngineError(f'the shared engine is closed ({owner or "caller"})')
            self._queue.append(ticket)
        try:
            with hook, self._cond:
                while True:
                    if self._closed:
                        raise EngineError(f'the shared engine is closed '
                                          f'({owner or "caller"})')
                    if token is not None and token.canceled:
                        self.stats.canceled += 1
                        raise SynthesisCanceledError('synthesis canceled while waiting '
                                                     'for the shared engine')
                    if self._holder is None and self._queue[0] is ticket:
                        break
                    self._cond.wait(_WAIT_SLICE_S)
                self._queue.popleft()
                self._holder = ticket
                waited = time.monotonic() - t0
                self.stats.calls += 1
                self.stats.wait_s += waited
                self.stats.max_wait_s = max(self.stats.max_wait_s, waited)
        except BaseException:
            with self._cond:
                if ticket in self._queue:
                    self._queue.remove(ticket)
                self._cond.notify_all()  # the next ticket may be at the front now
            raise
        t1 = time.monotonic()
        try:
            yield
        finally:
            with self._cond:
                self._holder = None
                self.stats.hold_s += time.monotonic() - t1
                self._cond.notify_all()

    def close(self) -> None:
        """Refuse every later turn; waiters end with :class:`EngineError`."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def wait_free(self, timeout: float) -> bool:
        """Wait until no turn is held (at most ``timeout`` s); True if none is."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._holder is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, _WAIT_SLICE_S))
            return True


class SharedEngine:
    """One loaded engine for several users, each through a :class:`SharedEngineView`.

    Args:
        engine: A loaded, warm engine (its wrappers included: resampler, phrase cache).
            The shared engine owns it: :meth:`close` frees it.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.arbiter = FairArbiter()
        self._lock = threading.Lock()
        self._views: dict = {}
        self._closed = False

    @property
    def engine(self) -> Engine:
        """The engine all views share."""
        return self._engine

    @property
    def owners(self) -> list:
        """Owners of the views open now, in the order they were opened."""
        with self._lock:
            return list(self._views)

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


class SharedEngineView(WrappedEngine):
    """One user's engine: the shared engine's voice, its calls taken in fair turns.

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
        self._local = threading.local()  # the token of the cancellable block, per thread
        self._closed = False

    def _token(self) -> Optional[CancelToken]:
        return getattr(self._local, 'token', None)

    @contextlib.contextmanager
    def cancellable(self, token: CancelToken) -> Iterator[None]:
        """Make the calls inside the block wait for their turn and run on ``token``.

        A cancel ends a wait for a turn at once, and aborts the call in flight the way
        the engine can (its own ``cancellable``, entered only while the turn is held).

        Raises:
            SynthesisCanceledError: ``token`` was canceled before or during the block.
        """
        token.check()
        saved = self._token()
        self._local.token = token
        try:
            yield
        finally:
            self._local.token = saved
        token.check()

    @contextlib.contextmanager
    def _turn(self) -> Iterator[None]:
        """Hold the engine for one call, inside the engine's ``cancellable`` if asked."""
        if self._closed:
            raise EngineError(f'the engine view of {self.owner!r} is closed')
        token = self._token()
        with self._shared.arbiter.turn(token, self.owner):
            if token is None:
                yield
            else:
                with self._engine.cancellable(token):
                    yield

    def synthesize(self, text: str, voice: VoiceParams) -> np.ndarray:
        """The shared engine's synthesis, in one turn (see :meth:`Engine.synthesize`)."""
        with self._turn():
            return self._engine.synthesize(text, voice)

    def synthesize_timed(self, text: str, voice: VoiceParams) -> AudioWindow:
        """The shared engine's timed synthesis, in one turn."""
        with self._turn():
            return self._engine.synthesize_timed(text, voice)

    def synthesize_windows(self, text: str, voice: VoiceParams) -> Iterator[AudioWindow]:
        """The shared engine's windows, one turn per window (other robots run between)."""
        inner: Optional[Iterator[AudioWindow]] = None
        try:
            while True:
                with self._turn():
                    if inner is None:
                        inner = iter(self._engine.synthesize_windows(text, voice))
                    window = next(inner, None)
                if window is None:
                    return
                yield window
        finally:
            close = getattr(inner, 'close', None)
            if close is not None:
                close()

    def predict_pause(self, left: str, right: str, voice: VoiceParams) -> float:
        """The shared engine's pause prediction (s), in one turn."""
        with self._turn():
            return self._engine.predict_pause(left, right, voice)

    def warmup(self) -> None:
        """Nothing: the shared engine was warmed up when it was loaded."""

    def close(self) -> None:
        """Close this view (later calls fail); the shared engine stays loaded."""
        self._closed = True
        self._shared._release(self)
