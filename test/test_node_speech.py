# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""tts_node as a real process: text topic, say action, chunks, pauses, cancel, queue, errors.

The node runs the tiny random-weight hayakoe model (deterministic settings: noise, noise_w
and sdp_ratio 0) or the Open JTalk voice; messages cross the real rmw (Fast DDS).
"""

import time

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.qos import ReliabilityPolicy
from std_msgs.msg import String
from std_srvs.srv import Trigger
from hayakoe_ros.node.runner import EXIT_NOT_STARTED

from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler
from ros_utils import CHUNK, NodeProcess, send_goal, tiny_params, wait_future
from tools.submit import submit_text

pytestmark = pytest.mark.ros

TWO_SENTENCES = 'こんにちは。今日はいい天気ですね。'


@pytest.fixture(scope='module')
def tiny_node(tiny_model_root):
    node = NodeProcess(tiny_params(tiny_model_root))
    yield node
    assert node.stop() == 0, node.log()


def expected_audio(engine, voice, text):
    """What the pipeline produces for ``text``, rendered in-process (pacing off)."""
    out = []
    sched = SpeechScheduler(engine, lambda u, c: out.append(c.samples),
                            SchedulerConfig(pacing=False, chunk_frames=CHUNK))
    try:
        utt = submit_text(sched, text, voice)
        assert utt.wait(60)
        return np.concatenate(out), utt
    finally:
        sched.shutdown()


def test_text_topic_is_spoken_as_chunks_of_the_engines_audio(tiny_node, ros_client,
                                                              tiny_engine, det_voice):
    rec = ros_client.audio_recorder(tiny_node.topic('audio'), node=tiny_node)
    pub = ros_client.matched_publisher(tiny_node.topic('text'))
    ros_client.wait_for_subscribers(tiny_node.topic('audio'))
    pub.publish(String(data=TWO_SENTENCES))
    rec.wait_quiet(quiet_s=1.5)
    expected, utt = expected_audio(tiny_engine, det_voice, TWO_SENTENCES)
    got = rec.samples()
    assert got.size == expected.size  # same number of full chunks
    assert np.max(np.abs(got.astype(np.int32) - expected.astype(np.int32))) <= 2
    duration = utt.audio_samples / 44100
    assert (got.size - CHUNK) / 44100 < duration <= got.size / 44100
    msgs = [m for _, m in rec.msgs]
    for msg in msgs:
        info = msg.audio.info
        assert (info.format, info.channels, info.rate, info.chunk) == (8, 1, 44100, CHUNK)
        assert len(msg.audio.audio_data.int16_data) == CHUNK
        assert msg.header.frame_id == 'robot_mouth'
    stamps = [m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for m in msgs]
    np.testing.assert_allclose(np.diff(stamps), CHUNK / 44100, atol=2e-3)
    # Paced: the stream arrived at about playback speed, not all at once.
    arrival = rec.msgs[-1][0] - rec.msgs[0][0]
    assert arrival > duration - 0.3 - 0.2
    ros_client.node.destroy_subscription(rec.sub)
    ros_client.node.destroy_publisher(pub)


def test_say_action_feedback_result_and_goals_queue(tiny_node, ros_client):
    action = ros_client.action_client(tiny_node.topic('say'))
    first, fb1 = send_goal(ros_client, action, 'こんにちは。元気ですか。')
    second, fb2 = send_goal(ros_client, action, '二つ目です。', language='ja')
    r1 = wait_future(first.get_result_async(), 60)
    r2 = wait_future(second.get_result_async(), 60)
    assert r1.status == GoalStatus.STATUS_SUCCEEDED
    assert r2.status == GoalStatus.STATUS_SUCCEEDED
    assert r1.result.text == 'こんにちは。元気ですか。'
    assert r2.result.text == '二つ目です。'
    assert len(fb1) > 2 and len(fb2) > 0
    assert all(len(f.audio.audio.audio_data.int16_data) == CHUNK for _, f in fb1 + fb2)
    # The second goal waited: all of the first's audio came before any of its own.
    assert fb1[-1][0] <= fb2[0][0]
    s1 = fb1[-1][1].audio.header.stamp
    s2 = fb2[0][1].audio.header.stamp
    assert (s2.sec + s2.nanosec * 1e-9) > (s1.sec + s1.nanosec * 1e-9)


@pytest.mark.parametrize('fields, needle', [
    ({'language': 'fr'}, "unsupported language 'fr'"),
    ({'language': 'zh-CN'}, "unsupported language 'zh-CN'"),
    ({'rate': 0.0}, 'rate 0.0 is out of range'),
    ({'rate': 9.0}, 'rate 9.0 is out of range'),
    ({'volume': -1.0}, 'volume -1.0 is out of range'),
    ({'volume': float('nan')}, 'volume nan is out of range'),
])
def test_bad_goal_fields_abort_with_a_message(tiny_node, ros_client, fields, needle):
    action = ros_client.action_client(tiny_node.topic('say'))
    handle, feedback = send_goal(ros_client, action, 'こんにちは。', **fields)
    result = wait_future(handle.get_result_async(), 30)
    assert result.status == GoalStatus.STATUS_ABORTED
    assert needle in result.result.text
    assert feedback == []


@pytest.mark.parametrize('text, needle', [
    ('', 'text is empty'), ('   ', 'text is empty'), ('。！？', 'nothing speakable'),
    ('😀🎉', 'nothing speakable'), ('あ' * 100_000, 'the limit is max_chars=2000'),
])
def test_bad_text_aborts_and_the_node_keeps_serving(tiny_node, ros_client, text, needle):
    action = ros_client.action_client(tiny_node.topic('say'))
    queued, _ = send_goal(ros_client, action, 'まだ話しています。')
    handle, feedback = send_goal(ros_client, action, text)
    result = wait_future(handle.get_result_async(), 30)
    assert result.status == GoalStatus.STATUS_ABORTED
    assert needle in result.result.text
    assert feedback == []
    # Nothing already queued was lost.
    assert wait_future(queued.get_result_async(), 60).status == GoalStatus.STATUS_SUCCEEDED


def test_english_default_and_empty_language_are_accepted(tiny_node, ros_client):
    action = ros_client.action_client(tiny_node.topic('say'))
    for lang in ('en', '', 'ja-JP', 'jp'):
        handle, _ = send_goal(ros_client, action, 'OKです。', language=lang)
        assert wait_future(handle.get_result_async(), 60).status == \
            GoalStatus.STATUS_SUCCEEDED


@pytest.mark.alone  # feedback arrival within 50 ms of the cancel's answer
def test_canceled_goal_publishes_nothing_after_the_cancel_is_acknowledged(
        tiny_node, ros_client):
    rec = ros_client.audio_recorder(tiny_node.topic('audio'), node=tiny_node)
    ros_client.wait_for_subscribers(tiny_node.topic('audio'))
    action = ros_client.action_client(tiny_node.topic('say'))
    long_text = '。'.join(['今日はとても長いお話をします'] * 8) + '。'
    handle, feedback = send_goal(ros_client, action, long_text)
    after, _ = send_goal(ros_client, action, 'キャンセルの後です。')
    deadline = time.monotonic() + 30
    while len(feedback) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    cancel = wait_future(handle.cancel_goal_async(), 10)
    acked_at = time.monotonic()
    assert len(cancel.goals_canceling) == 1
    result = wait_future(handle.get_result_async(), 30)
    assert result.status == GoalStatus.STATUS_CANCELED
    assert wait_future(after.get_result_async(), 60).status == GoalStatus.STATUS_SUCCEEDED
    # Feedback is this goal's audio: none was sent after the acknowledgement (allowing
    # for messages already in flight on the wire, which carry earlier stamps).
    late = [t for t, _ in feedback if t > acked_at + 0.05]
    assert late == []
    ros_client.node.destroy_subscription(rec.sub)


def test_stop_service_silences_and_flushes_the_queue(tiny_node, ros_client):
    action = ros_client.action_client(tiny_node.topic('say'))
    goals = [send_goal(ros_client, action, t) for t in
             ('一つ目の長い説明をします。とても長いです。', '二つ目です。', '三つ目です。')]
    handles = [handle for handle, _ in goals]
    deadline = time.monotonic() + 30  # the first is speaking, the others wait
    while not goals[0][1] and time.monotonic() < deadline:
        time.sleep(0.01)
    stop = ros_client.node.create_client(Trigger, tiny_node.topic('stop'))
    assert stop.wait_for_service(timeout_sec=10)
    response = wait_future(stop.call_async(Trigger.Request()), 10)
    assert response.success and 'canceled' in response.message
    statuses = [wait_future(h.get_result_async(), 30) for h in handles]
    assert all(s.status == GoalStatus.STATUS_ABORTED for s in statuses)
    assert all('stop' in s.result.text for s in statuses)
    handle, _ = send_goal(ros_client, action, 'また話せます。')
    assert wait_future(handle.get_result_async(), 60).status == GoalStatus.STATUS_SUCCEEDED


def test_best_effort_subscriber_receives_the_audio(tiny_node, ros_client, tiny_engine,
                                                   det_voice):
    rec = ros_client.audio_recorder(tiny_node.topic('audio'), ReliabilityPolicy.BEST_EFFORT,
                                     node=tiny_node)
    ros_client.wait_for_subscribers(tiny_node.topic('audio'))
    action = ros_client.action_client(tiny_node.topic('say'))
    handle, _ = send_goal(ros_client, action, 'こんにちは。')
    assert wait_future(handle.get_result_async(), 60).status == GoalStatus.STATUS_SUCCEEDED
    rec.wait_quiet(quiet_s=0.5, timeout=10)
    expected, _ = expected_audio(tiny_engine, det_voice, 'こんにちは。')
    assert rec.samples().size == expected.size
    ros_client.node.destroy_subscription(rec.sub)


def test_fallback_to_openjtalk_when_the_model_is_unreachable(ros_client):
    node = NodeProcess({'speaker_source': 'file:///nonexistent/hayakoe',
                        'bert_source': 'file:///nonexistent/hayakoe', 'chunk': CHUNK})
    try:
        action = ros_client.action_client(node.topic('say'))
        handle, feedback = send_goal(ros_client, action, 'こんにちは。')
        result = wait_future(handle.get_result_async(), 60)
        assert result.status == GoalStatus.STATUS_SUCCEEDED
        assert feedback and feedback[0][1].audio.audio.info.rate == 48000
        audio = np.concatenate([np.asarray(f.audio.audio.audio_data.int16_data)
                                for _, f in feedback])
        assert np.sqrt(np.mean(audio.astype(np.float64) ** 2)) > 300  # real speech
        log = node.log()
        warns = [line for line in log.splitlines() if '[WARN]' in line]
        assert len(warns) == 1, log
        assert 'fallback' in warns[0] and '/nonexistent/hayakoe' in warns[0]
        status = ros_client.diagnostics(node)
        values = {kv.key: kv.value for kv in status.values}
        assert status.level == DiagnosticStatus.WARN
        assert values['fallback_in_use'] == 'true' and values['engine'] == 'openjtalk'
        assert 'fallback voice in use' in status.message
    finally:
        assert node.stop() == 0


def test_load_failure_is_fatal_without_fallback(tmp_path):
    node = NodeProcess({'speaker_source': f'file://{tmp_path}', 'bert_source':
                        f'file://{tmp_path}', 'fallback_engine': 'none'}, wait_ready=False)
    assert node.wait_exit(120) == EXIT_NOT_STARTED, node.log()
    log = node.log()
    assert 'cannot load hayakoe speaker' in log and 'fatal' in log
    node.stop()
