# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ROS side of ``say``: send one ``say`` goal, record the audio, write a WAV file.

:mod:`hayakoe_ros.say` parses the command line and imports this module only when a node is
to be asked (``--print-reading`` needs no ROS). Prints the audio duration, the time to
first audio (goal sent to first feedback chunk) and the real-time factor (the node's
synthesis compute time over audio duration, read from /diagnostics; wall time over audio
duration if unavailable).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Optional
import wave

import numpy as np
import rclpy
from action_msgs.msg import GoalStatus
from audio_common_msgs.action import TTS
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.action import ActionClient
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

#: Depth of the client's feedback queue: the node's audio depth (qos_depth, 100): the WAV
#: is written from feedback, and rclpy's default depth 10 lost chunks when the client
#: stalled for 0.3 s.
FEEDBACK_DEPTH = 100


def write_wav(path: str, samples: np.ndarray, sample_rate: int) -> None:
    """Write mono int16 PCM ``samples`` (shape ``(n,)``) to a WAV file at ``sample_rate`` Hz.

    Uses the standard library's :mod:`wave` writer.
    """
    with wave.open(path, 'wb') as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(int(sample_rate))
        wav.writeframes(np.asarray(samples, dtype='<i2').tobytes())


class SayClient(Node):
    """Action client that collects the feedback audio of one ``say`` goal."""

    def __init__(self, action_name: str = 'say') -> None:
        super().__init__('say_client')
        self._client: ActionClient = ActionClient(
            self, TTS, action_name, feedback_sub_qos_profile=QoSProfile(
                depth=FEEDBACK_DEPTH, reliability=ReliabilityPolicy.RELIABLE))
        self.chunks: list = []
        self.sample_rate = 0
        self.first_audio_at: Optional[float] = None
        self.last_rtf: Optional[float] = None
        self.spoken: Optional[int] = None  # the node's utterances_spoken, from /diagnostics
        self._baseline: Optional[int] = None
        self._diag = self.create_subscription(DiagnosticArray, '/diagnostics',
                                              self._on_diag, 10)
        self._lock = threading.Lock()

    def _on_diag(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            if 'utterances_spoken' not in values:
                continue
            self.spoken = int(values['utterances_spoken'])
            # Only a report that counts our utterance carries its RTF.
            if self._baseline is not None and self.spoken > self._baseline and \
                    values.get('last_rtf'):
                self.last_rtf = float(values['last_rtf'])

    def _on_feedback(self, feedback_msg) -> None:
        audio = feedback_msg.feedback.audio.audio
        with self._lock:
            if self.first_audio_at is None:
                self.first_audio_at = time.monotonic()
            self.sample_rate = audio.info.rate
            self.chunks.append(np.asarray(audio.audio_data.int16_data, dtype=np.int16))

    def say(self, text: str, language: str, rate: float, volume: float,
            timeout: float) -> tuple:
        """Send the goal and wait; return ``(status, result_text, sent_at, done_at)``.

        Raises:
            TimeoutError: no action server, or no result within ``timeout`` seconds.
        """
        if not self._client.wait_for_server(timeout_sec=timeout):
            raise TimeoutError(f"no '{self._client._action_name}' action server within "
                               f'{timeout:.0f} s (is tts_node running and active?)')
        goal = TTS.Goal(text=text, language=language, rate=rate, volume=volume)
        deadline = time.monotonic() + 1.5  # learn how many utterances the node has spoken
        while self.spoken is None and time.monotonic() < deadline:
            rclpy.spin_once(self, timeout_sec=0.1)
        self._baseline = self.spoken
        sent_at = time.monotonic()
        future = self._client.send_goal_async(goal, feedback_callback=self._on_feedback)
        rclpy.spin_until_future_complete(self, future, timeout_sec=timeout)
        handle = future.result()
        if handle is None:
            raise TimeoutError(f'the node did not answer the goal within {timeout:.0f} s')
        if not handle.accepted:
            raise RuntimeError('goal rejected by the node')
        result_future = handle.get_result_async()
        rclpy.spin_until_future_complete(self, result_future, timeout_sec=timeout)
        if not result_future.done():
            raise TimeoutError(f'no result within {timeout:.0f} s')
        done_at = time.monotonic()
        result = result_future.result()
        if result is None:
            raise RuntimeError('the goal ended without a result')
        return result.status, result.result.text, sent_at, done_at


def run(args, text: str, ros_args: list) -> int:
    """Speak ``text`` through the node's ``say`` action with the parsed ``args``."""
    rclpy.init(args=['say'] + ros_args)
    node = SayClient(args.action)
    try:
        status, result_text, sent_at, done_at = node.say(
            text, args.language, args.rate, args.volume, args.timeout)
        deadline = time.monotonic() + 2.5  # the node's next /diagnostics has its RTF
        while node.last_rtf is None and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.1)
        audio = np.concatenate(node.chunks) if node.chunks else np.zeros(0, np.int16)
        if status != GoalStatus.STATUS_SUCCEEDED:
            print(f'say: goal ended with status {status}: {result_text}', file=sys.stderr)
            return 1
        write_wav(args.output, audio, node.sample_rate or 44100)
        duration = audio.size / node.sample_rate if node.sample_rate else 0.0
        ttfa = (node.first_audio_at - sent_at) if node.first_audio_at else float('nan')
        if node.last_rtf is not None:
            rtf, how = node.last_rtf, 'synthesis time / audio duration, from the node'
        else:
            rtf, how = (done_at - sent_at) / duration if duration else float('nan'), \
                'wall time / audio duration'
        print(f'spoken: {result_text}')
        print(f'wrote {args.output}: {duration:.2f} s of audio at {node.sample_rate} Hz, '
              f'{len(node.chunks)} chunks')
        print(f'time to first audio: {ttfa * 1000:.0f} ms')
        print(f'real-time factor: {rtf:.3f} ({how})')
        return 0
    except (TimeoutError, RuntimeError) as exc:
        print(f'say: {exc}', file=sys.stderr)
        return 1
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
