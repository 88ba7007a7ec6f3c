# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Lay out this package in an ament prefix as ``colcon build`` would (``make setup`` step).

An editable ``pip install -e .`` installs the Python package and puts the console scripts
in ``bin/``, but neither setup.py's ``data_files`` nor setup.cfg's ``lib/<package>`` script
directory: ``ros2 run``, ``ros2 pkg executables`` and ``ros2 launch`` then find nothing.
This script reads setup.py (``run_setup(..., stop_after='init')``: the same
``data_files`` and ``console_scripts`` colcon installs, nothing hard-coded here) and makes
in PREFIX:

* ``lib/<package>/<script>``: one executable per console script, the same launcher pip
  writes to ``bin/`` (ros2run and launch_ros look executables up there);
* every ``data_files`` entry (``share/<package>/package.xml``, ``launch/*.launch.py``,
  ``config/*.yaml``, the ament index marker
  ``share/ament_index/resource_index/packages/<package>``) as a per-file symlink into
  the source tree, so that edits show at once and ``os.walk`` (which ros2launch uses and
  which does not descend into symlinked *directories*) finds every file.

Whatever an earlier run put in ``lib/<package>`` and ``share/<package>`` is removed first,
so a file dropped from the source tree does not linger. Idempotent.

Usage: ``.venv/bin/python scripts/ament_layout.py [PREFIX]`` (default ``sys.prefix``),
run from anywhere; prints what it laid out.
"""

from __future__ import annotations

import os
from pathlib import Path
import shutil
import sys

ROOT = Path(__file__).resolve().parents[1]

_LAUNCHER = """#!{python}
# Written by hayakoe_ros scripts/ament_layout.py: console script {name} = {target}
import sys

from {module} import {func}

if __name__ == '__main__':
    sys.exit({func}())
"""


def read_setup(root: Path = ROOT):
    """Return ``(name, data_files, console_scripts)`` declared by ``root/setup.py``.

    ``data_files``: list of ``(install_dir, [source paths relative to root])``;
    ``console_scripts``: dict ``script name -> 'module:function'``.
    Raises ``ValueError`` for a console script entry that is not ``name = module:func``.
    """
    import setuptools  # noqa: F401  (installs setuptools' distutils before the import below)
    from distutils.core import run_setup

    cwd = os.getcwd()
    os.chdir(root)  # setup.py globs relative paths
    try:
        dist = run_setup(str(root / 'setup.py'), stop_after='init')
    finally:
        os.chdir(cwd)
    scripts = {}
    entry_points = getattr(dist, 'entry_points', None) or {}  # setuptools' attribute
    for entry in entry_points.get('console_scripts', []):
        name, sep, target = (part.strip() for part in entry.partition('='))
        if not sep or ':' not in target:
            raise ValueError(f'setup.py console script {entry!r}: expected name = module:func')
        scripts[name] = target
    return dist.get_name(), list(dist.data_files or []), scripts


def lay_out(prefix: Path, root: Path = ROOT) -> list:
    """Install launchers and data-file links for ``root``'s package into ``prefix``.

    Returns the paths created (absolute). The launchers run ``prefix/bin/python``.
    """
    name, data_files, scripts = read_setup(root)
    created = []
    libexec = prefix / 'lib' / name
    share = prefix / 'share' / name
    for own in (libexec, share):
        if own.is_symlink() or own.is_file():
            own.unlink()
        elif own.is_dir():
            shutil.rmtree(own)
    libexec.mkdir(parents=True)
    python = prefix / 'bin' / 'python'
    for script, target in sorted(scripts.items()):
        module, func = target.split(':')
        path = libexec / script
        path.write_text(_LAUNCHER.format(python=python, name=script, target=target,
                                         module=module.strip(), func=func.strip()),
                        encoding='utf-8')
        path.chmod(0o755)
        created.append(path)
    for dest, sources in data_files:
        directory = prefix / dest
        directory.mkdir(parents=True, exist_ok=True)
        for source in sources:
            link = directory / Path(source).name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(root / source)
            created.append(link)
    return created


def main(argv=None) -> int:
    """Command-line entry point: lay the package out in the prefix given (or sys.prefix)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ('-h', '--help'):
        print(__doc__)
        return 0
    prefix = Path(argv[0] if argv else sys.prefix).absolute()
    name, _, scripts = read_setup()
    created = lay_out(prefix)
    print(f'ament_layout: {len(created)} entries under {prefix} '
          f'(lib/{name}: {", ".join(sorted(scripts))})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
