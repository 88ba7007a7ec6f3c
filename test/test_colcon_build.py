# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""README's robot path: ``colcon build`` of this package, then run what it installed.

A copy of the sources is built with colcon (from PyPI, requirements/test.txt) against the
``make setup`` venv as the underlay ament prefix, into a temporary workspace. The install
tree is checked as ros2run / ros2launch read it, then the installed ``tts_node`` is started
the way a user starts it after ``source install/setup.bash`` (the overlay, not the venv's
copy of the package) and speaks one utterance over the rmw. Both with and without
``--symlink-install``.
"""

from __future__ import annotations

from importlib import metadata
import os
from pathlib import Path
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from std_msgs.msg import String

from ros_utils import new_namespace

pytestmark = pytest.mark.ros

PACKAGE = 'hayakoe_ros'
REPO = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)
#: Not part of a source checkout colcon would see: build outputs, caches, the venv.
IGNORED = shutil.ignore_patterns('.venv', '.cache', '.git', 'build', 'install', 'log',
                                 '__pycache__', '*.egg-info', '.pytest_cache', '.ruff_cache',
                                 '.mypy_cache', 'hayakoe_cache', '*.wav')


def _base_env() -> dict:
    """This environment with the venv as the only ament prefix and no colcon state."""
    env = {k: v for k, v in os.environ.items()
           if k not in ('AMENT_PREFIX_PATH', 'CMAKE_PREFIX_PATH', 'COLCON_PREFIX_PATH',
                        'PYTHONPATH')}
    env.update(AMENT_PREFIX_PATH=str(VENV), CMAKE_PREFIX_PATH=str(VENV),
               PATH=f'{VENV / "bin"}{os.pathsep}{env.get("PATH", "")}')
    return env


# The plain install: about 9 s more here, left to make test-long.
@pytest.fixture(scope='module', params=['--symlink-install',
                                        pytest.param('copy', marks=pytest.mark.long)])
def workspace(request, tmp_path_factory):
    """``colcon build`` of a copy of this package; returns the workspace root.

    Both install modes: README's ``--symlink-install`` (``setup.py develop``, data files
    linked one by one) and a plain install (files copied), as a release build does.
    """
    ws = tmp_path_factory.mktemp('colcon_ws')
    mode = [request.param] if request.param.startswith('--') else []
    shutil.copytree(REPO, ws / 'src' / PACKAGE, ignore=IGNORED)
    env = dict(_base_env(), COLCON_HOME=str(ws / '.colcon'))
    result = subprocess.run(
        [str(VENV / 'bin' / 'colcon'), '--log-base', str(ws / 'log'), 'build',
         '--base-paths', str(ws / 'src'), '--build-base', str(ws / 'build'),
         '--install-base', str(ws / 'install'), '--event-handlers', 'console_direct+',
         *mode],
        cwd=ws, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return ws


def _sourced(ws: Path, command: str) -> str:
    """Run ``command`` in bash after ``source install/setup.bash``; return its stdout."""
    result = subprocess.run(
        ['bash', '-c', f'source "{ws}/install/setup.bash" && {command}'], cwd=ws,
        env=_base_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_install_tree_is_what_ros2_run_and_launch_read(workspace):
    prefix = workspace / 'install' / PACKAGE
    scripts = {ep.name for ep in metadata.distribution(PACKAGE).entry_points
               if ep.group == 'console_scripts'}
    assert 'tts_node' in scripts
    for name in scripts:
        exe = prefix / 'lib' / PACKAGE / name
        assert exe.is_file() and os.access(exe, os.X_OK), exe
    share = prefix / 'share' / PACKAGE
    for rel in ['package.xml'] + [f'launch/{p.name}' for p in REPO.glob('launch/*.py')] \
            + [f'config/{p.name}' for p in sorted(REPO.glob('config/*')) if p.is_file()]:
        assert (share / rel).is_file(), rel
        # ros2launch's search: os.walk of the share directory, links to dirs not followed.
        hits = [Path(root) / f for root, _dirs, files in os.walk(share) for f in files
                if f == Path(rel).name]
        assert hits == [share / rel], (rel, hits)
    assert (prefix / 'share' / 'ament_index' / 'resource_index' / 'packages' / PACKAGE
            ).is_file()


def test_sourced_overlay_is_found_before_the_venv(workspace):
    prefix = workspace / 'install' / PACKAGE
    out = _sourced(workspace, 'python -c "import os, hayakoe_ros; '
                   'from ament_index_python.packages import get_package_prefix as g; '
                   "print(g('hayakoe_ros')); print(hayakoe_ros.__file__); "
                   "print(os.environ['AMENT_PREFIX_PATH'])\"").splitlines()
    assert out[0] == str(prefix)
    # The workspace's copy (install space, or build space with --symlink-install), not
    # the venv's editable one.
    assert Path(out[1]).is_relative_to(workspace), out[1]
    assert out[2].split(os.pathsep) == [str(prefix), str(VENV)]


def test_installed_tts_node_speaks(workspace, ros_client, tmp_path):
    prefix = workspace / 'install' / PACKAGE
    exe = prefix / 'lib' / PACKAGE / 'tts_node'
    namespace = new_namespace()
    log_path = tmp_path / 'tts_node.log'
    # What `ros2 run hayakoe_ros tts_node` executes in the shell that sourced the overlay.
    command = (f'source "{workspace}/install/setup.bash" && exec "{exe}" --ros-args '
               f'-r __ns:={namespace} -p engine:=openjtalk -p chunk:=1024')
    with open(log_path, 'w', encoding='utf-8') as log:
        proc = subprocess.Popen(['bash', '-c', command], stdout=log, stderr=subprocess.STDOUT,
                                env=dict(_base_env(), PYTHONUNBUFFERED='1',
                                         RCUTILS_COLORIZED_OUTPUT='0'))
    pub = None
    try:
        deadline = time.monotonic() + 60
        while 'ready:' not in log_path.read_text(encoding='utf-8', errors='replace'):
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.1)
        # bash exec'd the installed script; the interpreter runs that file.
        cmdline = Path(f'/proc/{proc.pid}/cmdline').read_bytes().split(b'\0')
        assert str(exe).encode() in cmdline, cmdline
        mark = len(log_path.read_text(encoding='utf-8', errors='replace'))
        rec = ros_client.audio_recorder(f'{namespace}/audio')
        deadline = time.monotonic() + 10  # until the node's publisher has matched it
        while f'{namespace}/audio: a subscriber matched' not in log_path.read_text(
                encoding='utf-8', errors='replace')[mark:]:
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        pub = ros_client.matched_publisher(f'{namespace}/text')
        pub.publish(String(data='こんにちは。案内ロボットです。'))
        rec.wait_quiet(quiet_s=1.0, timeout=60)
        samples = rec.samples()
        assert rec.msgs[0][1].audio.info.rate == 48000  # Open JTalk
        assert len(samples) / 48000 > 0.8  # two short sentences
        assert np.abs(samples.astype(np.int32)).max() > 1000  # audible, not silence
    finally:
        if pub is not None:
            ros_client.node.destroy_publisher(pub)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, log_path.read_text()
