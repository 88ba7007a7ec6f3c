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
