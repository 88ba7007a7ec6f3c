# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Segments the synthesis thread speaks as one call, and each segment's voice (no ROS).

The short first segment's ramp cuts later segments for an engine just twice as fast as
real time; :func:`grow_segment` joins them again (:func:`join_segments`) where the audio
already handed over covers the joined text's synthesis. :class:`Pacing` is what the
synthesis thread knows of the scheduler's pacing settings.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from ..engines.base import Engine, VoiceParams
from .gapless import RateEstimator
from .joins import smooth_join
from ..text.segment import Segment
from .utterance import Attempt, Utterance


def segment_voice(voice: VoiceParams, seg: Segment) -> VoiceParams:
    """The voice for ``seg``: its SSML ``<prosody rate>`` divides the length scale."""
    if seg.rate == 1.0:
        return voice
    return dataclasses.replace(voice, length_scale=voice.length_scale / seg.rate)


@dataclasses.dataclass
class Pacing:
    """What the synthesis thread knows of pacing (from the scheduler's settings).

    Attributes:
        rates: The scheduler's real-time factor estimates, updated from every segment.
        gapless: Plan a start delay so that no segment boundary underruns (only with
            pacing on: without it nothing plays in real time).
        paced: Chunks are released in real time (the scheduler's ``pacing``).
        max_chars: ``max_segment_chars``: the longest segment :func:`grow_segment` may
            make by joining word-cut segments; 0 joins none.
        chunk_frames: Samples per published chunk (the engine's rate); 0: unknown.
    """

    rates: RateEstimator = dataclasses.field(default_factory=RateEstimator)
    gapless: bool = False
    paced: bool = True
    max_chars: int = 0
    chunk_frames: int = 0


def grow_segment(engine: Engine, utt: Utterance, k: int, pacing: Pacing, ahead_s: float,
                 key: str, attempt: Optional[Attempt] = None) -> int:
    """Join segment ``k`` with the word-cut segments after it while there is time; how many.

    The short first segment's ramp (:class:`.text.SegmentRamp`) cuts later segments for an
    engine just 2x faster than real time; each cut costs an engine call and its padding.
    When the audio already handed over plays long enough to cover the synthesis of a
    longer segment, the pieces after segment ``k`` are spoken as one call instead (as the
    issue puts it, later segments grow "as the audio already published ahead allows"):

    * only across smooth joins (:func:`.joins.smooth_join`: a word cut, no punctuation,
      no SSML break, the same SSML rate), never past ``pacing.max_chars`` characters, and
      never with a piece the phrase cache holds (a hit costs nothing as it is);
    * without pacing, as far as those allow (nothing plays in real time);
    * with pacing, only while the estimated synthesis time of the joined text, at the
      measured real-time factor x the estimate's margin (:attr:`.gapless.RateEstimate.
      safety`), is at most ``ahead_s`` (the
      seconds of audio handed over and not yet played); without an estimate, never.

    The attempt's ``segments`` are changed in place (the joined pieces become one
    :class:`Segment`); the utterance's own list, which a later attempt starts from, is not.

    Args:
        engine: The engine (its phrase cache, if any, is asked).
        utt: The utterance being synthesised.
        k: Index of its next segment (>= 1: the first segment is never grown).
        pacing: Rates, pacing and ``max_chars``.
        ahead_s: Seconds of audio handed over that have not played yet.
        key: The rate estimator's key of the engine and voice.
        attempt: The attempt being synthesised (default: the utterance's current one).

    Returns:
        Number of segments joined into segment ``k`` (0: unchanged).
    """
    segments = (attempt or utt.attempt).segments
    if pacing.max_chars <= 0 or k < 1:
        return 0
    estimate = pacing.rates.estimate(key) if pacing.paced else None
    if pacing.paced and estimate is None:
        return 0
    joined = 0
    while k + 1 < len(segments):
        seg, nxt = segments[k], segments[k + 1]
        if not smooth_join(seg) or nxt.rate != seg.rate:
            break
        text = seg.text + nxt.text
        if len(text) > pacing.max_chars or any(
                engine.is_cached(s.text, segment_voice(utt.voice, s)) for s in (seg, nxt)):
            break
        if estimate is not None and estimate.planned_synthesis_s(
                estimate.audio_s(text, utt.voice.length_scale, seg.rate)) > ahead_s:
            break
        segments[k:k + 2] = [join_segments(seg, nxt)]
        joined += 1
    return joined


def join_segments(left: Segment, right: Segment) -> Segment:
    """``left`` and ``right`` (a smooth join) as one segment: texts, words, marks joined.

    The result ends as ``right`` does; ``left``'s sentence (a join never starts one) and
    the SSML marks of both are kept, ``right``'s re-indexed after ``left``'s words.
    """
    shift = len(left.words)
    marks = left.marks + tuple(dataclasses.replace(m, before=m.before + shift)
                               for m in right.marks)
    return dataclasses.replace(right, text=left.text + right.text,
                               words=left.words + right.words,
                               sentence=left.sentence or right.sentence, marks=marks)
