# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""One segment's audio, as it arrives from the engine, to the PCM handed over (no ROS).

A segment comes whole (one window) or, for an utterance's first segment (and, with
``gapless``, a later one that would be late whole) on an engine that decodes in windows
(:meth:`.engines.base.Engine.synthesize_windows`), window by window, so that its first
samples can play while the rest is decoded. Either way the
same steps apply, in this order (what each decides about silence: :mod:`.pauses`):

1. the voice's own leading silence cut to the lead-in (held back, in windows, until the
   first window with sound), the lead-in padded after a pause, all of it cut after an SSML
   break;
2. at the segment's end (its last window): its trailing silence, a break's trim;
3. the join (:class:`.joins.Joiner`: at a word cut the silence on both sides goes, and
   the two sides are crossfaded);
4. gain and limiter (:class:`.audio.StreamLimiter`: the same samples as limiting the
   whole), then int16.

For a whole segment that is exactly the sequence of calls on the whole; in windows, the
trailing trims and the join measure the last window (the segment's tail), not the whole.
"""

from __future__ import annotations

import numpy as np

from .audio import StreamLimiter, to_int16
from .joins import Joiner
from .pauses import (LEAD_IN_S, break_bounds, lead_in_padding, onset_index,
                     own_silence_bounds)

_EMPTY = np.zeros(0, np.float32)


class SegmentAudio:
    """Edge processing of one segment whose audio arrives in one window or several.

    Args:
        sample_rate: Hz.
        gain: Linear gain of the utterance.
        joiner: The utterance's :class:`.joins.Joiner` (it holds the end of the segment
            before a smooth join).
        after_pause: A predicted pause was handed over before it (its lead-in counted).
        after_break: An SSML break comes before it (its leading silence goes).
        break_after: The SSML break after it (s), or None.
        smooth_before: The join before it is inside speech (:func:`.joins.smooth_join`).
        smooth_after: The join after it is.
    """

    def __init__(self, sample_rate: int, gain: float, joiner: Joiner, *,
                 after_pause: bool = False, after_break: bool = False,
                 break_after: float | None = None, smooth_before: bool = False,
                 smooth_after: bool = False) -> None:
        self._sr = int(sample_rate)
        self._joiner = joiner
        self._limiter = StreamLimiter(gain, sample_rate)
        self._after_pause = after_pause
        self._after_break = after_break
        self._break_after = break_after
        self._smooth_before = smooth_before
        self._smooth_after = smooth_after
        self._pending = _EMPTY   # leading audio with no sound yet (windows only)
        self._started = False    # the lead-in is done
        self._first_piece = True
        #: Samples the engine produced for this segment (what its synthesis cost covers).
        self.raw_samples = 0
        #: Float32 audio handed over last, before gain (the tail the pause measures).
        self.tail = _EMPTY
        #: Where the engine's sample 0 of this segment lies, in samples from the
        #: segment's first sample handed over (negative when its leading silence was
        #: cut; the speech marks' origin); None until the segment's start is decided.
        self.offset: int | None = None

    def add(self, audio: np.ndarray, last: bool) -> np.ndarray:
        """The int16 PCM ``(samples,)`` to hand over after this window (may be empty).

        Args:
            audio: The window's float32 ``(samples,)`` from the engine.
            last: It is the segment's last window.
        """
        audio = np.asarray(audio, np.float32)
        self.raw_samples += audio.size
        sr = self._sr
        shift = 0  # samples added (+) or cut (-) before the engine's sample 0
        if not self._started:
            audio = np.concatenate([self._pending, audio]) if self._pending.size else audio
            onset = onset_index(audio)
            if onset is None and not last:
                self._pending = audio
                return np.zeros(0, np.int16)
            self._pending = _EMPTY
            self._started = True
            if last:  # whole: the same calls as on the whole segment
                start, end = own_silence_bounds(audio, sr)
            else:
                start = 0 if onset is None else max(0, onset - int(round(LEAD_IN_S * sr)))
                end = audio.size
            audio, shift = audio[start:end], -start
            if self._after_pause and audio.size:
                pad = lead_in_padding(audio, sr)
                if pad:
                    audio = np.concatenate([np.zeros(pad, np.float32), audio])
                    shift += pad
            start, end = break_bounds(audio, sr, self._after_break and audio.size > 0,
                                      self._break_after if last else None)
            audio, shift = audio[start:end], shift - start
        elif last:
            start, end = own_silence_bounds(audio, sr, lead=False)
            audio = audio[start:end]
            start, end = break_bounds(audio, sr, False, self._break_after)
            audio = audio[start:end]
        first = self._first_piece
        audio = self._joiner.join(audio, self._smooth_before and first,
                                  self._smooth_after and last)
        if first:
            self.offset = shift - self._joiner.front_cut
        self._first_piece = False
        if audio.size or last:
            self.tail = audio
        out = self._limiter.push(audio)
        if last:
            out = np.concatenate([out, self._limiter.finish()])
        return to_int16(out)
