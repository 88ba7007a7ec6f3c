# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A robot's tts_node speaking through a host (tts_fleet), over the rmw, and falling back.

The host runs the tiny hayakoe model (44.1 kHz) for robot r1; the robot's own voice is
Open JTalk (48 kHz), as on a Raspberry Pi. The robot's ``say`` goals, ``audio`` and
``marks`` are what a robot's dialogue stack and player see.
"""

from __future__ import annotations

import json
import re
import signal
import time

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from hayakoe_ros.node.runner import EXIT_NOT_STARTED

from ros_utils import NodeProcess, send_goal, start_fleet, tiny_params, wait_future

pytestmark = pytest.mark.ros

TEXT = 'おはようございます。今日は晴れです。'
LONG = 'これは長いお知らせです。' * 12


def robot_params(host: NodeProcess, **extra) -> dict:
    params = dict(engine='openjtalk', fallback_engine='none', chunk=1024,
                  offboard_action=host.topic('r1/say'), offboard_timeout_s=3.0,
                  offboard_stall_s=1.0, gapless=False)
    params.update(extra)
    return params


def host_found(client, robot: NodeProcess, found: bool = True, timeout: float = 30.0):
    """Wait until the robot's /diagnostics say whether it sees the host's action."""
    want = 'found' if found else 'not found'
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        values = {kv.key: kv.value for kv in client.diagnostics(robot).values}
        if values.get('offboard_host') == want:
            return values
    raise AssertionError(f'the robot never reported the host {want}')


class Marks:
    """Every JSON mark on a topic, by utterance id."""

    def __init__(self, client, topic: str) -> None:
        self.items: list = []
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.sub = client.node.create_subscription(
            String, topic, lambda m: self.items.append(json.loads(m.data)), qos)

    def of(self, key: str, kind: str) -> list:
        return [m for m in list(self.items) if m['utterance'] == key and m['type'] == kind]


def goal_key(handle) -> str:
    return bytes(handle.goal_id.uuid).hex()


def result_of(handle, timeout: float = 120.0):
    result = wait_future(handle.get_result_async(), timeout)
    assert result.status == GoalStatus.STATUS_SUCCEEDED, result.result.text
    return result


def samples(feedback: list) -> np.ndarray:
    return np.concatenate([np.asarray(fb.audio.audio.audio_data.int16_data, np.int16)
                           for _, fb in feedback])


@pytest.fixture
def host(tiny_model_root):
    node = start_fleet(tiny_params(tiny_model_root, robots=['r1']))
    yield node
    node.stop()


def test_the_robot_speaks_with_the_host_voice_at_its_own_rate_and_relays_marks(
        host, ros_client):
    robot = NodeProcess(robot_params(host))
    try:
        host_found(ros_client, robot)
        host_marks = Marks(ros_client, host.topic('r1/marks'))
        robot_marks = Marks(ros_client, robot.topic('marks'))
        host_audio = ros_client.audio_recorder(host.topic('r1/audio'))
        ros_client.wait_for_subscribers(host.topic('r1/marks'))
        ros_client.wait_for_subscribers(robot.topic('marks'))
        ros_client.wait_for_subscribers(host.topic('r1/audio'))
        say = ros_client.action_client(robot.topic('say'))
        handle, feedback = send_goal(ros_client, say, TEXT)
        assert result_of(handle).result.text == TEXT
        host_audio.wait_quiet(quiet_s=0.5, timeout=10)
        robot.wait_for_log(f"[host {host.topic('r1/say')}]", 10)
        # The robot publishes at its own voice's rate (Open JTalk: 48 kHz) what the host
        # spoke at 44.1 kHz: the same seconds of audio.
        rates = {fb.audio.audio.info.rate for _, fb in feedback}
        assert rates == {48000}
        robot_s = samples(feedback).size / 48000
        host_s = host_audio.samples().size / 44100
        assert abs(robot_s - host_s) < 0.05, (robot_s, host_s)
        # The host's words, at the offsets of the robot's text, on the robot's marks.
        key = goal_key(handle)
        deadline = time.monotonic() + 10
        while not robot_marks.of(key, 'end') and time.monotonic() < deadline:
            time.sleep(0.05)
        hosted = [k for k in {m['utterance'] for m in host_marks.items}]
        assert len(hosted) == 1
        host_words = [(m['start'], m['end']) for m in host_marks.of(hosted[0], 'word')]
        robot_words = [(m['start'], m['end']) for m in robot_marks.of(key, 'word')]
        assert host_words and robot_words == host_words
        assert robot_marks.of(key, 'end')[0]['heard'] == TEXT
    finally:
        assert robot.stop() == 0, robot.log()


@pytest.mark.long  # about 45 s here; the fall-back at the start stays quick
def test_the_host_killed_mid_utterance_the_robot_finishes_it_then_uses_the_host_again(
        tiny_model_root, ros_client):
    host = start_fleet(tiny_params(tiny_model_root, robots=['r1']))
    robot = NodeProcess(robot_params(host))
    try:
        host_found(ros_client, robot)
        marks = Marks(ros_client, robot.topic('marks'))
        ros_client.wait_for_subscribers(robot.topic('marks'))
        say = ros_client.action_client(robot.topic('say'))
        handle, feedback = send_goal(ros_client, say, LONG)
        # The host is killed 3 s of audio into the text: sentence 2 or 3 is speaking.
        deadline = time.monotonic() + 60
        while len(feedback) * 1024 < 3 * 48000 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(feedback) * 1024 >= 3 * 48000, 'the robot spoke too little'
        host.proc.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        result = result_of(handle)
        assert result.result.text == LONG
        robot.wait_for_log('then onboard from segment', 10)
        cut = int(re.search(r'then onboard from segment (\d+)/', robot.log()).group(1))
        assert cut >= 2, robot.log()
        # Every sentence was heard; the one cut twice (from its start), none other again.
        key = goal_key(handle)
        deadline = time.monotonic() + 10
        while not marks.of(key, 'end') and time.monotonic() < deadline:
            time.sleep(0.05)
        starts = [m['start'] for m in marks.of(key, 'sentence')]
        size = len('これは長いお知らせです。')
        # The sentence cut is heard again when its start had been relayed.
        expected = [i * size for i in range(12)]
        assert starts in (expected, expected[:cut] + expected[cut - 1:]), (starts, cut)
        assert marks.of(key, 'end')[0]['heard'] == LONG
        # After the kill the robot's own voice went on: audio kept coming, and within
        # offboard_stall_s plus one segment (a short sentence's synthesis; 3 s is loose).
        arrivals = [t for t, _ in feedback]
        gaps = [b - a for a, b in zip(arrivals, arrivals[1:]) if b > killed_at]
        assert arrivals[-1] > killed_at + 1.0, 'nothing was spoken after the kill'
        assert max(gaps) < 1.0 + 3.0, max(gaps)
        host.stop()
        host = start_fleet(tiny_params(tiny_model_root, robots=['r1']),
                           namespace=host.namespace)
        host_found(ros_client, robot)
        mark = robot.log_mark()
        handle, _ = send_goal(ros_client, say, TEXT)
        result_of(handle)
        robot.wait_for_log(f"[host {host.topic('r1/say')}]", 10, after=mark)
    finally:
        assert robot.stop() == 0, robot.log()
        host.stop()


def test_an_action_that_does_not_exist_is_reported_and_the_robot_speaks_onboard(ros_client):
    robot = NodeProcess(dict(engine='openjtalk', fallback_engine='none',
                             offboard_action='/nowhere/r9/say'))
    try:
        values = host_found(ros_client, robot, found=False)
        assert values['offboard_action'] == '/nowhere/r9/say'
        say = ros_client.action_client(robot.topic('say'))
        handle, feedback = send_goal(ros_client, say, TEXT)
        result_of(handle)
        assert feedback
        robot.wait_for_log('[onboard: no action server at /nowhere/r9/say', 10)
        values = {kv.key: kv.value for kv in ros_client.diagnostics(robot).values}
        assert 'no action server' in values['offboard_last_failure']
    finally:
        assert robot.stop() == 0, robot.log()


def test_an_invalid_action_name_fails_the_configure_with_its_name(ros_client):
    robot = NodeProcess(dict(engine='openjtalk', fallback_engine='none',
                             offboard_action='/fleet/r1/say here'), wait_ready=False)
    try:
        assert robot.wait_exit(60) == EXIT_NOT_STARTED, robot.log()
        assert "offboard_action '/fleet/r1/say here' is not a valid action name" in robot.log()
    finally:
        robot.stop()
