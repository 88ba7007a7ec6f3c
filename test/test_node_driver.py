# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""tts_node as a ROS 2 driver: lifecycle, live parameters, speaking, diagnostics, QoS."""

import time

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from diagnostic_msgs.msg import DiagnosticStatus
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import GetState
from rcl_interfaces.msg import ParameterType
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool

from ros_utils import (CHUNK, NodeProcess, change_state, in_process_node, new_namespace,
                       send_goal, tiny_params, wait_future)

pytestmark = pytest.mark.ros


@pytest.fixture(scope='module')
def node(tiny_model_root):
    proc = NodeProcess(tiny_params(tiny_model_root))
    yield proc
    assert proc.stop() == 0, proc.log()


def set_params(client, node, **values):
    params = AsyncParameterClient(client.node, node.topic(node.name))
    assert params.wait_for_services(timeout_sec=10)
    results = wait_future(params.set_parameters(
        [Parameter(k, value=v) for k, v in values.items()]), 10)
    return results.results


def speak(client, node, text, **fields):
    action = client.action_client(node.topic('say'))
    handle, feedback = send_goal(client, action, text, **fields)
    result = wait_future(handle.get_result_async(), 60)
    audio = np.concatenate([np.asarray(f.audio.audio.audio_data.int16_data, np.int16)
                            for _, f in feedback]) if feedback else np.zeros(0, np.int16)
    return result, audio, feedback


def get_state(client, node):
    srv = client.node.create_client(GetState, node.topic(f'{node.name}/get_state'))
    assert srv.wait_for_service(timeout_sec=10)
    state = wait_future(srv.call_async(GetState.Request()), 10).current_state.id
    client.node.destroy_client(srv)
    return state


def test_lifecycle_transitions_through_the_standard_services(tiny_model_root, ros_client):
    node = NodeProcess(tiny_params(tiny_model_root, autostart=False), wait_ready=False)
    try:
        assert get_state(ros_client, node) == State.PRIMARY_STATE_UNCONFIGURED
        # No action server before the engine is loaded and warm.
        assert ros_client.node.count_publishers(node.topic('audio')) == 0
        assert change_state(ros_client, node, Transition.TRANSITION_CONFIGURE)
        assert get_state(ros_client, node) == State.PRIMARY_STATE_INACTIVE
        assert 'warmed up in' in node.log()
        result, audio, _ = speak(ros_client, node, 'こんにちは。')
        assert result.status == GoalStatus.STATUS_ABORTED
        assert 'not active' in result.result.text and audio.size == 0
        assert change_state(ros_client, node, Transition.TRANSITION_ACTIVATE)
        assert get_state(ros_client, node) == State.PRIMARY_STATE_ACTIVE
        result, audio, _ = speak(ros_client, node, 'こんにちは。')
        assert result.status == GoalStatus.STATUS_SUCCEEDED and audio.size > 0
        # Deactivating cancels the running goal.
        action = ros_client.action_client(node.topic('say'))
        handle, feedback = send_goal(ros_client, action, '長い文章を話しています。' * 4)
        deadline = time.monotonic() + 30
        while not feedback and time.monotonic() < deadline:
            time.sleep(0.01)
        assert change_state(ros_client, node, Transition.TRANSITION_DEACTIVATE)
        running = wait_future(handle.get_result_async(), 10)
        assert running.status == GoalStatus.STATUS_ABORTED
        assert 'deactivated' in running.result.text
        assert get_state(ros_client, node) == State.PRIMARY_STATE_INACTIVE
        assert change_state(ros_client, node, Transition.TRANSITION_CLEANUP)
        assert get_state(ros_client, node) == State.PRIMARY_STATE_UNCONFIGURED
        # Configure again after cleanup: the engine reloads.
        assert change_state(ros_client, node, Transition.TRANSITION_CONFIGURE)
        assert change_state(ros_client, node, Transition.TRANSITION_ACTIVATE)
        result, audio, _ = speak(ros_client, node, 'もう一度。')
        assert result.status == GoalStatus.STATUS_SUCCEEDED
        assert change_state(ros_client, node,
                            Transition.TRANSITION_ACTIVE_SHUTDOWN)
        assert get_state(ros_client, node) == State.PRIMARY_STATE_FINALIZED
    finally:
        assert node.stop() == 0, node.log()


def test_failed_configure_reports_error_diagnostics(ros_client, tmp_path):
    node = NodeProcess({'speaker_source': f'file://{tmp_path}', 'bert_source':
                        f'file://{tmp_path}', 'fallback_engine': 'none',
                        'autostart': False}, wait_ready=False)
    try:
        assert not change_state(ros_client, node, Transition.TRANSITION_CONFIGURE)
        assert get_state(ros_client, node) == State.PRIMARY_STATE_UNCONFIGURED
        status = ros_client.diagnostics(node)
        assert status.level == DiagnosticStatus.ERROR
        assert 'cannot load hayakoe speaker' in status.message
    finally:
        assert node.stop() == 0, node.log()


