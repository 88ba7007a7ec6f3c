# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""What common consumers receive from tts_node: every chunk, at the rate they asked for.

* A player like mgonzs13's ``audio_player_node``: SensorDataQoS (best effort, keep-last 5),
  one blocking write per chunk, i.e. it takes chunks at playback rate.
* A ``say`` client whose feedback callback stalls 0.3 s now and then.
* ``output_rate``: one rate on the topic, whichever voice speaks (the fallback included).
"""

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from std_msgs.msg import String

from hayakoe_ros.say_client import FEEDBACK_DEPTH
from ros_utils import NodeProcess, ended, wait_future

pytestmark = pytest.mark.ros

TEXTS = ('こんにちは。今日はいい天気ですね。', 'ロボットです、よろしくお願いします。',
         '三つ目の文です。')


@pytest.mark.long  # about 13 s here; a stalling feedback client stays quick
@pytest.mark.alone  # a player process at playback rate
def test_depth5_best_effort_player_at_playback_rate_loses_no_chunk(ojt_node, ros_client,
                                                                  tmp_path):
    """mgonzs13's player's QoS and consumption (test/blocking_player.py, own process)."""
    topic = ojt_node.topic('audio')
    mark = ojt_node.log_mark()
    reference = ros_client.audio_recorder(topic)  # reliable, depth 1000: everything
    out = tmp_path / 'player.npy'
    player = subprocess.Popen([sys.executable, str(Path(__file__).parent / 'blocking_player.py'),
                               topic, str(out)], stdout=subprocess.PIPE, text=True)
    pub = ros_client.node.create_publisher(String, ojt_node.topic('text'), 10)
    played: list = []  # the player's count of chunks received, as it prints them
    try:
        assert player.stdout.readline().strip() == 'ready'
        threading.Thread(target=lambda: played.extend(int(line) for line in player.stdout),
                         daemon=True).start()
        # What is published reaches both subscribers once the node's audio writer has
        # matched them (it logs each match) and this text writer has matched the node.
        deadline = time.monotonic() + 10
        while (ojt_node.log()[mark:].count(f'{topic}: a subscriber matched') < 2
               or pub.get_subscription_count() < 1) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pub.get_subscription_count() >= 1, 'the node does not take text'
        assert ojt_node.log()[mark:].count(f'{topic}: a subscriber matched') >= 2, \
            ojt_node.log()[mark:]
        for text in TEXTS:  # one after another: each utterance starts on an idle node
            n = reference.count()
            pub.publish(String(data=text))
            reference.wait_quiet(quiet_s=0.8, timeout=60, min_count=n + 1)
        # The player takes chunks at playback rate: it may still hold a few. A lost chunk
        # never arrives: the comparison below then names the shortfall.
        deadline = time.monotonic() + 10
        while (not played or played[-1] < reference.count()) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        player.send_signal(signal.SIGINT)
        player.wait(20)
        ros_client.node.destroy_subscription(reference.sub)
        ros_client.node.destroy_publisher(pub)
    got = np.load(out)
    want = [np.asarray(m.audio.audio_data.int16_data) for _, m in reference.msgs]
    assert len(got) == len(want), f'player got {len(got)} of {len(want)} chunks'
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_feedback_client_stalling_0_3_s_loses_no_chunk(ojt_node, ros_client):
    from audio_common_msgs.action import TTS

    from rclpy.action import ActionClient
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    # The client's own feedback queue must hold a stall's worth of chunks too: the say
    # tool's depth (rclpy's default, 10, is 0.43 s of 2048-frame chunks at 48 kHz).
    action = ActionClient(ros_client.node, TTS, ojt_node.topic('say'),
                          feedback_sub_qos_profile=QoSProfile(
                              depth=FEEDBACK_DEPTH, reliability=ReliabilityPolicy.RELIABLE))
    assert action.wait_for_server(timeout_sec=30)
    # Feedback is volatile: the server's feedback writer must have matched this client's
    # reader before the goal's first chunk. Nothing shows that match from here but a
    # feedback message that arrives: short goals until one has.
    # The answer to a goal from a client the server has not discovered yet can be lost
    # (Fast DDS drops a reply whose reader has not matched within 100 ms): a warm-up goal
    # not answered within 2 s is sent again (the one lost is spoken; it is harmless).
    warmed: list = []
    deadline = time.monotonic() + 30
    while not warmed and time.monotonic() < deadline:
        sent = action.send_goal_async(TTS.Goal(text='あ。'),
                                      feedback_callback=lambda fb: warmed.append(fb))
        until = min(deadline, time.monotonic() + 2.0)
        while not sent.done() and time.monotonic() < until:
            time.sleep(0.01)
        if sent.done():
            wait_future(sent.result().get_result_async(), 30)
    assert warmed, 'no feedback reached this client'
    reference = ros_client.audio_recorder(ojt_node.topic('audio'), node=ojt_node)
    ros_client.wait_for_subscribers(ojt_node.topic('audio'))
    feedback = []

    def on_feedback(fb):
        feedback.append(fb.feedback.audio)
        if len(feedback) % 15 == 1:
            # The scenario, not a wait: a client that stalls (e.g. a disk write or a GC
            # pause) while chunks keep coming.
            time.sleep(0.3)

    text = 'こんにちは。フィードバックを受け取る側が、ときどき止まります。大丈夫でしょうか。'
    handle = wait_future(action.send_goal_async(TTS.Goal(text=text),
                                                feedback_callback=on_feedback), 30)
    # The result only after the feedback: the client drops a goal's feedback taken after
    # its result, and a stall near the end leaves chunks queued when the goal ends.
    assert ended(handle, 60) == GoalStatus.STATUS_SUCCEEDED
    reference.wait_quiet(quiet_s=0.5, timeout=30)
    # The stalled callback catches up with what its queue holds; a lost chunk never
    # arrives: the comparison below then names the shortfall.
    deadline = time.monotonic() + 10
    while len(feedback) < reference.count() and time.monotonic() < deadline:
        time.sleep(0.05)
    want = [m for _, m in reference.msgs]
    assert len(want) > 45  # at least 3 stalls happened while chunks kept coming
    assert len(feedback) == len(want), f'feedback {len(feedback)} of {len(want)} chunks'
    for fb, msg in zip(feedback, want):
        assert fb.header.stamp == msg.header.stamp
    assert wait_future(handle.get_result_async(), 60).status == GoalStatus.STATUS_SUCCEEDED
    ros_client.node.destroy_subscription(reference.sub)
    action.destroy()


# The fall-back voice's rate: long (about 8 s here); the fall-back stays quick
# (test_node_speech.py).
@pytest.mark.parametrize('voice', ['hayakoe',
                                   pytest.param('fallback', marks=pytest.mark.long)])
def test_output_rate_is_the_rate_on_the_topic_for_either_voice(voice, ros_client,
                                                               tiny_model_root):
    if voice == 'hayakoe':  # the tiny model at 44.1 kHz
        root = tiny_model_root
        params = dict(speaker='tiny-jp', speaker_source=f'file://{root}', num_threads=1,
                      bert_source=f'file://{root}', fallback_engine='none')
    else:  # unreachable model: the Open JTalk voice at 48 kHz speaks instead
        params = dict(speaker_source='file:///nonexistent/hayakoe',
                      bert_source='file:///nonexistent/hayakoe')
    node = NodeProcess(dict(params, output_rate=16000, chunk=1024))
    try:
        assert 'Hz resampled from' in node.log()
        rec = ros_client.audio_recorder(node.topic('audio'), node=node)
        action = ros_client.action_client(node.topic('say'))
        ros_client.wait_for_subscribers(node.topic('audio'))
        from audio_common_msgs.action import TTS

        handle = wait_future(action.send_goal_async(TTS.Goal(text='こんにちは。')), 30)
        assert wait_future(handle.get_result_async(), 60).status == \
            GoalStatus.STATUS_SUCCEEDED
        rec.wait_quiet(quiet_s=0.5, timeout=30)
        msgs = [m for _, m in rec.msgs]
        assert {m.audio.info.rate for m in msgs} == {16000}
        stamps = [m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for m in msgs]
        np.testing.assert_allclose(np.diff(stamps), 1024 / 16000, atol=2e-3)
        status = ros_client.diagnostics(node)
        values = {kv.key: kv.value for kv in status.values}
        assert '16000' in values.get('sample_rate_hz', values.get('sample_rate', '')), values
        ros_client.node.destroy_subscription(rec.sub)
    finally:
        assert node.stop() == 0, node.log()
