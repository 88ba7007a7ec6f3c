# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""rclpy's ``MultiThreadedExecutor`` without its list of re-yielded coroutine tasks.

The nodes' ``say`` goals are coroutines that await an rclpy future while they wait in the
queue and while they speak. rclpy 9.1 (Kilted) resumes such a task by yielding it again
at every round of its wait loop, and ``MultiThreadedExecutor._spin_once_impl`` appends
every yielded handler to its ``_futures`` list, dropping entries only once they are done
and walking the whole list at every spin. A pending goal therefore adds one entry per
round: with four robots of ``tts_fleet`` speaking at once (about 16 rounds a second),
the list held 4,800 entries after 75 s and the spinning thread spent more time walking
it than building wait sets (measured with a counting wrapper and py-spy). Upstream
rclpy resumes a task from its future's done callback instead (ros2/rclpy#1469, not in
Kilted's 9.1).

:class:`TaskExecutor` keeps each pending task in that list once. Everything else is
rclpy's but one thing, which :class:`SingleTaskExecutor` (rclpy's single-threaded one)
shares: a service callback that raises does not end the process. rclpy raises whatever a
callback raised out of ``spin_once``, and its own parameter services raise on a malformed
request (``ValueError: 99 is not a valid Parameter.Type`` for a value of an unknown type):
one such request from any client ended ``tts_node`` and lost what it had queued. That
exception is logged (ERROR, naming the service) and the request goes unanswered, as
rclpy leaves it. The executors override a private method and read two private attributes
(``_executor``, ``_futures``); ``test/test_task_executor.py`` checks them, and checks that
stock rclpy still grows the list, so a release that changes either fails there first.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

from rclpy.executors import (ConditionReachedException, ExternalShutdownException,
                             MultiThreadedExecutor, ShutdownException,
                             SingleThreadedExecutor, TimeoutException, TimeoutObject)
from rclpy.service import Service

__all__ = ['SingleTaskExecutor', 'TaskExecutor']


def _ready(executor, timeout_sec, wait_condition, quiet: tuple) -> Optional[tuple]:
    """``executor.wait_for_ready_callbacks(...)``, or None on one of ``quiet`` (as rclpy)."""
    try:
        return executor.wait_for_ready_callbacks(timeout_sec, None, wait_condition)
    except quiet:
        return None


def _raise_unless_service(exc: BaseException, where) -> None:
    """Log ``exc`` of a service callback (``where``: (service, node)); re-raise others."""
    if where is None or not isinstance(exc, Exception):
        raise exc
    service, node = where
    node.get_logger().error(
        f"a request to service '{service.service_name}' raised {type(exc).__name__}: {exc}; "
        'it is not answered, and the node goes on')


class TaskExecutor(MultiThreadedExecutor):
    """A ``MultiThreadedExecutor`` whose spin keeps a pending task's handler once.

    Args:
        num_threads: Threads of its pool (rclpy's default when None).
        context: The rclpy context (the default one when None).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._services: list = []  # (handler, (service, node)) of those in _futures

    def _spin_once_impl(
        self,
        timeout_sec: Optional[Union[float, TimeoutObject]] = None,
        wait_condition: Callable[[], bool] = lambda: False,
    ) -> None:
        """One spin as in rclpy 9.1, less the duplicate entries of a pending task."""
        ready = _ready(self, timeout_sec, wait_condition, (
            ExternalShutdownException, ShutdownException, TimeoutException,
            ConditionReachedException))
        if ready is None:
            return
        handler, entity, node = ready
        self._executor.submit(handler)
        # A task re-yielded while it awaits is the same object: identity, not equality.
        if not any(entry is handler for entry in self._futures):
            self._futures.append(handler)
            if isinstance(entity, Service) and node is not None:
                self._services.append((handler, (entity, node)))
        for future in self._futures[:]:
            if future.done():
                self._futures.remove(future)
                where = next((w for h, w in self._services if h is future), None)
                if where is not None:
                    self._services = [(h, w) for h, w in self._services if h is not future]
                exc = future.exception()
                if exc is not None:  # raise it, as rclpy does, unless a service's
                    _raise_unless_service(exc, where)


class SingleTaskExecutor(SingleThreadedExecutor):
    """rclpy's ``SingleThreadedExecutor``, but a service callback that raises is logged."""

    def _spin_once_impl(
        self,
        timeout_sec: Optional[Union[float, TimeoutObject]] = None,
        wait_condition: Callable[[], bool] = lambda: False,
    ) -> None:
        """One spin as in rclpy 9.1; a service callback's exception is logged, not raised."""
        ready = _ready(self, timeout_sec, wait_condition, (
            ShutdownException, TimeoutException, ConditionReachedException))
        if ready is None:
            return
        handler, entity, node = ready
        handler()
        exc = handler.exception()
        if exc is not None:
            where = (entity, node) if isinstance(entity, Service) and node is not None \
                else None
            _raise_unless_service(exc, where)
