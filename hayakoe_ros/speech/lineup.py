# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The scheduler's line of utterances: admission by queue policy, order, and closing.

One :class:`Lineup` owns, under its own condition variable, the three things that the
caller's thread (``submit``, ``cancel``, ``stop``), the synthesis thread (``take``) and the
publisher thread (``finished``) all touch: the utterances waiting to be synthesised, those
in flight (taken by the synthesis thread, not yet finished) and whether the line is closed.
Every transition is a method here, so no other module reads or writes that state.

An utterance moves ``waiting -> in flight -> gone`` (``take``, then ``finished``), or is
removed while waiting (``remove``, a cancel), or goes back from in flight to the head of
the line (an interrupt that restarts utterances synthesised ahead), or is displaced by a
``replace`` (returned by ``admit`` for the caller to cancel). ``close`` empties it
for good: what it returns is every utterance that still needs an outcome.
"""

from __future__ import annotations

import collections
import threading
from typing import Callable, List, Optional, Set, Tuple

from .utterance import (Attempt, QueueFullError, QueuePolicy, SchedulerClosedError,
                        Utterance)

#: How often an idle synthesis thread looks at the line again (s, real time): the bound
#: on its wait, so a close is seen even if a notification is missed.
IDLE_POLL_S = 0.2


class Lineup:
    """Utterances waiting and in flight, in speaking order (thread-safe)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._waiting: collections.deque = collections.deque()
        self._in_flight: List[Utterance] = []  # taken for synthesis, not yet finished
        self._closed: Optional[str] = None  # why nothing more is admitted
        # Interrupting utterances not yet taken: a new one goes behind them.
        self._urgent: Set[Utterance] = set()
        # Urgent utterances until they finish: a later urgent one waits for them.
        self._first: Set[Utterance] = set()
        # Utterances that interrupted a busy line (queue_policy interrupt), until they
        # finish: one taken but not yet heard is part of the same burst as a later
        # interrupting one, which goes behind it instead of cutting it unheard.
        self._burst: Set[Utterance] = set()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called (no lock: a bool read is atomic)."""
        return self._closed is not None

    def pending(self) -> int:
        """Utterances behind the first unfinished one (waiting or synthesised ahead)."""
        with self._cv:
            return self._pending_locked()

    def busy(self) -> bool:
        """True while any utterance waits or is in flight unfinished."""
        with self._cv:
            return bool(self._waiting) or any(not u.done for u in self._in_flight)

    def _pending_locked(self) -> int:
        active = sum(1 for u in self._in_flight if not u.done)
        return max(0, len(self._waiting) + active - 1)

    def admit(self, utt: Utterance, policy: QueuePolicy, max_queue: int,
              refuse: Callable[[], Optional[Exception]]) -> List[Utterance]:
        """Put ``utt`` in line by ``policy``; return the utterances it displaces.

        ``enqueue``: at the end, refused when ``max_queue`` already wait behind the one
        speaking. ``interrupt``: at the head, in place of the speaking one (returned, for
        the caller to cancel outside this lock), but behind the interrupting utterances
        that have not started yet, so that a burst of them is spoken in arrival order
        (one of the burst already taken but not yet heard is not cut: it goes first);
        utterances synthesised ahead go back in line behind the interrupting ones,
        restarted as new attempts (the synthesis thread may still be writing the old
        ones). ``replace``: the only one in line; the speaking one and every one waiting
        or synthesised ahead are returned (halted already), whatever ``max_queue``.

        Args:
            utt: The new utterance.
            policy: The scheduler's :class:`QueuePolicy` now.
            max_queue: Utterances that may wait behind the one speaking.
            refuse: Called under the lock; an exception it returns is raised (a failed
                scheduler), so admission and failure cannot race.

        Returns:
            The utterances to cancel, in speaking order (empty for ``enqueue``).

        Raises:
            SchedulerClosedError: after :meth:`close`.
            QueueFullError: the line is full; nothing was dropped.
        """
        with self._cv:
            self._check_open_locked(refuse)
            if policy is QueuePolicy.REPLACE:
                victims = self._replace_locked(utt)
            else:
                victims = self._queue_locked(utt, policy is QueuePolicy.INTERRUPT,
                                             max_queue)
            self._cv.notify_all()
            return victims

    def _check_open_locked(self, refuse: Callable[[], Optional[Exception]]) -> None:
        """Raise what ``refuse`` returns, or :class:`SchedulerClosedError` once closed."""
        error = refuse()
        if error is not None:
            raise error
        if self._closed is not None:
            raise SchedulerClosedError(f'the speech scheduler is {self._closed}')

    def _queue_locked(self, utt: Utterance, interrupt: bool,
                      max_queue: int) -> List[Utterance]:
        pending = self._pending_locked()
        busy = bool(self._waiting) or any(not u.done for u in self._in_flight)
        # An interrupting utterance takes the place of the one it cancels; one that cuts
        # nobody (the one speaking is the start of its burst, not heard yet) waits in line.
        cuts = interrupt and self._speaking_locked() is not None
        full = pending > max_queue if cuts else (busy and pending >= max_queue)
        if full:
            raise QueueFullError(
                f'queue full: {pending} utterances waiting '
                f'(max_queue={max_queue}); nothing was dropped, try again later')
        if not interrupt:
            self._waiting.append(utt)
            return []
        victim, ahead = self._interrupt_locked()
        self._put_ahead_locked([utt] + ahead)
        self._urgent.add(utt)
        if busy:
            self._burst.add(utt)
        return [victim] if victim is not None else []

    def _put_ahead_locked(self, utterances: list) -> None:
        # Behind the interrupting utterances not yet started, then those synthesised
        # ahead (older than any waiting one), then the rest of the line.
        head = 0
        while head < len(self._waiting) and self._waiting[head] in self._urgent:
            head += 1
        for k, queued in enumerate(utterances):
            self._waiting.insert(head + k, queued)

    def admit_urgent(self, utt: Utterance, max_queue: int,
                     refuse: Callable[[], Optional[Exception]],
                     resume_at: Callable[[Utterance], Optional[int]]
                     ) -> Tuple[List[Utterance], Optional[Tuple[Utterance, Attempt]]]:
        """Put an urgent ``utt`` ahead of the line; the one speaking is suspended or cut.

        As ``interrupt`` (behind other interrupting utterances not yet started; those
        synthesised ahead restarted behind it), except that when ``resume_at(current)``
        gives a segment index the one speaking is not canceled: it is restarted from that
        segment (:meth:`~.utterance.Utterance.restart`) and put right behind ``utt``.
        Only urgent utterances count against ``max_queue`` here: the routine line, full
        or not, never keeps an urgent one out (the line may then hold ``max_queue`` of
        each, and the one suspended).

        Args:
            utt: The urgent utterance.
            max_queue: Urgent utterances that may wait behind the urgent one speaking.
            refuse: As :meth:`admit`.
            resume_at: Where the one speaking goes on (called under this lock; it must
                take no lock of the scheduler's), or None: it is canceled.

        Returns:
            ``(victims, suspended)``: the utterances to cancel (halted), and the one
            suspended with its attempt before the restart (for its fade-out), or None.

        Raises:
            SchedulerClosedError: after :meth:`close`.
            QueueFullError: ``max_queue`` urgent ones wait already; nothing was dropped.
        """
        with self._cv:
            self._check_open_locked(refuse)
            # The first unfinished urgent one speaks (or is about to); the rest wait.
            waiting = sum(1 for u in self._first if not u.done) - 1
            if waiting >= max_queue:
                raise QueueFullError(f'queue full: {waiting + 1} urgent texts speaking or '
                                     f'waiting (max_queue={max_queue} may wait behind the '
                                     'one speaking); nothing was dropped')
            active = [u for u in self._in_flight if not u.done and not u.halted]
            # Urgent ones taken (speaking, or synthesised ahead) keep their turn: the new
            # one goes after them, not in place of the first.
            lead = 0
            while lead < len(active) and active[lead] in self._first:
                lead += 1
            current = active[0] if active and not lead else None
            active = active[lead:] if lead else active
            at = resume_at(current) if current is not None else None
            suspended: Optional[Tuple[Utterance, Attempt]] = None
            victims: List[Utterance] = []
            if current is not None and at is not None:
                suspended = (current, current.attempt)
                current.restart(at)
                self._in_flight.remove(current)
            elif current is not None:
                current.halt()
                victims.append(current)
            later = active[1:] if current is not None else active
            for ahead in later:
                ahead.restart()
                self._in_flight.remove(ahead)
            self._put_ahead_locked([utt] + ([current] if suspended else []) + later)
            self._urgent.add(utt)
            self._first.add(utt)
            self._cv.notify_all()
            return victims, suspended

    def _active_locked(self) -> List[Utterance]:
        # A halted utterance (canceled a moment ago, its outcome not yet given) is not
        # the one speaking: taking it as the victim would treat the one really speaking
        # as synthesised ahead and let it play on to its end.
        return [u for u in self._in_flight if not u.done and not u.halted]

    def _speaking_locked(self) -> Optional[Utterance]:
        """The utterance an interrupting one would cut now (None: it would cut nobody)."""
        active = self._active_locked()
        if not active:
            return None
        if active[0] in self._burst and active[0].first_audio_at is None:
            # An interrupting one taken a moment ago, nothing of it published yet: cutting
            # it would lose it unheard, so a burst keeps its arrival order.
            return None
        return active[0]

    def _interrupt_locked(self) -> Tuple[Optional[Utterance], List[Utterance]]:
        active = self._active_locked()
        if not active:
            return None, []
        later = active[1:]
        victim = self._speaking_locked()
        if victim is not None:
            victim.halt()  # the synthesis thread drops it at once
        for utt in later:
            utt.restart()
            self._in_flight.remove(utt)
        return victim, later

    def _replace_locked(self, utt: Utterance) -> List[Utterance]:
        # Halted here, under the lock, so the synthesis thread cannot take one of them
        # between this admission and the caller's cancel.
        # One halted already is being canceled by another thread: its outcome is its own.
        victims = [u for u in list(self._in_flight) + list(self._waiting)
                   if not u.done and not u.halted]
        for victim in victims:
            victim.halt()
        self._waiting.clear()
        self._urgent.clear()
        self._burst.clear()
        self._waiting.append(utt)
        return victims

    def take(self) -> Optional[Tuple[Utterance, Attempt]]:
        """Next utterance to synthesise (moved in flight) and its attempt; None once closed.

        The attempt is read under the lock, so an interrupt cannot restart the utterance
        between the two: the synthesis thread writes that attempt only.
        Blocks while the line is empty, waking at least every :data:`IDLE_POLL_S`.
        """
        with self._cv:
            while not self._waiting and self._closed is None:
                self._cv.wait(IDLE_POLL_S)
            if self._closed is not None:
                return None
            utt = self._waiting.popleft()
            self._urgent.discard(utt)
            self._in_flight.append(utt)
            return utt, utt.attempt

    def remove(self, utt: Utterance) -> None:
        """Take ``utt`` out of the waiting line, if it is there (a cancel)."""
        with self._cv:
            if utt in self._waiting:
                self._waiting.remove(utt)
            self._urgent.discard(utt)
            self._burst.discard(utt)

    def finished(self, utt: Utterance) -> None:
        """Forget ``utt``: it has its outcome."""
        with self._cv:
            if utt in self._in_flight:
                self._in_flight.remove(utt)
            self._first.discard(utt)
            self._burst.discard(utt)

    def drain(self) -> List[Utterance]:
        """Empty the waiting line; return it and the utterances in flight (a stop)."""
        with self._cv:
            victims = list(self._waiting) + list(self._in_flight)
            self._waiting.clear()
            self._urgent.clear()
            self._first.clear()
            self._burst.clear()
            return victims

    def close(self, why: str) -> List[Utterance]:
        """Admit nothing more (``why``: 'shut down', 'failed'); return :meth:`drain`."""
        with self._cv:
            if self._closed is None:
                self._closed = why
            self._cv.notify_all()
        return self.drain()
