# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""tts_node's configuration and lifecycle as a user meets them (real processes over DDS).

Reload parameters, start-up validation, unknown overrides, configure errors, the shutdown
transition, per-utterance log lines, diagnostics after a fallback, ``speaking`` across
queued utterances, and goals that hold no threads.
"""

import re
import time
from pathlib import Path

import pytest
from action_msgs.msg import GoalStatus
from lifecycle_msgs.msg import Transition
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool, String
from hayakoe_ros.node.runner import EXIT_NOT_STARTED

from ros_utils import (NodeProcess, change_state, in_process_node, new_namespace, send_goal,
                       tiny_params, wait_future)

pytestmark = pytest.mark.ros

OJT = dict(engine='openjtalk', chunk=1024)


def set_params(client, node, **values):
    """Set parameters on the node; return the SetParametersResult list."""
    params = AsyncParameterClient(client.node, node.topic(node.name))
    assert params.wait_for_services(timeout_sec=10)
    future = params.set_parameters([Parameter(k, value=v) for k, v in values.items()])
    return wait_future(future, 10).results


def speak_text(client, node, text, timeout=60.0):
    """Publish ``text`` on the node's text topic; return the recorder once it is quiet."""
    rec = client.audio_recorder(node.topic('audio'), node=node)
    pub = client.matched_publisher(node.topic('text'))
    client.wait_for_subscribers(node.topic('audio'))
    pub.publish(String(data=text))
    rec.wait_quiet(quiet_s=1.0, timeout=timeout)
    client.node.destroy_publisher(pub)
    client.node.destroy_subscription(rec.sub)
    return rec


def diag_values(client, node, **expect):
    """Wait for a /diagnostics status whose values include ``expect``; return them all."""
    deadline = time.monotonic() + 15
    while True:
        status = client.diagnostics(node)
        values = {kv.key: kv.value for kv in status.values}
        if all(values.get(k) == v for k, v in expect.items()) or \
                time.monotonic() > deadline:
            return status, values
        time.sleep(0.3)


@pytest.mark.long  # about 15 s here; the transitions stay quick (test_node_driver.py)
def test_reload_parameters_apply_at_the_next_configure(tiny_model_root, ros_client):
    node = NodeProcess(OJT)
    try:
        rec = speak_text(ros_client, node, 'こんにちは。')
        assert rec.msgs[0][1].audio.info.rate == 48000  # the Open JTalk voice
        refused = set_params(ros_client, node, speaker='tiny-jp')[0]
        assert not refused.successful and 'next configure' in refused.reason
        assert change_state(ros_client, node, Transition.TRANSITION_DEACTIVATE)
        assert change_state(ros_client, node, Transition.TRANSITION_CLEANUP)
        tiny = tiny_params(tiny_model_root)
        results = set_params(ros_client, node, **{k: tiny[k] for k in (
            'engine', 'speaker', 'speaker_source', 'bert_source', 'fallback_engine')})
        assert all(r.successful for r in results), results
        assert change_state(ros_client, node, Transition.TRANSITION_CONFIGURE)
        assert change_state(ros_client, node, Transition.TRANSITION_ACTIVATE)
        rec = speak_text(ros_client, node, 'こんにちは。')
        assert rec.msgs[0][1].audio.info.rate == 44100  # the hayakoe voice now speaks
        assert rec.samples().any()
        _, values = diag_values(ros_client, node, voice='hayakoe/tiny-jp')
        assert values['voice'] == 'hayakoe/tiny-jp'
    finally:
        assert node.stop() == 0, node.log()


@pytest.mark.parametrize('override, words', [
    ('queue_policy:=bogus', ["'queue_policy'", "'bogus'", 'one of: enqueue, interrupt']),
    ('engine:=foo', ["'engine'", "'foo'", 'one of: hayakoe, openjtalk']),
    ('rate:=9.0', ["'rate'", '9.0', '[0.25, 4]']),
])
def test_invalid_start_up_value_is_one_error_and_a_failed_start(override, words):
    node = NodeProcess({'engine': 'openjtalk'}, extra_args=['-p', override],
                       wait_ready=False)
    try:
        code = node.wait_exit(60)
        log = node.log()
        assert code == EXIT_NOT_STARTED, log
        errors = [line for line in log.splitlines() if '[ERROR]' in line]
        assert len(errors) == 1, log
        for word in words:
            assert word in errors[0], errors[0]
        assert 'fallback' not in log and 'ready:' not in log
    finally:
        node.stop()


