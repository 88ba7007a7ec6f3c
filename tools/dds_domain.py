# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A DDS domain that no other test or benchmark run on this machine is using.

Two runs in one domain see each other's topics (a node of one run answers the other's
goals), and deriving the domain from the pid collides whenever two pids agree modulo
the range. So a run takes an exclusive ``flock`` on one lock file per domain id, in a
directory every run shares, and holds it for its life: the kernel drops the lock when the
process ends, however it ends, so a crashed run never leaks a domain.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from typing import IO, Optional

#: Domain ids handed out: 1..100 (0 is every ROS install's default; Fast DDS's default
#: port mapping allows up to 232 on one host).
FIRST, LAST = 1, 100

_held: Optional[IO] = None


def lock_dir() -> str:
    """Directory of the lock files (shared by every user of this machine's /tmp)."""
    return os.path.join(tempfile.gettempdir(), 'hayakoe_ros-dds-domains')


def claim(start: Optional[int] = None) -> int:
    """Lock and return a free domain id, the same one on every call in this process.

    Args:
        start: First id to try (default: from the pid, so that runs spread out).

    Raises:
        RuntimeError: every id from :data:`FIRST` to :data:`LAST` is held.
    """
    global _held
    if _held is not None:
        return int(os.path.basename(_held.name).split('.')[0])
    os.makedirs(lock_dir(), mode=0o777, exist_ok=True)
    span = LAST - FIRST + 1
    first = (os.getpid() if start is None else start) % span
    for k in range(span):
        domain = FIRST + (first + k) % span
        f = open(os.path.join(lock_dir(), f'{domain}.lock'), 'a+')
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        _held = f
        return domain
    raise RuntimeError(f'every DDS domain from {FIRST} to {LAST} is in use by another run')
