# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Process memory: glibc allocator settings, returning freed memory, reading RSS.

Loading ONNX Runtime sessions frees hundreds of MB (the parsed model protobuf, unpacked
weights) that glibc's malloc keeps in its heap and arenas: resident, but unused. Two
levers give it back to the system:

* :func:`release_free_memory` (``malloc_trim(0)``) after a load;
* :func:`configure_allocator` (``mallopt``) before a load: allocations of at least
  ``mmap_threshold`` bytes get pages of their own that go back to the system when freed,
  and free memory at the top of the heap is returned past ``trim_threshold`` bytes.
  glibc reads the ``MALLOC_*_`` environment variables once, at process start, so a node
  that wants these settings must set them itself with ``mallopt``.

Both are glibc functions: on another C library (musl, macOS) they are a no-op that
returns False and logs at DEBUG level once. No ROS imports.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import functools
import logging
import os
from typing import Optional

_LOG = logging.getLogger(__name__)

#: ``mallopt`` parameter numbers from glibc's ``<malloc.h>``.
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

MIB = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class AllocatorSettings:
    """glibc ``mallopt`` settings; a field of 0 leaves glibc's default.

    Attributes:
        trim_threshold: Bytes of free memory at the top of the heap kept before returning
            it to the system (glibc default 128 KiB, raised dynamically up to 64 MiB).
        mmap_threshold: Allocations of this many bytes or more are served by ``mmap`` and
            unmapped on ``free`` (glibc default 128 KiB, raised dynamically up to 32 MiB,
            which is what keeps ONNX Runtime's freed load-time buffers resident).
        arena_max: Upper bound on malloc arenas (glibc default 8 x cores).
    """

    trim_threshold: int = 0
    mmap_threshold: int = 0
    arena_max: int = 0

    @property
    def is_default(self) -> bool:
        """True when no field changes glibc's behaviour."""
        return not (self.trim_threshold or self.mmap_threshold or self.arena_max)

    def describe(self) -> str:
        """Short human-readable form, e.g. ``trim 1 MiB, mmap 1 MiB`` (or ``glibc default``)."""
        parts = []
        if self.trim_threshold:
            parts.append(f'trim {_size(self.trim_threshold)}')
        if self.mmap_threshold:
            parts.append(f'mmap {_size(self.mmap_threshold)}')
        if self.arena_max:
            parts.append(f'arenas {self.arena_max}')
        return ', '.join(parts) or 'glibc default'


#: What the hayakoe engine sets for itself (measured in BENCHMARKS.md, "Memory levers").
NODE_ALLOCATOR = AllocatorSettings(trim_threshold=1 * MIB, mmap_threshold=1 * MIB)


def _size(n: int) -> str:
    return f'{n // MIB} MiB' if n % MIB == 0 else f'{n // 1024} KiB'


@functools.lru_cache(maxsize=1)
def _libc() -> Optional[ctypes.CDLL]:
    """The C library if it is glibc (has ``malloc_trim`` and ``mallopt``), else None."""
    name = ctypes.util.find_library('c') or 'libc.so.6'
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.mallopt.restype = ctypes.c_int
    except (OSError, AttributeError) as exc:
        _LOG.debug('no glibc allocator controls (%s): memory settings are a no-op', exc)
        return None
    return libc


def configure_allocator(settings: AllocatorSettings = NODE_ALLOCATOR) -> bool:
    """Apply ``settings`` with glibc's ``mallopt`` (process-wide, from now on).

    Returns:
        True when every non-zero setting was accepted; False on a non-glibc C library
        (nothing changes) or when glibc refused one (logged at DEBUG).
    """
    libc = _libc()
    if libc is None:
        return False
    ok = True
    for param, value in ((M_TRIM_THRESHOLD, settings.trim_threshold),
                         (M_MMAP_THRESHOLD, settings.mmap_threshold),
                         (M_ARENA_MAX, settings.arena_max)):
        if value and libc.mallopt(param, int(value)) != 1:
            _LOG.debug('mallopt(%d, %d) refused', param, value)
            ok = False
    return ok


def release_free_memory() -> bool:
    """Return free heap memory to the system (glibc ``malloc_trim(0)``).

    Takes a few ms per GB of heap. Returns True when memory was released, False when there
    was none to release or the C library is not glibc.
    """
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.malloc_trim(0))


def vm_kib(field: str = 'VmRSS', pid: int | str = 'self') -> int:
    """A memory figure of a process from ``/proc/<pid>/status``, in KiB.

    Args:
        field: ``VmRSS`` (resident now), ``VmHWM`` (peak resident), ``VmSize``...
        pid: Process id, or ``'self'``.

    Returns:
        The value in KiB, or 0 where ``/proc`` is not available (not Linux).
    """
    try:
        with open(os.path.join('/proc', str(pid), 'status'), encoding='ascii') as fh:
            for line in fh:
                if line.startswith(field + ':'):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0