def test_unknown_parameter_override_is_named_with_the_closest_one(ros_client):
    node = NodeProcess(dict(OJT, volumee=2.0))
    try:
        warnings = [line for line in node.log().splitlines() if '[WARN]' in line]
        assert any("unknown parameter 'volumee'" in w and "'volume'" in w
                   for w in warnings), node.log()
    finally:
        assert node.stop() == 0, node.log()


def test_shutdown_transition_ends_the_process_with_status_0(ros_client):
    node = NodeProcess(OJT)
    assert change_state(ros_client, node, Transition.TRANSITION_ACTIVE_SHUTDOWN)
    assert node.wait_exit(15) == 0, node.log()
    node.stop()


@pytest.mark.long  # about 7 s here; the node's log is read quick in test_node_driver.py too
def test_one_info_line_per_utterance_and_debug_lines_for_segments(ros_client):
    namespace = new_namespace()  # DEBUG for this node's logger only, not rcl's
    node = NodeProcess(OJT, namespace=namespace,
                       extra_args=['--log-level', f'{namespace[1:]}.tts_node:=debug'])
    try:
        speak_text(ros_client, node, 'こんにちは。今日はいい天気ですね。')
        deadline = time.monotonic() + 5
        while 'succeeded' not in node.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        log = node.log()
        lines = [x for x in log.splitlines() if re.search(r'\[INFO\].*utterance \d+ ', x)]
        assert len(lines) == 1, log
        assert re.search(r"utterance 1 \(topic [0-9a-f]{32}\) "
                         r"'こんにちは。今日はいい天気ですね。': "
                         r'2 segment\(s\), \d+\.\d\d s audio, TTFA \d+\.\d+ s '
                         r'\(start delay \d+\.\d+ s\), RTF \d+\.\d+, \d+ underrun\(s\): '
                         r'succeeded', lines[0]), lines[0]
        debug = [x for x in log.splitlines() if '[DEBUG]' in x and node.name in x]
        assert any('segment' in x for x in debug), log[-3000:]
        assert any('pause' in x for x in debug), log[-3000:]
    finally:
        assert node.stop() == 0, node.log()


