# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Bounded waits on rclpy executor work, for shutdown paths that must let replies out.

An action server sends a goal's result in an executor task that rclpy queues when the
goal's execute callback returns (``ActionServer._execute_goal`` completes the result
future; its done callback, ``_send_result_response``, runs as a new task). Destroying the
server before that task has run loses the result. rclpy offers no event for "sent", but
its executors take tasks in the order they were created, so a marker task queued after
the result tasks runs after them: :func:`caught_up` waits for that marker (two hops, so
that a task created by one still running at the first hop is also passed).
"""

from __future__ import annotations

import threading
import time

from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

#: Marker hops: the second is queued by the first, after whatever ran alongside it.
_HOPS = 2


def caught_up(executor, timeout: float, *, spin: bool = False) -> bool:
    """Wait until the tasks queued in ``executor`` before this call have been run.

    Args:
        executor: The rclpy executor of the node (None: nothing to wait for).
        timeout: Longest wait (s, monotonic).
        spin: True when called from the thread that spins ``executor`` (outside any
            callback): this call then spins it itself. False from inside a callback of a
            multi-threaded executor, whose other threads run the tasks.

    Returns:
        True when the marker ran; False at the timeout (or if the executor is gone).
    """
    if executor is None:
        return True
    reached = threading.Event()

    def hop(left: int) -> None:
        if left:
            queue_task(executor, hop, left - 1)
        else:
            reached.set()

    try:
        queue_task(executor, hop, _HOPS - 1)
    except RuntimeError:  # the executor is shutting down
        return False
    deadline = time.monotonic() + timeout
    if not spin:
        return reached.wait(timeout)
    while not reached.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        spin_once(executor, min(0.05, left))
    return True


def queue_task(executor, callback, *args) -> None:
    """Queue ``callback(*args)`` as a task of ``executor`` and end its current wait.

    Safe from any thread. rclpy's ``Executor.wake()`` alone only makes a blocked wait
    rebuild its wait set and wait again until its timeout; a queued task is work, which
    the wait hands out, so a ``spin_once`` blocked in it returns.

    Raises:
        RuntimeError: the executor is shutting down.
    """
    executor.create_task(callback, *args)
    executor.wake()


def spin_once(executor, timeout: float) -> None:
    """One ``executor.spin_once(timeout_sec=timeout)`` from the thread that spins it.

    A lifecycle transition running on another executor thread may destroy an entity
    (a publisher and its event handlers, at cleanup) while this thread adds it to its wait
    set; rclpy then raises ``InvalidHandle`` ("cannot use Destroyable because destruction
    was requested") out of the wait, once: the next wait no longer sees the entity. That
    is not an error of the node's, so it is absorbed here rather than end the process.
    """
    try:
        executor.spin_once(timeout_sec=timeout)
    except _rclpy.InvalidHandle:
        pass
