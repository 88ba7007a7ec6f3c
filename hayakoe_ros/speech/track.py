# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Publishing one attempt at one utterance: its chunker, playback clock and position.

The scheduler's publisher thread keeps one :class:`Track` per utterance attempt and feeds
it the :class:`~.synthesis.SegmentPCM` hand-overs in order; the track cuts them into
chunks and passes each, with its sample position, to the scheduler's ``emit`` (which
releases it at its playback time and hands it to the sink). No ROS imports.
"""

from __future__ import annotations

import bisect
from typing import Callable, Optional

import numpy as np

from .audio import Chunker
from .marks import Mark, heard_ends
from .pacing import Pacer, Waiter
from .synthesis import SegmentPCM
from .utterance import Attempt, SchedulerConfig, Utterance

#: While an utterance's start is delayed (gapless), how often the publisher looks at
#: ``Attempt.start_at`` again: the synthesis thread may move it (s, clock time).
START_POLL_S = 0.1

#: Fade-out after the last sample of a cut utterance (s): made from the samples that would
#: have followed, so the cut never clicks; 10 ms is short enough to be heard as a stop and
#: longer than a period of the voice's lowest pitch.
FADE_S = 0.010

def fade_ramp(n: int) -> np.ndarray:
    """A raised-cosine fall over ``n`` samples (float64 ``(n,)``, from just under 1 to 0)."""
    return 0.5 + 0.5 * np.cos(np.pi * (np.arange(n) + 1.0) / max(1, n))


#: ``emit(track, samples, valid, after, last) -> bool``: see :meth:`Track.play`.
Emit = Callable[['Track', Optional[np.ndarray], int, np.ndarray, bool], bool]


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
        following: Up to :data:`FADE_S` of the samples after the last chunk released
            (int16), as far as they are known: what a cut fades out with.
        end_play_time: Clock time at which the sample after the last one released plays.
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
        self.following = np.zeros(0, np.int16)
        self.last_sample = 0  # the last sample released (int16), when nothing follows
        self.end_play_time: Optional[float] = None
        self._first_ready: Optional[float] = None
        self._marks: list = []      # speech marks not yet released, by position
        self._word_ends: list = []  # (sample end, character end) of each word, in order
        # What was heard before this attempt (another attempt's, or another voice's).
        self._heard_before = utt.heard_end

    def add_marks(self, marks) -> None:
        """Take a segment's speech marks (:class:`.marks.Mark`, on the sample axis)."""
        if marks:
            self._marks = sorted(self._marks + list(marks), key=lambda m: m.position)
            self._word_ends = sorted(self._word_ends + heard_ends(marks))

    def due_marks(self, upto: int, last: bool = False) -> list:
        """Marks whose first sample lies before ``upto``: released with the chunk before it.

        ``last``: the utterance's last chunk: every mark left, placed at most at ``upto``.
        """
        cut = len(self._marks) if last else bisect.bisect_left(
            [m.position for m in self._marks], upto)
        due, self._marks = self._marks[:cut], self._marks[cut:]
        if last:
            due = [m if m.position <= upto else Mark(m.kind, upto, 0, m.start, m.end,
                                                     m.value) for m in due]
        return due

    def heard_end(self, published: int, current: int) -> int:
        """Character end of the last word whose samples all lie before ``published``.

        ``current``: the value so far (never goes back).
        """
        ends = [c for s, c in self._word_ends if s <= published]
        return max([current] + ends)

    def heard_by(self, time: float) -> int:
        """Character end of the last word whose samples have all played by ``time``.

        ``time``: scheduler-clock seconds. The released samples are contiguous, ending at
        :attr:`end_play_time`; what is released but due after ``time`` is not counted
        (an urgent text that cuts in then has it dropped downstream). At least what was
        heard before this attempt.
        """
        played = self.position
        if self.end_play_time is not None and self.end_play_time > time:
            played -= int(round((self.end_play_time - time) * self.utt.sample_rate))
        return max([self._heard_before] + [c for s, c in self._word_ends if s <= played])

    def fade_out(self) -> list:
        """A cut's fade-out after the last chunk released: ``(samples, valid)`` chunks.

        Made from :attr:`following` (padded with the last sample known where fewer
        follow) under a raised-cosine fall over :data:`FADE_S`, cut into int16 chunks of
        the chunk size, the last zero-padded. Empty when nothing was released or the
        audio there is silent (a pause: nothing can click).
        """
        if self.end_play_time is None:
            return []
        n = max(1, int(round(FADE_S * self.utt.sample_rate)))
        source = self.following.astype(np.float32)[:n]
        hold = source[-1] if source.size else float(self.last_sample)
        source = np.concatenate([source, np.full(n - source.size, hold, np.float32)])
        if not np.any(np.abs(source) >= 1.0):
            return []
        ramp = fade_ramp(n)
        fade = np.rint(source * ramp).astype(np.int16)
        frames = self.chunker.frames
        out = []
        for lo in range(0, n, frames):
            piece = fade[lo:lo + frames]
            samples = np.zeros(frames, np.int16)
            samples[:piece.size] = piece
            out.append((samples, int(piece.size)))
        return out

    def play(self, item: SegmentPCM, emit: Emit) -> bool:
        """Publish one hand-over; True once the utterance's last sample has played.

        Nothing of ``item`` goes out before its ``not_before``, and nothing of the
        utterance before its ``start_at`` (a gapless start delay, which the synthesis
        thread may move while it lasts). ``emit(track, samples, valid_frames, after,
        last)`` releases one chunk (``after``: up to :data:`FADE_S` of the samples that
        follow it; ``samples`` None: only the marks left at the end); it returns False
        when the chunk was dropped (canceled), which ends this call (False).
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
        self.add_marks(item.marks)
        chunks = self.chunker.add(item.pcm)
        fade = int(round(FADE_S * self.utt.sample_rate))
        for i, samples in enumerate(chunks):
            after = chunks[i + 1] if i + 1 < len(chunks) else self.chunker.pending
            if not emit(self, samples, len(samples), after[:fade], False):
                return False
        if not item.last:
            return False
        tail = self.chunker.flush()
        if tail is not None and not emit(self, tail[0], tail[1], tail[0][:0], True):
            return False
        if tail is None and self._marks:  # the audio ended on a chunk's end
            emit(self, None, 0, self.following[:0], True)
        return self.pacer.wait_until(self.position, halt)
