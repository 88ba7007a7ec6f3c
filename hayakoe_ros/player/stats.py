# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Counters of a :class:`~.playout.Playout`: chunks, underruns, headroom, cuts (no ROS)."""

from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass
class PlayoutStats:
    """Counters of one :class:`~.playout.Playout` (one open stream), from its creation.

    Attributes:
        chunks: Chunks received.
        underruns: Late chunks: contiguous with the previous chunk but received after the
            device had played everything queued (played at once, after a gap).
        late_s: Total silence that underruns put into the sound (s).
        frames_played: Device frames of audio rendered (silence between chunks excluded).
        output_latency_s: Last measured time from rendering a buffer to hearing it (s):
            the device's DAC time minus the callback's current time.
        resampled: Chunks that were resampled to the device rate.
        min_headroom_s: Least headroom of a contiguous chunk (s; ``inf`` before one):
            how long before the device would have rendered its first frame it arrived
            (negative for an underrun). What the jitter buffer and the publisher's lead
            left to spare; near 0, underruns are near.
        stamps_out_of_range: Chunks whose stamp was not believed (see
            :class:`~.playout.Playout`'s ``max_ahead_s``): played as if stamped on
            arrival, or right after the audio before them.
        cuts: Utterances cut short (:meth:`~.playout.Playout.cut`).
        dropped_chunks: Chunks of a cut utterance that arrived after its cut (dropped).
        dropped_s: Audio of cut utterances dropped before it was rendered (s, device
            rate), the fades' samples excluded.
    """

    chunks: int = 0
    underruns: int = 0
    late_s: float = 0.0
    frames_played: int = 0
    output_latency_s: float = 0.0
    resampled: int = 0
    min_headroom_s: float = math.inf
    stamps_out_of_range: int = 0
    cuts: int = 0
    dropped_chunks: int = 0
    dropped_s: float = 0.0
