# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Goals taking turns at one step, in the order they arrived (ROS: rclpy futures).

The ``say`` action hands each goal's text to the speech scheduler one goal at a time, in
arrival order, and preparing a long text takes seconds (about 1.3 s for 100,000
characters). A goal waiting for its turn awaits a future instead of blocking an executor
thread: blocked threads (three goals behind a long text took all four of ``tts_node``'s)
left none for a cancel, and a lock let waiting goals through in any order.
"""

from __future__ import annotations

import threading
from typing import Callable

from rclpy.task import Future

__all__ = ['Turns']


class Turns:
    """A queue of turns: the head's turn has come; the others wait in arrival order.

    Args:
        wake: Called after a future is completed from outside the coroutine awaiting it
            (the executor must resume that coroutine: ``executor.wake``).

    Thread-safe: goals join, leave and are withdrawn from executor threads.
    """

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake
        self._lock = threading.Lock()
        self._queue: list = []  # [(arrival number, future)], the head first

    def join(self, arrival: int) -> Future:
        """A goal's turn: a future that completes True when the turn comes.

        At once if no goal is ahead; False when the goal is withdrawn first.

        Args:
            arrival: Its place in arrival order (a goal that arrived earlier but joins
                later still goes before it, but never before the head, whose turn has
                come).
        """
        turn: Future = Future()
        with self._lock:
            at = len(self._queue)
            while at > 1 and self._queue[at - 1][0] > arrival:
                at -= 1
            self._queue.insert(at, (arrival, turn))
            if at == 0:
                turn.set_result(True)
        return turn

    def withdraw(self, turn: Future) -> None:
        """End a wait for a turn that has not come (a cancel): ``turn`` completes False."""
        with self._lock:
            if not turn.done():
                turn.set_result(False)
        self._wake()

    def leave(self, turn: Future) -> None:
        """Its goal is done with its turn (or never took it): the next one's comes."""
        with self._lock:
            head = bool(self._queue) and self._queue[0][1] is turn
            self._queue = [(n, t) for n, t in self._queue if t is not turn]
            if head and self._queue and not self._queue[0][1].done():
                self._queue[0][1].set_result(True)
        self._wake()
