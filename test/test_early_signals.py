# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A node stopped while its modules still load ends cleanly (status 0, no traceback).

``ros2 launch`` stopped at once (Ctrl-C, or launch's SIGTERM) signals the nodes while
they import rclpy, NumPy and the speech pipeline (0.3-0.4 s here). The nodes run from
the console scripts ``ros2 run`` runs (the ament layout in the venv); the signal goes
out once NumPy's extension is mapped into the process, which is in the middle of those
imports and well before the node's runner would install handlers of its own.
"""

from __future__ import annotations

import os
from pathlib import Path
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.ros

#: A shared object the imports map partway: NumPy's core, loaded by the message types.
MID_IMPORT = '_multiarray_umath'


def _maps(pid: int) -> str:
    try:
        return Path(f'/proc/{pid}/maps').read_text()
    except (FileNotFoundError, ProcessLookupError):
        return ''


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM], ids=['INT', 'TERM'])
@pytest.mark.parametrize('script', ['tts_node', 'tts_fleet', 'player_node'])
def test_a_signal_while_the_node_loads_ends_it_cleanly(script, signum, tmp_path):
    exe = Path(sys.prefix) / 'lib' / 'hayakoe_ros' / script
    assert exe.is_file(), f'{exe} missing: make setup lays out the console scripts'
    env = dict(os.environ, ROS_LOG_DIR=str(tmp_path))
    proc = subprocess.Popen([str(exe), '--ros-args', '-p', 'autostart:=false'], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while MID_IMPORT not in _maps(proc.pid) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.001)
        assert MID_IMPORT in _maps(proc.pid), 'the node never loaded NumPy'
        proc.send_signal(signum)
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    assert code == 0, (code, err)
    assert 'Traceback' not in err, err
    # Said by the entry point: the signal came before the node's modules had loaded.
    assert f'{script}: {signum.name} while loading: not started' in err, err


def _handled_by_python(pid: int, signum: int) -> bool:
    """Whether ``signum`` is caught by a handler (not ignored, not the default action)."""
    try:
        status = Path(f'/proc/{pid}/status').read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    caught = int(next(line for line in status.splitlines()
                      if line.startswith('SigCgt')).split()[1], 16)
    return bool(caught & (1 << (signum - 1)))


def _second_signal_while_ending(args: list, first_at: str, tmp_path) -> tuple:
    """Run ``tts_node``, SIGTERM it at ``first_at``, SIGINT it once it shuts down.

    The second signal goes out once SIGINT is no longer caught by a Python handler (the
    interpreter's shutdown). Returns ``(status, stderr, whether it was sent)``.
    """
    exe = Path(sys.prefix) / 'lib' / 'hayakoe_ros' / 'tts_node'
    env = dict(os.environ, ROS_LOG_DIR=str(tmp_path))
    proc = subprocess.Popen([str(exe), '--ros-args', *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines: list = []
    try:
        if first_at == 'loading':
            deadline = time.monotonic() + 30
            while MID_IMPORT not in _maps(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.001)
        else:
            for line in proc.stderr:
                lines.append(line)
                if first_at in line:
                    break
        proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 30
        # Wait until the handlers are gone (or the process is): the interpreter's
        # shutdown, where a default action would kill it.
        while proc.poll() is None and _handled_by_python(proc.pid, signal.SIGINT) \
                and time.monotonic() < deadline:
            time.sleep(0.001)
        sent = proc.poll() is None
        if sent:
            proc.send_signal(signal.SIGINT)
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, ''.join(lines) + proc.stderr.read(), sent


@pytest.mark.parametrize('first_at, args', [
    ('loading', ['-p', 'autostart:=false']),
    ('ready:', ['-p', 'engine:=openjtalk']),
], ids=['loading', 'ready'])
def test_a_second_signal_while_the_node_ends_does_not_change_its_status(
        first_at, args, tmp_path):
    # A launch sends SIGINT, then SIGTERM; a user presses Ctrl-C twice.
    for _ in range(5):  # a process already gone before the second signal proves nothing
        code, err, sent = _second_signal_while_ending(args, first_at, tmp_path)
        assert code == 0, (code, err)
        assert 'Traceback' not in err, err
        if sent:
            break
    assert sent, 'the process always ended before the second signal could be sent'
