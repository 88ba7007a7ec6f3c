# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``tts_fleet``: one process, the model loaded once, a ``tts_node`` per robot.

``tts_fleet --ros-args -r __ns:=/fleet -p robots:="[r1, r2]"`` serves robot r1 at
``/fleet/r1`` (``text``, ``say``, ``audio``, ``marks``, ``speaking``, ``stop``, its own
parameters and lifecycle at ``/fleet/r1/tts_node``) and r2 at ``/fleet/r2``; the fleet's
own lifecycle node is ``/fleet/tts_fleet``. See :mod:`hayakoe_ros.fleet.node`.
"""

from __future__ import annotations

import sys
import threading
from typing import Optional

from .fleet.node import FleetNode
from .node.runner import run

__all__ = ['EXECUTOR_THREADS', 'main']

#: Executor threads for the fleet and every robot's node: goals are coroutines and hold
#: none while they wait; a robot's teardown waits for its goals' results to go out on
#: the others while the fleet's transition holds one.
EXECUTOR_THREADS = 8


def main(args=None, stop: Optional[threading.Event] = None) -> int:
    """Run ``tts_fleet`` (``ros2 run`` enters through :mod:`hayakoe_ros.entry`).

    0 after SIGINT/SIGTERM or the fleet's lifecycle shutdown transition; 78 when the
    autostart configure fails (an invalid ``robots``, an engine that cannot be loaded).
    ``stop``: see :func:`hayakoe_ros.node.runner.run`.
    """
    argv = list(sys.argv if args is None else args)
    return run(lambda: FleetNode(argv), args, EXECUTOR_THREADS, stop=stop)


if __name__ == '__main__':
    sys.exit(main())
