# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Joining segments that meet inside a clause, without a click or a gap (no ROS imports).

A segment cut at a word boundary (a short first segment, a clause too long for
``max_segment_chars``) ends where speech goes on, so nothing must be heard at the join.
Each engine call speaks its text with silence of its own at both ends (Open JTalk about
0.3 s, hayakoe the model's blank padding), and the last sample of one call and the first
of the next need not meet. :class:`Joiner` therefore, at such a *smooth* join, drops the
silence at the end of the left segment and at the start of the right one (silence as
hayakoe measures it: :func:`.audio.trailing_silence_s`) and crossfades the two over
:data:`JOIN_FADE_S`, holding back that much of the left segment until the right one is
synthesised. At a punctuation join (sentence end, clause mark) or an SSML break nothing is
changed: the silence there is the predicted pause (see :mod:`.synthesis`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .audio import trailing_silence_s
from ..text.segment import SPEAKABLE_RE, Boundary, Segment

#: Crossfade at a smooth join (s): 5 ms, under one pitch period of most voices' lowest
#: notes, so the two sides blend without an audible dip, and long enough that the step
#: between two unrelated samples (up to the full scale) becomes a 5 ms ramp, not a click.
JOIN_FADE_S = 0.005


def smooth_join(seg: Segment) -> bool:
    """True when the join after ``seg`` is inside speech: no pause, no punctuation.

    That is a :attr:`Boundary.WORD` or :attr:`Boundary.CLAUSE` cut whose text ends with a
    speakable character (a cut before an opening quote ends so), and no SSML break.
    """
    return (seg.boundary in (Boundary.WORD, Boundary.CLAUSE) and seg.break_s is None
            and bool(seg.text) and bool(SPEAKABLE_RE.match(seg.text[-1])))


def _silent_samples(audio: np.ndarray, sample_rate: int) -> int:
    return int(round(trailing_silence_s(audio, sample_rate) * sample_rate))


class Joiner:
    """Joins one utterance's segments, in order (one per utterance attempt).

    Args:
        sample_rate: Hz of the audio given to :meth:`join`.
        fade_s: Crossfade length at a smooth join (s).
    """

    def __init__(self, sample_rate: int, fade_s: float = JOIN_FADE_S) -> None:
        self.sample_rate = int(sample_rate)
        self._fade = max(1, int(round(fade_s * sample_rate)))
        self._held: Optional[np.ndarray] = None
        #: Samples the last :meth:`join` cut from the front of its ``audio`` (its leading
        #: silence at a smooth join): where that audio's first sample went, for marks.
        self.front_cut = 0

    def join(self, audio: np.ndarray, smooth_before: bool, smooth_after: bool) -> np.ndarray:
        """The part of one segment's audio that can be handed over now.

        Args:
            audio: The segment's float32 PCM, shape ``(samples,)``.
            smooth_before: The join before it is smooth (:func:`smooth_join` of the
                segment before): its leading silence goes and it is crossfaded with the
                end held back from that segment.
            smooth_after: The join after it is smooth: its trailing silence goes and its
                last :data:`JOIN_FADE_S` are held back for the next segment.

        Returns:
            float32 ``(samples,)``: the audio to play now, possibly empty. An empty
            ``audio`` (nothing to speak) passes the held end on when ``smooth_after`` is
            False, faded out.
        """
        audio = np.asarray(audio, dtype=np.float32)
        sr = self.sample_rate
        self.front_cut = 0
        if smooth_before and audio.size:
            self.front_cut = _silent_samples(audio[::-1], sr)
            audio = audio[self.front_cut:]
        if smooth_after and audio.size:
            audio = audio[:audio.size - _silent_samples(audio, sr)]
        held, self._held = self._held, None
        if held is not None:
            if audio.size == 0 and smooth_after:
                self._held = held  # nothing to join yet: keep waiting
                return audio
            n = min(held.size, audio.size)
            ramp = self._ramp(n)
            head = held[:n] * (1.0 - ramp) + audio[:n] * ramp
            rest = held[n:] * self._ramp(held.size - n)[::-1]  # right side too short
            audio = np.concatenate([head, rest, audio[n:]]).astype(np.float32)
        if smooth_after and audio.size:
            keep = min(self._fade, audio.size)
            self._held = audio[audio.size - keep:].copy()
            audio = audio[:audio.size - keep]
        return audio

    def _ramp(self, n: int) -> np.ndarray:
        """Raised-cosine rise from 0 to 1 over ``n`` samples (the crossfade weights)."""
        return (0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 0.5) / max(n, 1))).astype(
            np.float32)
