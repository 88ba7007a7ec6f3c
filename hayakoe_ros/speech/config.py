# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The scheduler's settings and queue policies (no ROS imports)."""

from __future__ import annotations

import dataclasses
import enum


class QueuePolicy(str, enum.Enum):
    """What a new utterance does when another is speaking."""

    #: Wait in FIFO order behind what is queued.
    ENQUEUE = 'enqueue'
    #: Cancel the utterance speaking and be spoken next, after other interrupting ones
    #: not yet started (a burst keeps its arrival order); waiting ones stay queued.
    INTERRUPT = 'interrupt'
    #: Newest wins: cancel the utterance speaking and drop every one waiting.
    REPLACE = 'replace'


@dataclasses.dataclass(frozen=True)
class SchedulerConfig:
    """Live-tunable settings; replaced atomically by :meth:`SpeechScheduler.configure`.

    Attributes:
        chunk_frames: Frames (samples, mono) per published chunk.
        max_lead_s: How far ahead of playback a chunk may be published (s).
        pacing: False publishes as fast as synthesis allows (benchmarks).
        max_queue: Waiting utterances (not counting the one speaking) before rejecting.
        queue_policy: A :class:`QueuePolicy` (the plain strings ``'enqueue'``,
            ``'interrupt'`` and ``'replace'`` are accepted and converted on validation).
        max_segment_chars: Longest synthesis segment in characters.
        max_chars: Longest accepted utterance in characters.
        volume: Linear gain of the voice (1.0 = the model's own level).
        first_segment_morae: 0, or the morae after which an utterance's first segment
            ends (at the next clause or accent-phrase boundary), later segments growing
            toward ``max_segment_chars`` (:class:`~hayakoe_ros.text.segment.SegmentRamp`).
        gapless: Delay each utterance's start so that, at the measured real-time factor,
            no segment boundary underruns (:mod:`.gapless`; with ``pacing`` only).
        offboard_timeout_s: With a remote voice (:mod:`.relay`), how long its first audio
            may take before the engine speaks instead (s, > 0).
        offboard_stall_s: How long its audio may stop mid-utterance before the engine
            speaks the rest (s, > 0).
    """

    chunk_frames: int = 2048
    max_lead_s: float = 0.3
    pacing: bool = True
    max_queue: int = 16
    queue_policy: QueuePolicy = QueuePolicy.ENQUEUE
    max_segment_chars: int = 60
    max_chars: int = 2000
    volume: float = 1.0
    first_segment_morae: int = 0
    gapless: bool = False
    offboard_timeout_s: float = 2.0
    offboard_stall_s: float = 1.0

    def validated(self) -> 'SchedulerConfig':
        """Return a checked copy with ``queue_policy`` as a :class:`QueuePolicy`.

        Raises:
            ValueError: naming the setting, its allowed values and the value given.
        """
        try:
            policy = QueuePolicy(self.queue_policy)
        except ValueError:
            allowed = ', '.join(p.value for p in QueuePolicy)
            raise ValueError(f'queue_policy must be one of: {allowed}; got '
                             f'{self.queue_policy!r}') from None
        if self.chunk_frames < 1 or self.max_segment_chars < 1 or self.max_chars < 1:
            raise ValueError('chunk_frames, max_segment_chars and max_chars must be >= 1')
        if not (self.offboard_timeout_s > 0 and self.offboard_stall_s > 0):
            raise ValueError('offboard_timeout_s and offboard_stall_s must be > 0')
        if self.max_queue < 0 or self.max_lead_s < 0 or self.volume < 0 or \
                self.first_segment_morae < 0:
            raise ValueError('max_queue, max_lead_s, volume and first_segment_morae must '
                             'be >= 0')
        return dataclasses.replace(self, queue_policy=policy)
