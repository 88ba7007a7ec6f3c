# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``tts_node``'s audio outputs: the ``audio`` chunks and the ``speaking`` flag.

One :class:`AudioOut` per node owns both publishers, the stamps of the chunks
(:class:`~.messages.StampClock`) and the message of the chunk last built (a chunk goes
out on ``audio`` and as the ``say`` goal's feedback: built once). The scheduler's
publisher thread calls :meth:`AudioOut.publish` and :meth:`AudioOut.message`; its
threads and the executor's call :meth:`AudioOut.set_speaking` (serialised by a lock).
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from audio_common_msgs.msg import AudioStamped
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.publisher import Publisher
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool

from .messages import StampClock, chunk_to_msg
from .param_spec import QOS_OVERRIDES


class AudioOut:
    """Publishers of ``audio`` (while configured) and ``speaking`` (always).

    Args:
        node: The owning node.
        frame_id: Returns the ``header.frame_id`` for the next message (a live parameter).
    """

    def __init__(self, node, frame_id: Callable[[], str]) -> None:
        self._node = node
        self._frame_id = frame_id
        self._stamps = StampClock(lambda: node.get_clock().now().nanoseconds, time.monotonic)
        self._last_msg: tuple = (None, None)
        self._audio: Optional[Publisher] = None
        self._speaking = False
        self._speaking_lock = threading.Lock()
        # Transient local, depth 1: a subscriber that joins late learns the state at once.
        self._speaking_pub = node.create_publisher(
            Bool, 'speaking', QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                                         reliability=ReliabilityPolicy.RELIABLE,
                                         durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._speaking_pub.publish(Bool(data=False))

    @property
    def speaking(self) -> bool:
        """The last value published on ``speaking``."""
        return self._speaking

    @property
    def audio_publisher(self) -> Optional[Publisher]:
        """The ``audio`` publisher while configured (None otherwise)."""
        return self._audio

    def open(self, depth: int) -> None:
        """Create the ``audio`` publisher: reliable, keep-last ``depth``, QoS overridable."""
        qos = QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
        self._audio = self._node.create_publisher(
            AudioStamped, 'audio', qos,
            qos_overriding_options=QOS_OVERRIDES,
            event_callbacks=PublisherEventCallbacks(matched=self._on_matched))

    def close(self) -> None:
        """Destroy the ``audio`` publisher (``speaking`` stays)."""
        pub, self._audio = self._audio, None
        if pub is not None:
            self._node.destroy_publisher(pub)

    def _on_matched(self, info) -> None:
        # A subscriber that has not matched yet misses what is published (volatile): the
        # log says when a player (or a test) starts receiving. One event may carry a match
        # and a leave together (the counts' changes add up): each gets its line.
        pub = self._audio  # None once closed
        topic = pub.topic_name if pub is not None else 'audio'
        matched = max(0, info.total_count_change)
        left = max(0, matched - info.current_count_change)
        for _ in range(left):
            self._node.get_logger().info(f'{topic}: a subscriber left '
                                         f'({info.current_count} now)')
        for _ in range(matched):
            self._node.get_logger().info(f'{topic}: a subscriber matched '
                                         f'({info.current_count} now)')

    def stamp_ns(self, utt, play_time: float) -> int:
        """Node-clock ns at which scheduler-clock ``play_time`` (s) plays for ``utt``.

        As ``utt``'s chunks are stamped: one clock offset per utterance.
        """
        return self._stamps.stamp_ns(utt.id, play_time)

    def message(self, utt, chunk) -> AudioStamped:
        """The message of ``chunk`` of ``utt``, built once for the topic and the feedback."""
        cached_chunk, msg = self._last_msg
        if cached_chunk is not chunk:
            msg = chunk_to_msg(chunk, self.stamp_ns(utt, chunk.play_time), self._frame_id())
            self._last_msg = (chunk, msg)
        return msg

    def publish(self, utt, chunk) -> None:
        """Publish ``chunk`` on ``audio`` (the scheduler's sink; nothing once closed)."""
        pub = self._audio
        if pub is not None:
            pub.publish(self.message(utt, chunk))

    def set_speaking(self, speaking: bool) -> None:
        """Publish ``speaking`` when it changes."""
        with self._speaking_lock:
            if speaking == self._speaking:
                return
            self._speaking = speaking
            self._speaking_pub.publish(Bool(data=speaking))
