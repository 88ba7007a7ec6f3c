# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The two-machine harness itself (test/netns.py): the link, its cut, its cleanup."""

from __future__ import annotations

import subprocess
import sys

import pytest

import netns

pytestmark = pytest.mark.unit

PORT = 47123
#: A UDP echo server for 30 s (``-I -S``: a bare interpreter, quick to start).
ECHO = ('import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
        f's.bind(("0.0.0.0", {PORT})); s.settimeout(30); print("up", flush=True)\n'
        'while True:\n    data, peer = s.recvfrom(100); s.sendto(data, peer)')
#: Send one datagram to argv[1], print what comes back within 1 s, or "unreachable" (no
#: route: the link is down at this end) or "timeout".
PING = ('import socket, sys; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
        's.settimeout(1)\n'
        'try:\n'
        f'    s.sendto(b"ping", (sys.argv[1], {PORT})); print(s.recvfrom(100)[0].decode())\n'
        'except socket.timeout:\n    print("timeout")\n'
        'except OSError:\n    print("unreachable")')


def ping(link) -> str:
    """What the host gets back from the robot's echo server."""
    result = link.run(link.host, [sys.executable, '-I', '-S', '-c', PING, link.robot_ip])
    return result.stdout.strip()


def test_the_link_carries_udp_and_a_cut_stops_it(netns_link):
    link = netns_link
    echo = link.popen(link.robot, [sys.executable, '-I', '-S', '-c', ECHO],
                      stdout=subprocess.PIPE, text=True)
    assert echo.stdout is not None and echo.stdout.readline().strip() == 'up'
    assert ping(link) == 'ping'
    link.cut()
    assert ping(link) == 'unreachable'
    link.restore()
    assert ping(link) == 'ping'
    link.shape()
    shown = netns.ip('tc', '-n', link.host, 'qdisc', 'show', 'dev', link.dev[link.host]).stdout
    assert 'tbf' in shown and 'rate 1Mbit' in shown, shown
    assert ping(link) == 'ping'
    # The addresses exist only inside the pair: the root namespace cannot reach them.
    assert link.robot_ip not in netns.ip('-o', 'addr').stdout


def test_everything_is_removed_even_when_the_test_fails():
    with pytest.raises(RuntimeError, match='the test failed'):
        with netns.pair() as link:
            sleeper = link.popen(link.robot, ['sleep', '300'])
            assert netns.pids_in(link.robot) == [sleeper.pid]
            raise RuntimeError('the test failed')
    assert sleeper.poll() is not None  # ended, and reaped
    assert link.leftovers() == []
    assert not {link.host, link.robot} & set(netns.namespaces())


def test_pairs_of_a_dead_run_are_swept():
    gone = subprocess.run([sys.executable, '-I', '-S', '-c', 'import os; print(os.getpid())'],
                          capture_output=True, text=True, timeout=30)
    name = f'hkh-{int(gone.stdout)}-1'  # the name a run with that (dead) pid would give
    if netns.unavailable():
        pytest.skip(netns.unavailable())
    netns.ip('netns', 'add', name)
    try:
        # Another test process's pair() may sweep it first: what counts is that it goes.
        netns.remove_stale()
        assert name not in netns.namespaces()
    finally:
        netns.remove_namespace(name)
