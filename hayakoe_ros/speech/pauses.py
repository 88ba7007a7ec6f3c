# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Where the silence between two segments is decided: the one place (no ROS imports).

The pause a listener hears after a segment is made of three parts, all decided here:

1. the **target**, :func:`pause_target`: an SSML ``<break>``'s own length, else the
   engine's prediction (:meth:`.engines.base.Engine.predict_pause`: the duration
   predictor for hayakoe, fixed values for Open JTalk), with hayakoe's 80 ms floor after
   a sentence;
2. the **voice's own silence** at the segment's edges, cut down to a short lead-in by
   :func:`trim_own_silence` (Open JTalk pads about 0.3 s on each side of every call, which
   would otherwise come before the first sound and add to every pause), and at SSML
   breaks cut away entirely (:func:`trim_for_break`);
3. the **gap** of zeros the synthesis hands over after the segment, :func:`gap_s`: the
   target less the silence still at the end of the segment and the lead-in that starts
   the next one (made exactly :data:`LEAD_IN_S` by :func:`pad_lead_in`).

At a join inside speech (a word cut) there is no pause at all: :mod:`.joins` removes
the silence on both sides and crossfades (:func:`.joins.smooth_join` says which joins).
:mod:`.synthesis` calls these in this order for every segment.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..engines.base import Engine, VoiceParams
from ..text.segment import Boundary, Segment
from .audio import trailing_silence_s

#: Shortest pause at a sentence boundary (s): hayakoe's ``_MIN_PAUSE_SEC``.
SENTENCE_PAUSE_FLOOR_S = 0.08

#: Level (linear full scale) above which a sample counts as the voice's sound when its
#: own edge silence is trimmed: -60 dBFS. Open JTalk's padding stays under 6e-4 (-64.6
#: dBFS, measured on the bundled voice), so its silence is below it, while the start of
#: a word rises through it some milliseconds before it is audible (-40 dBFS).
ONSET_LEVEL = 10.0 ** (-60.0 / 20.0)

#: Silence kept before a segment's first sample above :data:`ONSET_LEVEL`, and after its
#: last (s): 10 ms, so that a soft onset is never cut and the first sound (-40 dBFS) comes
#: within 30 ms of the segment's first sample on Open JTalk (its onsets take 9-16 ms from
#: -60 to -40 dBFS, measured on こんにちは, さようなら, はい and ありがとう).
LEAD_IN_S = 0.010


def pause_target(engine: Engine, seg: Segment, following: Segment,
                 voice: VoiceParams) -> float:
    """Pause (s) after ``seg``: the engine's prediction, at least 80 ms after a sentence.

    An SSML ``<break>`` (``seg.break_s``) is exactly its own length, nothing predicted.

    Raises:
        EngineError: the engine's prediction failed (its duration predictor's run).
    """
    if seg.break_s is not None:
        return seg.break_s
    pause = engine.predict_pause(seg.text, following.text, voice)
    if seg.boundary == Boundary.SENTENCE:
        pause = max(pause, SENTENCE_PAUSE_FLOOR_S)
    return pause


def onset_index(audio: np.ndarray) -> Optional[int]:
    """Index of the first sample of ``audio`` above :data:`ONSET_LEVEL`; None if none."""
    loud = np.flatnonzero(np.abs(audio) > ONSET_LEVEL)
    return int(loud[0]) if loud.size else None


def trim_own_silence(audio: np.ndarray, sample_rate: int, lead: bool = True,
                     trail: bool = True) -> np.ndarray:
    """Cut the voice's own silence at a segment's edges down to :data:`LEAD_IN_S`.

    Args:
        audio: A segment's float32 PCM, shape ``(samples,)``, before any gain.
        sample_rate: Hz.
        lead: Trim the start: keep :data:`LEAD_IN_S` before the first sample above
            :data:`ONSET_LEVEL` (nothing after it is touched, so a soft onset stays).
        trail: Trim the end likewise, after the last sample above that level.

    Returns:
        A view of ``audio`` (:func:`own_silence_bounds`); unchanged when no sample is
        above the level (a silent or very quiet segment is never removed) or its edges are
        shorter than the lead-in.
    """
    start, end = own_silence_bounds(audio, sample_rate, lead, trail)
    return audio[start:end]


