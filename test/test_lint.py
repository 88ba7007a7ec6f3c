# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Linters: ruff, mypy, package.xml checks, the licence header, test-kind markers.

ruff runs pycodestyle, pyflakes, bugbear and pep257 docstring rules (ruff.toml); mypy
checks the paths and with the settings in mypy.ini.
"""

import ast
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from conftest import MARKERS

pytestmark = pytest.mark.lint

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    [p for d in ('hayakoe_ros', 'test', 'tools', 'bench', 'launch', 'scripts')
     for p in (REPO / d).rglob('*') if p.suffix in ('.py', '.sh') and p.is_file()
     and 'fixtures' not in p.parts] + [REPO / 'setup.py'])
HEADER = ('# Copyright 2026 The hayakoe_ros Authors',
          '# SPDX-License-Identifier: AGPL-3.0-or-later')


def test_ruff():
    result = subprocess.run([sys.executable, '-m', 'ruff', 'check', '--no-cache', '.'],
                            cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.long  # about 45 s cold (CI); make lint runs it too
def test_mypy():
    result = subprocess.run([sys.executable, '-m', 'mypy', '--config-file', 'mypy.ini'],
                            cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr


def _marks(module: Path) -> set:
    """Names ``<m>`` of every ``pytest.mark.<m>`` in ``module``'s top-level ``pytestmark``."""
    for node in ast.parse(module.read_text(encoding='utf-8')).body:
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == 'pytestmark' for t in targets):
            return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Attribute) and n.value.attr == 'mark'}
    return set()


def test_every_test_module_has_exactly_one_kind_marker():
    wrong = {}
    for module in sorted((REPO / 'test').glob('test_*.py')):
        kinds = _marks(module) & set(MARKERS)
        if len(kinds) != 1:
            wrong[module.name] = sorted(kinds)
    assert not wrong, f'test modules without exactly one of {sorted(MARKERS)}: {wrong}'


def test_every_mark_in_the_tests_is_registered(pytestconfig):
    """A misspelt ``pytest.mark.<name>`` would be a new marker that selects nothing.

    ``long`` above all: ``make test`` would run a misspelt long test, ``make test-long``
    would not.
    """
    registered = {line.split(':')[0].split('(')[0].strip()
                  for line in pytestconfig.getini('markers')}
    assert 'long' in registered and set(MARKERS) <= registered
    unknown = []
    for module in sorted((REPO / 'test').glob('*.py')):
        for node in ast.walk(ast.parse(module.read_text(encoding='utf-8'))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                    and node.value.attr == 'mark' and isinstance(node.value.value, ast.Name)
                    and node.value.value.id == 'pytest' and node.attr not in registered):
                unknown.append(f'{module.name}:{node.lineno}: pytest.mark.{node.attr}')
    assert not unknown, unknown


def test_test_modules_do_not_import_each_other():
    offenders = []
    for module in sorted((REPO / 'test').glob('test_*.py')):
        for node in ast.walk(ast.parse(module.read_text(encoding='utf-8'))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ''] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f'{module.name}: {n}' for n in names if n.startswith('test_')]
    assert not offenders, f'shared helpers belong in a helper module: {offenders}'


def test_no_source_cites_an_issue_number():
    """Comments and docstrings say why; the tracker's numbers mean nothing to a reader."""
    import re

    cite = re.compile(r'\bissues? \d+|\bi\d{2}-[a-z]')
    found = [f'{p.relative_to(REPO)}:{n}: {line.strip()}' for p in SOURCES
             for n, line in enumerate(p.read_text(encoding='utf-8').splitlines(), 1)
             if cite.search(line)]
    assert not found, '\n'.join(found)


#: "About 400 lines" per module, test modules included: past that a module holds more than
#: one concern. A test module splits by what its tests cover; what the parts share goes to
#: a helper module in test/ (fixtures to conftest.py).
MODULE_LINES = 420


def test_no_source_module_is_over_about_400_lines():
    long = [f'{p.relative_to(REPO)}: {n} lines' for p in SOURCES
            for n in [len(p.read_text(encoding='utf-8').splitlines())] if n > MODULE_LINES]
    assert not long, f'split these by concern (over {MODULE_LINES} lines): {long}'


