# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Console entry points of the nodes: signals are caught before the node's modules load.

``ros2 run hayakoe_ros tts_node`` (and ``tts_fleet``, ``player_node``) runs these. A
node's imports (rclpy, NumPy, the message types, the speech pipeline) take 0.3-0.4 s on
a Raspberry-Pi-class CPU or a busy host, and a launch file stopped at once (Ctrl-C right
after ``ros2 launch``) used to land in them: a KeyboardInterrupt traceback and status
-2, or death by SIGTERM. Here the handlers of :mod:`.early_signals` come first (only the
interpreter's own start-up, some 30-50 ms, is left uncovered: the ROS wheels'
bootstrapper starts it twice); the same flag is handed
to :func:`hayakoe_ros.node.runner.run`, which then ends the process as after any other
signal, with status 0. ``python -m hayakoe_ros.tts_node`` imports before its ``main``
runs and is not covered.
"""

from __future__ import annotations

import importlib
import signal
import sys

#: Signals caught before :mod:`.early_signals` (which imports threading) took over.
_FIRST: list = []


def _start(name: str) -> int:
    """Catch signals, import ``hayakoe_ros.<name>`` and run its ``main(stop=...)``.

    Returns:
        The node's exit status; 0 when a signal came before the node was built.
    """
    for signum in (signal.SIGINT, signal.SIGTERM):  # before any other import
        signal.signal(signum, lambda number, _frame: _FIRST.append(number))
    from .early_signals import catch_signals

    stop, caught = catch_signals()
    if _FIRST:
        caught[:0] = _FIRST
        stop.set()
    main = importlib.import_module(f'hayakoe_ros.{name}').main
    if stop.is_set():  # said here: run() would say nothing of a start that never began
        print(f'{name}: {signal.Signals(caught[0]).name} while loading: not started',
              file=sys.stderr)
        from .node.runner import ignore_signals  # loaded with the node's module

        ignore_signals()
        return 0
    return main(stop=stop)


def tts_node() -> int:
    """``tts_node``: :func:`hayakoe_ros.tts_node.main`, signals caught from the start."""
    return _start('tts_node')


def tts_fleet() -> int:
    """``tts_fleet``: :func:`hayakoe_ros.tts_fleet.main`, signals caught from the start."""
    return _start('tts_fleet')


def player_node() -> int:
    """``player_node``: :func:`hayakoe_ros.player_node.main`, signals caught from the start."""
    return _start('player_node')
