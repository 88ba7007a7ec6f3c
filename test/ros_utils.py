# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Helpers for tests that run ``tts_node`` as a real process and talk to it over the rmw."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import rclpy
from audio_common_msgs.action import TTS
from audio_common_msgs.msg import AudioStamped
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

REPO = Path(__file__).resolve().parents[1]
_NAMESPACES = itertools.count(1)


def new_namespace() -> str:
    """A namespace no other node of this test session uses."""
    return f'/t{os.getpid()}_{next(_NAMESPACES)}'


class NodeProcess:
    """``python -m hayakoe_ros.tts_node`` in its own namespace, with its log captured."""

    def __init__(self, params: dict, name: str = 'tts_node', extra_args=(),
                 wait_ready: bool = True, timeout: float = 120.0,
                 namespace: str = '', module: str = 'hayakoe_ros.tts_node',
                 env: dict = None) -> None:
        self.namespace = namespace or new_namespace()
        self.name = name
        args = [sys.executable, '-m', module, '--ros-args',
                '-r', f'__ns:={self.namespace}', '-r', f'__node:={name}']
        for key, value in params.items():
            if isinstance(value, bool):
                value = str(value).lower()
            args += ['-p', f'{key}:={value}']
        args += list(extra_args)
        self.log_path = Path(os.environ.get('PYTEST_TMP', '/tmp')) / \
            f'{name}{self.namespace.replace("/", "_")}.log'
        self._log = open(self.log_path, 'w')
        env = dict(os.environ, PYTHONUNBUFFERED='1', RCUTILS_COLORIZED_OUTPUT='0',
                   **(env or {}))
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT,
                                     cwd=REPO, env=env)
        if wait_ready:
            self.wait_for_log('ready:', timeout)

    def log(self) -> str:
        """Everything the node printed so far."""
        return self.log_path.read_text(errors='replace')

    def wait_for_log(self, needle: str, timeout: float) -> None:
        """Wait until ``needle`` appears in the log; fail with the log if the node dies."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.log():
                return
            if self.proc.poll() is not None:
                raise AssertionError(f'tts_node exited ({self.proc.returncode}):\n{self.log()}')
            time.sleep(0.1)
        raise AssertionError(f'{needle!r} not logged within {timeout} s:\n{self.log()}')

    def topic(self, name: str) -> str:
        """Fully qualified name of a node-relative topic/service/action."""
        return f'{self.namespace}/{name}'

    def stop(self, timeout: float = 20.0) -> int:
        """SIGINT, wait, return the exit status (kills after ``timeout``)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


class Client:
    """An rclpy node in the test process, spun by a background executor."""

    def __init__(self, name: str = 'test_client') -> None:
        self.node = Node(name)
        self._action_clients: dict = {}
        self.executor = MultiThreadedExecutor(num_threads=4)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop spinning and destroy the node."""
        self.executor.shutdown()
        self.node.destroy_node()

    def audio_recorder(self, topic: str, reliability=ReliabilityPolicy.RELIABLE):
        """Subscribe to ``topic`` and return the :class:`AudioRecorder`."""
        rec = AudioRecorder()
        qos = QoSProfile(depth=1000, reliability=reliability)
        rec.sub = self.node.create_subscription(AudioStamped, topic, rec.on_msg, qos)
        return rec

    def action_client(self, name: str) -> ActionClient:
        """An action client of the ``TTS`` action ``name`` (waits for the server)."""
        if name in self._action_clients:
            return self._action_clients[name]
        client = ActionClient(self.node, TTS, name)
        assert client.wait_for_server(timeout_sec=30), f'no action server {name}'
        # wait_for_server() sees the goal service; give the feedback and status topics
        # time to match too, or the first feedback messages can be missed.
        time.sleep(0.5)
        self._action_clients[name] = client
        return client

    def diagnostics(self, node: 'NodeProcess', timeout: float = 10.0):
        """The latest ``DiagnosticStatus`` that ``node`` published on /diagnostics."""
        from diagnostic_msgs.msg import DiagnosticArray

        seen: list = []
        sub = self.node.create_subscription(DiagnosticArray, '/diagnostics',
                                            lambda m: seen.extend(m.status), 10)
        prefix = node.topic(node.name)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                mine = [s for s in list(seen) if s.name.startswith(prefix)]
                if mine:
                    return mine[-1]
                time.sleep(0.1)
        finally:
            self.node.destroy_subscription(sub)
        raise AssertionError(f'no diagnostics from {prefix}')

    def wait_for_subscribers(self, topic: str, publisher_count: int = 1,
                             timeout: float = 10.0) -> None:
        """Wait until the topic has ``publisher_count`` publishers matched (discovery)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.node.count_publishers(topic) >= publisher_count:
                time.sleep(0.3)  # let the reliable match settle
                return
            time.sleep(0.05)
        raise AssertionError(f'no publisher on {topic}')


class AudioRecorder:
    """Keeps every ``AudioStamped`` received, with its arrival time."""

    def __init__(self) -> None:
        self.msgs: list = []
        self.lock = threading.Lock()
        self.sub = None

    def on_msg(self, msg: AudioStamped) -> None:
        with self.lock:
            self.msgs.append((time.monotonic(), msg))

    def count(self) -> int:
        with self.lock:
            return len(self.msgs)

    def samples(self) -> np.ndarray:
        """All received int16 samples, concatenated."""
        with self.lock:
            return np.concatenate([np.asarray(m.audio.audio_data.int16_data, np.int16)
                                   for _, m in self.msgs]) if self.msgs else np.zeros(0)

    def wait_quiet(self, quiet_s: float = 1.0, timeout: float = 60.0,
                   min_count: int = 1) -> None:
        """Wait until at least ``min_count`` messages arrived and none for ``quiet_s``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                last = self.msgs[-1][0] if self.msgs else None
                n = len(self.msgs)
            if n >= min_count and last is not None and time.monotonic() - last > quiet_s:
                return
            time.sleep(0.05)
        raise AssertionError(f'audio did not finish within {timeout} s ({self.count()} msgs)')


def wait_future(future, timeout: float = 60.0):
    """Block until an rclpy future (spun elsewhere) is done; return its result."""
    deadline = time.monotonic() + timeout
    while not future.done():
        if time.monotonic() > deadline:
            raise AssertionError('future not done in time')
        time.sleep(0.01)
    return future.result()


def init_rclpy() -> None:
    """rclpy.init() once per test process."""
    if not rclpy.ok():
        rclpy.init()
