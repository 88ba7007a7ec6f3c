# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Gapless starts: rate estimates, the start delay, and underruns on a slow engine.

The scheduler runs on a tone engine slower than real time and a per-thread virtual clock
(:class:`ThreadClock`): synthesis and playback spend virtual time side by side, as they do
real time, so underruns happen exactly where a real slow machine would have them.
"""

import logging
import threading
import time

import pytest

from hayakoe_ros.engines import AudioWindow, VoiceParams
from hayakoe_ros.speech import Outcome, SchedulerConfig, SpeechScheduler
from hayakoe_ros.speech.gapless import (SAFETY, SETTLED_SEGMENTS, YOUNG_SAFETY,
                                        RateEstimate, RateEstimator, comes_in_windows,
                                        plan_start_delay)
from hayakoe_ros.text.segment import SPEAKABLE_RE
from hayakoe_ros.text.segment import Boundary, Segment
from speech_fakes import REAL_TIMEOUT_S, ThreadClock, ToneEngine, threaded_scheduler
from tools.submit import submit_text

pytestmark = pytest.mark.unit

VOICE = VoiceParams()
#: Five sentences of five speakable characters: 0.25 s of tone each.
FIVE = '一つ目です。二つ目です。三つ目です。四つ目です。五つ目です。'
T = REAL_TIMEOUT_S


def _speak(text, rtf, gapless, chunk_frames=256, **config):
    clock = ThreadClock()
    engine = ToneEngine(clock, rtf=rtf)
    sched = threaded_scheduler(engine, clock, gapless=gapless, chunk_frames=chunk_frames,
                               **config)
    try:
        utts = [submit_text(sched, text, VOICE)]
        assert utts[0].wait(T) and utts[0].outcome is Outcome.SUCCEEDED
        utts.append(submit_text(sched, text, VOICE))  # with what the first one taught it
        assert utts[1].wait(T) and utts[1].outcome is Outcome.SUCCEEDED
    finally:
        sched.shutdown()
    return utts, sched


@pytest.mark.parametrize('rtf', [1.5, 3.0])
def test_a_slow_engine_underruns_without_gapless_and_never_with_it(rtf):
    off, _ = _speak(FIVE, rtf, gapless=False)
    on, sched = _speak(FIVE, rtf, gapless=True)
    assert all(u.underruns > 0 for u in off)
    assert [u.underruns for u in on] == [0, 0]
    assert all(u.start_delay_s == 0.0 for u in off)
    assert all(u.start_delay_s > 0 for u in on)
    # The delay is the price: later first audio, by about what it takes to stay ahead
    # (the first utterance's: the second's may also wait for the first to finish playing).
    assert on[0].ttfa_s == pytest.approx(off[0].ttfa_s + on[0].start_delay_s)
    # Just enough: segment k (0.25 s, rtf x 0.25 s to synthesise) is ready when the audio
    # and the pauses before it have played. Planned when the first segment is ready, the
    # delay assumes 80 ms pauses and 15 % slower synthesis; planned again as segments come
    # (the measured pauses are longer, the tone engine's 0.1-0.18 s), it may only shrink.
    seg, delay = 0.25, on[1].start_delay_s
    needed = max(rtf * seg * k - sum(seg + p for p in on[1].pauses[:k]) for k in range(1, 5))
    planned = max(SAFETY * rtf * seg * k - (seg + 0.08) * k for k in range(1, 5))
    assert 0 < needed < delay <= planned + 1e-9
    est = sched.rates.estimate('tone/tone')
    assert est.rtf == pytest.approx(rtf) and est.seconds_per_char == pytest.approx(0.05)


def test_an_engine_faster_than_real_time_gets_no_delay():
    on, _ = _speak(FIVE, 0.5, gapless=True)
    assert [u.start_delay_s for u in on] == [0.0, 0.0]
    assert [u.underruns for u in on] == [0, 0]


def test_without_pacing_there_is_no_delay():
    on, _ = _speak(FIVE, 3.0, gapless=True, pacing=False)
    assert [u.start_delay_s for u in on] == [0.0, 0.0]


def test_the_chosen_delay_is_logged(caplog):
    with caplog.at_level(logging.DEBUG, logger='hayakoe_ros.speech'):
        on, _ = _speak(FIVE, 2.0, gapless=True)
    lines = [r.getMessage() for r in caplog.records
             if f'utterance {on[1].id}: gapless start' in r.getMessage()]
    assert 'planned after segment 1; RTF 2.00, 0.050 s audio per character' in lines[0]
    # The delay that took effect is one of those planned (each segment may re-plan it).
    assert any(f'gapless start {on[1].start_delay_s:.3f} s after' in line for line in lines)


def test_synthesis_goes_on_while_the_start_is_delayed():
    """During a start delay nothing plays, yet every segment must keep being synthesised.

    Here the publisher is stuck at the first chunk (its sink blocks): the synthesis thread
    still gets through all 20 sentences, 39 hand-overs with the pauses, instead of
    stalling on a short hand-over queue that a delay of seconds would waste.
    """
    engine = ToneEngine()
    gate, first = threading.Event(), threading.Event()

    def sink(utt, chunk):
        first.set()
        gate.wait(T)

    sched = SpeechScheduler(engine, sink, SchedulerConfig(pacing=False))
    try:
        utt = submit_text(sched, '一つ目です。' * 20, VOICE)
        assert first.wait(T)
        deadline = time.monotonic() + T
        while len(engine.calls) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(engine.calls) == 20
        assert not utt.done
    finally:
        gate.set()
        sched.shutdown()


def test_estimator_weighs_segments_by_length_and_follows_a_change():
    est = RateEstimator(alpha=0.5)
    assert est.estimate('e/v') is None
    est.update('e/v', synth_s=2.0, audio_s=1.0, chars=10)
    est.update('e/v', synth_s=1.0, audio_s=3.0, chars=30, length_scale=2.0)
    got = est.estimate('e/v')
    # Means of sums: (2 + 1) / 2 over (1 + 3) / 2, not the mean of 2.0 and 0.33.
    assert got.rtf == pytest.approx(1.5 / 2.0)
    assert got.seconds_per_char == pytest.approx((1.0 + 3.0 / 2.0) / (10 + 30))  # scale 1
    assert got.segments == 2
    for _ in range(20):
        est.update('e/v', synth_s=3.0, audio_s=1.0, chars=10)
    assert est.estimate('e/v').rtf == pytest.approx(3.0, rel=1e-3)
    assert est.estimate('other/v') is None
    est.update('e/v', synth_s=1.0, audio_s=0.0, chars=10)  # nothing spoken: ignored
    assert est.estimate('e/v').segments == 22


def test_plan_counts_breaks_and_cached_segments():
    segs = [Segment('あいうえお', Boundary.WORD), Segment('かきくけこ', Boundary.BREAK, 1.0),
            Segment('さしすせそ', Boundary.END)]
    rate = RateEstimate(rtf=2.0, seconds_per_char=0.1, segments=5)
    # Segment 2 (0.5 s of audio, 1.15 s of synthesis) must be ready after 0.5 s of audio;
    # segment 3 after 0.5 + 0.5 s and the 1 s break: 2.3 s of synthesis, 2 s of audio.
    assert plan_start_delay(segs, 0, 0.5, rate) == pytest.approx(2.0 * 0.5 * SAFETY - 0.5)
    # A cached segment 2 costs nothing; segment 3 is then ready long before its turn.
    assert plan_start_delay(segs, 0, 0.5, rate, cached=[False, True, False]) == 0.0
    assert plan_start_delay(segs, 0, 3.0, rate) == 0.0  # a long first segment covers it
    # Planned again once segment 2 is ready (1 s played before it): only segment 3 is left,
    # 1.15 s of synthesis against 1 s of audio and the 1 s break: no delay needed.
    assert plan_start_delay(segs, 1, 1.0, rate) == 0.0
    assert plan_start_delay(segs, 1, 0.1, rate) == pytest.approx(1.15 - 1.1)
    assert plan_start_delay(segs, 0, 0.5, None) == 0.0
    assert plan_start_delay(segs[:1], 0, 0.5, rate) == 0.0


def test_a_long_later_segment_that_sets_the_delay_is_planned_in_windows():
    segs = [Segment('あいう', Boundary.WORD), Segment('か' * 15, Boundary.SENTENCE),
            Segment('さしす', Boundary.END)]
    est = RateEstimate(rtf=0.9, seconds_per_char=0.1, segments=5, decoder_rtf=0.5)
    parts = (0.1, 0.2, 0.4, 0.8)  # the 1.5 s segment's windows, as the engine plans them

    def windows(seg, audio):
        return parts if len(seg.text) == 15 else (audio,)

    whole = plan_start_delay(segs, 0, 0.3, est)
    # Whole, the 1.5 s segment (0.9 x 1.5 x SAFETY to synthesise) plays after 0.3 s.
    assert whole == pytest.approx(0.9 * 1.5 * SAFETY - 0.3)
    # In windows its first plays after what precedes the decoder, (0.9 - 0.5) x 1.5 s,
    # and its own decoding; each later one after its decoding, 0.5 x its seconds. The
    # last window sets the delay: all of the synthesis, less 0.3 + 0.7 s played before it.
    split = plan_start_delay(segs, 0, 0.3, est, windows=windows)
    assert est.planned_windows_s(parts)[0] == pytest.approx((0.4 * 1.5 + 0.5 * 0.1) * SAFETY)
    assert split == pytest.approx(0.9 * 1.5 * SAFETY - 1.0)
    assert split < whole - 0.6
    # Without a decoder rate (no segment came in windows yet) the plan is the whole one.
    no_rate = RateEstimate(rtf=0.9, seconds_per_char=0.1, segments=5)
    assert plan_start_delay(segs, 0, 0.3, no_rate, windows=windows) == pytest.approx(whole)
    # A segment ready in time whole is planned whole: with 2 s played before it, no delay.
    assert plan_start_delay(segs, 0, 2.0, est, windows=windows) == 0.0
    # The same rule at synthesis time: in windows only when whole would be late.
    assert comes_in_windows(est, 1.5, whole + 0.3 - 1e-6, parts)
    assert not comes_in_windows(est, 1.5, whole + 0.3 + 1e-6, parts)
    assert not comes_in_windows(est, 1.5, 0.0, (1.5,))       # the engine decodes it whole
    assert not comes_in_windows(no_rate, 1.5, 0.0, parts)
    # A decoder slower than the whole synthesis (its small windows' context, or waits for
    # a shared engine's turns): windows would be ready later than the whole, so no.
    slow = RateEstimate(rtf=0.5, seconds_per_char=0.1, segments=5, decoder_rtf=2.0)
    assert not comes_in_windows(slow, 1.5, 0.0, parts)
    assert plan_start_delay(segs, 0, 0.3, slow, windows=windows) == pytest.approx(
        plan_start_delay(segs, 0, 0.3, slow))


def test_the_slack_counts_from_the_first_audio_or_the_planned_start():
    from hayakoe_ros.speech.synthesis import _slack_s

    # 2 s handed over, playback began 0.5 s ago: 1.5 s until it has all played.
    assert _slack_s(2.0, 10.0, 9.0, 9.5) == pytest.approx(1.5)
    # Not begun, planned 0.25 s from now: 2.25 s.
    assert _slack_s(2.0, 10.0, 10.25, None) == pytest.approx(2.25)
    # Not begun though its planned start has passed (another utterance still plays): at
    # least the 2 s handed over, not 2 s less the time since the planned start.
    assert _slack_s(2.0, 10.0, 7.0, None) == pytest.approx(2.0)


def test_estimator_keeps_the_decoder_rate_of_windows_apart():
    est = RateEstimator(alpha=0.5)
    est.update('e/v', synth_s=1.0, audio_s=1.0, chars=10)
    assert est.estimate('e/v').decoder_rtf is None
    est.update_decoder('e/v', synth_s=0.2, audio_s=0.5)
    est.update_decoder('e/v', synth_s=0.6, audio_s=1.5)
    est.update_decoder('e/v', synth_s=0.0, audio_s=0.0)  # a whole segment: ignored
    assert est.estimate('e/v').decoder_rtf == pytest.approx(0.4 / 1.0)
    assert est.estimate('e/v').rtf == pytest.approx(1.0)


class StagedTone(ToneEngine):
    """The tone engine with a staged cost, as hayakoe's CPU engine has it.

    Before any sample of a segment: ``prefix`` s per second of its audio (front end,
    first stage); then ``decoder`` s per second of each window. Windows as hayakoe plans
    them (:func:`window_plan`: 0.1 s, then doubling) over 10 ms frames; ``split`` False:
    :meth:`window_seconds` says every segment comes whole (an engine that cannot split
    a later segment), though :meth:`synthesize_windows` still windows a first one.
    """

    HOP = 80  # 10 ms at 8 kHz

    def __init__(self, clock, prefix: float, decoder: float, split: bool = True):
        super().__init__(clock, rtf=prefix + decoder)
        self.prefix, self.decoder, self.split = prefix, decoder, split
        self.windowed: list = []  # (text, first_audio) of each windowed synthesis

    def _plan(self, samples: int) -> list:
        from hayakoe_ros.engines.windowed_decoder import window_plan

        return window_plan(-(-samples // self.HOP), self.HOP, 10)

    def window_seconds(self, audio_s, voice):
        if not self.split:
            return (audio_s,)
        return tuple((b - a) / self.RATE for a, b in self._plan(int(audio_s * self.RATE)))

    def synthesize_windows(self, text, voice, first_audio=True):
        self.windowed.append((text, first_audio))
        audio = self.tone(self.samples_for(text), self.frequency)
        self._clock.sleep(self.prefix * audio.size / self.RATE)
        plan = [(a, min(b, audio.size)) for a, b in self._plan(audio.size)]
        for i, (a, b) in enumerate(plan):
            self._clock.sleep(self.decoder * (b - a) / self.RATE)
            yield AudioWindow(audio[a:b], tuple((hi - lo) / self.RATE
                                                for lo, hi in plan[i + 1:]))


#: A short first sentence (0.3 s of tone), then a long one (2 s).
SHORT_THEN_LONG = 'わかりました。' + 'あいうえお' * 8 + '。'


def _speak_staged(split: bool):
    clock = ThreadClock()
    engine = StagedTone(clock, prefix=0.3, decoder=0.4, split=split)
    sched = threaded_scheduler(engine, clock)
    try:
        utts = []
        for text in ('一つ目です。', SHORT_THEN_LONG, SHORT_THEN_LONG):
            utts.append(submit_text(sched, text, VOICE))
            assert utts[-1].wait(T) and utts[-1].outcome is Outcome.SUCCEEDED
    finally:
        sched.shutdown()
    return utts, engine


def test_a_long_later_segment_comes_in_windows_and_the_reply_starts_sooner():
    """Gapless on, an engine 0.7x real time: the long second sentence sets the start.

    Whole, it takes 1.4 s after 0.4 s of audio and a pause: the reply waits about a
    second. In windows its first plays after 0.64 s (0.3 x 2 s + 0.4 x 0.1 s), and each
    later window decodes faster than the one before it plays.
    """
    on, engine = _speak_staged(split=True)
    off, control = _speak_staged(split=False)
    assert [u.underruns for u in on + off] == [0] * 6
    long_text = 'あいうえお' * 8 + '。'
    # Later segments come in windows as segments, not as first audio.
    assert (long_text, False) in engine.windowed
    assert all(first for _, first in control.windowed)
    assert not any(text == '一つ目です。' for text, _ in engine.windowed)  # fresh: whole
    assert [u.audio_s for u in on] == pytest.approx([u.audio_s for u in off])
    # The third utterance plans with the decoder's rate from the second's first segment
    # (the second's own start was planned before any window was measured).
    assert off[2].start_delay_s > 1.0
    assert on[2].start_delay_s < off[2].start_delay_s - 0.5


class SlowerLongTone(ToneEngine):
    """The tone engine, 30 % slower per character in segments over 10 characters."""

    def samples_for(self, text):
        n = super().samples_for(text)
        return int(n * 1.3) if len(SPEAKABLE_RE.findall(text)) > 10 else n


def test_a_fresh_estimate_plans_with_a_wider_margin():
    """A node's first reply is planned on its first segment alone, here a short one.

    The long sentence after it speaks 30 % longer per character than the first segment
    taught the estimate: planned with ``SAFETY`` it would be late (1.5 x 1.625 s of
    synthesis against 1.5 x 1.25 s x 1.15 planned); with ``YOUNG_SAFETY`` it is not.
    """
    clock = ThreadClock()
    engine = SlowerLongTone(clock, rtf=1.5)
    sched = threaded_scheduler(engine, clock)
    try:
        utt = submit_text(sched, '一つ目です。' + 'あいうえおかきくけこ' * 2 + 'さしすせそ。',
                          VOICE)
        assert utt.wait(T) and utt.outcome is Outcome.SUCCEEDED
    finally:
        sched.shutdown()
    assert len(utt.segments) == 2
    assert utt.underruns == 0
    est = RateEstimate(rtf=1.5, seconds_per_char=0.05, segments=1)
    assert est.planned_synthesis_s(1.0) == pytest.approx(1.5 * YOUNG_SAFETY)
    settled = RateEstimate(rtf=1.5, seconds_per_char=0.05, segments=SETTLED_SEGMENTS)
    assert settled.planned_synthesis_s(1.0) == pytest.approx(1.5 * SAFETY)
