# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Publishing one attempt at one utterance: its chunker, playback clock and position.

The scheduler's publisher thread keeps one :class:`Track` per utterance attempt and feeds
it the :class:`~.synthesis.SegmentPCM` hand-overs in order; the track cuts them into
chunks and passes each, with its sample position, to the scheduler's ``emit`` (which
releases it at its playback time and hands it to the sink). No ROS imports.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from .audio import Chunker
from .pacing import Pacer, Waiter
from .synthesis import SegmentPCM
from .utterance import Attempt, SchedulerConfig, Utterance

#: While an utterance's start is delayed (gapless), how often the publisher looks at
#: ``Attempt.start_at`` again: the synthesis thread may move it (s, clock time).
START_POLL_S = 0.1


class Track:
    """Publishing state of one attempt at one utterance.

    Args:
        utt: The utterance (its ``sample_rate`` is set by then).
        attempt: The :class:`~.utterance.Attempt` the hand-overs belong to; this track
            writes its ``underruns`` (through the scheduler) and ``start_delay_s``.
        config: The scheduler's settings when the attempt's first hand-over came.
        clock: Monotonic seconds; ``waiter``: bounded event wait (see :mod:`.pacing`).

    Attributes:
        position: Samples of the utterance released so far.
        index: Chunks released so far (the next chunk's index).
    """

    def __init__(self, utt: Utterance, attempt: Attempt, config: SchedulerConfig,
                 clock: Callable[[], float], waiter: Waiter) -> None:
        self.utt = utt
        self.attempt = attempt
        self.chunker = Chunker(config.chunk_frames)
        self.pacer = Pacer(utt.sample_rate, config.max_lead_s, config.pacing, clock, waiter)
        self._clock = clock
        self._waiter = waiter
        self.position = 0
        self.index = 0
        self._first_ready: Optional[float] = None

    def play(self, item: SegmentPCM,
             emit: Callable[['Track', np.ndarray, int], bool]) -> bool:
        """Publish one hand-over; True once the utterance's last sample has played.

        Nothing of ``item`` goes out before its ``not_before``, and nothing of the
        utterance before its ``start_at`` (a gapless start delay, which the synthesis
        thread may move while it lasts). ``emit(track, samples, valid_frames)`` releases
        one chunk; it returns False when the chunk was dropped (canceled), which ends this
        call (False).
        """
        halt = self.utt._halt
        wait = item.not_before - self._clock()
        if wait > 0 and self._waiter(halt, wait):
            return False
        if self.index == 0 and self.position == 0:  # before the first chunk
            if self._first_ready is None:
                self._first_ready = item.not_before
            while (wait := self.attempt.start_at - self._clock()) > 0:
                if self._waiter(halt, min(wait, START_POLL_S)):
                    return False
            # The delay that took effect (the synthesis thread may have moved it).
            self.attempt.start_delay_s = max(0.0, self.attempt.start_at - self._first_ready)
        for samples in self.chunker.add(item.pcm):
            if not emit(self, samples, len(samples)):
                return False
        if not item.last:
            return False
        tail = self.chunker.flush()
        if tail is not None and not emit(self, tail[0], tail[1]):
            return False
        return self.pacer.wait_until(self.position, halt)
