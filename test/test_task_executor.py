# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""TaskExecutor: a coroutine awaiting a future is kept once, not once per round.

rclpy in this process (a context of its own, this session's DDS domain), no node process.
The stock ``MultiThreadedExecutor`` is measured beside it: when an rclpy release stops
keeping a copy per round, or renames what ``TaskExecutor`` overrides, a test here fails and
says that the override can go or must follow.
"""

from __future__ import annotations

import time

import pytest

from hayakoe_ros.node.executor_wait import caught_up
from ros_utils import private_context

pytestmark = pytest.mark.ros


@pytest.fixture
def context(ros_test_domain):
    """An rclpy context of this test's own (ros_utils.private_context)."""
    yield from private_context()

#: Spins measured: each is one round's yield of the pending task or of the timer.
SPINS = 60


def run_pending_task(executor_cls, context, spins: int = SPINS) -> tuple:
    """Spin ``spins`` times while a coroutine awaits; then let it finish.

    Returns:
        (entries kept in ``_futures`` after the spins, the coroutine's result).
    """
    import rclpy
    from rclpy.task import Future

    node = rclpy.create_node('task_executor_test', context=context)
    executor = executor_cls(num_threads=2, context=context)
    executor.add_node(node)
    timer = None
    try:
        gate: Future = Future(executor=executor)

        async def goal() -> object:
            return await gate  # a say goal waiting for its utterance

        task = executor.create_task(goal)
        timer = node.create_timer(0.001, lambda: None)  # a wake-up every round
        for _ in range(spins):
            executor.spin_once(timeout_sec=1.0)
        kept = len(executor._futures)
        gate.set_result('spoken')
        deadline = time.monotonic() + 10
        while not task.done() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        return kept, task.result() if task.done() else None
    finally:
        if timer is not None:
            timer.cancel()
        # Let the handlers in the pool end before the executor's guard condition goes:
        # one still running would trigger it after its destruction (rclpy prints that).
        caught_up(executor, 2.0, spin=True)
        executor.remove_node(node)
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()


def test_a_pending_coroutine_is_kept_once_and_still_resumes(context):
    from hayakoe_ros.node.task_executor import TaskExecutor

    kept, result = run_pending_task(TaskExecutor, context)
    assert kept <= 3  # the pending task, and at most two timer handlers not yet done
    assert result == 'spoken'


def test_stock_rclpy_still_keeps_a_copy_per_round(context):
    """Fails once rclpy resumes awaiting tasks without re-yielding them (#1469)."""
    from rclpy.executors import MultiThreadedExecutor

    kept, result = run_pending_task(MultiThreadedExecutor, context)
    assert kept >= SPINS // 4, (
        f'rclpy kept {kept} entries for one pending task over {SPINS} spins: it no '
        'longer re-yields it every round; TaskExecutor may be dropped')
    assert result == 'spoken'


def test_a_callback_s_exception_still_comes_out_of_spin_once(context):
    import rclpy

    from hayakoe_ros.node.task_executor import TaskExecutor

    node = rclpy.create_node('task_executor_raise', context=context)
    executor = TaskExecutor(num_threads=2, context=context)
    executor.add_node(node)

    def boom() -> None:
        raise RuntimeError('boom in a timer')

    timer = node.create_timer(0.001, boom)
    try:
        with pytest.raises(RuntimeError, match='boom in a timer'):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.1)
    finally:
        timer.cancel()
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()


@pytest.mark.parametrize('kind', ['TaskExecutor', 'SingleTaskExecutor'])
def test_a_service_callback_that_raises_is_logged_and_spinning_goes_on(context, kind):
    import rclpy
    from std_srvs.srv import Trigger

    from hayakoe_ros.node import task_executor

    node = rclpy.create_node('task_executor_service', context=context)
    executor = getattr(task_executor, kind)(context=context) if kind.startswith('Single') \
        else task_executor.TaskExecutor(num_threads=2, context=context)
    executor.add_node(node)
    logged = []
    node.get_logger().error = lambda message, **_: logged.append(message)
    calls = []

    def handle(request, response):
        calls.append(1)
        if len(calls) == 1:
            raise ValueError('99 is not a valid Parameter.Type')
        response.success = True
        return response

    node.create_service(Trigger, 'raises_once', handle)
    client = node.create_client(Trigger, 'raises_once')
    try:
        assert client.wait_for_service(timeout_sec=10)
        first = client.call_async(Trigger.Request())
        deadline = time.monotonic() + 10
        while not logged and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)  # never raises the service's exception
        assert logged and "'/raises_once'" in logged[0] and 'ValueError' in logged[0]
        assert not first.done()  # rclpy sends no answer to a callback that raised
        second = client.call_async(Trigger.Request())
        while not second.done() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        assert second.done() and second.result().success  # it still serves
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