def test_licence_header_on_every_source_file():
    missing = []
    for path in SOURCES:
        lines = path.read_text(encoding='utf-8').splitlines()
        if lines and lines[0].startswith('#!'):
            lines = lines[1:]
        if tuple(lines[:2]) != HEADER:
            missing.append(str(path.relative_to(REPO)))
    assert not missing, f'files without the licence header: {missing}'


def test_package_xml_is_well_formed_format_3():
    root = ElementTree.parse(REPO / 'package.xml').getroot()
    assert root.tag == 'package' and root.get('format') == '3'
    for tag in ('name', 'version', 'description', 'maintainer', 'license'):
        assert root.find(tag) is not None and root.find(tag).text.strip(), tag
    assert root.find('name').text == 'hayakoe_ros'
    deps = {e.text for e in root.findall('exec_depend')}
    assert {'rclpy', 'std_msgs', 'std_srvs', 'action_msgs', 'diagnostic_msgs',
            'audio_common_msgs'} <= deps
    assert 'python3-pytest' in {e.text for e in root.findall('test_depend')}
    assert root.find('export/build_type').text == 'ament_python'


@pytest.mark.skipif(shutil.which('xmllint') is None, reason='xmllint is not installed')
def test_package_xml_xmllint():
    result = subprocess.run(['xmllint', '--noout', str(REPO / 'package.xml')],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


#: Blocking calls and the position of their timeout argument: Event/Condition.wait and
#: Thread/Popen.join/wait take it first, Condition.wait_for(predicate, timeout),
#: Queue.get(block, timeout), Lock.acquire(blocking, timeout), Queue.put(item, block,
#: timeout).
_TIMEOUT_AT = {'wait': 0, 'join': 0, 'wait_for': 1, 'get': 1, 'acquire': 1, 'put': 2}


def _untimed(call: ast.Call) -> bool:
    """True for a blocking call that can wait for ever (no timeout, not non-blocking)."""
    name = call.func.attr  # type: ignore[attr-defined]
    at = _TIMEOUT_AT[name]
    if any(k.arg == 'timeout' for k in call.keywords) or len(call.args) > at:
        return False
    if any(k.arg in ('block', 'blocking') and isinstance(k.value, ast.Constant)
           and k.value.value is False for k in call.keywords):
        return False
    if name in ('get', 'acquire', 'put') and len(call.args) == at:
        flag = call.args[at - 1]
        if isinstance(flag, ast.Constant) and flag.value is False:
            return False  # non-blocking
        if name == 'get' and not (isinstance(flag, ast.Constant) and flag.value is True):
            return False  # a mapping's get(key): not a queue
    if name == 'join' and call.args:
        return False  # str.join / os.path.join
    return True


def test_every_wait_in_the_package_is_bounded():
    """No wait in hayakoe_ros can hang: every blocking call has a timeout, no sleep-polls.

    Blocking calls (``wait``, ``join``, ``wait_for``, queue ``get``/``put``, ``acquire``)
    need a timeout, by keyword or position; ``time.sleep`` is not used at all: a wait
    is on the event it stands for (with a timeout), never a sleep in a loop.
    """
    found = []
    for path in sorted((REPO / 'hayakoe_ros').rglob('*.py')):
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            where = f'{path.relative_to(REPO)}:{node.lineno}'
            if node.func.attr == 'sleep':
                found.append(f'{where} sleep()')
            elif node.func.attr in _TIMEOUT_AT and _untimed(node):
                found.append(f'{where} .{node.func.attr}() without a timeout')
    assert not found, found


def test_the_wait_check_sees_what_it_must():
    """The check above flags each untimed form and passes each bounded one."""
    def flags(src: str) -> bool:
        return _untimed(ast.parse(src).body[0].value)  # type: ignore[attr-defined]

    for bad in ('e.wait()', 'q.get()', 'q.get(True)', 'q.put(x)', 'q.put(x, True)',
                'c.wait_for(p)', 't.join()', 'lock.acquire()', 'p.wait()'):
        assert flags(bad), bad
    for ok in ('e.wait(1)', 'q.get(timeout=1)', 'q.get(True, 1)', 'q.get(False)',
               'd.get(k)', 'q.put(x, timeout=1)', 'q.put(x, False)', 'c.wait_for(p, 1)',
               't.join(2)', "', '.join(xs)", 'lock.acquire(False)', 'lock.acquire(timeout=1)',
               'q.get(block=False)'):
        assert not flags(ok), ok
