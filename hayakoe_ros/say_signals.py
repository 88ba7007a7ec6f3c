# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""SIGINT and SIGTERM as a flag for the ``say`` tool (no ROS: set before rclpy loads)."""

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
