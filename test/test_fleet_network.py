# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""tts_fleet on one machine, a robot on another: two network namespaces and a veth link.

The host namespace runs ``tts_fleet`` (the tiny model, robots r1 and r2); the robot's
side is test/netns_observer.py processes in the robot namespace, which report what they
receive as JSON lines (the test process cannot reach either namespace's DDS graph).
Multicast is blocked on the link, as on Wi-Fi, and every process uses the shipped
discovery profile as README's "Discovery on Wi-Fi" says to (config/fastdds_fleet_peers.xml,
the robot's peer the host's address): without it the robot would not find the fleet at
all (test_discovery_profile.py shows both). Each machine has its own machine id, so the
traffic crosses the link rather than shared memory (test/netns.py).
"""

from __future__ import annotations

import time
from typing import Callable

import pytest

from fleet_net import READY_S, profile_env, succeeded
from netns_observer import Observer
from ros_utils import CHUNK, NodeProcess, tiny_params
from tools.node_process import FLEET_COMMAND

# Long (about 65 s here): the fleet over a shaped veth link; test_fleet.py (the fleet),
# test_netns.py and test_discovery_profile.py (the namespaces) are in the quick set.
# alone: each chunk within 50 ms of its time over the shaped link
pytestmark = [pytest.mark.ros, pytest.mark.long, pytest.mark.alone]

SHORT = 'こんにちは。ネットワークの向こうから話しています。'
LONG = ('今日は細い回線の向こうから長めのお知らせをします。音声は一秒に七百キロビットほど'
        '必要です。最後の音まで時間通りに届くでしょうか。')


@pytest.fixture
def fleet(netns_link, tiny_model_root, tmp_path):
    """``tts_fleet`` (robots r1, r2, namespace /fleet) in the host namespace."""
    link = netns_link
    node = NodeProcess(tiny_params(tiny_model_root, robots=['r1', 'r2']), namespace='/fleet',
                       name='tts_fleet', command=(*link.prefix(link.host), *FLEET_COMMAND),
                       wait_ready=False, log_dir=tmp_path, env=profile_env('127.0.0.1'))
    link.procs.append(node.proc)
    node.wait_for_log('fleet ready:', READY_S)
    yield node
    assert node.stop() == 0, node.log()


def matched(fleet: NodeProcess, topic: str, count: int, timeout: float = 60.0) -> None:
    """Wait until the fleet logs ``count`` subscribers matched on ``topic``.

    The writer's side: what it publishes from then on is sent to them all.
    """
    fleet.wait_for_log(f'{topic}: a subscriber matched ({count} now)', timeout)


def chunks(obs: Observer, ev: str, **match) -> list:
    """``(samples, CRC-32)`` of each audio chunk ``obs`` reported as ``ev``, in order."""
    return [(e['n'], e['crc']) for e in obs.of(ev, **match)]


def wait_equal(counts: Callable[[], list], timeout: float, what: str) -> None:
    """Wait until every count in ``counts()`` is the same, non-zero and still for 0.5 s."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        now = counts()
        if now != last:
            last, since = now, time.monotonic()
        elif len(set(now)) == 1 and now[0] and time.monotonic() - since >= 0.5:
            return
        time.sleep(0.05)
    raise AssertionError(f'{what}: counts {counts()} did not settle equal in {timeout} s')


def test_a_robot_hears_every_chunk_as_soon_as_the_host_does(netns_link, fleet, spawn):
    link = netns_link
    host = spawn(link.host, '--listen', '/fleet/r1/audio')
    robot = spawn(link.robot, '--listen', '/fleet/r1/audio', '--action', '/fleet/r1/say')
    robot.wait(lambda o: o.of('server'), 60, 'the say action server across the link')
    matched(fleet, '/fleet/r1/audio', 2)  # both listeners, before the goal
    before = link.stats(link.robot)
    robot.say('/fleet/r1/say', SHORT)
    succeeded(robot, '/fleet/r1/say')
    wait_equal(lambda: [len(host.of('audio')), len(robot.of('audio')),
                        len(robot.of('feedback'))], 15, 'chunks heard on each side')
    feedback = chunks(robot, 'feedback')
    # Every chunk, once, in order, bit-exact: on the robot's topic, in the goal's feedback
    # (both across the link) and on the host's topic.
    assert chunks(robot, 'audio') == chunks(host, 'audio') == feedback
    # Times to first audio from the goal's sending, by the DDS reception timestamps (the
    # observers' own wake-ups left out); both listeners were matched before it.
    sent = robot.of('sent')[0]['wall']
    host_ttfa = (host.of('audio')[0]['rcv'] - sent) * 1e-9
    robot_ttfa = (robot.of('audio')[0]['rcv'] - sent) * 1e-9
    written = (robot.of('audio')[0]['src'] - sent) * 1e-9  # the fleet's write, both sides'
    report = (f'time to first audio: robot {robot_ttfa * 1e3:.1f} ms, host '
              f'{host_ttfa * 1e3:.1f} ms (the fleet wrote it at {written * 1e3:.1f} ms); '
              f'{len(feedback)} chunks')
    print(report)
    assert robot_ttfa <= host_ttfa + 0.1, report
    after = link.stats(link.robot)
    audio_bytes = 2 * sum(n for n, _ in feedback)  # int16
    # The audio came over the veth (on the topic, and as feedback to the client and to the
    # observer's own feedback reader), not through shared memory...
    assert after['rx_bytes'] - before['rx_bytes'] >= 2 * audio_bytes, (before, after)
    # ...and neither side sent a multicast packet: the profile's discovery is unicast.
    assert after['mcast_dropped'] == 0 and link.stats(link.host)['mcast_dropped'] == 0


