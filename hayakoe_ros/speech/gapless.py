# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Gapless starts: the real-time factor per engine and voice, and the start delay it asks for.

On a machine slower than real time every segment boundary would become a silence of the
missing synthesis time (an underrun). With ``gapless`` on, the scheduler instead delays the
start of an utterance just enough that, at the measured rate, every segment is ready when
the audio before it has played:

* :class:`RateEstimator` keeps, per engine and voice, exponentially weighted means of the
  synthesis seconds per audio second (the real-time factor, RTF) and of the audio seconds
  per speakable character (at length scale 1), updated from every synthesised segment;
* :func:`plan_start_delay` takes the utterance's segments, the audio already synthesised
  and the estimate, and returns the delay. The synthesis thread plans when the first
  segment is ready and plans again after each later one while playback has not started,
  with what it has measured meanwhile (the start may move earlier or later).

Playback of segment k (k >= 2) starts ``delay`` + the audio and pauses before it after the
first segment is ready; segment k is ready after the synthesis of segments 2..k. So

    delay = max(0, max_k [ sum_{i=2..k} t_i  -  sum_{i=1..k-1} (a_i + p_i) ])

with ``a_i`` the audio seconds of segment i (measured for the first, else estimated from
its speakable characters), ``t_i = rtf * a_i * SAFETY`` its synthesis time (0 when the
phrase cache holds it) and ``p_i`` the silence after it: a break's length, the sentence
pause floor after a sentence, else 0 (predicted pauses are not known yet; leaving them out
errs towards a longer delay). No ROS imports; all times in seconds.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Optional, Sequence

from ..text.segment import SPEAKABLE_RE, Boundary, Segment
from .pauses import SENTENCE_PAUSE_FLOOR_S

#: Weight of the newest segment in the exponentially weighted means (the last ~4 segments
#: carry 2/3 of the weight: a change of machine load shows within one utterance).
EWMA_ALPHA = 0.25

#: The planned synthesis times are the estimate times this (synthesis time varies from
#: segment to segment with the text and the machine's load).
SAFETY = 1.15

@dataclasses.dataclass(frozen=True)
class RateEstimate:
    """What :class:`RateEstimator` knows of one engine and voice.

    Attributes:
        rtf: Synthesis seconds per audio second (> 1: slower than real time).
        seconds_per_char: Audio seconds per speakable character at length scale 1.
        segments: Segments it was measured on.
    """

    rtf: float
    seconds_per_char: float
    segments: int

    def audio_s(self, text: str, length_scale: float = 1.0, rate: float = 1.0) -> float:
        """Audio seconds expected of ``text`` at ``length_scale`` and SSML ``rate``."""
        return speakable_chars(text) * self.seconds_per_char * length_scale / rate

    def planned_synthesis_s(self, audio_s: float) -> float:
        """Synthesis seconds planned for ``audio_s`` of audio: the RTF x :data:`SAFETY`."""
        return self.rtf * audio_s * SAFETY


class RateEstimator:
    """Exponentially weighted real-time factor per ``(engine, voice)`` key (thread-safe).

    The means are of sums, not of ratios: a segment weighs with its length, so the fixed
    cost of a short segment (BERT, the pause prediction) is neither lost nor overweighted.

    Args:
        alpha: Weight of the newest segment (0 < alpha <= 1).
    """

    def __init__(self, alpha: float = EWMA_ALPHA) -> None:
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f'alpha must be in (0, 1]; got {alpha}')
        self._alpha = float(alpha)
        self._lock = threading.Lock()
        self._means: dict = {}  # key -> [synth_s, audio_s, chars, audio_s at scale 1, n]

    def update(self, key: str, synth_s: float, audio_s: float, chars: int,
               length_scale: float = 1.0) -> None:
        """Add one synthesised segment.

        Args:
            key: Engine and voice (e.g. ``hayakoe/jvnv-F1-jp``).
            synth_s: Seconds the engine took for it: the pause prediction before it (the
                synthesis thread's time between two segments) and its synthesis.
            audio_s: Seconds of audio it produced (> 0; otherwise ignored).
            chars: Its speakable characters.
            length_scale: The voice's length scale (2 = twice as long) it was spoken with.
        """
        if audio_s <= 0 or synth_s < 0 or chars <= 0:
            return
        sample = [synth_s, audio_s, float(chars), audio_s / max(length_scale, 1e-6)]
        with self._lock:
            means = self._means.get(key)
            if means is None:
                self._means[key] = sample + [1]
                return
            a = self._alpha
            for i, value in enumerate(sample):
                means[i] += a * (value - means[i])
            means[4] += 1

    def estimate(self, key: str) -> Optional[RateEstimate]:
        """The estimate for ``key``, or None before its first segment."""
        with self._lock:
            means = self._means.get(key)
            if means is None:
                return None
            synth, audio, chars, scaled, n = means
        return RateEstimate(rtf=synth / audio, seconds_per_char=scaled / chars, segments=n)


def speakable_chars(text: str) -> int:
    """Characters of ``text`` that produce morae (kana, kanji, Latin letters, digits)."""
    return len(SPEAKABLE_RE.findall(text))


def plan_start_delay(segments: Sequence[Segment], ready: int, ahead_s: float,
                     estimate: Optional[RateEstimate], length_scale: float = 1.0,
                     cached: Sequence[bool] = (), pending_s: Sequence[float] = ()) -> float:
    """How long after now playback may start so that every later segment is ready in time.

    Args:
        segments: The utterance's segments.
        ready: Index of the last segment synthesised (0: the first, just now).
        ahead_s: Seconds of audio and pauses of ``segments[:ready + 1]`` (as they will be
            played; the pause after ``segments[ready]`` not included).
        estimate: The engine's and voice's rate; None (nothing measured yet): 0.
        length_scale: The utterance's length scale (a segment's SSML rate divides it).
        cached: Per segment, whether the phrase cache holds it (no synthesis time).
        pending_s: Seconds of audio of ``segments[ready]`` still to synthesise, one per
            window to come (a segment decoded in windows: ``ahead_s`` then counts only
            what was handed over); each is planned like a segment with no pause before.

    Returns:
        Seconds >= 0: with ``ready`` 0, the start delay of the module docstring's formula;
        later, the same over the segments still to synthesise.
    """
    if estimate is None:
        return 0.0
    delay = 0.0
    synth = 0.0       # synthesis of segments ready+1 .. k
    ahead = ahead_s   # audio and pauses before segment k
    for audio in pending_s:
        synth += estimate.planned_synthesis_s(audio)
        delay = max(delay, synth - ahead)
        ahead += audio
    for k in range(ready + 1, len(segments)):
        seg = segments[k]
        ahead += _pause_after(segments[k - 1])
        audio = estimate.audio_s(seg.text, length_scale, seg.rate)
        if not (k < len(cached) and cached[k]):
            synth += estimate.planned_synthesis_s(audio)
        delay = max(delay, synth - ahead)
        ahead += audio
    return delay


def _pause_after(seg: Segment) -> float:
    """The silence surely played after ``seg`` (s): a break's, or a sentence's floor."""
    if seg.break_s is not None:
        return seg.break_s
    return SENTENCE_PAUSE_FLOOR_S if seg.boundary is Boundary.SENTENCE else 0.0