def test_live_rate_and_volume_change_the_next_utterance(node, ros_client):
    text = 'こんにちは、今日はいい天気ですね。'
    _, base, _ = speak(ros_client, node, text)
    assert all(r.successful for r in set_params(ros_client, node, rate=2.0, volume=0.5))
    try:
        _, fast, _ = speak(ros_client, node, text)
    finally:
        set_params(ros_client, node, rate=1.0, volume=1.0)
    # Twice as fast: about half the samples (frames are ceil()ed per phoneme).
    assert 0.35 < fast.size / base.size < 0.65
    rms = [np.sqrt(np.mean(a.astype(np.float64) ** 2)) for a in (base, fast)]
    assert 0.35 < rms[1] / rms[0] < 0.65


@pytest.mark.long  # about 12 s here; rate and volume stay quick as parameters
# (test_live_rate_and_volume_change_the_next_utterance)
def test_goal_rate_and_volume(node, ros_client):
    text = 'こんにちは、今日はいい天気ですね。'
    _, base, _ = speak(ros_client, node, text)
    _, slow, _ = speak(ros_client, node, text, rate=0.5, volume=0.25)
    assert 1.6 < slow.size / base.size < 2.4
    peaks = [np.max(np.abs(a.astype(np.float64))) for a in (base, slow)]
    assert peaks[1] < 0.4 * peaks[0]


@pytest.mark.parametrize('values, reason', [
    ({'queue_policy': 'random'}, "'random' is not allowed; one of: enqueue, interrupt"),
    ({'style': 'Furious'}, "unknown style 'Furious'"),
    ({'rate': 10.0}, ''), ({'volume': -0.5}, ''), ({'chunk': 0}, ''),
    ({'output_rate': 100}, 'or 8000..192000 Hz'),  # in the range, but no voice at 100 Hz
    ({'volum': 1.0}, ''),  # rclpy's reason names nothing; the log names it and 'volume'
    ({'': 1.5}, 'a parameter needs a name'),  # rclpy alone declares it
    ({'engine': 'openjtalk'}, 'applies at the next configure'),  # the node is active
])
def test_bad_parameter_values_are_rejected_with_a_reason(node, ros_client, values, reason):
    mark = len(node.log())
    results = set_params(ros_client, node, **values)
    assert not results[0].successful
    assert results[0].reason
    assert reason in results[0].reason
    # The node's log says it too, once, also where rclpy's own range and type checks
    # refuse the value before the node's callback runs (rate, volume, chunk).
    node.wait_for_log('parameter change rejected: ', 10, after=mark)
    lines = [x for x in node.log()[mark:].splitlines() if 'parameter change rejected' in x]
    assert len(lines) == 1 and (reason or next(iter(values))) in lines[0], lines


def test_an_integer_for_a_double_parameter_is_taken_as_that_double(node, ros_client):
    # As `ros2 param set /tts_node rate 2` sends it; rclpy alone refuses the type.
    mark = len(node.log())
    assert set_params(ros_client, node, rate=2)[0].successful
    try:
        params = AsyncParameterClient(ros_client.node, node.topic(node.name))
        assert params.wait_for_services(timeout_sec=10)
        got = wait_future(params.get_parameters(['rate']), 10).values[0]
        assert (got.type, got.double_value) == (ParameterType.PARAMETER_DOUBLE, 2.0)
    finally:
        assert set_params(ros_client, node, rate=1.0)[0].successful
    assert 'parameter change rejected' not in node.log()[mark:]


def test_a_next_configure_parameter_loaded_unchanged_is_accepted_while_active(node,
                                                                              ros_client):
    # `ros2 param load` of a dump sets every parameter: those that apply at the next
    # configure, at their values, are no change (a change is refused: the test above).
    params = AsyncParameterClient(ros_client.node, node.topic(node.name))
    assert params.wait_for_services(timeout_sec=10)
    names = ['engine', 'num_threads', 'max_chars']
    now = [v for v in wait_future(params.get_parameters(names), 10).values]
    values = {'engine': now[0].string_value, 'num_threads': now[1].integer_value,
              'max_chars': now[2].integer_value}
    mark = len(node.log())
    assert all(r.successful for r in set_params(ros_client, node, **values)), values
    assert 'parameter change rejected' not in node.log()[mark:]


