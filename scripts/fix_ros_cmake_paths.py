# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Repair build-machine paths baked into the CMake exports of the ROS 2 PyPI wheels.

The ``ros-kilted-*`` wheels were built in a manylinux container, and the CMake export
files of every ``*__rosidl_generator_py`` target list that container's Python and NumPy
include directories (``/opt/python/cp311-cp311/include/python3.11`` and
``/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include``) in
``INTERFACE_INCLUDE_DIRECTORIES``.  CMake refuses to generate a build system that links
against an imported target naming a directory that does not exist, so building any
interface package that depends on, say, ``std_msgs`` fails.

This script rewrites those paths, in every ``.cmake`` file under the given prefix, to the
include directories of the Python that runs it (run it with the venv's interpreter) and
of the NumPy installed there.  It is idempotent: a second run finds nothing to change.

Usage: ``.venv/bin/python scripts/fix_ros_cmake_paths.py [PREFIX]`` (PREFIX defaults to
``sys.prefix``).
"""

import os
import re
import sys
import sysconfig

# A foreign interpreter root such as /opt/python/cp311-cp311 (manylinux layout).
_FOREIGN_ROOT = r'/opt/python/cp3\d+-cp3\d+t?'
_PY_INCLUDE_RE = re.compile(_FOREIGN_ROOT + r'/include/python3\.\d+t?')
_NUMPY_INCLUDE_RE = re.compile(
    _FOREIGN_ROOT + r'/lib/python3\.\d+t?/site-packages/numpy/(?:_core|core)/include')
_ANY_FOREIGN_RE = re.compile(_FOREIGN_ROOT + r'/[^";\s)]*')


def target_paths():
    """Return ``(python_include_dir, numpy_include_dir)`` of the running interpreter."""
    import numpy  # imported here so that ``--help`` works without NumPy

    py_include = sysconfig.get_paths()['include']
    if not os.path.isfile(os.path.join(py_include, 'Python.h')):
        raise SystemExit(f'fix_ros_cmake_paths: no Python.h in {py_include}; '
                         'the Python development headers are needed')
    return py_include, numpy.get_include()


def fix_text(text, py_include, np_include):
    """Return ``text`` with the foreign Python and NumPy include dirs replaced."""
    text = _NUMPY_INCLUDE_RE.sub(lambda _m: np_include, text)
    return _PY_INCLUDE_RE.sub(lambda _m: py_include, text)


def iter_cmake_files(prefix):
    """Yield every ``*.cmake`` file below ``prefix/share`` and ``prefix/lib*/cmake``."""
    roots = [os.path.join(prefix, 'share')]
    roots += [os.path.join(prefix, d, 'cmake') for d in ('lib', 'lib64')]
    for root in roots:
        for dirpath, _dirnames, filenames in os.walk(root):
            for name in filenames:
                if name.endswith('.cmake'):
                    yield os.path.join(dirpath, name)


def fix_prefix(prefix):
    """Rewrite the foreign include dirs in all CMake files under ``prefix``.

    Returns the list of files changed.  Raises ``SystemExit`` if any ``/opt/python``
    path that this script does not know how to map is left in a CMake file.
    """
    py_include, np_include = target_paths()
    changed = []
    leftovers = []
    for path in iter_cmake_files(prefix):
        with open(path, encoding='utf-8') as fh:
            text = fh.read()
        if '/opt/python/' not in text:
            continue
        new_text = fix_text(text, py_include, np_include)
        if new_text != text:
            tmp = path + '.tmp'
            with open(tmp, 'w', encoding='utf-8') as fh:
                fh.write(new_text)
            os.replace(tmp, path)
            changed.append(path)
        leftovers += [(path, m.group(0)) for m in _ANY_FOREIGN_RE.finditer(new_text)]
    if leftovers:
        lines = '\n'.join(f'  {path}: {found}' for path, found in leftovers[:20])
        raise SystemExit(f'fix_ros_cmake_paths: unmapped build-machine paths left:\n{lines}')
    return changed


def main(argv=None):
    """Command-line entry point: fix the prefix given as the only argument."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ('-h', '--help'):
        print(__doc__)
        return 0
    prefix = os.path.abspath(argv[0] if argv else sys.prefix)
    changed = fix_prefix(prefix)
    print(f'fix_ros_cmake_paths: {len(changed)} CMake file(s) repaired under {prefix}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
