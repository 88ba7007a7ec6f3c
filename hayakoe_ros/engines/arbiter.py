# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Fair turns on one engine: a first-come first-served ticket lock (no ROS imports).

:class:`FairArbiter` grants one turn at a time, in the order they were asked for, except
that a turn that brings an utterance its first audio goes ahead of the others (bounded,
see :data:`MAX_OVERTAKES`); a waiter's :class:`~.errors.CancelToken` ends its wait at
once. :mod:`.shared` takes a turn for every engine call that computes.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from typing import Iterator, Optional

from .errors import CancelToken, EngineError, SynthesisCanceledError

#: Longest single wait on the arbiter's condition (s): waits loop on it, so a missed
#: notification costs at most this long, never a hang.
_WAIT_SLICE_S = 0.1

#: How many first-audio turns may go ahead of one waiting turn. A first-audio turn (an
#: utterance's first decoder window) is short, about 0.1-0.2 s on a CPU; a robot in the
#: middle of an utterance has audio queued ahead of its listener (a first window's worth
#: at least), so a few such turns ahead of it cost it no underrun, while a robot whose
#: reply has not started yet is the one a listener is waiting on. Beyond this bound the
#: order is first come first served again, so a burst of new utterances cannot starve a
#: robot that is speaking. A later segment decoded in windows (because it would be late
#: whole) takes ordinary turns: its robot's start plan counts what it measured, turn
#: waits included, and not what a burst of other robots' first windows may add.
MAX_OVERTAKES = 4


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


class _Ticket:
    """One waiting turn: whether it brings first audio, and how often it was overtaken."""

    __slots__ = ('first', 'overtaken')

    def __init__(self, first: bool) -> None:
        self.first = first
        self.overtaken = 0


class FairArbiter:
    """A first-come first-served ticket lock for one engine: one call at a time.

    Each :meth:`turn` takes a ticket at the back of a queue and runs when its ticket is
    next and nobody holds the engine. The next ticket is the front one, unless a
    ``first`` ticket (a turn that brings an utterance its first audio) waits behind it
    and every ticket ahead of that one has been overtaken fewer than
    :data:`MAX_OVERTAKES` times: then the earliest such ``first`` ticket goes. So with
    four robots starting at once, the fourth robot's first audio waits for the other
    three first windows, never also for their second windows. A waiter whose cancel token
    is canceled leaves the queue at once. An exception in a call (or while waiting)
    always gives the turn back.
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

    def _next(self) -> Optional[_Ticket]:
        """The ticket whose turn it is (the lock held): see the class docstring."""
        if not self._queue:
            return None
        for ticket in self._queue:
            if ticket.first:
                return ticket  # every ticket before it may still be overtaken
            if ticket.overtaken >= MAX_OVERTAKES:
                break
        return self._queue[0]

    @contextlib.contextmanager
    def turn(self, token: Optional[CancelToken] = None, owner: str = '',
             first: bool = False) -> Iterator[None]:
        """Hold the engine for one call; wait for the turns asked for before this one.

        Args:
            token: Ends the wait when canceled (None: wait until the turn comes).
            owner: Who asks (for error messages only).
            first: The call brings an utterance its first audio: it may go ahead of
                waiting turns that are not (see the class docstring).

        Raises:
            SynthesisCanceledError: ``token`` was canceled before the turn came.
            EngineError: the arbiter was closed (the shared engine is freed).
        """
        ticket = _Ticket(first)
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
                    if self._holder is None and self._next() is ticket:
                        break
                    self._cond.wait(_WAIT_SLICE_S)
                for ahead in self._queue:
                    if ahead is ticket:
                        break
                    ahead.overtaken += 1
                self._queue.remove(ticket)
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
