# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``player_node``'s upkeep: a timer that wakes when a resampled run's held tail is due.

libsoxr holds back a run's last ~10 ms until the run is ended; the player queues them
just before the device would play past the run (:meth:`Playout.flush_tail`). The timer
runs only while such a tail is held (each tick wakes the executor, which an idle player
need not pay for) and is re-armed for the tail's due time at each tick and whenever a
chunk makes it due sooner than the timer would wake.
"""

from __future__ import annotations

from typing import Callable, Optional

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import Clock, ClockType

__all__ = ['UPKEEP_MIN_S', 'UPKEEP_PERIOD_S', 'TailUpkeep']

#: Longest period of the upkeep timer (s): the due time moves with every chunk that
#: continues the run and with the device's clock, so it is looked at again this often.
UPKEEP_PERIOD_S = 0.1

#: Shortest period of the upkeep timer (s): a tail already due is queued by the next tick.
UPKEEP_MIN_S = 0.002


class TailUpkeep:
    """The upkeep timer of one node.

    Args:
        node: The rclpy node that owns the timer.
        tick: Queues a held tail if due; returns None when none is held, else the seconds
            until it is due (:meth:`Player.tick`).

    Both :meth:`on_chunk` and the timer's callback must run on the node's single executor
    thread, so they never interleave.
    """

    def __init__(self, node, tick: Callable[[], Optional[float]]) -> None:
        self._tick = tick
        # On the steady clock: due times are monotonic seconds, whatever use_sim_time.
        self._timer = node.create_timer(UPKEEP_PERIOD_S, self._on_timer,
                                        callback_group=MutuallyExclusiveCallbackGroup(),
                                        clock=Clock(clock_type=ClockType.STEADY_TIME),
                                        autostart=False)

    def on_chunk(self) -> None:
        """A chunk came: if a tail is held, arm the timer, or bring it forward if due sooner."""
        due_in = self._tick()
        if due_in is None:
            return
        left_ns = self._timer.time_until_next_call()
        if self._timer.is_canceled() or left_ns is None or due_in * 1e9 < left_ns:
            self._arm(due_in)

    def _on_timer(self) -> None:
        due_in = self._tick()
        if due_in is None:
            self._timer.cancel()
        else:
            self._arm(due_in)

    def _arm(self, due_in: float) -> None:
        period = min(max(due_in, UPKEEP_MIN_S), UPKEEP_PERIOD_S)
        self._timer.timer_period_ns = int(period * 1e9)
        self._timer.reset()
