# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A robot's cancel of a host goal goes out again until the host takes it.

A link cut past the DDS lease loses the cancel request the robot sent meanwhile, and the
host then spoke the abandoned goal to its end. Here the host is an action server in this
process (a real rmw) that turns the first cancel request down, as if it never came: the
robot's :class:`~hayakoe_ros.node.offboard.OffboardVoice` must send it again, and the
host's goal must end canceled long before its 30 s of audio.
"""

import threading
import time

import numpy as np
import pytest

pytestmark = pytest.mark.ros


@pytest.fixture
def pair(ros_test_domain):
    """A host node with a slow ``say`` server and a robot node, spun in the background."""
    import rclpy
    from audio_common_msgs.action import TTS
    from rclpy.action import ActionServer, CancelResponse
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.context import Context
    from rclpy.executors import MultiThreadedExecutor

    from hayakoe_ros.node.messages import chunk_to_msg
    from hayakoe_ros.speech import AudioChunk

    ctx = Context()
    rclpy.init(context=ctx)
    namespace = f'/cancel_{int(time.monotonic() * 1000) % 100000}'
    host = rclpy.create_node('host', namespace=namespace, context=ctx)
    robot = rclpy.create_node('robot', namespace=namespace, context=ctx)
    group = ReentrantCallbackGroup()
    record = {'cancels': [], 'ended': None, 'reject': 1, 'chunks_after_cancel': 0}

    def on_cancel(_handle):
        record['cancels'].append(time.monotonic())
        return CancelResponse.REJECT if len(record['cancels']) <= record['reject'] \
            else CancelResponse.ACCEPT

    def execute(handle):
        samples = np.full(1600, 1000, np.int16)  # 0.1 s at 16 kHz
        for i in range(300):  # 30 s of audio, at its rate
            if handle.is_cancel_requested:
                handle.canceled()
                record['ended'] = 'canceled'
                return TTS.Result(text='')
            chunk = AudioChunk(samples=samples, valid_frames=samples.size, sample_rate=16000,
                               play_time=0.0, index=i)
            handle.publish_feedback(TTS.Feedback(audio=chunk_to_msg(chunk, 0, 'host')))
            record['chunks_after_cancel'] += 1 if record['cancels'] else 0
            time.sleep(0.1)
        handle.succeed()
        record['ended'] = 'succeeded'
        return TTS.Result(text='')

    server = ActionServer(host, TTS, f'{namespace}/say', execute, callback_group=group,
                          cancel_callback=on_cancel)
    executor = MultiThreadedExecutor(num_threads=4, context=ctx)
    executor.add_node(host)
    executor.add_node(robot)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    yield robot, f'{namespace}/say', group, record
    executor.shutdown()
    server.destroy()
    rclpy.try_shutdown(context=ctx)
    thread.join(10)


def _canceled_while_speaking(pair, rejects: int = 1) -> dict:
    """The robot calls the host, hears its first audio, cancels; the host's record.

    The host turns the first ``rejects`` cancel requests down. Returns once the host's
    goal ended (or after 20 s).
    """
    from hayakoe_ros.node.offboard import OffboardVoice
    from hayakoe_ros.speech.remote import RemoteAudio

    robot, action, group, record = pair
    record['reject'] = rejects
    voice = OffboardVoice(robot, action, 100, group)
    deadline = time.monotonic() + 20
    while not voice.available:
        assert time.monotonic() < deadline, 'the host was never found'
        time.sleep(0.05)
    call = voice.call('長いお知らせです。', 1.0)
    event = call.get(20)
    assert isinstance(event, RemoteAudio), event  # the host speaks
    call.cancel()
    deadline = time.monotonic() + 20
    while record['ended'] is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return record


def test_a_cancel_turned_down_is_sent_again_until_the_host_takes_it(pair):
    record = _canceled_while_speaking(pair)
    assert record['ended'] == 'canceled', record
    assert len(record['cancels']) >= 2  # the first was turned down, a later one taken


def test_the_hosts_audio_for_a_goal_given_up_sends_the_cancel_again_at_once(pair):
    """A host that speaks on for a goal the robot gave up is told again, at once.

    Requests sent while a host was stalled (SIGSTOP, 2-8 s) were not taken when it went
    on, and the host spoke up to a retry period (2 s) more of the abandoned goal, busy
    for the robot's next utterance. Here the host turns three cancels down, speaking 0.1
    s chunks meanwhile: each chunk that reaches the robot sends the cancel again (at
    most every 0.1 s), so the host stops after a few chunks, not after seconds of them.
    """
    record = _canceled_while_speaking(pair, rejects=3)
    assert record['ended'] == 'canceled', record
    assert len(record['cancels']) == 4, record
    # Without the resend on audio: a retry every 0.25, 0.5, 1 s: about 17 chunks.
    assert record['chunks_after_cancel'] <= 10, record
