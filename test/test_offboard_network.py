# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A robot's own tts_node using a host across a real link, and falling back when it fails.

Two network namespaces and a veth link (test/netns.py), multicast blocked, the shipped
discovery profile on both ends (as in test_fleet_network.py): the host runs ``tts_fleet``
(the tiny model, robot r1); the robot runs ``tts_node`` with the Open JTalk voice and
``offboard_action: /fleet/r1/say``, and an observer (test/netns_observer.py) that sends
the robot's ``say`` goals and records its ``audio`` there. The link is cut, or the host
killed, while the robot speaks with the host's voice.
"""

from __future__ import annotations

import re
import signal
import time

import pytest

from ros_utils import NodeProcess, tiny_params
from fleet_net import GOAL_S, READY_S, profile_env
from tools.node_process import DEFAULT_COMMAND, FLEET_COMMAND

# Long (about 100 s here): the fall-back over a cut or shaped link; test_offboard.py
# shows the host voice and the fall-back in the quick set.
pytestmark = [pytest.mark.ros, pytest.mark.long]

SHORT = 'こんにちは。'
#: Twelve short sentences, about 12 s of speech.
LONG = 'ロボットがお知らせをしています。' * 12
STALL_S = 1.0
#: One segment of the robot's own voice, synthesised after the fall-back decision: Open
#: JTalk takes tens of ms for a sentence here; 2 s is the bound a loaded machine keeps.
SEGMENT_S = 2.0


def start_fleet(link, root, tmp_path) -> NodeProcess:
    node = NodeProcess(tiny_params(root, robots=['r1']), namespace='/fleet', name='tts_fleet',
                       command=(*link.prefix(link.host), *FLEET_COMMAND), wait_ready=False,
                       log_dir=tmp_path, env=profile_env('127.0.0.1'))
    link.procs.append(node.proc)
    node.wait_for_log('fleet ready:', READY_S)
    return node


def start_robot(link, tmp_path) -> NodeProcess:
    node = NodeProcess(dict(engine='openjtalk', fallback_engine='none',
                            offboard_action='/fleet/r1/say', offboard_timeout_s=3.0,
                            offboard_stall_s=STALL_S), namespace='/robot',
                       command=(*link.prefix(link.robot), *DEFAULT_COMMAND),
                       wait_ready=False, log_dir=tmp_path, env=profile_env(link.host_ip))
    link.procs.append(node.proc)
    node.wait_for_log('ready: speaking with', READY_S)
    return node


def spoken_by_host(robot: NodeProcess, obs, timeout: float = 60.0) -> None:
    """Send short goals to the robot until one is spoken with the host's voice."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        mark, count = robot.log_mark(), len(obs.of('result'))
        obs.say('/robot/say', SHORT)
        obs.wait(lambda o, n=count: len(o.of('result')) > n, GOAL_S, 'a short goal')
        if '[host /fleet/r1/say]' in robot.log()[mark:]:
            return
        time.sleep(0.5)  # discovery is still under way: the next goal tries again
    raise AssertionError(f'the robot never spoke with the host voice:\n{robot.log()}')


def speak_and_break(obs, robot: NodeProcess, breaking) -> int:
    """Start LONG on the robot, call ``breaking()`` 4 s of audio in; return when (wall ns).

    4 s is inside LONG's second sentence (each about 2.5 s and its pause): the first is
    relayed whole by then, whatever the robot's first chunk carries before it.
    """
    results = len(obs.of('result'))
    mark = robot.log_mark()
    since = time.monotonic()
    obs.say('/robot/say', LONG)
    obs.wait(lambda o: _audio_s(o, since) >= 4.0, 60, '4 s of the robot audio')
    breaking()
    broke = time.time_ns()
    obs.wait(lambda o: len(o.of('result')) > results, GOAL_S, 'the long goal')
    assert obs.of('result')[-1]['status'] == 4, obs.of('result')[-1]  # SUCCEEDED
    found = re.search(r'then onboard from segment (\d+)/', robot.log()[mark:])
    assert found, robot.log()[mark:]
    assert int(found.group(1)) >= 2, 'the first sentence was relayed whole and must not come again'
    return broke


def _audio_s(obs, since: float) -> float:
    return sum(e['n'] / e['rate'] for e in obs.of('audio') if e['t'] >= since)


def assert_went_on_in_time(obs, broke: int) -> None:
    """The robot's audio went on after the break: no gap longer than stall + a segment.

    Times are the chunks' DDS reception in the observer (wall ns, ``rcv``): what a
    subscriber of the robot's audio got and when, not when the observer's Python got
    round to it, which a loaded machine delays by seconds now and then.
    """
    times = [e['rcv'] * 1e-9 for e in obs.of('audio')]
    after = [b - a for a, b in zip(times, times[1:]) if b > broke * 1e-9]
    assert times[-1] > broke * 1e-9 + 2.0, 'little was spoken after the break'
    assert max(after) <= STALL_S + SEGMENT_S, f'a {max(after):.2f} s gap after the break'


@pytest.fixture
def robot_side(netns_link, tiny_model_root, tmp_path, spawn):
    link = netns_link
    fleet = start_fleet(link, tiny_model_root, tmp_path)
    robot = start_robot(link, tmp_path)
    obs = spawn(link.robot, '--listen', '/robot/audio', '--action', '/robot/say')
    obs.wait(lambda o: o.of('server'), 60, "the robot's say action server")
    spoken_by_host(robot, obs)
    return link, fleet, robot, obs


def test_the_link_cut_mid_utterance_the_robot_finishes_onboard_then_uses_the_host_again(
        robot_side):
    link, fleet, robot, obs = robot_side
    broke = speak_and_break(obs, robot, link.cut)
    assert_went_on_in_time(obs, broke)
    link.restore()
    spoken_by_host(robot, obs)
    fleet.stop()


def test_the_host_killed_and_restarted_the_robot_falls_back_then_reconnects(
        robot_side, tiny_model_root, tmp_path):
    link, fleet, robot, obs = robot_side
    broke = speak_and_break(obs, robot, lambda: fleet.proc.send_signal(signal.SIGKILL))
    assert_went_on_in_time(obs, broke)
    fleet.stop()
    fleet = start_fleet(link, tiny_model_root, tmp_path)
    spoken_by_host(robot, obs)
    fleet.stop()