def test_a_1_mbit_link_carries_the_audio_in_time(netns_link, fleet, spawn):
    """All audio arrives over a 1 Mbit/s token bucket, none of it later than a bound.

    The bound: the fleet publishes a chunk no later than its playback time, the header
    stamp (its pacer moves the playback clock forward rather than stamp a late chunk
    early). On the link, a packet waits at most the bucket's ``latency`` (one that would
    wait longer is dropped, and a drop makes the chunk later than any such bound: reliable
    DDS resends it only after the reader's next acknowledgement), then takes its own size
    at the link's rate to cross; ``SLACK_S`` covers the receiving host's threads. So each
    chunk is received by its stamp + latency + size / rate + slack, provided the link
    keeps up with the audio: 706 kbit/s at 44.1 kHz, 77 % of 1 Mbit/s with the headers,
    so the queue never holds more than the pacer's lead.
    """
    rate_bps, latency_s, slack_s = 1_000_000, 0.4, 0.05
    link = netns_link
    link.shape(rate='1mbit', burst='32kbit', latency='400ms')
    # The say client on the host, as a dialogue stack there would be: a client on the
    # robot gets every chunk a second time as feedback, 1.4 Mbit/s in all.
    host = spawn(link.host, '--listen', '/fleet/r1/audio', '--action', '/fleet/r1/say')
    robot = spawn(link.robot, '--listen', '/fleet/r1/audio')
    host.wait(lambda o: o.of('server'), 60, 'the say action server')
    matched(fleet, '/fleet/r1/audio', 2)
    # Discovery sends the fleet's whole graph (its endpoints, with their types: 100-200
    # kB) to the robot, seconds at 1 Mbit/s, dropping packets as the bucket overflows;
    # speech is measured on the settled link, where a robot spends its life.
    settled_s = link.wait_quiet(link.host, below_bps=0.02 * rate_bps)
    host.say('/fleet/r1/say', LONG)
    succeeded(host, '/fleet/r1/say')
    wait_equal(lambda: [len(host.of('audio')), len(robot.of('audio'))], 15,
               'chunks heard on each side')
    heard = robot.of('audio')
    assert chunks(robot, 'audio') == chunks(host, 'audio')
    sample_rate = heard[0]['rate']
    message_bits = 8 * (2 * CHUNK + 300)  # samples, headers (CDR, RTPS, UDP, 2 x IP)
    assert sample_rate / CHUNK * message_bits < rate_bps  # the link keeps up: the premise
    bound = latency_s + message_bits / rate_bps + slack_s
    late = [(e['rcv'] - e['stamp']) * 1e-9 for e in heard]
    worst = max(range(len(late)), key=late.__getitem__)
    report = (f'{sum(e["n"] for e in heard) / sample_rate:.1f} s of audio at 1 Mbit/s '
              f'(discovery settled in {settled_s:.1f} s): chunk {worst} of {len(heard)} '
              f'received {late[worst] * 1e3:.0f} ms after its playback time, the last '
              f'{late[-1] * 1e3:.0f} ms; bound {bound * 1e3:.0f} ms; '
              f'{link.tbf_stats(link.host)}')
    print(report)
    assert late[worst] <= bound, report


def test_two_robots_speak_at_once_and_each_hears_only_its_own(netns_link, fleet, spawn):
    link = netns_link
    r1 = spawn(link.robot, '--listen', '/fleet/r1/audio', '--action', '/fleet/r1/say')
    r2 = spawn(link.robot, '--listen', '/fleet/r2/audio', '--action', '/fleet/r2/say')
    for obs in (r1, r2):
        obs.wait(lambda o: o.of('server'), 60, 'the say action server')
    matched(fleet, '/fleet/r1/audio', 1)
    matched(fleet, '/fleet/r2/audio', 1)
    r1.say('/fleet/r1/say', SHORT)
    r2.say('/fleet/r2/say', '二台目のロボットも同時に話しています。')
    succeeded(r1, '/fleet/r1/say')
    succeeded(r2, '/fleet/r2/say')
    for obs in (r1, r2):
        wait_equal(lambda obs=obs: [len(obs.of('audio')), len(obs.of('feedback'))], 15,
                   'chunks heard and fed back')
    a1, a2 = chunks(r1, 'audio'), chunks(r2, 'audio')
    # Each robot heard exactly its own goal's chunks: none of the other's, though both
    # were speaking at the same time.
    assert a1 == chunks(r1, 'feedback') and a2 == chunks(r2, 'feedback')
    assert a1 != a2
    t1 = [e['t'] for e in r1.of('audio')]
    t2 = [e['t'] for e in r2.of('audio')]
    assert t1[0] < t2[-1] and t2[0] < t1[-1], 'the two utterances did not overlap'
