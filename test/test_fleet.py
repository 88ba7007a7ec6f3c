# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""tts_fleet as a real process: one engine, a tts_node per robot, over the rmw.

The fleet runs the tiny random-weight hayakoe model (deterministic settings) with robots
r1 and r2 (r3 added by a reconfigure); each robot is driven at its own namespace.
"""

from __future__ import annotations

import time

import pytest
from action_msgs.msg import GoalStatus
from lifecycle_msgs.msg import Transition
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger
from hayakoe_ros.node.runner import EXIT_NOT_STARTED

from ros_utils import (change_state, ended, send_goal, start_fleet, tiny_params,
                       wait_future)

pytestmark = pytest.mark.ros

LONG = '。'.join(['今日はとても長いお知らせをします'] * 40) + '。'


@pytest.fixture(scope='module')
def fleet(tiny_model_root):
    node = start_fleet(tiny_params(tiny_model_root, robots=['r1', 'r2']))
    yield node
    assert node.stop() == 0, node.log()


def set_params(client, node_name: str, **values) -> list:
    """Set parameters of the node ``node_name`` (fully qualified); return the results."""
    srv = client.node.create_client(SetParameters, f'{node_name}/set_parameters')
    assert srv.wait_for_service(timeout_sec=10)
    req = SetParameters.Request(parameters=[Parameter(k, value=v).to_parameter_msg()
                                            for k, v in values.items()])
    results = wait_future(srv.call_async(req), 10).results
    client.node.destroy_client(srv)
    return results


def first_arrival(feedback: list, timeout: float = 60.0) -> float:
    """Arrival time of a goal's first feedback chunk (waits for it)."""
    deadline = time.monotonic() + timeout
    while not feedback:
        assert time.monotonic() < deadline, 'no audio'
        time.sleep(0.002)
    return feedback[0][0]


def succeeded(handle, timeout: float = 120.0):
    result = wait_future(handle.get_result_async(), timeout)
    assert result.status == GoalStatus.STATUS_SUCCEEDED, result.result.text
    return result


def test_each_robot_speaks_at_its_own_namespace(fleet, ros_client):
    rec1 = ros_client.audio_recorder(fleet.topic('r1/audio'), node=fleet)
    rec2 = ros_client.audio_recorder(fleet.topic('r2/audio'))
    ros_client.wait_for_subscribers(fleet.topic('r1/audio'))
    ros_client.wait_for_subscribers(fleet.topic('r2/audio'))
    r1 = ros_client.action_client(fleet.topic('r1/say'))
    r2 = ros_client.action_client(fleet.topic('r2/say'))
    h1, fb1 = send_goal(ros_client, r1, 'こんにちは。')
    # The result only after the feedback: the client drops a goal's feedback taken after
    # its result (15 of 54 chunks on a loaded CI machine).
    assert ended(h1) == GoalStatus.STATUS_SUCCEEDED
    rec1.wait_quiet(quiet_s=0.5, timeout=10)
    deadline = time.monotonic() + 10
    while len(fb1) < rec1.count() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fb1 and rec1.count() == len(fb1)
    assert succeeded(h1).result.text == 'こんにちは。'
    assert rec2.count() == 0  # r1's speech is r1's only
    h2, fb2 = send_goal(ros_client, r2, '二台目です。')
    succeeded(h2)
    assert fb2 and fb2[0][1].audio.audio.info.rate == 44100
    # /diagnostics: each robot's status names it; the fleet's names its robots.
    from diagnostic_msgs.msg import DiagnosticArray

    seen: dict = {}
    sub = ros_client.node.create_subscription(
        DiagnosticArray, '/diagnostics', lambda m: seen.update({s.name: s for s in m.status}),
        10)
    deadline = time.monotonic() + 10
    names = [fleet.topic(f'{r}/tts_node: speech synthesis') for r in ('r1', 'r2')]
    fleet_name = fleet.topic('tts_fleet: speech fleet')
    while not all(n in seen for n in names + [fleet_name]) and time.monotonic() < deadline:
        time.sleep(0.1)
    ros_client.node.destroy_subscription(sub)
    assert all(n in seen for n in names + [fleet_name]), sorted(seen)
    values = {kv.key: kv.value for kv in seen[fleet_name].values}
    assert values['robots'] == 'r1 r2' and values['engine'] == 'hayakoe/tiny-jp'
    for name in (rec1.sub, rec2.sub):
        ros_client.node.destroy_subscription(name)


