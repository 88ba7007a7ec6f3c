# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Discovery between two machines whose link drops multicast, as Wi-Fi often does.

Two network namespaces joined by a veth link (test/netns.py); a ``String`` talker on the
host side, a listener on the robot side (test/netns_observer.py). With ROS 2's default
discovery (multicast) the robot never hears the host once multicast is blocked, and does
when it is not; README's two remedies, the shipped Fast DDS profile
(config/fastdds_fleet_peers.xml) and ``ROS_STATIC_PEERS`` with
``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``, find it without sending a multicast packet.
"""

from __future__ import annotations

import functools
from pathlib import Path
import shutil
import subprocess
import sys

import pytest

from netns_observer import Observer

pytestmark = pytest.mark.ros

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / 'config' / 'fastdds_fleet_peers.xml'
#: Seconds the robot is given to hear the host when it must not: discovery by either
#: remedy took 0.2-0.3 s here, and the default participant announces itself every 3 s.
NEVER_S = 6.0
TOPIC = '/hk_discovery_check'

DEFAULT = {'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET'}
PROFILE_ENV = {'FASTDDS_DEFAULT_PROFILES_FILE': str(PROFILE),
               'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SYSTEM_DEFAULT'}


def env(base: dict, **extra) -> dict:
    """Changes to the test's environment: ``base``, ``extra``, no other profile or peers.

    As :func:`netns.environ` reads them: None unsets a name.
    """
    return {'FASTDDS_DEFAULT_PROFILES_FILE': None, 'ROS_STATIC_PEERS': None, **base, **extra}


def talk_and_listen(link, host_env: dict, robot_env: dict) -> tuple:
    """Start the talker and the listener; return them once both are up."""
    talker = Observer(functools.partial(link.popen, link.host, env=host_env),
                      ['--talk', TOPIC, '--lifetime', '60'])
    listener = Observer(functools.partial(link.popen, link.robot, env=robot_env),
                        ['--strings', TOPIC, '--lifetime', '60'])
    for obs in (talker, listener):
        obs.wait(lambda o: o.of('up'), 60, 'the observer')
    return talker, listener


def heard(listener: Observer) -> bool:
    return bool(listener.of('string', topic=TOPIC))


@pytest.mark.parametrize('remedy', ['profile', 'static_peers'])
def test_a_remedy_finds_the_host_without_multicast(netns_link, remedy):
    link = netns_link
    if remedy == 'profile':
        host_env = env(PROFILE_ENV, HAYAKOE_FLEET_PEER='127.0.0.1')
        robot_env = env(PROFILE_ENV, HAYAKOE_FLEET_PEER=link.host_ip)
    else:
        host_env = env({'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'})
        robot_env = env({'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'},
                        ROS_STATIC_PEERS=link.host_ip)
    talker, listener = talk_and_listen(link, host_env, robot_env)
    try:
        listener.wait(heard, 30, 'message from the host')
    finally:
        talker.close()
        listener.close()
    stats = link.stats(link.host), link.stats(link.robot)
    # Neither side sent a multicast packet (each would have been dropped and counted).
    assert [s['mcast_dropped'] for s in stats] == [0, 0], stats


@pytest.mark.long  # a variant of the profile; the remedies stay quick
def test_the_profile_with_the_range_unset_also_announces_by_multicast(netns_link):
    """Why README says SYSTEM_DEFAULT: unset (SUBNET), rmw_fastrtps adds the group."""
    link = netns_link
    unset = dict(PROFILE_ENV, ROS_AUTOMATIC_DISCOVERY_RANGE=None)
    talker, listener = talk_and_listen(link, env(unset, HAYAKOE_FLEET_PEER='127.0.0.1'),
                                       env(unset, HAYAKOE_FLEET_PEER=link.host_ip))
    try:
        listener.wait(heard, 30, 'message from the host')
        listener.wait(lambda o: link.stats(link.robot)['mcast_dropped'] > 0, 30,
                      'a multicast announcement')
    finally:
        talker.close()
        listener.close()


@pytest.mark.long  # about 7 s here: the control; the remedies that work stay quick
def test_default_discovery_fails_once_multicast_is_blocked(netns_link):
    link = netns_link
    talker, listener = talk_and_listen(link, env(DEFAULT), env(DEFAULT))
    try:
        with pytest.raises(AssertionError, match='no message'):
            listener.wait(heard, NEVER_S, 'message from the host')
    finally:
        talker.close()
        listener.close()
    # Both tried, by multicast: what the block dropped is what discovery needed.
    assert all(link.stats(n)['mcast_dropped'] > 0 for n in (link.host, link.robot))


def test_default_discovery_works_when_multicast_crosses():
    """The control for the test above: the same pair, multicast let through."""
    import netns

    with netns.pair(multicast=True) as link:
        talker, listener = talk_and_listen(link, env(DEFAULT), env(DEFAULT))
        try:
            listener.wait(heard, 30, 'message from the host')
        finally:
            talker.close()
            listener.close()
    assert not link.leftovers(), link.leftovers()


def test_the_profile_without_a_peer_is_refused_loudly(netns_link):
    """HAYAKOE_FLEET_PEER unset: Fast DDS logs the error, falls back to multicast."""
    link = netns_link
    lone = Observer(functools.partial(link.popen, link.robot, env=env(PROFILE_ENV)),
                    ['--strings', TOPIC, '--lifetime', '60'])
    try:
        lone.wait(lambda o: o.of('up'), 60, 'the observer')
        lone.wait(lambda o: link.stats(link.robot)['mcast_dropped'] > 0, 30,
                  'a multicast announcement')
    finally:
        lone.close()
    assert f"Error parsing '{PROFILE}'" in ''.join(lone.stderr), lone.log()


@pytest.mark.skipif(shutil.which('xmllint') is None, reason='xmllint is not installed')
def test_the_profile_is_valid_for_fast_dds():
    """The profile validates against the schema of the Fast DDS in the venv."""
    schema = Path(sys.prefix) / 'share' / 'fastdds' / 'fastdds_profiles.xsd'
    if not schema.is_file():
        pytest.skip(f'no Fast DDS schema at {schema}')
    result = subprocess.run(['xmllint', '--noout', '--schema', str(schema), str(PROFILE)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
