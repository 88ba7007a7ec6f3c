# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Drive ``tts_node`` processes over the rmw for the benchmarks.

:class:`NodeProcess` (tools/node_process.py, shared with the tests) runs
``python -m hayakoe_ros.tts_node`` in its own namespace; :class:`BenchClient` is an rclpy
node in the benchmark process that speaks through a node's ``text`` topic or ``say``
action and timestamps every audio chunk on arrival (``time.monotonic()`` in the
subscription callback).
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from tools.node_process import NodeProcess, read_vm_kib

__all__ = ['BenchClient', 'NodeProcess', 'audio_seconds', 'lost_chunks', 'read_cpu_s',
           'read_vm_kib']


def read_cpu_s(pid: int) -> float:
    """Return the CPU time (user + system, all threads) ``pid`` has used so far, seconds."""
    with open(f'/proc/{pid}/stat', encoding='ascii') as stat:
        fields = stat.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


class _Recorder:
    """Arrival time, stamp and samples of every audio message, and speaking events."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.msgs: list = []  # (monotonic arrival, stamp ns, int16 samples, rate)
        self.speaking: list = []  # (monotonic arrival, bool)
        self.changed = threading.Condition(self.lock)

    def on_audio(self, msg) -> None:
        now = time.monotonic()
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        samples = np.frombuffer(msg.audio.audio_data.int16_data, dtype=np.int16)
        with self.lock:
            self.msgs.append((now, stamp, samples, msg.audio.info.rate))
            self.changed.notify_all()

    def on_speaking(self, msg) -> None:
        now = time.monotonic()
        with self.lock:
            self.speaking.append((now, bool(msg.data)))
            self.changed.notify_all()

    def mark(self) -> tuple:
        with self.lock:
            return len(self.msgs), len(self.speaking)

    def since(self, mark: tuple) -> list:
        with self.lock:
            return list(self.msgs[mark[0]:])


def audio_seconds(msgs: list) -> float:
    """Seconds of audio in ``msgs``, leaving out the zero padding of the last chunk.

    Every message holds ``chunk`` frames and the last one of an utterance is zero-padded;
    trailing exact zeros of the last message are taken as padding.
    """
    if not msgs:
        return 0.0
    total = sum(len(m[2]) for m in msgs)
    last = msgs[-1][2]
    nonzero = np.flatnonzero(last)
    padding = len(last) - (int(nonzero[-1]) + 1 if nonzero.size else 0)
    return (total - padding) / msgs[-1][3]


def lost_chunks(msgs: list) -> int:
    """Chunks missing from ``msgs``, from gaps in their stamps (pacing off: gapless)."""
    if len(msgs) < 2:
        return 0
    period_ns = len(msgs[0][2]) / msgs[0][3] * 1e9
    expected = round((msgs[-1][1] - msgs[0][1]) / period_ns) + 1
    return max(0, expected - len(msgs))


class BenchClient:
    """An rclpy node in the benchmark process, talking to one ``tts_node``.

    Args:
        node: The :class:`NodeProcess` to talk to.
        name: Name of the client node.
    """

    def __init__(self, node: NodeProcess, name: str = 'bench_client') -> None:
        from audio_common_msgs.action import TTS
        from audio_common_msgs.msg import AudioStamped
        from rclpy.action import ActionClient
        from rclpy.client import Client
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from rcl_interfaces.srv import SetParameters
        from std_msgs.msg import Bool, String

        self.target = node
        self.node = Node(name)
        self.rec = _Recorder()
        self._tts = TTS
        self._audio_sub = self.node.create_subscription(
            AudioStamped, node.topic('audio'), self.rec.on_audio,
            QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
        self._speaking_sub = self.node.create_subscription(
            Bool, node.topic('speaking'), self.rec.on_speaking,
            QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._text_pub = self.node.create_publisher(String, node.topic('text'), 10)
        self._string = String
        # Feedback as deep as the audio subscription: with pacing off a node sends a
        # segment's chunks in a burst, and rclpy's default depth (10) lost up to a fifth of
        # a goal's feedback here while the machine was loaded.
        self._action: ActionClient = ActionClient(
            self.node, TTS, node.topic('say'), feedback_sub_qos_profile=QoSProfile(
                depth=1000, reliability=ReliabilityPolicy.RELIABLE))
        self._params: Client = self.node.create_client(SetParameters,
                                               node.topic('tts_node/set_parameters'))
        # One thread: the callbacks only record what arrives. A MultiThreadedExecutor
        # here (2 workers and a spinning thread per client, four clients in the fleet
        # part) ran the feedback callback of a chunk the node had already published
        # 28-124 ms late for 6-9 of 20 goals at once, and once 391 ms late (typically
        # 3-8 ms), while the node's ONNX threads held both cores; with this executor,
        # in the same runs, at most 5.6 ms. The client is to measure the node, not
        # its own wait.
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()
        self._wait_matched()

    def _wait_matched(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (self._audio_sub.get_publisher_count() >= 1
                    and self._text_pub.get_subscription_count() >= 1
                    and self._action.server_is_ready()
                    and self._params.service_is_ready()):
                time.sleep(0.5)  # let feedback/status topics and reliable matches settle
                return
            time.sleep(0.05)
        raise RuntimeError(f'could not reach {self.target.namespace}/tts_node')

    def close(self) -> None:
        """Stop spinning and destroy the client node."""
        self.executor.shutdown()
        self.node.destroy_node()

    def set_parameter(self, name: str, value) -> None:
        """Set one parameter of the node (bool, int, float or str); raise if rejected."""
        from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters

        pv = ParameterValue()
        if isinstance(value, bool):
            pv.type, pv.bool_value = ParameterType.PARAMETER_BOOL, value
        elif isinstance(value, int):
            pv.type, pv.integer_value = ParameterType.PARAMETER_INTEGER, value
        elif isinstance(value, float):
            pv.type, pv.double_value = ParameterType.PARAMETER_DOUBLE, value
        else:
            pv.type, pv.string_value = ParameterType.PARAMETER_STRING, str(value)
        req = SetParameters.Request(parameters=[Parameter(name=name, value=pv)])
        result = _wait(self._params.call_async(req), 10.0)
        if not result.results[0].successful:
            raise RuntimeError(f'{name}:={value} rejected: {result.results[0].reason}')

    def _wait_done(self, mark: tuple, timeout: float) -> None:
        """Wait for a speaking true -> false cycle after ``mark``, then 0.3 s of quiet."""
        deadline = time.monotonic() + timeout
        with self.rec.changed:
            while True:
                events = [s for _, s in self.rec.speaking[mark[1]:]]
                if True in events and events[-1] is False:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f'utterance not finished within {timeout} s')
                self.rec.changed.wait(left)
        self._wait_quiet(0.3)

    def _wait_quiet(self, quiet_s: float) -> None:
        while True:
            with self.rec.lock:
                last = self.rec.msgs[-1][0] if self.rec.msgs else 0.0
            idle = time.monotonic() - last
            if idle >= quiet_s:
                return
            time.sleep(quiet_s - idle)

    def speak_topic(self, text: str, timeout: float = 600.0) -> dict:
        """Publish ``text`` on ``text``; time the first and the last chunk received.

        Returns seconds: ``ttfa_s`` (publish -> first chunk), ``total_s`` (publish -> last
        chunk), ``audio_s`` (audio received, padding excluded) and ``cpu_s`` (CPU time
        the node process used meanwhile, all threads).
        """
        mark = self.rec.mark()
        cpu0 = read_cpu_s(self.target.pid)
        t0 = time.monotonic()
        self._text_pub.publish(self._string(data=text))
        self._wait_done(mark, timeout)
        cpu = read_cpu_s(self.target.pid) - cpu0
        msgs = self.rec.since(mark)
        if not msgs:
            raise RuntimeError('no audio received')
        return {'ttfa_s': msgs[0][0] - t0, 'total_s': msgs[-1][0] - t0,
                'audio_s': audio_seconds(msgs), 'chunks': len(msgs), 'cpu_s': cpu,
                'lost_chunks': lost_chunks(msgs)}

    def cancel_after(self, text: str, after_audio_s: float, timeout: float = 120.0) -> dict:
        """Send a ``say`` goal, cancel it once ``after_audio_s`` of audio has arrived.

        Returns seconds: ``latency_s`` (cancel request sent -> last chunk received on
        ``audio``, 0 when none arrived after it), ``ack_s`` (cancel sent -> cancel
        response), ``late_chunks`` (chunks received after the cancel was sent) and
        ``downstream_s`` (audio already published whose playback stamp lies after the
        cancel: what a player that buffers everything would still play).
        """
        from action_msgs.msg import GoalStatus

        mark, handle = self._goal_with_audio(text, after_audio_s, timeout)
        wall_ns = time.time_ns()
        t_cancel = time.monotonic()
        response = _wait(handle.cancel_goal_async(), 10.0)
        t_ack = time.monotonic()
        if len(response.goals_canceling) != 1:
            raise RuntimeError('cancel refused')
        result = _wait(handle.get_result_async(), 60.0)
        if result.status != GoalStatus.STATUS_CANCELED:
            raise RuntimeError(f'goal ended with status {result.status}, not canceled')
        time.sleep(0.5)  # anything still on the wire arrives
        msgs = self.rec.since(mark)
        last_t, last_stamp, last_samples, rate = msgs[-1]
        end_of_audio_ns = last_stamp + int(len(last_samples) / rate * 1e9)
        return {'latency_s': max(0.0, last_t - t_cancel), 'ack_s': t_ack - t_cancel,
                'late_chunks': sum(1 for m in msgs if m[0] > t_cancel),
                'downstream_s': max(0.0, (end_of_audio_ns - wall_ns) / 1e9)}

    def _goal_with_audio(self, text: str, after_audio_s: float, timeout: float) -> tuple:
        """Send a ``say`` goal; return ``(mark, handle)`` once ``after_audio_s`` of audio came.

        Raises ``RuntimeError`` if the goal is rejected or the audio does not come within
        ``timeout`` seconds.
        """
        mark = self.rec.mark()
        handle = _wait(self._action.send_goal_async(self._tts.Goal(text=text)), 30.0)
        if not handle.accepted:
            raise RuntimeError('goal rejected')
        deadline = time.monotonic() + timeout
        while True:
            msgs = self.rec.since(mark)
            if msgs and sum(len(m[2]) for m in msgs) / msgs[0][3] >= after_audio_s:
                return mark, handle
            if time.monotonic() > deadline:
                raise RuntimeError('not enough audio before the cancel')
            time.sleep(0.002)

    def say_first_audio(self, text: str, timeout: float = 120.0) -> dict:
        """Send a ``say`` goal on an idle node and time its first feedback chunk.

        Returns seconds: ``ttfa_s`` (goal sent -> first feedback chunk received, i.e. the
        goal's own first audio) and ``total_s`` (goal sent -> result received).
        """
        first: list = []
        t0 = time.monotonic()
        goal = self._action.send_goal_async(self._tts.Goal(text=text),
                                            feedback_callback=_first_arrival(first))
        first_at = self._first_audio_at(goal, first, timeout)
        return {'ttfa_s': first_at - t0, 'total_s': time.monotonic() - t0}

    def _first_audio_at(self, goal_future, first: list, timeout: float) -> float:
        """Wait for a goal sent with ``_first_arrival(first)`` to finish; its first audio.

        Returns the monotonic time its first feedback chunk arrived, after the goal's
        result and 0.3 s of quiet on ``audio``. Raises ``RuntimeError`` if the goal is
        rejected or finishes without audio.
        """
        handle = _wait(goal_future, 30.0)
        if not handle.accepted:
            raise RuntimeError('goal rejected')
        _wait(handle.get_result_async(), timeout)
        if not first:
            raise RuntimeError('goal finished without audio')
        self._wait_quiet(0.3)
        return first[0]

    def cancel_then_say(self, text: str, next_text: str, after_audio_s: float,
                        timeout: float = 120.0) -> dict:
        """Cancel a speaking ``say`` goal and at once send the next one; time its audio.

        The first goal speaks ``text`` until ``after_audio_s`` of its audio has arrived
        (its next segment is then being synthesised); the cancel request is sent, and the
        goal for ``next_text`` right after it, without waiting for the cancel response,
        as a dialogue manager does when the user interrupts. Returns seconds:
        ``next_ttfa_s`` (next goal sent -> its first feedback chunk) and ``ack_s``
        (cancel sent -> cancel response).
        """
        _mark, handle = self._goal_with_audio(text, after_audio_s, timeout)
        first: list = []
        t_cancel = time.monotonic()
        cancel_future = handle.cancel_goal_async()
        t_next = time.monotonic()
        next_future = self._action.send_goal_async(
            self._tts.Goal(text=next_text),
            feedback_callback=_first_arrival(first))
        response = _wait(cancel_future, 10.0)
        t_ack = time.monotonic()
        if len(response.goals_canceling) != 1:
            raise RuntimeError('cancel refused')
        first_at = self._first_audio_at(next_future, first, timeout)
        return {'next_ttfa_s': first_at - t_next, 'ack_s': t_ack - t_cancel}


def _first_arrival(times: list):
    """Feedback callback that records the monotonic arrival time of the first message."""
    def callback(_feedback) -> None:
        if not times:
            times.append(time.monotonic())
    return callback


def _wait(future, timeout: float):
    """Block until an rclpy future (spun by the client's executor) is done."""
    deadline = time.monotonic() + timeout
    while not future.done():
        if time.monotonic() > deadline:
            raise RuntimeError('ROS request timed out')
        time.sleep(0.002)
    return future.result()