def test_a_malformed_parameter_request_does_not_end_the_node(node, ros_client):
    # A value of a type id no ROS type has: rclpy's parameter service raises on it.
    from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterValue
    from rcl_interfaces.srv import SetParameters

    action = ros_client.action_client(node.topic('say'))
    speaking, feedback = send_goal(ros_client, action, '長い文章を話しています。' * 3)
    queued, _ = send_goal(ros_client, action, '次の文です。')
    deadline = time.monotonic() + 30
    while not feedback and time.monotonic() < deadline:
        time.sleep(0.01)
    mark = len(node.log())
    srv = ros_client.node.create_client(SetParameters, node.topic(f'{node.name}/set_parameters'))
    assert srv.wait_for_service(timeout_sec=10)
    srv.call_async(SetParameters.Request(parameters=[
        ParameterMsg(name='volume', value=ParameterValue(type=99))]))
    node.wait_for_log('set_parameters', 10, after=mark)
    assert 'ValueError' in node.log()[mark:] and node.proc.poll() is None
    # What was speaking and what was queued are both spoken to the end.
    for handle in (speaking, queued):
        assert wait_future(handle.get_result_async(), 60).status == \
            GoalStatus.STATUS_SUCCEEDED
    assert set_params(ros_client, node, volume=1.0)[0].successful  # and it still serves
    ros_client.node.destroy_client(srv)


def test_speaking_flips_true_then_false_around_an_utterance(node, ros_client):
    events = []
    qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
    sub = ros_client.node.create_subscription(
        Bool, node.topic('speaking'), lambda m: events.append((time.monotonic(), m.data)), qos)
    deadline = time.monotonic() + 10
    while not events and time.monotonic() < deadline:
        time.sleep(0.05)
    assert events and events[-1][1] is False  # latched initial state
    before = len(events)
    result, audio, feedback = speak(ros_client, node, 'こんにちは。元気ですか。')
    deadline = time.monotonic() + 10  # false comes once the last chunk has played
    while not (len(events) > before and events[-1][1] is False) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    values = [v for _, v in events[before:]]
    assert values == [True, False], values  # this utterance's flips, exactly
    t_true = [t for t, v in events if v][-1]
    t_false = events[-1][0]
    assert t_true <= feedback[0][0] + 0.1  # true when the first chunk goes out
    duration = audio.size / 44100
    # false after the last chunk has played: about the audio's duration after it began.
    assert t_false - t_true > duration - CHUNK / 44100 - 0.4
    ros_client.node.destroy_subscription(sub)


def spoken_count(client, node) -> int:
    values = {kv.key: kv.value for kv in client.diagnostics(node).values}
    return int(values['utterances_spoken'])


def test_diagnostics_report_engine_state_and_figures(node, ros_client):
    # The node is shared by this module's tests: count from what it had already spoken.
    before = spoken_count(ros_client, node)
    speak(ros_client, node, 'こんにちは。')
    deadline = time.monotonic() + 10  # a later periodic message carries this utterance
    while True:
        status = ros_client.diagnostics(node)
        values = {kv.key: kv.value for kv in status.values}
        if int(values['utterances_spoken']) > before or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status.level == DiagnosticStatus.OK
    assert values['engine'] == 'hayakoe' and values['device'] == 'cpu'
    assert values['lifecycle_state'] == 'active'
    assert values['fallback_in_use'] == 'false'
    assert int(values['utterances_spoken']) == before + 1
    assert int(values['queue_depth']) == 0
    assert float(values['last_rtf']) > 0 and float(values['last_ttfa_s']) > 0


def test_audio_qos_is_reliable_as_discovered(node, ros_client):
    infos = ros_client.node.get_publishers_info_by_topic(node.topic('audio'))
    assert len(infos) == 1
    qos = infos[0].qos_profile
    assert qos.reliability == ReliabilityPolicy.RELIABLE


def test_audio_and_feedback_publishers_get_the_configured_depth(ros_client):
    # DDS discovery does not carry the history depth: check the node's own publishers.
    node = in_process_node(dict(engine='openjtalk', qos_depth=37, autostart=False))
    try:
        from rclpy.lifecycle import TransitionCallbackReturn

        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node._out.audio_publisher.qos_profile.depth == 37
        # qos_depth applies at the next configure: rclpy's QoS override parameters,
        # declared at the first, kept 37 for every later publisher.
        assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
        node.set_parameters([Parameter('qos_depth', value=7)])
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node._out.audio_publisher.qos_profile.depth == 7
        assert node._marks._pub.qos_profile.depth == 7
    finally:
        node.trigger_shutdown()
        node.destroy_node()


@pytest.mark.long  # about 11 s here; the configured depth stays quick
def test_qos_override_from_parameters_takes_effect(tiny_model_root, ros_client):
    ns = new_namespace()
    node = NodeProcess(
        tiny_params(tiny_model_root), namespace=ns,
        extra_args=['-p', f'qos_overrides.{ns}/audio.publisher.reliability:=best_effort'])
    try:
        deadline = time.monotonic() + 10
        infos = []
        while not infos and time.monotonic() < deadline:
            infos = ros_client.node.get_publishers_info_by_topic(node.topic('audio'))
            time.sleep(0.1)
        assert infos and infos[0].qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
    finally:
        assert node.stop() == 0, node.log()
