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

from hayakoe_ros.engines import VoiceParams
from hayakoe_ros.speech import Outcome, SchedulerConfig, SpeechScheduler
from hayakoe_ros.speech.gapless import (SAFETY, RateEstimate, RateEstimator,
                                        plan_start_delay)
from hayakoe_ros.text.segment import Boundary, Segment
from speech_fakes import REAL_TIMEOUT_S, ThreadClock, ToneEngine
from tools.submit import submit_text

pytestmark = pytest.mark.unit

VOICE = VoiceParams()
#: Five sentences of five speakable characters: 0.25 s of tone each.
FIVE = '一つ目です。二つ目です。三つ目です。四つ目です。五つ目です。'
T = REAL_TIMEOUT_S


def _speak(text, rtf, gapless, chunk_frames=256, **config):
    clock = ThreadClock()
    engine = ToneEngine(clock, rtf=rtf)
    sched = SpeechScheduler(engine, lambda utt, chunk: None,
                            SchedulerConfig(gapless=gapless, chunk_frames=chunk_frames,
                                            **config),
                            clock=clock, waiter=clock.wait)
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
    # The delay is the price: later first audio, by about what it takes to stay ahead.
    assert on[1].ttfa_s == pytest.approx(off[1].ttfa_s + on[1].start_delay_s)
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
