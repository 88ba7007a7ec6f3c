# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""rclpy's ``ActionServer`` that tells when every request it received is answered.

Used by :mod:`.say_action`, which destroys its server only once the goal, cancel and
result requests a client sent before a teardown have been answered; it also tells which
goal requests were taken, in the order they arrived (:attr:`DrainableActionServer.on_goal`),
and applies the goals of one cancel request as one (:attr:`DrainableActionServer.cancel_batch`).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, ContextManager, Optional, cast

from rclpy.action import ActionServer

from .executor_wait import spin_once

__all__ = ['DRAINED_WAITS', 'DrainableActionServer']

#: Waits of the executor in a row that must find the server with nothing to take before
#: its requests count as drained: the first may have begun before the drain did.
DRAINED_WAITS = 2
#: Longest single ``spin_once`` while draining from the thread that spins (s).
DRAIN_SPIN_S = 0.05


class DrainableActionServer(ActionServer):
    """rclpy's ``ActionServer``, telling when every request it has received is answered.

    rclpy has no event for that. The executor calls :meth:`is_ready` after every wait the
    server took part in (never while a request it found is not yet taken), and a request
    is taken (:meth:`take_data`) and answered (:meth:`execute`) by one handler. So: once
    :data:`DRAINED_WAITS` waits in a row found nothing ready and no handler is between
    its take and the end of its execute, every request received before is answered
    (a goal's result, sent when the goal ends, aside: see :meth:`SayActionServer.destroy`).
    """

    def __init__(self, *args, on_goal: Optional[Callable[[bytes], None]] = None,
                 cancel_batch: Optional[Callable[[], ContextManager]] = None,
                 **kwargs) -> None:
        # Set before the base class adds the server to the node: the executor may call
        # is_ready from then on.
        self.activity = threading.Condition()
        self.idle_waits = 0  # executor waits that found nothing ready
        self.busy = 0  # handlers between take_data and the end of execute
        self.changes = 0  # bumped, with a notify, whenever one of the above changes
        #: ``on_goal(uuid bytes)``: told of each goal request as it is taken, in the order
        #: they arrived (the spinning thread takes them one at a time; their handlers
        #: then run side by side and may reach the goal callbacks in another order).
        self.on_goal = on_goal
        #: ``cancel_batch()``: a context that one cancel request's callbacks run in. rclpy
        #: calls the cancel callback goal by goal (a request with a zero id cancels every
        #: goal), in this handler's thread and without yielding while they are plain
        #: functions; the scheduler went on between two of them (see
        #: ``Publishing.publishing_held``).
        self.cancel_batch = cancel_batch
        super().__init__(*args, **kwargs)

    def _changed(self) -> None:
        self.changes += 1
        self.activity.notify_all()

    def is_ready(self, wait_set) -> bool:
        """The base class's answer; counts the waits that found nothing ready."""
        ready = super().is_ready(wait_set)
        with self.activity:
            if not ready:
                self.idle_waits += 1
            self._changed()
        return ready

    def take_data(self):
        """The base class's take; the handler counts as busy until its execute ends."""
        with self.activity:
            self.busy += 1
            self._changed()
        try:
            data = super().take_data()
        except BaseException:
            with self.activity:
                self.busy -= 1
                self._changed()
            raise
        goal = data.get('goal') if isinstance(data, dict) else None
        if goal is not None and self.on_goal is not None:
            self.on_goal(bytes(goal[1].goal_id.uuid))
        return data

    async def execute(self, taken_data) -> None:
        """The base class's execute (which sends the responses), then not busy.

        A cancel request's part runs inside :attr:`cancel_batch`, on its own: rclpy's
        execute handles the goal, cancel, result and expiry parts in that order.
        """
        try:
            if isinstance(taken_data, dict) and 'cancel' in taken_data \
                    and self.cancel_batch is not None:
                before = {k: v for k, v in taken_data.items() if k == 'goal'}
                after = {k: v for k, v in taken_data.items() if k not in ('goal', 'cancel')}
                if before:
                    await super().execute(cast(Any, before))
                with self.cancel_batch():
                    await super().execute(cast(Any, {'cancel': taken_data['cancel']}))
                if after:
                    await super().execute(cast(Any, after))
            else:
                await super().execute(taken_data)
        finally:
            with self.activity:
                self.busy -= 1
                self._changed()

    def wait_drained(self, executor, timeout: float, spin: bool) -> bool:
        """Wait until every request received before this call has been answered.

        Args:
            executor: The executor that serves the server.
            timeout: Longest wait (s, monotonic).
            spin: True from the thread that spins ``executor`` (outside any callback):
                it is spun here. False while other threads spin it: it is woken, so that
                it waits again at once rather than at its own timeout.

        Returns:
            True when drained; False at the timeout.
        """
        deadline = time.monotonic() + timeout
        with self.activity:
            target = self.idle_waits + DRAINED_WAITS
        while True:
            with self.activity:
                if self.idle_waits >= target and not self.busy:
                    return True
                seen = self.changes
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if spin:
                spin_once(executor, min(left, DRAIN_SPIN_S))
                continue
            executor.wake()
            with self.activity:
                if self.changes == seen:
                    self.activity.wait(left)
