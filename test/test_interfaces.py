# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The test copy of audio_common_msgs: definitions, type hashes, and two-process traffic.

The interfaces must be field for field those of mgonzs13/audio_common 4.0.x, or the type
hashes differ and a real audio_common node would not talk to hayakoe_ros.  The traffic
tests start ``test/interfaces_peer.py`` in a second process (publisher / action server)
and receive here, over rmw_fastrtps_cpp, in the domain the conftest fixture picked.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid

from ament_index_python.packages import get_package_share_directory
from audio_common_msgs.action import TTS
from audio_common_msgs.msg import Audio, AudioData, AudioInfo, AudioStamped
import pytest
import rclpy
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.utilities import get_rmw_implementation_identifier

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import interfaces_peer  # noqa: E402  (test helper beside this file)

pytestmark = pytest.mark.ros

PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'interfaces_peer.py')
WAIT_S = 30.0  # upper bound for discovery + delivery of any one thing

# Field names and types, in order, as rosidl_generator_py reports them.
EXPECTED_FIELDS = {
    AudioData: [('float32_data', 'sequence<float>'), ('int32_data', 'sequence<int32>'),
                ('int16_data', 'sequence<int16>'), ('int8_data', 'sequence<int8>'),
                ('uint8_data', 'sequence<uint8>')],
    AudioInfo: [('format', 'int32'), ('channels', 'int32'), ('rate', 'int32'),
                ('chunk', 'int32')],
    Audio: [('audio_data', 'audio_common_msgs/AudioData'),
            ('info', 'audio_common_msgs/AudioInfo')],
    AudioStamped: [('header', 'std_msgs/Header'), ('audio', 'audio_common_msgs/Audio')],
    TTS.Goal: [('text', 'string'), ('language', 'string'), ('volume', 'float'),
               ('rate', 'float')],
    TTS.Result: [('text', 'string')],
    TTS.Feedback: [('audio', 'audio_common_msgs/AudioStamped')],
}

# RIHS01 type hashes of the upstream definitions (mgonzs13/audio_common 4.0.10, built with
# rosidl 4.9 / Kilted). Comments in the .msg files do not enter the hash.
UPSTREAM_HASHES = {
    'msg/AudioData': 'RIHS01_28873bc02f2963cbc2e6e7dbadd149384f99daddba98ddc2a7cd2550a0b9b5c3',
    'msg/AudioInfo': 'RIHS01_2418e6f9b3639c2844652701c489705b045d5b970c0674573a0f668d6af3b58b',
    'msg/Audio': 'RIHS01_56bb1432a8bc1cf3579fa7dcfa6107180f29e799b30e51a880e5591ccc789de2',
    'msg/AudioStamped':
        'RIHS01_f6ad36427cfe3e7132f91509dca5a3be31b9b681f182db6e606e95e781b21611',
    'action/TTS': 'RIHS01_315fc3de6b938ee38851c0a5258bdc643d9d5537a1184b720c09fd04b8c8b38e',
}


def type_hash_string(type_hash):
    """Format an rclpy ``TypeHash`` as ``RIHS01_<hex>``."""
    return f'RIHS{type_hash.version:02d}_{type_hash.value.hex()}'


@pytest.fixture
def ros_node():
    """Yield ``(node, executor)`` in a fresh rclpy context; shut everything down after."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f'test_interfaces_{uuid.uuid4().hex[:8]}', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        yield node, executor
    finally:
        executor.shutdown(timeout_sec=5.0)
        node.destroy_node()
        rclpy.try_shutdown(context=context)


@pytest.fixture
def start_peer():
    """Return a function that starts interfaces_peer.py; every peer is stopped at teardown."""
    procs = []

    def start(mode, name):
        """Start the peer in ``mode`` on ``name``; return its Popen (output in a temp file)."""
        log = tempfile.TemporaryFile(mode='w+')
        proc = subprocess.Popen(
            [sys.executable, PEER, mode, name, '--lifetime', str(3 * WAIT_S)],
            stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy())
        procs.append((proc, log))
        return proc

    yield start
    for proc, log in procs:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10.0)
        log.seek(0)
        output = log.read()
        log.close()
        if output.strip():
            print(f'--- peer {proc.args[2:4]} (rc {proc.returncode}) ---\n{output}')


def spin_until(executor, predicate, timeout, peer=None):
    """Spin ``executor`` until ``predicate()`` is true; fail after ``timeout`` seconds.

    If ``peer`` (a Popen) exits meanwhile, fail at once instead of waiting it out.
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f'timed out after {timeout} s')
        if peer is not None and peer.poll() is not None:
            pytest.fail(f'peer process exited early with rc {peer.returncode}')
        executor.spin_once(timeout_sec=0.05)


def call_with_retry(executor, send, peer, attempts=4, per_try_s=WAIT_S / 4):
    """Call ``send()`` (it returns a future) until a future completes; return its result.

    A service reply can be lost while discovery settles: the server may get the request
    before its reply writer has matched this client's reply reader, and rmw_fastrtps then
    drops the reply after 100 ms ('failed to send response (timeout): client will not
    receive response'; ros2/rmw_fastrtps#842, ros2/ros2#1253).  Actions ride on services,
    so a goal or result request that got no reply in ``per_try_s`` is simply sent again.
    """
    for _attempt in range(attempts):
        future = send()
        deadline = time.monotonic() + per_try_s
        while not future.done() and time.monotonic() < deadline:
            if peer.poll() is not None:
                pytest.fail(f'peer process exited early with rc {peer.returncode}')
            executor.spin_once(timeout_sec=0.05)
        if future.done():
            return future.result()
    pytest.fail(f'no reply after {attempts} attempts of {per_try_s} s')


