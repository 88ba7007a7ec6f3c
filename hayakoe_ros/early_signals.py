# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""SIGINT and SIGTERM as a flag, set before the ROS imports (no ROS here).

The ``say`` tool and the nodes' entry points (:mod:`hayakoe_ros.entry`) install it first
thing: their imports take a few tenths of a second, and a signal inside them otherwise
ends the process with a traceback (SIGINT) or by the signal itself (SIGTERM).
"""

from __future__ import annotations

import signal
import threading


def catch_signals() -> tuple:
    """SIGINT and SIGTERM from now on set an event: return it and the signals' list.

    Returns:
        ``(stop, caught)``: a ``threading.Event`` set by the first signal, and the signal
        numbers received, in order (the exit status is ``128 + caught[0]``).
    """
    stop = threading.Event()
    caught: list = []

    def on_signal(signum, _frame) -> None:
        caught.append(signum)
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    return stop, caught
