# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""CPU an idle node takes: ``tts_node``, a 4-robot ``tts_fleet`` and ``player_node``.

``python bench/idle_cpu.py [--seconds 15]``

What a robot pays while it says nothing. Each process is started (Open JTalk engine: no
model to load), speaks one short text so that every lazy path has run, then sits idle;
its CPU time (user + system, all threads, from ``/proc``) over ``--seconds`` of wall
time is the figure, in per cent of one core. An idle rclpy process is not free: each
wake of its executor rebuilds the wait set of every entity (services, topics, timers,
actions), about 1-3 ms of Python on the machine of 2026-12-03, so a timer that ticks
with nothing to do costs that at its rate. ``player_node`` needs PulseAudio (a null
sink this script starts) and is skipped without it.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import sys
import tempfile
import time

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.node_driver import BenchClient, read_cpu_s  # noqa: E402
from tools.node_process import FLEET_COMMAND, NodeProcess  # noqa: E402

ROBOTS = ('r1', 'r2', 'r3', 'r4')
SETTLE_S = 2.0  # after the warm-up text: its last callbacks and log lines


def _idle_percent(pid: int, seconds: float) -> float:
    """CPU of process ``pid`` over the next ``seconds`` of wall time, % of one core."""
    cpu0, t0 = read_cpu_s(pid), time.monotonic()
    time.sleep(seconds)  # the measurement window itself, not a settle
    return 100.0 * (read_cpu_s(pid) - cpu0) / (time.monotonic() - t0)


def _node(seconds: float, log_dir: Path) -> float:
    node = NodeProcess({'engine': 'openjtalk', 'fallback_engine': 'none'}, log_dir=log_dir)
    client = None
    try:
        client = BenchClient(node, 'bench_idle_node')
        client.speak_topic('こんにちは。')
        time.sleep(SETTLE_S)
        return _idle_percent(node.pid, seconds)
    finally:
        if client is not None:
            client.close()
        node.stop()


def _fleet(seconds: float, log_dir: Path) -> float:
    fleet = NodeProcess({'engine': 'openjtalk', 'fallback_engine': 'none',
                         'robots': list(ROBOTS)}, name='tts_fleet', command=FLEET_COMMAND,
                        log_dir=log_dir, wait_ready=False)
    try:
        fleet.wait_for_log('fleet ready:', 300)
        time.sleep(SETTLE_S)
        return _idle_percent(fleet.pid, seconds)
    finally:
        fleet.stop()


def _player(seconds: float, log_dir: Path) -> dict:
    from tools.pulse import PulseServer, missing

    why = missing()
    if why:
        return {'skipped': why}
    pulse = PulseServer(log_dir, rate=48000)
    player = None
    try:
        player = NodeProcess({}, name='player_node', command=(sys.executable, '-m',
                                                              'hayakoe_ros.player_node'),
                             env=pulse.client_env(), log_dir=log_dir)
        time.sleep(SETTLE_S)
        return {'percent': _idle_percent(player.pid, seconds)}
    finally:
        if player is not None:
            player.stop()
        pulse.stop()


def measure(seconds: float = 15.0) -> dict:
    """Idle CPU of each process, % of one core (needs ``rclpy.init()`` done).

    Returns:
        ``{'seconds', 'tts_node', 'tts_fleet', 'robots', 'player_node'}``:
        ``player_node`` is ``{'percent': x}`` or ``{'skipped': reason}``.
    """
    with tempfile.TemporaryDirectory(prefix='hayakoe_idle_') as tmp:
        log_dir = Path(tmp)
        return {'seconds': seconds, 'tts_node': _node(seconds, log_dir),
                'tts_fleet': _fleet(seconds, log_dir), 'robots': len(ROBOTS),
                'player_node': _player(seconds, log_dir)}


def markdown(r: dict) -> str:
    """The table of :func:`measure`'s result."""
    player = r['player_node']
    played = (f"{player['percent']:.1f} %" if 'percent' in player
              else f"skipped: {player['skipped']}")
    return '\n'.join([
        f"CPU while idle, per cent of one core over {r['seconds']:g} s (Open JTalk engine, "
        'after one short text):', '',
        '| process | idle CPU |', '|---|---|',
        f"| tts_node | {r['tts_node']:.1f} % |",
        f"| tts_fleet, {r['robots']} robots | {r['tts_fleet']:.1f} % |",
        f'| player_node (PulseAudio null sink) | {played} |'])


def main(argv=None) -> int:
    """Print the idle CPU table (and write ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=15.0)
    parser.add_argument('--json', type=Path)
    args = parser.parse_args(argv)
    import rclpy

    from tools import dds_domain

    os.environ['ROS_DOMAIN_ID'] = str(dds_domain.claim())  # no other run's
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    rclpy.init()
    try:
        r = measure(args.seconds)
    finally:
        rclpy.shutdown()
    if args.json:
        args.json.write_text(json.dumps(r, indent=1) + '\n', encoding='utf-8')
    print(markdown(r))
    return 0


if __name__ == '__main__':
    sys.exit(main())
