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
its speakable characters), ``t_i = rtf * a_i * SAFETY`` its synthesis time
(:data:`YOUNG_SAFETY` instead on an estimate of fewer than :data:`SETTLED_SEGMENTS`
segments; 0 when the phrase cache holds it) and ``p_i`` the silence after it: a break's
length, the sentence pause floor after a sentence, else 0 (predicted pauses are not known
yet; leaving them out errs towards a longer delay).

A later segment whose whole synthesis would set that delay (a long segment after short
ones) is decoded in windows where the engine can (:func:`comes_in_windows`): it starts
playing after its first window, which carries the segment's front end and first stage
(:meth:`RateEstimate.planned_windows_s`), and each later window is planned as above. No
ROS imports; all times in seconds.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from typing import Callable, Optional, Sequence

from ..text.segment import SPEAKABLE_RE, Boundary, Segment
from .pauses import SENTENCE_PAUSE_FLOOR_S

#: Weight of the newest segment in the exponentially weighted means (the last ~4 segments
#: carry 2/3 of the weight: a change of machine load shows within one utterance).
EWMA_ALPHA = 0.25

#: The planned synthesis times are the estimate times this (synthesis time varies from
#: segment to segment with the text and the machine's load).
SAFETY = 1.15

#: The planned synthesis times while the estimate rests on fewer than
#: :data:`SETTLED_SEGMENTS` segments (a node's first utterance). Such an estimate of the
#: audio seconds per character comes from one to four short segments, and a longer one
#: may speak more slowly per character: over the benchmark's 3- and 10-sentence texts
#: the segments' seconds per character spread from 0.163 (the first, 7 characters) to
#: 0.216, and a fresh node's first 3-sentence reply planned with ``SAFETY`` underran
#: before its fourth segment in 4 runs of 4 (full-size model, 1 thread: 25 characters
#: planned at 4.08 s of audio, spoken in 4.96 s).
YOUNG_SAFETY = 1.35

#: Segments after which an estimate plans with :data:`SAFETY`.
SETTLED_SEGMENTS = 5

#: ``windows(segment, audio_s) -> seconds of each window`` (:func:`plan_start_delay`).
WindowsOf = Callable[[Segment, float], Sequence[float]]


@dataclasses.dataclass(frozen=True)
class RateEstimate:
    """What :class:`RateEstimator` knows of one engine and voice.

    Attributes:
        rtf: Synthesis seconds per audio second (> 1: slower than real time).
        seconds_per_char: Audio seconds per speakable character at length scale 1.
        segments: Segments it was measured on.
        decoder_rtf: Seconds per audio second of the windows after a segment's first
            (the decoder alone: the segment's front end, BERT and first stage come with
            its first window); None until a segment came in windows.
    """

    rtf: float
    seconds_per_char: float
    segments: int
    decoder_rtf: Optional[float] = None

    def audio_s(self, text: str, length_scale: float = 1.0, rate: float = 1.0) -> float:
        """Audio seconds expected of ``text`` at ``length_scale`` and SSML ``rate``."""
        return speakable_chars(text) * self.seconds_per_char * length_scale / rate

    @property
    def safety(self) -> float:
        """:data:`SAFETY`, or :data:`YOUNG_SAFETY` before :data:`SETTLED_SEGMENTS`."""
        return SAFETY if self.segments >= SETTLED_SEGMENTS else YOUNG_SAFETY

    def planned_synthesis_s(self, audio_s: float) -> float:
        """Synthesis seconds planned for ``audio_s`` of audio: the RTF x :attr:`safety`."""
        return self.rtf * audio_s * self.safety

    def planned_decoding_s(self, audio_s: float) -> float:
        """Seconds planned to decode ``audio_s`` of a segment whose first stage has run.

        ``decoder_rtf x audio_s x`` :attr:`safety`: a window after a segment's first
        runs the decoder alone (what :meth:`RateEstimator.update_decoder` measures).
        Without a ``decoder_rtf``: :meth:`planned_synthesis_s` (errs long by the front
        end's and first stage's share, 13-15 % of a full-size segment at one thread).
        """
        if self.decoder_rtf is None:
            return self.planned_synthesis_s(audio_s)
        return self.decoder_rtf * audio_s * self.safety

    def planned_windows_s(self, windows_s: Sequence[float]) -> list:
        """Synthesis seconds planned for each window of a segment decoded in windows.

        The first window carries what comes before the decoder, for the whole segment:
        ``(rtf - decoder_rtf) x`` its audio seconds (the per-segment mean includes the
        fixed costs of short segments, so this errs long for a long one), plus its own
        decoding; each later window its decoding, ``decoder_rtf x`` its seconds; all x
        :attr:`safety`. Without a ``decoder_rtf``: the whole segment's plan, on its first
        window (as if whole).
        """
        total = float(sum(windows_s))
        if self.decoder_rtf is None or len(windows_s) < 2:
            return [self.planned_synthesis_s(total)] + [0.0] * (len(windows_s) - 1)
        dec = self.decoder_rtf
        prefix = max(0.0, self.rtf - dec) * total
        out = [(prefix + dec * windows_s[0]) * self.safety]
        return out + [self.planned_decoding_s(w) for w in windows_s[1:]]


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
        self._decoder: dict = {}  # key -> [synth_s, audio_s] of windows after the first

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

    def update_decoder(self, key: str, synth_s: float, audio_s: float) -> None:
        """Add the windows after a segment's first: their decoding seconds and audio.

        Args:
            key: Engine and voice, as :meth:`update`'s.
            synth_s: Seconds the engine took for them (>= 0).
            audio_s: Seconds of audio they hold (> 0; otherwise ignored).
        """
        if audio_s <= 0 or synth_s < 0:
            return
        with self._lock:
            means = self._decoder.get(key)
            if means is None:
                self._decoder[key] = [synth_s, audio_s]
                return
            means[0] += self._alpha * (synth_s - means[0])
            means[1] += self._alpha * (audio_s - means[1])

    def estimate(self, key: str) -> Optional[RateEstimate]:
        """The estimate for ``key``, or None before its first segment."""
        with self._lock:
            means = self._means.get(key)
            if means is None:
                return None
            synth, audio, chars, scaled, n = means
            decoder = self._decoder.get(key)
        return RateEstimate(rtf=synth / audio, seconds_per_char=scaled / chars, segments=n,
                            decoder_rtf=None if decoder is None else decoder[0] / decoder[1])