def test_rmw_is_fastrtps():
    """The venv's rclpy runs on rmw_fastrtps_cpp (the rmw the tests mean to exercise)."""
    assert get_rmw_implementation_identifier() == 'rmw_fastrtps_cpp'


@pytest.mark.parametrize('msg_type', list(EXPECTED_FIELDS), ids=lambda t: t.__name__)
def test_fields_match_audio_common_4_0(msg_type):
    """Field names, types and order are exactly those of audio_common 4.0.x."""
    assert list(msg_type.get_fields_and_field_types().items()) == EXPECTED_FIELDS[msg_type]


def test_tts_goal_defaults():
    """TTS goals default to language "en", volume 1.0, rate 1.0 and an empty text."""
    goal = TTS.Goal()
    assert (goal.text, goal.language, goal.volume, goal.rate) == ('', 'en', 1.0, 1.0)


@pytest.mark.parametrize('name', sorted(UPSTREAM_HASHES))
def test_type_hashes_match_upstream(name):
    """The generated type descriptions hash to the upstream RIHS01 values."""
    path = os.path.join(get_package_share_directory('audio_common_msgs'), name + '.json')
    with open(path, encoding='utf-8') as fh:
        hashes = json.load(fh)['type_hashes']
    assert hashes[0]['type_name'] == 'audio_common_msgs/' + name
    assert hashes[0]['hash_string'] == UPSTREAM_HASHES[name]


@pytest.mark.timeout(120)
def test_audio_stamped_crosses_processes(ros_node, start_peer):
    """An AudioStamped published by another process arrives intact, with the upstream hash."""
    node, executor = ros_node
    topic = f'/hayakoe_ros_test/audio_{uuid.uuid4().hex[:8]}'
    received = []
    node.create_subscription(
        AudioStamped, topic, received.append,
        QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    peer = start_peer('publisher', topic)

    spin_until(executor, lambda: len(received) >= 2, WAIT_S, peer)

    msg = received[0]
    seq = msg.header.stamp.sec - 1000
    expected = interfaces_peer.make_audio(seq)
    assert msg == expected
    assert list(msg.audio.audio_data.int16_data) == [seq * 10 + i for i in range(4)]
    assert msg.audio.info.rate == interfaces_peer.SAMPLE_RATE
    assert msg.header.frame_id == interfaces_peer.FRAME_ID
    assert received[1].header.stamp.sec > msg.header.stamp.sec

    infos = node.get_publishers_info_by_topic(topic)
    assert [i.topic_type for i in infos] == ['audio_common_msgs/msg/AudioStamped']
    assert type_hash_string(infos[0].topic_type_hash) == UPSTREAM_HASHES['msg/AudioStamped']


@pytest.mark.timeout(120)
def test_tts_action_crosses_processes(ros_node, start_peer):
    """A TTS goal with default fields goes to another process; feedback and result return."""
    node, executor = ros_node
    action = f'/hayakoe_ros_test/say_{uuid.uuid4().hex[:8]}'
    client = ActionClient(node, TTS, action)
    peer = start_peer('action_server', action)

    deadline = time.monotonic() + WAIT_S
    while not client.server_is_ready():
        assert peer.poll() is None, f'peer exited early with rc {peer.returncode}'
        assert time.monotonic() < deadline, 'action server not discovered in time'
        executor.spin_once(timeout_sec=0.1)

    feedback = []  # every FeedbackMessage, of whichever goal attempt it belongs to
    goal = TTS.Goal(text='こんにちは、世界。')
    goal_handle = call_with_retry(
        executor, lambda: client.send_goal_async(goal, feedback_callback=feedback.append),
        peer)
    assert goal_handle.accepted
    response = call_with_retry(executor, goal_handle.get_result_async, peer)

    def ours():
        """Feedback of the accepted goal (an earlier, unanswered attempt may run too)."""
        goal_id = bytes(goal_handle.goal_id.uuid)
        return [m.feedback for m in feedback if bytes(m.goal_id.uuid) == goal_id]

    # Feedback travels on a topic, the result on a service: let late feedback land.
    spin_until(executor, lambda: len(ours()) >= interfaces_peer.FEEDBACK_COUNT, WAIT_S, peer)

    assert response.status == 4  # action_msgs/GoalStatus.STATUS_SUCCEEDED
    # The server echoes the goal it received: the defaults crossed the wire unchanged.
    assert response.result.text == interfaces_peer.goal_echo(goal)
    assert response.result.text == 'こんにちは、世界。|en|1.0|1.0'

    assert len(ours()) == interfaces_peer.FEEDBACK_COUNT
    for seq, message in enumerate(ours()):
        assert message.audio == interfaces_peer.make_audio(seq, base=len(goal.text))
    client.destroy()
