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

:class:`TaskExecutor` keeps each pending task in that list once. Everything else,
exceptions raised out of ``spin_once`` included, is rclpy's. It overrides a private
method and reads two private attributes (``_executor``, ``_futures``);
``test/test_task_executor.py`` checks both, and checks that stock rclpy still grows the
list, so a release that changes either fails there first.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

from rclpy.executors import (ConditionReachedException, ExternalShutdownException,
                             MultiThreadedExecutor, ShutdownException, TimeoutException,
                             TimeoutObject)

__all__ = ['TaskExecutor']


class TaskExecutor(MultiThreadedExecutor):
    """A ``MultiThreadedExecutor`` whose spin keeps a pending task's handler once.

    Args:
        num_threads: Threads of its pool (rclpy's default when None).
        context: The rclpy context (the default one when None).
    """

    def _spin_once_impl(
        self,
        timeout_sec: Optional[Union[float, TimeoutObject]] = None,
        wait_condition: Callable[[], bool] = lambda: False,
    ) -> None:
        """One spin as in rclpy 9.1, less the duplicate entries of a pending task."""
        try:
            handler, _entity, _node = self.wait_for_ready_callbacks(
                timeout_sec, None, wait_condition)
        except (ExternalShutdownException, ShutdownException, TimeoutException,
                ConditionReachedException):
            return
        self._executor.submit(handler)
        # A task re-yielded while it awaits is the same object: identity, not equality.
        if not any(entry is handler for entry in self._futures):
            self._futures.append(handler)
        for future in self._futures[:]:
            if future.done():
                self._futures.remove(future)
                future.result()  # raise any exception of the callback, as rclpy does