@pytest.mark.long  # about 10 s here; the fall-back stays quick (test_node_speech.py)
def test_diagnostics_name_the_fallback_voice_and_reset_with_configure(ros_client,
                                                                      tmp_path):
    node = NodeProcess(dict(engine='hayakoe', fallback_engine='openjtalk',
                            speaker_source=f'file://{tmp_path}/missing',
                            bert_source=f'file://{tmp_path}/missing', chunk=1024))
    try:
        speak_text(ros_client, node, 'はい。')
        pub = ros_client.matched_publisher(node.topic('text'))
        pub.publish(String(data='😀'))  # nothing speakable: last_error is set
        status, values = diag_values(ros_client, node, utterances_spoken='1')
        deadline = time.monotonic() + 10
        while not values['last_error'] and time.monotonic() < deadline:
            status, values = diag_values(ros_client, node)
        assert status.level == b'\x01'  # WARN: the fallback speaks
        assert values['voice'] == 'openjtalk/mei_normal'
        assert values['utterances_spoken'] == '1'
        assert 'nothing speakable' in values['last_error']
        for transition in (Transition.TRANSITION_DEACTIVATE, Transition.TRANSITION_CLEANUP,
                           Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
            assert change_state(ros_client, node, transition)
        _, values = diag_values(ros_client, node, utterances_spoken='0', last_error='')
        assert (values['utterances_spoken'], values['last_error']) == ('0', '')
        ros_client.node.destroy_publisher(pub)
    finally:
        assert node.stop() == 0, node.log()


@pytest.mark.long  # about 5 s here; speaking's flips stay quick (test_node_driver.py)
def test_speaking_stays_true_across_queued_utterances(ros_client):
    node = NodeProcess(OJT)
    try:
        events = []
        qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
        sub = ros_client.node.create_subscription(Bool, node.topic('speaking'),
                                                  lambda m: events.append(m.data), qos)
        action = ros_client.action_client(node.topic('say'))
        goals = [send_goal(ros_client, action, text) for text in ('はい。', 'いいえ。', 'ええ。')]
        results = [wait_future(h.get_result_async(), 60) for h, _ in goals]
        assert all(r.status == GoalStatus.STATUS_SUCCEEDED for r in results)
        deadline = time.monotonic() + 10  # false comes once the last chunk has played
        while len(events) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert events == [False, True, False], events
        ros_client.node.destroy_subscription(sub)
    finally:
        assert node.stop() == 0, node.log()


def _threads(pid: int) -> int:
    status = Path(f'/proc/{pid}/status').read_text()
    match = re.search(r'^Threads:\s+(\d+)', status, re.M)
    assert match, status
    return int(match.group(1))


@pytest.mark.long  # about 7 s here; the queue itself stays quick (test_node_speech.py)
def test_queued_goals_hold_no_threads(ros_client):
    node = NodeProcess(dict(OJT, max_queue=40))
    try:
        action = ros_client.action_client(node.topic('say'))
        handle, _ = send_goal(ros_client, action, 'はい。')
        assert wait_future(handle.get_result_async(), 60).status == \
            GoalStatus.STATUS_SUCCEEDED
        idle = _threads(node.proc.pid)
        goals = [send_goal(ros_client, action, 'あいうえお、かきくけこ。' * 3)
                 for _ in range(30)]
        time.sleep(1.0)
        busy = _threads(node.proc.pid)
        assert busy <= idle + 4, (idle, busy)
        assert change_state(ros_client, node, Transition.TRANSITION_DEACTIVATE)
        results = [wait_future(h.get_result_async(), 30) for h, _ in goals]
        assert all(r.status in (GoalStatus.STATUS_ABORTED, GoalStatus.STATUS_SUCCEEDED)
                   for r in results)
        assert sum('deactivated' in r.result.text for r in results) >= 25
    finally:
        assert node.stop() == 0, node.log()


class _Boom(RuntimeError):
    pass


def test_an_unforeseen_configure_error_is_logged_and_cleaned_up(ros_client, monkeypatch,
                                                               capfd):
    import hayakoe_ros.tts_node as tts_node
    from rclpy.lifecycle import TransitionCallbackReturn

    def broken(*_args, **_kwargs):
        raise _Boom('scheduler could not start')

    monkeypatch.setattr(tts_node, 'SpeechScheduler', broken)
    node = in_process_node(dict(engine='openjtalk', autostart=False))
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        err = capfd.readouterr().err
        assert '_Boom: scheduler could not start' in err
        assert node._loader.engine is None  # the loaded engine was freed
        assert node.diagnostic_status().level == b'\x02'  # ERROR
    finally:
        node.destroy_node()


def test_an_incompatible_hayakoe_falls_back_with_a_warning(ros_client, monkeypatch, capfd,
                                                          tiny_model_root):
    from hayakoe_ros.engines import hayakoe_internals
    from rclpy.lifecycle import TransitionCallbackReturn

    def incompatible():
        raise RuntimeError('hayakoe 9.9 renamed Speaker._style2id')

    monkeypatch.setattr(hayakoe_internals, 'check_compatible', incompatible)
    params = tiny_params(tiny_model_root, fallback_engine='openjtalk', autostart=False)
    node = in_process_node(params)
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        err = capfd.readouterr().err
        assert 'renamed Speaker._style2id' in err and 'fallback voice' in err
        assert node._loader.voice_name == 'openjtalk/mei_normal'
    finally:
        node.trigger_shutdown()
        node.destroy_node()


def test_a_destroyed_node_leaves_the_graph_while_still_referenced(ros_client):
    """destroy_node takes the node off the ROS graph, whoever still holds the object.

    rclpy's lifecycle node kept its state machine, and with it the node: a fleet's robots
    stayed on the graph after a cleanup and configure, listed twice, their lifecycle
    services advertised and unanswered, each reporting two nodes of its name.
    """
    node = in_process_node({'engine': 'openjtalk', 'autostart': False})
    where = (node.get_name(), node.get_namespace())

    def listed() -> bool:
        return where in ros_client.node.get_node_names_and_namespaces()

    deadline = time.monotonic() + 20
    while not listed():
        assert time.monotonic() < deadline, 'the node never reached the graph'
        time.sleep(0.05)
    node.destroy_node()
    deadline = time.monotonic() + 20
    while listed() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not listed(), 'the destroyed node is still on the graph'  # `node` still held
