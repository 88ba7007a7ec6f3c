# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``say`` server's answer to a cancel: accepted only while the goal can end CANCELED.

The server runs in this process over the real rmw, on a stand-in speech scheduler whose
utterances the test finishes by hand: so the moment a cancel arrives between an
utterance's end and its goal's result (1 in 264 runs against a real node) is exact here.
"""

import threading

from action_msgs.msg import GoalStatus
from action_msgs.srv import CancelGoal
import pytest
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from hayakoe_ros.node.say_action import SayActionServer
from hayakoe_ros.speech import CancelReason, Outcome
from ros_utils import new_namespace, send_goal, wait_future

pytestmark = pytest.mark.ros


class StandInUtterance:
    """What the server reads of an utterance: outcome, reason, text, error."""

    def __init__(self, text, on_done):
        self.text, self.on_done = text, on_done
        self.heard = ''
        self.outcome = self.cancel_reason = None
        self.error = ''
        self.done = False

    def finish(self, outcome, reason=None):
        self.outcome, self.cancel_reason, self.done = outcome, reason, True


class StandInScheduler:
    """speak/cancel as the node gives them to the server; utterances end when told."""

    def __init__(self):
        self.utterances = []
        self.queued = threading.Event()

    def speak(self, goal, on_done, on_chunk, key):
        utt = StandInUtterance(goal.text, on_done)
        self.utterances.append(utt)
        self.queued.set()
        return utt

    def cancel(self, utt, reason):
        if utt.done:
            return False
        utt.finish(Outcome.CANCELED, reason)
        utt.on_done(utt)
        return True


@pytest.fixture
def server(ros_client):
    sched = StandInScheduler()
    node = Node('say_server', namespace=new_namespace()[1:])
    say = SayActionServer(node, sched.speak, sched.cancel, lambda utt, chunk: None, 10,
                          ReentrantCallbackGroup())
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    yield sched, ros_client.action_client(f'{node.get_namespace()}/say')
    executor.shutdown()
    say.destroy()
    node.destroy_node()


def _goal(sched, action):
    sched.queued.clear()
    handle, _ = send_goal(None, action, 'こんにちは。')
    assert sched.queued.wait(10)
    return handle, sched.utterances[-1]


def test_cancel_after_the_utterance_finished_is_rejected_and_the_goal_succeeds(server):
    sched, action = server
    handle, utt = _goal(sched, action)
    utt.finish(Outcome.SUCCEEDED)  # spoken; the goal's coroutine has not resumed yet
    answer = wait_future(handle.cancel_goal_async(), 10)
    # rclpy answers a rejection by every cancel callback with an empty list.
    assert list(answer.goals_canceling) == []
    assert not utt.cancel_reason
    utt.on_done(utt)
    result = wait_future(handle.get_result_async(), 10)
    assert result.status == GoalStatus.STATUS_SUCCEEDED
    assert result.result.text == 'こんにちは。'


def test_cancel_while_speaking_is_accepted_and_the_goal_ends_canceled(server):
    sched, action = server
    handle, utt = _goal(sched, action)
    answer = wait_future(handle.cancel_goal_async(), 10)
    assert answer.return_code == CancelGoal.Response.ERROR_NONE
    assert len(answer.goals_canceling) == 1
    assert utt.cancel_reason is CancelReason.CLIENT
    result = wait_future(handle.get_result_async(), 10)
    assert result.status == GoalStatus.STATUS_CANCELED


def test_cancel_of_a_finished_goal_is_rejected(server):
    sched, action = server
    handle, utt = _goal(sched, action)
    utt.finish(Outcome.SUCCEEDED)
    utt.on_done(utt)
    assert wait_future(handle.get_result_async(), 10).status == GoalStatus.STATUS_SUCCEEDED
    answer = wait_future(handle.cancel_goal_async(), 10)
    assert list(answer.goals_canceling) == []
