# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``make setup`` venv as an ament install: what ``ros2 run`` and ``ros2 launch`` find.

The look-ups are those of ros2cli and launch (Kilted), done here by hand because those
packages are not installable from PyPI:

* ``ros2 run <pkg> <exe>`` / ``ros2 pkg executables``: the package prefix from the ament
  index (first match on AMENT_PREFIX_PATH), then every executable regular file under
  ``<prefix>/lib/<pkg>`` (ros2pkg's ``get_executable_paths``), matched by base name;
* ``ros2 launch <pkg> <file>``: ``os.walk`` over ``get_package_share_directory(pkg)``
  (ros2launch's ``get_share_file_path_from_package``; no ``followlinks``, so a linked
  directory is not searched);
* launch_ros' ``Node(package=..., executable=...)``: ``<prefix>/lib/<pkg>`` must exist.
"""

from __future__ import annotations

from importlib import metadata
import os
from pathlib import Path
import runpy
import subprocess
import sys

from ament_index_python.packages import get_package_prefix, get_package_share_directory
import pytest

pytestmark = pytest.mark.ros

PACKAGE = 'hayakoe_ros'
REPO = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)


def console_scripts() -> dict:
    """Map console script names to entry points, from the installed package's metadata."""
    eps = metadata.distribution(PACKAGE).entry_points
    return {ep.name: ep for ep in eps if ep.group == 'console_scripts'}


def ros2run_executables(package: str) -> dict:
    """What ``ros2 pkg executables`` lists: {name: path} under ``<prefix>/lib/<pkg>``."""
    base = os.path.join(get_package_prefix(package), 'lib', package)
    found = {}
    for dirpath, _dirnames, filenames in os.walk(base):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                found[name] = path
    return found


def ros2launch_find(package: str, file_name: str) -> list:
    """ros2launch's search for ``file_name`` in the package's share directory."""
    share = get_package_share_directory(package)
    return [os.path.join(root, name) for root, _dirs, files in os.walk(share)
            for name in files if name == file_name]


def test_setup_py_declares_the_nodes():
    scripts = console_scripts()
    assert {'tts_node', 'say'} <= set(scripts), scripts
    for ep in scripts.values():
        assert callable(ep.load()), ep


def test_ros2_run_finds_every_console_script_in_the_venv():
    assert Path(get_package_prefix(PACKAGE)) == VENV
    assert os.path.isdir(VENV / 'lib' / PACKAGE)  # launch_ros' libexec check
    found = ros2run_executables(PACKAGE)
    scripts = console_scripts()
    assert set(found) == set(scripts), 'lib/hayakoe_ros must hold exactly the console scripts'
    for name, ep in scripts.items():
        path = Path(found[name])
        shebang = path.read_text(encoding='utf-8').splitlines()[0]
        assert shebang == f'#!{sys.executable}', (name, shebang)
        # The script runs the entry point's function, nothing else.
        namespace = runpy.run_path(str(path), run_name='not_main')
        assert namespace[ep.attr] is ep.load(), name


def test_installed_say_runs():
    say = ros2run_executables(PACKAGE)['say']
    result = subprocess.run([say, '--help'], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert 'usage:' in result.stdout and '--output' in result.stdout


@pytest.mark.parametrize('pattern', ['launch/*.launch.py', 'config/*.yaml', 'config/*.xml'])
def test_ros2_launch_finds_every_share_file(pattern):
    files = sorted(REPO.glob(pattern))
    assert files, pattern
    for src in files:
        hits = ros2launch_find(PACKAGE, src.name)
        assert len(hits) == 1, (src.name, hits)
        hit = Path(hits[0])
        assert hit.parent.name == src.parent.name and hit.resolve() == src.resolve()
    assert (Path(get_package_share_directory(PACKAGE)) / 'package.xml').resolve() == \
        (REPO / 'package.xml').resolve()


def test_ament_index_entry():
    marker = VENV / 'share' / 'ament_index' / 'resource_index' / 'packages' / PACKAGE
    assert marker.is_file()


def _fresh_python(env_extra: dict) -> list:
    """AMENT_PREFIX_PATH entries and hayakoe_ros' prefix, seen by a fresh venv python."""
    env = {k: v for k, v in os.environ.items()
           if k not in ('AMENT_PREFIX_PATH', '_ROS_WHEELS_BOOTSTRAP_COMPLETE')}
    env.update(env_extra)
    code = ('import os; from ament_index_python.packages import get_package_prefix; '
            "print(os.environ['AMENT_PREFIX_PATH']); print(get_package_prefix('hayakoe_ros'))")
    out = subprocess.run([str(VENV / 'bin' / 'python'), '-c', code], env=env, check=True,
                         capture_output=True, text=True, timeout=60).stdout.splitlines()
    return [out[0].split(os.pathsep), out[1]]


def test_venv_is_on_the_prefix_path_without_sourcing():
    paths, prefix = _fresh_python({})
    assert paths == [str(VENV)] and prefix == str(VENV)


def test_a_sourced_overlay_wins_over_the_venv(tmp_path):
    overlay = tmp_path / 'install' / PACKAGE
    (overlay / 'share' / 'ament_index' / 'resource_index' / 'packages').mkdir(parents=True)
    (overlay / 'share' / 'ament_index' / 'resource_index' / 'packages' / PACKAGE).touch()
    other = tmp_path / 'underlay'
    other.mkdir()
    paths, prefix = _fresh_python({'AMENT_PREFIX_PATH': f'{overlay}{os.pathsep}{other}'})
    assert paths == [str(overlay), str(other), str(VENV)]
    assert prefix == str(overlay)
    # The venv already listed: the order is the user's.
    paths, prefix = _fresh_python({'AMENT_PREFIX_PATH': f'{VENV}{os.pathsep}{overlay}'})
    assert paths == [str(VENV), str(overlay)] and prefix == str(VENV)