def own_silence_bounds(audio: np.ndarray, sample_rate: int, lead: bool = True,
                       trail: bool = True) -> tuple:
    """``(start, end)`` sample indices of what :func:`trim_own_silence` keeps."""
    keep = int(round(LEAD_IN_S * sample_rate))
    loud = np.flatnonzero(np.abs(audio) > ONSET_LEVEL)
    if not loud.size:
        return 0, audio.size
    start = max(0, int(loud[0]) - keep) if lead else 0
    end = min(audio.size, int(loud[-1]) + 1 + keep) if trail else audio.size
    return start, end


def pad_lead_in(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Zeros before ``audio`` so that :data:`LEAD_IN_S` comes before its first sound.

    For a segment after a pause: :func:`gap_s` counted that lead-in, so a segment that
    starts with less (a voice without edge silence) gets the rest here, and the pause
    heard is the target to the sample.

    Args:
        audio: The segment's float32 PCM after :func:`trim_own_silence`, ``(samples,)``.
        sample_rate: Hz.

    Returns:
        float32 ``(samples + padding,)``; ``audio`` itself when nothing is missing.
    """
    missing = lead_in_padding(audio, sample_rate)
    if missing <= 0:
        return audio
    return np.concatenate([np.zeros(missing, np.float32), np.asarray(audio, np.float32)])


def lead_in_padding(audio: np.ndarray, sample_rate: int) -> int:
    """Zeros (samples, >= 0) that :func:`pad_lead_in` puts before ``audio``."""
    onset = onset_index(audio)
    return max(0, int(round(LEAD_IN_S * sample_rate)) - (audio.size if onset is None
                                                         else onset))


def gap_s(target_s: float, left: np.ndarray, sample_rate: int, at_break: bool = False
          ) -> float:
    """Seconds of zeros to add after ``left`` so that the pause heard is ``target_s``.

    The silence at the end of ``left`` counts (hayakoe's rule,
    :func:`.audio.trailing_silence_s`), and so does the lead-in of the next segment: it is
    synthesised later, and :func:`trim_own_silence` and :func:`pad_lead_in` make it
    exactly :data:`LEAD_IN_S` (none after an SSML break, where :func:`trim_for_break`
    removes it all).

    Args:
        target_s: The pause (:func:`pause_target`), s.
        left: The segment's float32 PCM as handed over, shape ``(samples,)``.
        sample_rate: Hz.
        at_break: The pause is an SSML ``<break>``.

    Returns:
        Seconds, >= 0.
    """
    lead_in = 0.0 if at_break else LEAD_IN_S
    return max(0.0, target_s - trailing_silence_s(left, sample_rate) - lead_in)


def trim_for_break(audio: np.ndarray, sample_rate: int, after_break: bool,
                   break_s: Optional[float]) -> np.ndarray:
    """Trim a segment's own edge silence at SSML ``<break>`` s.

    Args:
        audio: The segment's float32 PCM, shape ``(samples,)``.
        sample_rate: Hz.
        after_break: A break comes before this segment: its leading silence goes.
        break_s: The break after this segment (s), or None: trailing silence longer than
            it goes, so that with the gap the scheduler adds the silence is exactly
            ``break_s``. Silence is measured by :func:`.audio.trailing_silence_s`'s rule.

    Returns:
        A view of ``audio``, possibly shorter.
    """
    start, end = break_bounds(audio, sample_rate, after_break, break_s)
    return audio[start:end]


def break_bounds(audio: np.ndarray, sample_rate: int, after_break: bool,
                 break_s: Optional[float]) -> tuple:
    """``(start, end)`` sample indices of what :func:`trim_for_break` keeps."""
    start, end = 0, audio.size
    if after_break and audio.size:
        start = int(round(trailing_silence_s(audio[::-1], sample_rate) * sample_rate))
    if break_s is not None and end > start:
        extra = trailing_silence_s(audio[start:end], sample_rate) - break_s
        if extra > 0:
            end -= int(round(extra * sample_rate))
    return start, max(start, end)
