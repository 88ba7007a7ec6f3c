# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""tts_node driven by a lifecycle manager, and goals sent as it goes away.

A lifecycle manager requests transitions as service calls, which run on an executor
thread; ``ros2 launch`` sends SIGINT on Ctrl-C at about the same moment. The exit must
still be clean (status 0, no traceback, no wait for a model load), count as clean for
the restart count, and every goal request answered: a goal the node cannot speak any
more is rejected, never accepted and left without a result. A parameter that applies at
the next configure is refused while a configure runs (it would apply in part).
"""

import signal
import time

from action_msgs.msg import GoalStatus
from audio_common_msgs.action import TTS
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
import pytest
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient

from ros_utils import NodeProcess, send_goal, wait_future

pytestmark = pytest.mark.ros

OJT = dict(engine='openjtalk', chunk=1024)

#: Phrases preloaded at configure: Open JTalk takes seconds over them, so a signal sent
#: once the node reports ``configuring`` lands inside the configure.
PHRASES = '|'.join(f'これは{i}番目の、少し長めに書いておく文です。' for i in range(60))


def _lifecycle_state(client, node, want: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        values = {kv.key: kv.value for kv in client.diagnostics(node).values}
        if values.get('lifecycle_state') == want:
            return
        time.sleep(0.05)
    raise AssertionError(f'never {want}: {node.log()}')


def test_a_signal_during_a_requested_configure_exits_at_once_and_cleanly(ros_client):
    node = NodeProcess(dict(OJT, autostart=False, phrase_cache_mb=8,
                            preload_phrases=PHRASES), wait_ready=False)
    try:
        _configure_async(ros_client, node)
        _lifecycle_state(ros_client, node, 'configuring')
        node.proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        assert node.wait_exit(20) == 0, node.log()
        took = time.monotonic() - t0
        log = node.log()
        assert 'Traceback' not in log and 'interrupted while configuring: exiting' in log, log
        assert 'ready:' not in log, log  # it did not wait for the preload to end
        assert took < 5.0, f'{took:.1f} s: {log}'
    finally:
        node.stop()
    # The next start of the same node is no restart after a crash.
    again = NodeProcess(OJT, namespace=node.namespace)
    try:
        assert 'started again' not in again.log(), again.log()
    finally:
        assert again.stop() == 0, again.log()


def _configure_async(client, node):
    srv = client.node.create_client(ChangeState, node.topic('tts_node/change_state'))
    assert srv.wait_for_service(timeout_sec=30), node.log()
    request = ChangeState.Request()
    request.transition.id = Transition.TRANSITION_CONFIGURE
    return srv.call_async(request)


def test_a_requested_configure_leaves_the_node_answering(ros_client):
    """During a ``change_state`` configure the lifecycle and parameter services answer.

    A second transition is refused, and so is a parameter for the next configure.
    """
    from lifecycle_msgs.srv import GetState

    node = NodeProcess(dict(OJT, autostart=False, phrase_cache_mb=8,
                            preload_phrases=PHRASES), wait_ready=False)
    try:
        params = AsyncParameterClient(ros_client.node, node.topic(node.name))
        assert params.wait_for_services(timeout_sec=30), node.log()
        get_state = ros_client.node.create_client(GetState, node.topic('tts_node/get_state'))
        assert get_state.wait_for_service(timeout_sec=30), node.log()
        configured = _configure_async(ros_client, node)
        _lifecycle_state(ros_client, node, 'configuring')
        state = wait_future(get_state.call_async(GetState.Request()), 10).current_state
        answered_during = not configured.done()
        again = wait_future(_configure_async(ros_client, node), 10)
        future = params.set_parameters([Parameter('output_rate', value=16000)])
        result = wait_future(future, 10).results[0]
        assert answered_during, 'get_state answered only once the configure had ended'
        assert not configured.done(), 'the preload ended too soon for this test'
        assert state.label == 'configuring', state
        assert not again.success  # one transition at a time
        assert not result.successful, node.log()
        assert 'configuring now' in result.reason, result.reason
        assert wait_future(configured, 60).success, node.log()
        got = wait_future(params.get_parameters(['output_rate']), 10).values[0]
        assert got.integer_value == 0, got  # unchanged: what the configure used
        future = params.set_parameters([Parameter('output_rate', value=16000)])
        assert wait_future(future, 10).results[0].successful  # inactive now: taken
    finally:
        assert node.stop() == 0, node.log()


def test_a_goal_sent_while_the_node_exits_is_rejected_not_left_unanswered(ros_client):
    node = NodeProcess(OJT)
    try:
        action = ros_client.action_client(node.topic('say'))
        long_text = 'こんにちは。今日はいい天気ですね。' * 4
        speaking, feedback = send_goal(ros_client, action, long_text)
        deadline = time.monotonic() + 30
        while not feedback and time.monotonic() < deadline:
            time.sleep(0.01)
        assert feedback, node.log()
        node.proc.send_signal(signal.SIGINT)
        result = wait_future(speaking.get_result_async(), 10)
        assert result.status == GoalStatus.STATUS_ABORTED, result
        # The node still answers for a while (results, late requests) before it goes:
        # a goal sent now is refused at once.
        handle = wait_future(action.send_goal_async(TTS.Goal(text='まだ話せますか。')), 10)
        assert not handle.accepted
        assert node.wait_exit(20) == 0, node.log()
    finally:
        node.stop()
