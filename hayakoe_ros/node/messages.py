# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Conversion of speech-pipeline chunks to ROS messages (pure functions, no node)."""

from __future__ import annotations

import array
from typing import Optional

from audio_common_msgs.msg import AudioStamped
from builtin_interfaces.msg import Time as TimeMsg

from ..speech import AudioChunk

#: PortAudio sample format flag for int16 (paInt16), as audio_common's ``AudioInfo`` uses.
PA_INT16 = 8


def stamp_from_ns(nanoseconds: int) -> TimeMsg:
    """``builtin_interfaces/Time`` for a time in integer nanoseconds (>= 0)."""
    sec, nanosec = divmod(int(nanoseconds), 1_000_000_000)
    return TimeMsg(sec=sec, nanosec=nanosec)


def chunk_to_msg(chunk: AudioChunk, stamp_ns: int, frame_id: str) -> AudioStamped:
    """Build the ``AudioStamped`` message of one chunk.

    Args:
        chunk: The chunk; ``chunk.samples`` is int16 ``(frames,)`` mono PCM.
        stamp_ns: Intended playback time of the chunk's first sample, in nanoseconds of the
            node's clock (``header.stamp``).
        frame_id: ``header.frame_id``.

    Returns:
        The message: ``info.format`` = 8 (paInt16), ``info.channels`` = 1, ``info.rate`` =
        the chunk's sample rate (Hz), ``info.chunk`` = frames in the message; the samples in
        ``audio_data.int16_data``.
    """
    msg = AudioStamped()
    msg.header.stamp = stamp_from_ns(stamp_ns)
    msg.header.frame_id = frame_id
    info = msg.audio.info
    info.format = PA_INT16
    info.channels = 1
    info.rate = int(chunk.sample_rate)
    info.chunk = int(len(chunk.samples))
    msg.audio.audio_data.int16_data = array.array('h', chunk.samples.astype('=i2').tobytes())
    return msg


class StampClock:
    """Maps the scheduler's monotonic playback times to ROS time, one offset per utterance.

    One offset per utterance keeps consecutive stamps exactly ``chunk / rate`` apart
    (reading both clocks at every chunk would add jitter).

    Args:
        now_ns: Returns the node clock's current time in nanoseconds.
        monotonic: Returns monotonic seconds (the scheduler's clock).
    """

    def __init__(self, now_ns, monotonic) -> None:
        self._now_ns = now_ns
        self._monotonic = monotonic
        self._utterance: Optional[int] = None
        self._offset_ns = 0

    def stamp_ns(self, utterance_id: int, play_time: float) -> int:
        """Node-clock nanoseconds of monotonic ``play_time`` (s) for ``utterance_id``."""
        if utterance_id != self._utterance:
            self._utterance = utterance_id
            self._offset_ns = self._now_ns() - int(self._monotonic() * 1e9)
        return self._offset_ns + int(round(play_time * 1e9))
