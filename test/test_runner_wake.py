# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The process runner's main loop sleeps in the executor until there is a reason to exit.

It used to wake every 0.1 s to look at its exit conditions (an idle tts_node: 1.1 % of a
core, a 4-robot fleet 3.7 %, ``bench/idle_cpu.py``); now it waits up to
``EXIT_CHECK_S`` and a signal or the shutdown transition wakes it at once. These tests
block the executor's wait for far longer than that and check that each reason ends it.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from rclpy.executors import SingleThreadedExecutor

from hayakoe_ros.node import runner
from hayakoe_ros.node.executor_wait import spin_once
from ros_utils import init_rclpy

pytestmark = pytest.mark.ros

#: The executor wait each test blocks in (s): without the wakers it lasts this long.
LONG_WAIT_S = 30.0


def _blocked_wait(executor) -> float:
    """Seconds one ``spin_once(executor, LONG_WAIT_S)`` took."""
    t0 = time.monotonic()
    spin_once(executor, LONG_WAIT_S)
    return time.monotonic() - t0


def test_a_signal_wakes_the_main_loop_at_once():
    init_rclpy()
    executor = SingleThreadedExecutor()
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    wakers = runner._Wakers(executor, stop, threading.Event())
    try:
        # The signal comes while this (the main) thread is blocked in the wait: Python
        # runs its handler only after the wait returns.
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
        took = _blocked_wait(executor)
        assert stop.is_set()
        assert took < LONG_WAIT_S / 3, f'the wait lasted {took:.1f} s after SIGTERM'
    finally:
        wakers.close()
        signal.signal(signal.SIGTERM, previous)
        executor.shutdown()
    assert runner.EXIT_CHECK_S < LONG_WAIT_S / 3


def test_the_shutdown_transition_wakes_the_main_loop_at_once():
    init_rclpy()
    executor = SingleThreadedExecutor()
    stop, finalized = threading.Event(), threading.Event()
    wakers = runner._Wakers(executor, stop, finalized)
    try:
        # Set on an executor thread by on_shutdown in a node; here by another thread.
        threading.Timer(0.5, finalized.set).start()
        took = _blocked_wait(executor)
        assert finalized.is_set()
        assert took < LONG_WAIT_S / 3, f'the wait lasted {took:.1f} s after finalize'
    finally:
        wakers.close()
        executor.shutdown()
