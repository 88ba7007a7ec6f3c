# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Lay this package out in an ament prefix as ``colcon build --symlink-install`` would.

Usage: ``python scripts/ament_layout.py PREFIX`` (``scripts/setup.sh`` runs it with the
venv's Python and ``PREFIX=.venv``; the package itself is installed there editable).

Everything is derived from ``setup.py``, read with ``setuptools.setup`` captured:

* ``data_files`` -> ``PREFIX/<dest>/<file name>``, one symlink per file (the ament index
  entry, ``share/<pkg>/package.xml``, ``launch/*.launch.py``, ``config/*.yaml``...).
  Per-file links, never a directory link: ros2launch finds launch files with ``os.walk``,
  which does not descend into linked directories.
* every ``console_scripts`` entry point -> an executable ``PREFIX/lib/<pkg>/<name>``
  (what ``ros2 run <pkg> <name>`` and launch's ``Node(executable=...)`` look for),
  running ``<module>:<function>`` with this interpreter.

What an earlier run made and the current ``setup.py`` no longer lists is removed (a
manifest of the paths made is kept in ``PREFIX/.hayakoe_ros-ament-layout``), so the layout
is the same after any sequence of runs. Prints one line per path made.
"""

from __future__ import annotations

import os
from pathlib import Path
import runpy
import sys

import setuptools

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = '.hayakoe_ros-ament-layout'

SCRIPT = """#!{python}
# Written by hayakoe_ros' scripts/ament_layout.py: entry point {spec}
import sys

from {module} import {function}

if __name__ == '__main__':
    sys.exit({function}())
"""


def read_setup(path: Path = ROOT / 'setup.py') -> dict:
    """Run ``setup.py`` with ``setuptools.setup`` captured; return its keyword arguments."""
    captured: dict = {}
    real = setuptools.setup
    setuptools.setup = lambda **kwargs: captured.update(kwargs)
    cwd = os.getcwd()
    try:
        os.chdir(path.parent)  # setup.py globs relative paths
        runpy.run_path(str(path), run_name='__main__')
    finally:
        os.chdir(cwd)
        setuptools.setup = real
    if not captured:
        raise RuntimeError(f'{path} did not call setuptools.setup()')
    return captured


def console_scripts(setup_kwargs: dict) -> dict:
    """Map every console script name to its ``module:function`` spec."""
    out = {}
    for line in setup_kwargs.get('entry_points', {}).get('console_scripts', []):
        name, spec = (part.strip() for part in line.split('=', 1))
        out[name] = spec
    return out


def plan(setup_kwargs: dict) -> tuple:
    """Return ``(links, scripts)``: {dest relative path: source}, {dest: module:function}."""
    package = setup_kwargs['name']
    links = {}
    for dest, files in setup_kwargs.get('data_files', []):
        for name in files:
            src = (ROOT / name).resolve()
            links[str(Path(dest) / src.name)] = src
    scripts = {str(Path('lib') / package / name): spec
               for name, spec in console_scripts(setup_kwargs).items()}
    return links, scripts


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()


def lay_out(prefix: Path) -> list:
    """Make the layout under ``prefix``; return the paths made, relative to it."""
    links, scripts = plan(read_setup())
    manifest = prefix / MANIFEST
    wanted = set(links) | set(scripts)
    if manifest.is_file():
        for rel in manifest.read_text(encoding='utf-8').splitlines():
            if rel and rel not in wanted:
                _remove(prefix / rel)
    for rel, src in links.items():
        dest = prefix / rel
        for parent in reversed(dest.relative_to(prefix).parents[:-1]):
            # A directory symlink made by an older setup.sh (launch -> ../../launch):
            # replace it with a real directory, or os.walk would not look inside.
            if (prefix / parent).is_symlink():
                (prefix / parent).unlink()
        dest.parent.mkdir(parents=True, exist_ok=True)
        _remove(dest)
        dest.symlink_to(src)
    for rel, spec in scripts.items():
        module, function = spec.split(':')
        dest = prefix / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        _remove(dest)
        dest.write_text(SCRIPT.format(python=sys.executable, spec=spec, module=module,
                                      function=function), encoding='utf-8')
        dest.chmod(0o755)
    made = sorted(wanted)
    manifest.write_text(''.join(f'{rel}\n' for rel in made), encoding='utf-8')
    return made


def main(argv: list) -> int:
    """Lay out the package under the prefix given as the only argument."""
    if len(argv) != 1:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    for rel in lay_out(Path(argv[0]).resolve()):
        print(rel)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
