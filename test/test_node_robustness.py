# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""tts_node under stress: signals while speaking, bursts, floods, pathological text."""

import signal
import time

from action_msgs.msg import GoalStatus
from lifecycle_msgs.msg import Transition
import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger

from ros_utils import NodeProcess, change_state, send_goal, tiny_params, wait_future

pytestmark = pytest.mark.ros

LONG = 'こんにちは。今日はいい天気ですね。' * 4


def _speaking_events(client, node):
    events = []
    qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
    sub = client.node.create_subscription(Bool, node.topic('speaking'),
                                          lambda m: events.append(m.data), qos)
    return events, sub


def _goals_speaking(client, node, n=3):
    action = client.action_client(node.topic('say'))
    goals = [send_goal(client, action, LONG) for _ in range(n)]
    deadline = time.monotonic() + 30
    while not goals[0][1] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert goals[0][1], 'no audio'
    return goals


@pytest.mark.long  # about 20 s here; the shutdown transition while speaking stays quick
def test_sigint_while_speaking_answers_every_goal_and_exits_cleanly(tiny_model_root,
                                                                     ros_client):
    for signum in (signal.SIGINT, signal.SIGTERM):
        node = NodeProcess(tiny_params(tiny_model_root))
        events, sub = _speaking_events(ros_client, node)
        goals = _goals_speaking(ros_client, node)
        pending = [handle.get_result_async() for handle, _ in goals]
        node.proc.send_signal(signum)
        node.proc.wait(15)
        assert node.proc.returncode == 0, node.log()
        for future in pending:
            result = wait_future(future, 10)
            assert result.status == GoalStatus.STATUS_ABORTED
            assert 'shutting down' in result.result.text
        deadline = time.monotonic() + 5  # the last speaking message may still travel
        while events[-1] is not False and time.monotonic() < deadline:
            time.sleep(0.05)
        assert events[-1] is False
        ros_client.node.destroy_subscription(sub)
        node.stop()


def test_lifecycle_shutdown_while_speaking_answers_every_goal(tiny_model_root, ros_client):
    node = NodeProcess(tiny_params(tiny_model_root))
    try:
        goals = _goals_speaking(ros_client, node)
        pending = [handle.get_result_async() for handle, _ in goals]
        assert change_state(ros_client, node, Transition.TRANSITION_ACTIVE_SHUTDOWN)
        for future in pending:
            result = wait_future(future, 10)
            assert result.status == GoalStatus.STATUS_ABORTED
    finally:
        assert node.stop() == 0, node.log()


@pytest.mark.long  # about 10 s here; the flood of goals under stop stays quick
def test_goal_burst_beyond_the_queue_gets_an_answer_for_every_goal(tiny_model_root,
                                                                   ros_client):
    node = NodeProcess(tiny_params(tiny_model_root, max_queue=3))
    try:
        action = ros_client.action_client(node.topic('say'))
        goals = [send_goal(ros_client, action, 'あ。') for _ in range(30)]
        results = [wait_future(h.get_result_async(), 60) for h, _ in goals]
        ok = [r for r in results if r.status == GoalStatus.STATUS_SUCCEEDED]
        full = [r for r in results if 'queue full' in r.result.text]
        assert len(ok) + len(full) == 30
        assert len(ok) >= 4 and len(full) >= 1
        assert all(r.status == GoalStatus.STATUS_ABORTED for r in full)
    finally:
        assert node.stop() == 0, node.log()


@pytest.mark.long  # about 12 s here; the flood of goals under stop stays quick
def test_text_burst_is_spoken_or_rejected_with_a_warning(tiny_model_root, ros_client):
    node = NodeProcess(tiny_params(tiny_model_root, max_queue=2))
    try:
        pub = ros_client.node.create_publisher(String, node.topic('text'), 100)
        deadline = time.monotonic() + 10
        while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)  # this writer matched the node's reader: all 40 arrive
        for i in range(40):
            pub.publish(String(data=f'{i}番。'))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status = ros_client.diagnostics(node)
            values = {kv.key: kv.value for kv in status.values}
            warned = node.log().count('queue full')
            if int(values['utterances_spoken']) + warned >= 40 and \
                    values['queue_depth'] == '0' and values['speaking'] == 'false':
                break
            time.sleep(0.5)
        assert int(values['utterances_spoken']) + warned == 40, node.log()
        assert warned > 0
        ros_client.node.destroy_publisher(pub)
    finally:
        assert node.stop() == 0, node.log()


def test_stop_answers_at_once_under_a_flood_of_goals(tiny_model_root, ros_client):
    node = NodeProcess(tiny_params(tiny_model_root, max_queue=100))
    try:
        action = ros_client.action_client(node.topic('say'))
        goals = [send_goal(ros_client, action, 'あ' * 40 + '。') for _ in range(30)]
        time.sleep(1.0)
        stop = ros_client.node.create_client(Trigger, node.topic('stop'))
        assert stop.wait_for_service(timeout_sec=10)
        t0 = time.monotonic()
        response = wait_future(stop.call_async(Trigger.Request()), 10)
        assert time.monotonic() - t0 < 2.0
        assert response.success
        results = [wait_future(h.get_result_async(), 20) for h, _ in goals]
        assert all(r.status in (GoalStatus.STATUS_ABORTED, GoalStatus.STATUS_SUCCEEDED)
                   for r in results)
    finally:
        assert node.stop() == 0, node.log()


@pytest.mark.long  # about 9 s here; the flood of goals under stop stays quick
def test_a_flood_of_punctuation_is_spoken_promptly(tiny_model_root, ros_client):
    node = NodeProcess(tiny_params(tiny_model_root))
    try:
        action = ros_client.action_client(node.topic('say'))
        t0 = time.monotonic()
        handle, feedback = send_goal(ros_client, action, 'あ' + '、' * 1500 + '😀' * 500)
        result = wait_future(handle.get_result_async(), 30)
        assert result.status == GoalStatus.STATUS_SUCCEEDED
        assert time.monotonic() - t0 < 15
        assert result.result.text == 'あ、、、、'  # one run of 2000 unreadable characters
    finally:
        assert node.stop() == 0, node.log()