@pytest.mark.long  # about 12 s here; stop on one robot stays quick
@pytest.mark.long  # about 8 s here; stop on one robot stays quick
def test_bad_text_on_one_robot_aborts_only_that_goal(fleet, ros_client):
    r1 = ros_client.action_client(fleet.topic('r1/say'))
    r2 = ros_client.action_client(fleet.topic('r2/say'))
    h2, fb2 = send_goal(ros_client, r2, '二台目はまだ話しています。もう少し続きます。')
    first_arrival(fb2)
    for text, needle in (('', 'text is empty'), ('😀🎉', 'nothing speakable'),
                         ('あ' * 100_000, 'max_chars')):
        handle, feedback = send_goal(ros_client, r1, text)
        result = wait_future(handle.get_result_async(), 30)
        assert result.status == GoalStatus.STATUS_ABORTED and needle in result.result.text
        assert feedback == []
    succeeded(h2)
    handle, _ = send_goal(ros_client, r1, '一台目も話せます。')
    succeeded(handle)


def test_stop_on_one_robot_leaves_the_other_speaking(fleet, ros_client):
    r1 = ros_client.action_client(fleet.topic('r1/say'))
    r2 = ros_client.action_client(fleet.topic('r2/say'))
    h1, fb1 = send_goal(ros_client, r1, LONG)
    h2, fb2 = send_goal(ros_client, r2, '止められないのは二台目です。まだ続きます。')
    first_arrival(fb1)
    first_arrival(fb2)
    stop = ros_client.node.create_client(Trigger, fleet.topic('r1/stop'))
    assert stop.wait_for_service(timeout_sec=10)
    response = wait_future(stop.call_async(Trigger.Request()), 10)
    stopped_at = time.monotonic()
    assert response.success and '1 utterance(s) canceled' in response.message
    result = wait_future(h1.get_result_async(), 30)
    assert result.status == GoalStatus.STATUS_ABORTED and 'stop' in result.result.text
    succeeded(h2)
    assert fb2[-1][0] > stopped_at  # r2 went on speaking after r1 was stopped
    ros_client.node.destroy_client(stop)


@pytest.mark.parametrize('robots, needle', [
    ('[r1, r2, r1]', "duplicate robot name(s): 'r1'"),
    ('[r1, 2nd, a-b]', "invalid robot name(s): '2nd', 'a-b'"),
    ('r1', 'is not a string array'),
])
def test_invalid_robots_fail_with_a_clear_error(robots, needle):
    node = start_fleet({'engine': 'openjtalk', 'robots': robots}, wait=False)
    code = node.wait_exit(60)
    log = node.log()
    assert code == EXIT_NOT_STARTED, log
    assert needle in log and 'invalid configuration' in log, log
    assert 'Traceback' not in log, log
    assert 'loaded in' not in log  # refused before any model was loaded
    node.stop()


