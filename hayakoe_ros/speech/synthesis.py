# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Synthesis of one utterance into PCM hand-overs (the scheduler's synthesis thread; no ROS).

:func:`synthesize_utterance` synthesises an utterance segment by segment, predicts each
boundary's pause from the pair of adjacent segments and hands the PCM on, segment by
segment, through a ``put`` callable, so that playback starts after the first segment.
An engine error aborts the utterance (an :class:`EndOfUtterance` with the reason); any
other exception propagates (a bug: the scheduler's thread guard handles it).

Joins inside speech (a word cut) get no pause and are smoothed by :class:`.joins.Joiner`;
every segment updates the :class:`.gapless.RateEstimator`, and with ``gapless`` the
utterance's start (``Utterance.start_at``) is planned by :func:`.gapless.plan_start_delay`
when its first segment is ready, and planned again after each later segment until
playback has started.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable, Optional

import numpy as np

from ..engines.base import (CancelToken, Engine, NothingToSpeakError, SynthesisCanceledError,
                            VoiceParams)
from .audio import apply_gain_and_limit, to_int16, trailing_silence_s, trim_for_break
from .gapless import RateEstimate, RateEstimator, plan_start_delay, speakable_chars
from .joins import Joiner, smooth_join
from .text import Boundary, Segment
from .utterance import Utterance

_LOG = logging.getLogger(__name__)

#: Shortest pause at a sentence boundary (s): hayakoe's ``_MIN_PAUSE_SEC``.
SENTENCE_PAUSE_FLOOR_S = 0.08


@dataclasses.dataclass
class SegmentPCM:
    """PCM for the publisher: int16 ``(samples,)`` mono; ``last`` ends the utterance.

    ``not_before``: clock time (s) of the hand-over, before which none of it is released
    (with a real clock always past when the publisher takes it; with simulated per-thread
    clocks it orders the publisher after the synthesis).
    """

    utt: Utterance
    attempt: int
    pcm: np.ndarray
    last: bool
    not_before: float = 0.0


@dataclasses.dataclass
class EndOfUtterance:
    """The utterance ends without success; ``error`` says why."""

    utt: Utterance
    attempt: int
    error: str = ''


#: ``put(item, utt, attempt) -> bool``: hand an item on; False if the utterance was dropped.
Put = Callable[[object, Utterance, int], bool]


def pause_target(engine: Engine, seg: Segment, following: Segment,
                 voice: VoiceParams) -> float:
    """Pause (s) after ``seg``: the engine's prediction, at least 80 ms after a sentence.

    An SSML ``<break>`` (``seg.pause_s``) is exactly its own length, nothing predicted.
    """
    if seg.pause_s is not None:
        return seg.pause_s
    pause = engine.predict_pause(seg.text, following.text, voice)
    if seg.boundary == Boundary.SENTENCE:
        pause = max(pause, SENTENCE_PAUSE_FLOOR_S)
    return pause


def segment_voice(voice: VoiceParams, seg: Segment) -> VoiceParams:
    """The voice for ``seg``: its SSML ``<prosody rate>`` divides the length scale."""
    if seg.rate == 1.0:
        return voice
    return dataclasses.replace(voice, length_scale=voice.length_scale / seg.rate)


def _engine_failed(put: Put, utt: Utterance, attempt: int, what: str,
                   exc: Exception) -> None:
    _LOG.error('utterance %d: %s failed', utt.id, what, exc_info=True)
    put(EndOfUtterance(utt, attempt, f'synthesis failed: {type(exc).__name__}: {exc}'),
        utt, attempt)


@dataclasses.dataclass
class Pacing:
    """What the synthesis thread knows of pacing (from the scheduler's settings).

    Attributes:
        rates: The scheduler's real-time factor estimates, updated from every segment.
        gapless: Plan a start delay so that no segment boundary underruns (only with
            pacing on: without it nothing plays in real time).
    """

    rates: RateEstimator = dataclasses.field(default_factory=RateEstimator)
    gapless: bool = False


def synthesize_utterance(engine: Engine, utt: Utterance, attempt: int, token: CancelToken,
                         gain: float, put: Put, clock: Callable[[], float],
                         pacing: Optional[Pacing] = None) -> None:
    """Synthesise ``utt`` (attempt ``attempt``) and hand its PCM to ``put``.

    Args:
        engine: The engine (called from this thread only).
        utt: The utterance; its ``sample_rate``, ``pauses``, ``synth_seconds``,
            ``start_at`` and ``start_delay_s`` are filled in.
        attempt: Attempt number; a hand-over for an older attempt is refused by ``put``.
        token: The attempt's cancel token: canceling it aborts the engine call in flight
            (:meth:`Engine.cancellable`) and ends this function.
        gain: Linear gain for the whole utterance (node volume x utterance volume).
        put: Hands a :class:`SegmentPCM` or :class:`EndOfUtterance` to the publisher;
            returns False when the utterance was canceled meanwhile (synthesis stops).
        clock: Monotonic seconds, for ``synth_seconds``, hand-over times and the log.
        pacing: Rate estimates and the ``gapless`` setting (None: a fresh estimator,
            gapless off).
    """
    pacing = pacing or Pacing()
    sr = engine.sample_rate
    utt.sample_rate = sr
    segments: list = utt.segments
    total = len(segments)
    produced = 0
    joiner = Joiner(sr)
    smooth_before = False
    key = f'{engine.name}/{engine.voice}'
    pause_s = 0.0  # the pause prediction before a segment is part of what it costs
    handed = 0     # samples handed over (segments and pauses)
    first_ready = 0.0
    for k, seg in enumerate(segments):
        if utt.canceled or utt._attempt != attempt:
            return
        last = k + 1 == total
        smooth_after = not last and smooth_join(seg)
        t0 = clock()
        voice = segment_voice(utt.voice, seg)
        cached = engine.is_cached(seg.text, voice)
        try:
            with engine.cancellable(token):
                audio = engine.synthesize(seg.text, voice)
        except SynthesisCanceledError:
            _LOG.debug('utterance %d: segment %d/%d: synthesis aborted by a cancel',
                       utt.id, k + 1, total)
            return
        except NothingToSpeakError as exc:
            _LOG.warning('utterance %d: skipping segment %r: %s', utt.id, seg.text, exc)
            audio = np.zeros(0, dtype=np.float32)
        except Exception as exc:
            _engine_failed(put, utt, attempt, 'synthesis', exc)
            return
        spoke = audio.size > 0
        if spoke:  # SSML <break>: the silence at the break is exactly pause_s
            audio = trim_for_break(audio, sr, k > 0 and segments[k - 1].pause_s is not None,
                                   None if last else seg.pause_s)
        audio = joiner.join(audio, smooth_before, smooth_after)
        smooth_before = smooth_after
        pcm = to_int16(apply_gain_and_limit(audio, gain, sr))
        spent = clock() - t0
        utt.synth_seconds += spent
        _LOG.debug('utterance %d: segment %d/%d synthesised: %d chars, %.3f s audio, '
                   '%.3f s synthesis', utt.id, k + 1, total, len(seg.text), audio.size / sr,
                   spent)
        if spoke:
            produced += 1
            if not cached:
                pacing.rates.update(key, spent + pause_s, audio.size / sr,
                                    speakable_chars(seg.text), voice.length_scale)
        pause_s = 0.0
        if last and not produced:
            put(EndOfUtterance(utt, attempt, 'nothing_speakable: no segment of the text '
                                             'produced any phoneme'), utt, attempt)
            return
        ready = clock()
        handed += pcm.size
        if k == 0:
            first_ready = utt.start_at = ready
        if pacing.gapless and not last and utt.first_audio_at is None \
                and (k == 0 or utt.start_at > ready):
            _plan_start(pacing.rates.estimate(key), engine, utt, k, handed / sr, ready,
                        first_ready)
        # Hand the segment over first: it plays while the pause is being predicted.
        if not put(SegmentPCM(utt, attempt, pcm, last, ready), utt, attempt):
            return
        if not last and spoke and not smooth_after:
            t1 = clock()
            try:
                with engine.cancellable(token):
                    target = pause_target(engine, seg, segments[k + 1], voice)
            except SynthesisCanceledError:
                return
            except Exception as exc:
                _engine_failed(put, utt, attempt, 'pause prediction', exc)
                return
            utt.pauses.append(target)
            gap = max(0.0, target - trailing_silence_s(audio, sr))
            pause_s = clock() - t1
            utt.synth_seconds += pause_s
            _LOG.debug('utterance %d: pause after segment %d/%d: %.3f s (%.3f s of silence '
                       'added)', utt.id, k + 1, total, target, gap)
            silence = np.zeros(int(round(gap * sr)), np.int16)
            handed += silence.size
            if not put(SegmentPCM(utt, attempt, silence, False, clock()), utt, attempt):
                return
        elif not last:
            utt.pauses.append(0.0)  # a smooth join, or nothing spoken before it


def _plan_start(estimate: Optional[RateEstimate], engine: Engine, utt: Utterance, ready: int,
                ahead_s: float, now: float, first_ready: float) -> None:
    """Set ``utt.start_at`` and ``utt.start_delay_s`` (gapless) after segment ``ready``.

    Planned when the first segment is ready and again after each later one while playback
    has not started: the estimate then counts what was measured meanwhile, so the start
    moves earlier or later. With no estimate at all (the first segment came from the
    phrase cache on a fresh node) playback starts at once.
    """
    cached = [engine.is_cached(s.text, segment_voice(utt.voice, s)) for s in utt.segments]
    delay = plan_start_delay(utt.segments, ready, ahead_s, estimate, utt.voice.length_scale,
                             cached)
    utt.start_at = now + delay
    utt.start_delay_s = utt.start_at - first_ready
    if estimate is not None:
        _LOG.debug('utterance %d: gapless start %.3f s after its first segment (planned '
                   'after segment %d; RTF %.2f, %.3f s audio per character)', utt.id,
                   utt.start_delay_s, ready + 1, estimate.rtf, estimate.seconds_per_char)
