# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""package.xml declares every ROS package the code imports (what rosdep installs).

A top-level import is a ROS package when the ament index of the test environment knows
it, or when a launch file imports it (launch and launch_ros are not installable here).
``hayakoe_ros/`` and ``launch/`` need it as ``exec_depend``; ``test/``, ``tools/`` and
``bench/`` as ``exec_depend`` or ``test_depend``.
"""

from __future__ import annotations

import ast
from pathlib import Path
import sys
from xml.etree import ElementTree

from ament_index_python.packages import get_packages_with_prefixes
import pytest

pytestmark = pytest.mark.lint

REPO = Path(__file__).resolve().parents[1]
RUNTIME_DIRS = ('hayakoe_ros', 'launch')
TEST_DIRS = ('test', 'tools', 'bench')


def top_level_imports(path: Path) -> set:
    """Names of the top-level modules that ``path`` imports (absolute imports only)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split('.')[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split('.')[0])
    return names - set(sys.stdlib_module_names)


def imports_of(dirs: tuple) -> dict:
    """{module name: [files importing it]} over every .py file under ``dirs``."""
    out: dict = {}
    for d in dirs:
        for path in sorted((REPO / d).rglob('*.py')):
            if 'fixtures' in path.parts:
                continue
            for name in top_level_imports(path):
                out.setdefault(name, []).append(str(path.relative_to(REPO)))
    return out


#: Python libraries and their rosdep keys (checked by
#: test_python_libraries_have_their_rosdep_keys), not ROS packages.
PYTHON_KEYS = {'numpy': 'python3-numpy', 'yaml': 'python3-yaml', 'pytest': 'python3-pytest'}


def ros_packages(imports: dict) -> dict:
    """The entries of ``imports`` that are ROS packages."""
    known = set(get_packages_with_prefixes())
    from_launch = {name for name, files in imports.items()
                   if any(f.startswith('launch/') for f in files) and name not in PYTHON_KEYS}
    return {name: files for name, files in imports.items()
            if name in known | from_launch and name != 'hayakoe_ros'}


def declared(tag: str) -> set:
    """Text of every ``<tag>`` of package.xml."""
    root = ElementTree.parse(REPO / 'package.xml').getroot()
    return {(e.text or '').strip() for e in root.findall(tag)}


def test_every_ros_package_the_node_imports_is_an_exec_depend():
    needed = ros_packages(imports_of(RUNTIME_DIRS))
    assert {'rclpy', 'audio_common_msgs', 'launch_ros'} <= set(needed)  # the check sees them
    missing = {name: files for name, files in needed.items()
               if name not in declared('exec_depend') | declared('depend')}
    assert not missing, f'add <exec_depend> to package.xml for: {missing}'


def test_every_ros_package_the_tests_import_is_declared():
    needed = ros_packages(imports_of(TEST_DIRS))
    assert 'rclpy' in needed
    have = declared('exec_depend') | declared('depend') | declared('test_depend')
    missing = {name: files for name, files in needed.items() if name not in have}
    assert not missing, f'add <test_depend> to package.xml for: {missing}'


@pytest.mark.parametrize('module, key', sorted(PYTHON_KEYS.items()))
def test_python_libraries_have_their_rosdep_keys(module, key):
    runtime, tests = imports_of(RUNTIME_DIRS), imports_of(TEST_DIRS)
    assert module in runtime or module in tests, f'{module} is no longer imported'
    tags = ('exec_depend',) if module in runtime else ('exec_depend', 'test_depend')
    assert key in set().union(*(declared(t) for t in tags)), key


#: exec_depends used without an import: the ``ros2 launch`` command, and the interfaces
#: behind rclpy's action server and lifecycle node (the node serves them).
USED_WITHOUT_IMPORT = {'ros2launch', 'action_msgs', 'lifecycle_msgs'}


def test_declared_ros_packages_are_used():
    """No stale exec_depend: each ROS one is imported or in :data:`USED_WITHOUT_IMPORT`."""
    imported = set(imports_of(RUNTIME_DIRS))
    stale = {d for d in declared('exec_depend')
             if not d.startswith('python3-') and d not in imported | USED_WITHOUT_IMPORT}
    assert not stale, stale