def speakable_chars(text: str) -> int:
    """Characters of ``text`` that produce morae (kana, kanji, Latin letters, digits)."""
    return len(SPEAKABLE_RE.findall(text))


def plan_start_delay(segments: Sequence[Segment], ready: int, ahead_s: float,
                     estimate: Optional[RateEstimate], length_scale: float = 1.0,
                     cached: Sequence[bool] = (), pending_s: Sequence[float] = (),
                     windows: Optional[WindowsOf] = None) -> float:
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
            what was handed over); each is planned with no pause before it, at the
            decoder's rate where one was measured (:meth:`RateEstimate.planned_decoding_s`).
        windows: ``windows(segment, audio_s)``: the seconds of each window a later
            segment would come in (the engine's :meth:`~.engines.base.Engine.window_seconds`;
            one window: whole). With an estimate that has a ``decoder_rtf``, a later
            segment whose whole synthesis would set the delay is planned in windows
            (:func:`comes_in_windows` is the same rule at synthesis time): it starts
            playing after its first window.

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
        # The segment's first stage has run: what is left is decoding.
        synth += estimate.planned_decoding_s(audio)
        delay = max(delay, synth - ahead)
        ahead += audio
    for k in range(ready + 1, len(segments)):
        seg = segments[k]
        ahead += _pause_after(segments[k - 1])
        audio = estimate.audio_s(seg.text, length_scale, seg.rate)
        if k < len(cached) and cached[k]:
            delay = max(delay, synth - ahead)
            ahead += audio
            continue
        # Each segment's term: when it (or each of its windows) is ready, less the audio
        # played before it. A segment comes in windows only where that lowers its term,
        # so the delay is the largest of the lower terms.
        planned = estimate.planned_synthesis_s(audio)
        parts = tuple(windows(seg, audio)) if windows is not None else ()
        split = windows_ready_s(estimate, parts)
        delay = max(delay, synth - ahead + min(planned, split))
        # Windows cost more than the whole where the decoder's rate is above the whole's.
        synth += planned if split >= planned else max(
            planned, sum(estimate.planned_windows_s(parts)))
        ahead += audio
    return delay


def windows_ready_s(estimate: RateEstimate, windows_s: Sequence[float]) -> float:
    """Seconds from a segment's start until its windows have played in time, planned.

    The largest, over its windows, of the planned synthesis up to and including window
    ``i`` less the seconds of the windows before it: a segment decoded in windows is
    ready in time if it starts this long before playback reaches it (whole: its
    :meth:`~RateEstimate.planned_synthesis_s`). ``inf`` for one window, or without a
    ``decoder_rtf`` (nothing to plan windows with).
    """
    if estimate.decoder_rtf is None or len(windows_s) < 2:
        return math.inf
    t, played, ready = 0.0, 0.0, -math.inf
    for part, cost in zip(windows_s, estimate.planned_windows_s(windows_s)):
        t += cost
        ready = max(ready, t - played)
        played += part
    return ready


def comes_in_windows(estimate: Optional[RateEstimate], audio_s: float, slack_s: float,
                     windows_s: Sequence[float]) -> bool:
    """Whether a later segment is decoded in windows: its whole synthesis would be late.

    Args:
        estimate: The engine's and voice's rate (None, or no ``decoder_rtf``: False).
        audio_s: The segment's estimated audio seconds.
        slack_s: Seconds until playback reaches it (the audio and pauses handed over
            and not yet played, plus the time left before a planned start).
        windows_s: Its windows' seconds (:meth:`~.engines.base.Engine.window_seconds`;
            one: the engine decodes it whole).

    Returns:
        True when its planned whole synthesis (:meth:`RateEstimate.planned_synthesis_s`)
        exceeds ``slack_s`` and its windows would be ready in time sooner
        (:func:`windows_ready_s`): as :func:`plan_start_delay` assumed. A segment
        synthesised in time stays whole (windows cost each cut's context, and the
        engine's calls more often).
    """
    if estimate is None:
        return False
    planned = estimate.planned_synthesis_s(audio_s)
    return planned > slack_s and windows_ready_s(estimate, windows_s) < planned


def _pause_after(seg: Segment) -> float:
    """The silence surely played after ``seg`` (s): a break's, or a sentence's floor."""
    if seg.break_s is not None:
        return seg.break_s
    return SENTENCE_PAUSE_FLOOR_S if seg.boundary is Boundary.SENTENCE else 0.0
