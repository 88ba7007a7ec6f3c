# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""How many times a node has come back after its process died (for ``/diagnostics``).

A process killed by a signal (a crash in a C library, the OOM killer) runs no clean-up,
and the launch file's ``respawn`` starts a new one that knows nothing of the old. So each
node keeps a small record while it runs, holding its pid and the restart count: one file
per ROS domain and fully qualified node name (two nodes of one name on two domains are
two robots' nodes, not one node started again) under ``$XDG_RUNTIME_DIR/hayakoe_ros``
(else the temporary directory). A clean exit removes it, so a record that is still there
when the node starts, of a process that no longer exists, is a death, and the count goes
up by one. ``ros2 run`` after a clean stop starts from 0 again; a reboot clears the count.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
import time
from typing import Optional


def record_dir() -> str:
    """Where the records live: ``$XDG_RUNTIME_DIR/hayakoe_ros`` or ``<tmp>/hayakoe_ros-<uid>``."""
    runtime = os.environ.get('XDG_RUNTIME_DIR')
    if runtime and os.path.isdir(runtime):
        return os.path.join(runtime, 'hayakoe_ros')
    return os.path.join(tempfile.gettempdir(), f'hayakoe_ros-{os.getuid()}')


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


@dataclasses.dataclass
class RunRecord:
    """This run's record.

    Attributes:
        restarts: Times the node was started again after its process died without a
            clean exit (0 on a first start or after a clean exit).
        last_death: Wall-clock time (s since the epoch) the record of the dead run was
            written, i.e. when that run started; None when there was none.
        path: The record file ('' when it could not be written: then restarts are not
            counted, and nothing else changes).
    """

    restarts: int = 0
    last_death: Optional[float] = None
    path: str = ''

    @classmethod
    def begin(cls, node_name: str, domain_id: int = 0,
              directory: Optional[str] = None) -> 'RunRecord':
        """Read the previous run's record, count a death, and write this run's.

        Args:
            node_name: Fully qualified node name (``/ns/tts_node``).
            domain_id: The node's ROS domain (``ROS_DOMAIN_ID``, 0-232): the record is
                the domain's and the name's, file ``d<domain>_<name>.json``.
            directory: Where records live (default :func:`record_dir`).
        """
        directory = directory or record_dir()
        name = re.sub(r'[^A-Za-z0-9_.-]', '_', node_name.strip('/')) or 'node'
        path = os.path.join(directory, f'd{int(domain_id)}_{name}.json')
        restarts, last_death = 0, None
        try:
            with open(path, encoding='utf-8') as f:
                old = json.load(f)
            pid = int(old.get('pid', 0))
            if pid > 0 and pid != os.getpid() and not _alive(pid):
                restarts, last_death = int(old.get('restarts', 0)) + 1, old.get('started')
            elif pid > 0 and _alive(pid) and pid != os.getpid():
                restarts = int(old.get('restarts', 0))  # a twin runs: keep its count
        except (OSError, ValueError, TypeError, AttributeError):
            pass  # no record (first start or clean exit), or an unreadable one
        record = cls(restarts, last_death, path)
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            tmp = f'{path}.{os.getpid()}.tmp'
            with open(tmp, 'w', encoding='utf-8') as f:
                json.dump({'pid': os.getpid(), 'restarts': restarts,
                           'started': time.time()}, f)
            os.replace(tmp, path)
        except OSError:
            record.path = ''
        return record

    @classmethod
    def for_node(cls, node) -> 'RunRecord':
        """:meth:`begin` for an rclpy ``node`` (its name and domain), a restart logged as WARN."""
        record = cls.begin(node.get_fully_qualified_name(), node.context.get_domain_id())
        if record.restarts:
            node.get_logger().warning(
                f'started again after its process died ({record.restarts} time(s) since '
                'its last clean exit); what it held was lost')
        return record

    def end(self) -> None:
        """A clean exit: remove the record (the next start is not a restart)."""
        if self.path:
            try:
                with open(self.path, encoding='utf-8') as f:
                    mine = int(json.load(f).get('pid', 0)) == os.getpid()
                if mine:
                    os.remove(self.path)
            except (OSError, ValueError, TypeError, AttributeError):
                pass
            self.path = ''

    def values(self) -> dict:
        """``/diagnostics`` values: ``restarts`` and ``last_crashed_run_started``.

        The second is the local time (ISO 8601) at which the run that died had started,
        '' when none did.
        """
        when = '' if self.last_death is None else time.strftime(
            '%Y-%m-%dT%H:%M:%S', time.localtime(float(self.last_death)))
        return {'restarts': str(self.restarts), 'last_crashed_run_started': when}
