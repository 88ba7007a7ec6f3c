# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Synthesis of one utterance into PCM hand-overs (the scheduler's synthesis thread; no ROS).

:func:`synthesize_utterance` synthesises an utterance segment by segment, predicts each
boundary's pause from the pair of adjacent segments (what the pause is, and what is done
with each voice's own edge silence, is decided in :mod:`.pauses`) and hands the PCM on,
segment by segment, through a ``put`` callable, so that playback starts after the first segment.
An engine error aborts the utterance (an :class:`EndOfUtterance` with the reason); any
other exception propagates (a bug: the scheduler's thread guard handles it).

Joins inside speech (a word cut) get no pause and are smoothed by :class:`.joins.Joiner`,
or disappear when :func:`.growth.grow_segment` speaks the pieces as one call (the audio ahead
covers it);
every segment updates the :class:`.gapless.RateEstimator`, and with ``gapless`` the
utterance's start (``Utterance.start_at``) is planned by :func:`.gapless.plan_start_delay`
when its first segment is ready, and planned again after each later segment until
playback has started.

The first segment comes in the engine's windows (:meth:`.Engine.synthesize_windows`), so
that playback starts after its first; a later segment comes whole unless, with
``gapless``, it would be late whole (:func:`.gapless.comes_in_windows`, the rule the plan
assumed).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable, Iterator, Optional, Sequence

import numpy as np

from ..engines.base import (AudioWindow, Engine, NothingToSpeakError, SynthesisCanceledError,
                            VoiceParams)
from .gapless import RateEstimate, comes_in_windows, plan_start_delay, speakable_chars
from .audio import apply_gain_and_limit, to_int16
from .growth import Pacing, grow_segment, join_segments, segment_voice  # noqa: F401 (API)
from .joins import Joiner, smooth_join
from .marks import ending_at, marks_before, segment_marks
from .pauses import gap_s, pause_target
from .segment_audio import SegmentAudio
from .utterance import Attempt, Utterance

_LOG = logging.getLogger(__name__)

@dataclasses.dataclass
class SegmentPCM:
    """PCM for the publisher: int16 ``(samples,)`` mono; ``last`` ends the utterance.

    ``not_before``: clock time (s) of the hand-over, before which none of it is released
    (with a real clock always past when the publisher takes it; with simulated per-thread
    clocks it orders the publisher after the synthesis). ``marks``: speech marks
    (:class:`.marks.Mark`, on the utterance's sample axis) handed over with it: a whole
    segment's with its PCM; a segment in windows, those that start in each window's.
    """

    utt: Utterance
    attempt: Attempt
    pcm: np.ndarray
    last: bool
    not_before: float = 0.0
    marks: tuple = ()


@dataclasses.dataclass
class EndOfUtterance:
    """The utterance ends without success; ``error`` says why."""

    utt: Utterance
    attempt: Attempt
    error: str = ''


#: ``put(item, utt, attempt) -> bool``: hand an item on; False if the utterance was dropped.
Put = Callable[[object, Utterance, Attempt], bool]


def _engine_failed(put: Put, utt: Utterance, attempt: Attempt, what: str,
                   exc: Exception) -> None:
    _LOG.error('utterance %d: %s failed', utt.id, what, exc_info=True)
    put(EndOfUtterance(utt, attempt, f'synthesis failed: {type(exc).__name__}: {exc}'),
        utt, attempt)


def synthesize_utterance(engine: Engine, utt: Utterance, attempt: Attempt, gain: float,
                         put: Put, clock: Callable[[], float],
                         pacing: Optional[Pacing] = None, first: int = 0,
                         at_sample: int = 0) -> None:
    """Synthesise one attempt at ``utt`` and hand its PCM to ``put``.

    Args:
        engine: The engine (called from this thread only).
        utt: The utterance; its ``sample_rate`` is set.
        attempt: The attempt this call owns: its ``segments``, ``pauses``,
            ``synth_seconds``, ``start_at`` and ``start_delay_s`` are written, and nothing
            else; a hand-over for an attempt that is no longer current is refused by
            ``put``. Halting it (its token) aborts the engine call in flight
            (:meth:`Engine.cancellable`) and ends this function.
        gain: Linear gain for the whole utterance (node volume x utterance volume).
        put: Hands a :class:`SegmentPCM` or :class:`EndOfUtterance` to the publisher;
            returns False when the utterance was canceled meanwhile (synthesis stops).
        clock: Monotonic seconds, for ``synth_seconds``, hand-over times and the log.
        pacing: Rate estimates, the ``gapless`` and ``pacing`` settings and
            ``max_segment_chars`` (None: a fresh estimator, gapless off, no joining).
            Before each segment after the first, :func:`grow_segment` may join it with the
            word-cut pieces after it (the attempt's ``segments`` then shrink).
        first: Index of the attempt's segment to start from (0: the whole utterance).
        at_sample: Samples of this attempt already handed over (another voice spoke them:
            :mod:`.relay`); its ``start_at`` is then set, and this call's audio and marks
            follow them on the utterance's sample axis.
    """
    pacing = pacing or Pacing()
    sr = engine.sample_rate
    utt.sample_rate = sr
    token = attempt.token
    segments: list = attempt.segments  # grow_segment may shorten it: count with len()
    produced = int(at_sample > 0)  # segments that made sound (another voice's count)
    joiner = Joiner(sr)
    smooth_before = False
    after_pause = False  # a gap was handed over that counted this segment's lead-in
    key = f'{engine.name}/{engine.voice}'
    predict_s = 0.0  # time spent predicting the pause before a segment: part of its cost
    handed = at_sample  # samples handed over (segments and pauses)
    first_ready = attempt.start_at
    # The first hand-over of audio is done: attempt.start_at is set.
    started = at_sample > 0
    k = first - 1
    if len(segments) <= first and not _next_segment(utt, attempt, k):
        # Resumed after everything was heard: nothing more to say (a streamed reply
        # closed meanwhile, or another voice spoke it all), the utterance ends here.
        if not utt.halted and utt.attempt is attempt:
            put(SegmentPCM(utt, attempt, np.zeros(0, np.int16), True, clock()), utt, attempt)
        return
    while k + 1 < len(segments):
        k += 1
        if utt.halted or utt.attempt is not attempt:
            return
        if k > first:  # the first segment is ready: attempt.start_at is set
            ahead_s = handed / sr - max(0.0, clock() - attempt.start_at)
            joined = grow_segment(engine, utt, k, pacing, ahead_s, key, attempt)
            if joined:
                _LOG.debug('utterance %d: segment %d joined with the %d after it (%d '
                           'chars, %.3f s of audio ahead)', utt.id, k + 1, joined,
                           len(segments[k].text), ahead_s)
        seg = segments[k]
        # A streamed reply's last segment is known only when the stream is closed.
        last = k + 1 == len(segments) and not utt.streaming
        smooth_after = not last and smooth_join(seg)
        t0 = clock()
        voice = segment_voice(utt.voice, seg)
        cached = engine.is_cached(seg.text, voice)
        shaper = SegmentAudio(sr, gain, joiner, after_pause=after_pause,
                              after_break=k > first and segments[k - 1].break_s is not None,
                              break_after=None if last else seg.break_s,
                              smooth_before=smooth_before, smooth_after=smooth_after)
        # The first segment in windows (first audio after its first window). A gapless
        # start needs a rate estimate to plan the windows still to come: without one (a
        # fresh scheduler) the first segment comes whole. A later segment is synthesised
        # while earlier audio plays: whole, unless (gapless) it would not be ready in time
        # whole: in windows it plays after its first (the start was planned so).
        if k == first:
            windowed = not cached and (not pacing.gapless
                                       or pacing.rates.estimate(key) is not None)
        else:
            windowed = not cached and pacing.gapless and _late_whole(
                engine, pacing.rates.estimate(key), utt, k, seg, voice,
                _slack_s(handed / sr, t0, attempt.start_at, utt.first_audio_at))
        windows = _windows(engine, seg.text, voice, windowed, first_audio=k == first)
        decoding = [0.0, 0.0]  # seconds and samples of the windows after the first
        seg_start = handed  # where this segment's first sample goes in the stream
        phones: tuple = ()
        # Computed once the segment's start is decided, whether or not anyone takes them:
        # what was heard is counted from the words' marks.
        marks: Optional[tuple] = None
        raw: list = []  # the engine's audio of it so far, until its marks are made
        while True:
            t1 = clock()
            try:
                with engine.cancellable(token):
                    window = next(windows)
            except SynthesisCanceledError:
                _LOG.debug('utterance %d: segment %d/%d: synthesis aborted by a cancel',
                           utt.id, k + 1, len(segments))
                return
            except NothingToSpeakError as exc:
                _LOG.warning('utterance %d: skipping segment %r: %s', utt.id, seg.text, exc)
                window = AudioWindow(np.zeros(0, dtype=np.float32))
            except Exception as exc:
                _engine_failed(put, utt, attempt, 'synthesis', exc)
                return
            final = not window.later_s
            if shaper.raw_samples:  # a window after the segment's first: the decoder's
                decoding[0] += clock() - t1
                decoding[1] += window.audio.size
            phones = phones or window.phones
            pcm = shaper.add(window.audio, final)
            if marks is None:
                raw.append(window.audio)
                if shaper.offset is not None:
                    marks = tuple(segment_marks(
                        seg, phones, seg_start + shaper.offset, seg_start, np.concatenate(raw),
                        handed + pcm.size if final else None))
                    raw = []
            if final:
                # What the last window's trimmed trailing silence took (the quiet end
                # of a devoiced です) was still in the marks made at the first window.
                marks = ending_at(marks or (), handed + pcm.size)
                break
            if not pcm.size:
                continue
            ready = clock()  # a window before the segment's end: it plays while the rest
            handed += pcm.size  # is decoded
            if not started:
                started = True
                first_ready = attempt.start_at = ready
                estimate = pacing.rates.estimate(key)
                if pacing.gapless and estimate is not None:
                    # Each window still to come planned at the measured rate, as a
                    # segment: a share of the segment's plan by audio would leave the
                    # early windows, which pay for the cut's context, too little.
                    # The last segment's windows are planned too: they must keep up.
                    _plan_start(estimate, engine, utt, attempt, k, handed / sr, ready,
                                first_ready, window.later_s)
            # A mark goes with the window its start is published in; the rest wait for
            # the segment's end to be known.
            due, held = marks_before(marks or (), handed)
            if not put(SegmentPCM(utt, attempt, pcm, False, ready, due), utt, attempt):
                return
            if marks is not None:
                marks = held
            if utt.halted or utt.attempt is not attempt:
                return
        spoke = shaper.raw_samples > 0
        audio = shaper.tail
        smooth_before = smooth_after
        if spoke:
            after_pause = False
        spent = clock() - t0
        attempt.synth_seconds += spent
        _LOG.debug('utterance %d: segment %d/%d synthesised: %d chars, %.3f s audio, '
                   '%.3f s synthesis', utt.id, k + 1, len(segments), len(seg.text),
                   shaper.raw_samples / sr, spent)
        if spoke:
            produced += 1
            if not cached:  # what the engine computed: the rate estimate's audio
                pacing.rates.update(key, spent + predict_s, shaper.raw_samples / sr,
                                    speakable_chars(seg.text), voice.length_scale)
                pacing.rates.update_decoder(key, decoding[0], decoding[1] / sr)
        predict_s = 0.0
        if last and not produced:
            put(EndOfUtterance(utt, attempt, 'nothing_speakable: no segment of the text '
                                             'produced any phoneme'), utt, attempt)
            return
        ready = clock()
        handed += pcm.size
        if not started:
            started = True
            first_ready = attempt.start_at = ready
        if pacing.gapless and not last and utt.first_audio_at is None \
                and (k == first or attempt.start_at > ready):
            _plan_start(pacing.rates.estimate(key), engine, utt, attempt, k, handed / sr,
                        ready, first_ready)
        # Hand the segment over first: it plays while the pause is being predicted.
        if not put(SegmentPCM(utt, attempt, pcm, last, ready, marks or ()), utt, attempt):
            return
        early = 0  # samples of the pause after this segment handed over before it is known
        if not last and spoke and not smooth_after and pacing.chunk_frames \
                and not utt.wait_segments(attempt, k + 1, 0.0):
            # A streamed reply waits for its next piece: the pause begins now, as much of
            # it as completes the chunk that holds the segment's last samples (the
            # attempt's chunks start at its first sample), so that they go out and play
            # (and its last word counts as heard) however late the next piece comes.
            early = -handed % pacing.chunk_frames
            handed += early
            if early and not put(SegmentPCM(utt, attempt, np.zeros(early, np.int16), False,
                                            clock()), utt, attempt):
                return
        if not last and not _next_segment(utt, attempt, k):
            if not utt.halted and utt.attempt is attempt:  # the stream ended here
                _end_stream(put, utt, attempt, joiner, gain, produced, clock())
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
            attempt.pauses.append(target)
            after_pause = seg.break_s is None
            gap = gap_s(target, audio, sr, at_break=seg.break_s is not None)
            predict_s = clock() - t1
            attempt.synth_seconds += predict_s
            _LOG.debug('utterance %d: pause after segment %d/%d: %.3f s (%.3f s of silence '
                       'added)', utt.id, k + 1, len(segments), target, gap)
            silence = np.zeros(max(0, int(round(gap * sr)) - early), np.int16)
            handed += silence.size
            if not put(SegmentPCM(utt, attempt, silence, False, clock()), utt, attempt):
                return
        elif not last:
            attempt.pauses.append(0.0)  # a smooth join, or nothing spoken before it


#: How often a synthesis thread waiting for a streamed reply's next piece looks at the
#: utterance again (s, real time): the bound on each wait (a halt also wakes it).
STREAM_POLL_S = 0.2


def _next_segment(utt: Utterance, attempt: Attempt, k: int) -> bool:
    """True once segment ``k + 1`` exists (a streamed reply's next piece may be awaited).

    False when the stream was closed without it, or the attempt was halted or replaced.
    """
    while True:
        if utt.halted or utt.attempt is not attempt:
            return False
        if utt.wait_segments(attempt, k + 1, STREAM_POLL_S):
            return True
        if not utt.streaming:
            return len(attempt.segments) > k + 1


def _end_stream(put: Put, utt: Utterance, attempt: Attempt, joiner: Joiner, gain: float,
                produced: int, ready: float) -> None:
    """End a streamed reply after the segments it got: the held join, then the last hand-over."""
    if not produced:
        put(EndOfUtterance(utt, attempt, 'nothing_speakable: no piece of the streamed reply '
                                         'produced any phoneme'), utt, attempt)
        return
    held = joiner.join(np.zeros(0, np.float32), False, False)  # a tail kept for a join
    pcm = to_int16(apply_gain_and_limit(held, gain, joiner.sample_rate))
    put(SegmentPCM(utt, attempt, pcm, True, ready), utt, attempt)


def _windows(engine: Engine, text: str, voice: VoiceParams, windowed: bool,
             first_audio: bool) -> Iterator[AudioWindow]:
    """The segment's audio as the engine's windows, or as one window (``windowed`` False).

    The first window carries the segment's phoneme timing where the engine has it.
    ``first_audio``: the segment brings the utterance its first audio.
    """
    if windowed:
        yield from engine.synthesize_windows(text, voice, first_audio)
    else:
        yield engine.synthesize_timed(text, voice)


def _slack_s(handed_s: float, now: float, start_at: float,
             first_audio_at: Optional[float]) -> float:
    """Seconds until playback reaches the end of the ``handed_s`` seconds handed over.

    Counted from the planned start (an utterance synthesised while another still plays
    starts later than that: its slack is larger than counted, which errs towards
    windows), and from the first audio's playback once it began where that leaves less.
    """
    slack = handed_s + max(0.0, start_at - now)
    if first_audio_at is not None:
        slack = min(slack, handed_s - (now - first_audio_at))
    return slack


def _late_whole(engine: Engine, estimate: Optional[RateEstimate], utt: Utterance, k: int,
                seg, voice: VoiceParams, slack_s: float) -> bool:
    """Whether a later segment comes in windows: whole, it would be ready too late.

    ``slack_s``: seconds until playback reaches it (negative: it is late already).
    """
    if estimate is None:
        return False
    audio = estimate.audio_s(seg.text, utt.voice.length_scale, seg.rate)
    late = comes_in_windows(estimate, audio, slack_s, engine.window_seconds(audio, voice))
    if late:
        _LOG.debug('utterance %d: segment %d in windows (about %.2f s of audio, %.2f s '
                   'until it plays)', utt.id, k + 1, audio, slack_s)
    return late


def _plan_start(estimate: Optional[RateEstimate], engine: Engine, utt: Utterance,
                attempt: Attempt, ready: int, ahead_s: float, now: float,
                first_ready: float, pending_s: Sequence[float] = ()) -> None:
    """Set the attempt's ``start_at`` and ``start_delay_s`` (gapless) after segment ``ready``.

    Planned when the first segment is ready (its first window, when it comes in windows:
    ``pending_s`` are the seconds of its windows still to decode) and again after each
    later one while playback has not started: the estimate then counts what was measured
    meanwhile, so the start moves earlier or later. With no estimate at all (the first
    segment came from the phrase cache on a fresh node) playback starts at once.
    """
    segments = attempt.segments
    cached = [engine.is_cached(s.text, segment_voice(utt.voice, s)) for s in segments]
    delay = plan_start_delay(segments, ready, ahead_s, estimate, utt.voice.length_scale,
                             cached, pending_s, lambda seg, audio: engine.window_seconds(
                                 audio, segment_voice(utt.voice, seg)))
    attempt.start_at = now + delay
    attempt.start_delay_s = attempt.start_at - first_ready
    if estimate is not None:
        _LOG.debug('utterance %d: gapless start %.3f s after its first segment (planned '
                   'after segment %d; RTF %.2f, %.3f s audio per character)', utt.id,
                   attempt.start_delay_s, ready + 1, estimate.rtf, estimate.seconds_per_char)