# Here, just before r1 is cleaned up: with pacing off, r1 publishes its whole
# announcement (157 s of audio) ahead of playback, and its next utterance rightly
# waits for that audio to play; the cleanup below gives r1 a new scheduler.
@pytest.mark.long  # about 12 s here; stop on one robot stays quick
@pytest.mark.alone  # idle against loaded timing
def test_a_long_announcement_does_not_hold_another_robots_reply(fleet, ros_client):
    """r2's one-word reply waits for at most a segment of r1's announcement."""
    r1 = ros_client.action_client(fleet.topic('r1/say'))
    r2 = ros_client.action_client(fleet.topic('r2/say'))
    # r1 synthesises without pause (no pacing): it asks for the engine all the time.
    assert set_params(ros_client, fleet.topic('r1/tts_node'), pacing=False)[0].successful
    try:
        idle = []
        for _ in range(3):
            t0 = time.monotonic()
            handle, fb = send_goal(ros_client, r2, 'はい。')
            idle.append(first_arrival(fb) - t0)
            succeeded(handle)
        h1, fb1 = send_goal(ros_client, r1, LONG)
        first_arrival(fb1)
        t0 = time.monotonic()
        h2, fb2 = send_goal(ros_client, r2, 'はい。')
        loaded = first_arrival(fb2) - t0
        r2_first = fb2[0][0]
        succeeded(h2)
        succeeded(h1)
        r1_span = fb1[-1][0] - fb1[0][0]
        after = sum(1 for t, _ in fb1 if t > r2_first)
    finally:
        set_params(ros_client, fleet.topic('r1/tts_node'), pacing=True)
    # r2 spoke while most of r1's announcement was still to come...
    assert after > len(fb1) / 2, (after, len(fb1))
    # ...and its reply came about as fast as on an idle fleet: an unfair engine lock
    # would have made it wait for the rest of the announcement (r1_span).
    assert loaded - max(idle) < 0.25 * r1_span, (loaded, idle, r1_span)


def test_a_robot_cleaned_up_on_its_own_comes_back_with_the_fleet(fleet, ros_client):
    """A robot's own lifecycle services take it down alone; the fleet brings it back."""
    import types

    robot = types.SimpleNamespace(name='tts_node', topic=lambda n: fleet.topic(f'r1/{n}'))
    whole = types.SimpleNamespace(name='tts_fleet', topic=fleet.topic)
    assert change_state(ros_client, robot, Transition.TRANSITION_DEACTIVATE)
    assert change_state(ros_client, robot, Transition.TRANSITION_CLEANUP)
    assert change_state(ros_client, whole, Transition.TRANSITION_DEACTIVATE)
    mark = fleet.log_mark()
    assert change_state(ros_client, whole, Transition.TRANSITION_ACTIVATE), fleet.log()[mark:]
    assert 'loaded in' not in fleet.log()[mark:]  # the shared engine stays
    for name in ('r1', 'r2'):
        action = ros_client.action_client(fleet.topic(f'{name}/say'))
        handle, feedback = send_goal(ros_client, action, 'もどりました。')
        succeeded(handle)
        assert feedback


def test_reconfigure_adds_a_robot(fleet, ros_client):
    fleet_node = fleet.topic('tts_fleet')
    refused = set_params(ros_client, fleet_node, robots=['r1', 'r2', 'r3'])[0]
    assert not refused.successful and 'next configure' in refused.reason
    fleet.name = 'tts_fleet'  # change_state() addresses <namespace>/<name>
    assert change_state(ros_client, fleet, Transition.TRANSITION_DEACTIVATE)
    assert change_state(ros_client, fleet, Transition.TRANSITION_CLEANUP)
    bad = set_params(ros_client, fleet_node, robots=['r1', 'r1'])[0]
    assert not bad.successful and "duplicate robot name(s): 'r1'" in bad.reason
    assert set_params(ros_client, fleet_node, robots=['r1', 'r2', 'r3'])[0].successful
    mark = fleet.log_mark()
    assert change_state(ros_client, fleet, Transition.TRANSITION_CONFIGURE)
    assert change_state(ros_client, fleet, Transition.TRANSITION_ACTIVATE)
    fleet.wait_for_log('fleet ready: 3 robot(s)', 30, after=mark)
    assert fleet.log()[mark:].count('loaded in') == 1  # the model, once for three robots
    for robot in ('r3', 'r1'):
        action = ros_client.action_client(fleet.topic(f'{robot}/say'))
        handle, feedback = send_goal(ros_client, action, 'ただいま。')
        succeeded(handle)
        assert feedback
