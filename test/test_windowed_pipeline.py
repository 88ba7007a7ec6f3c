# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""An utterance's first segment in decoder windows, through the speech pipeline (no ROS).

The first window's chunks are published while the rest of the segment is still being
decoded; the published PCM equals the whole-segment pipeline's (tiny model, 1e-4 of full
scale); a cancel between two windows ends it; the phrase cache keeps the segment whole;
a gapless start plans for the windows still to come.
"""

import threading

import numpy as np
import pytest

from hayakoe_ros.engines import AudioWindow, VoiceParams
from hayakoe_ros.engines.phrase_cache import CachingEngine
from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine
from hayakoe_ros.speech import CancelReason, Outcome, SchedulerConfig, SpeechScheduler
from hayakoe_ros.speech.audio import StreamLimiter, apply_gain_and_limit
from hayakoe_ros.speech.gapless import RateEstimate, plan_start_delay
from hayakoe_ros.text.segment import Boundary, Segment
from speech_fakes import REAL_TIMEOUT_S, ToneEngine, VirtualClock
from tools.submit import submit_text

pytestmark = pytest.mark.unit

TEXT = '明日の午前中は会議室の準備と来客の受付を順番に行う予定です。'


class WindowedTone(ToneEngine):
    """The tone engine, its segments in three windows; it can wait before the second."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()
        self.gate.set()
        self.first_window_out = threading.Event()
        self.windows_made: list = []
        self.closed: list = []

    def synthesize_windows(self, text, voice, first_audio=True):
        audio = self.synthesize(text, voice)
        cuts = [0, audio.size // 6, audio.size // 2, audio.size]
        sizes = [b - a for a, b in zip(cuts, cuts[1:])]
        try:
            for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
                if i == 1:
                    self.first_window_out.set()
                    assert self.gate.wait(REAL_TIMEOUT_S)
                self.windows_made.append((text, i))
                yield AudioWindow(audio[a:b], tuple(n / self.RATE for n in sizes[i + 1:]))
        finally:
            self.closed.append(text)


def _run(engine, text=TEXT, **config):
    chunks = []
    got = threading.Event()

    def sink(utt, chunk):
        chunks.append((utt.id, chunk))
        got.set()

    sched = SpeechScheduler(engine, sink, SchedulerConfig(pacing=False, chunk_frames=256,
                                                           **config), clock=VirtualClock())
    return sched, chunks, got


def test_first_chunks_play_while_the_rest_of_the_first_segment_decodes():
    engine = WindowedTone()
    engine.gate.clear()
    sched, chunks, got = _run(engine)
    try:
        utt = submit_text(sched, TEXT, VoiceParams())
        assert engine.first_window_out.wait(REAL_TIMEOUT_S)
        assert got.wait(REAL_TIMEOUT_S)  # published while the engine waits in the segment
        assert [w for w in engine.windows_made if w[0] == utt.segments[0].text] == \
            [(utt.segments[0].text, 0)]
        engine.gate.set()
        assert utt.wait(REAL_TIMEOUT_S) and utt.outcome is Outcome.SUCCEEDED
    finally:
        sched.shutdown()
    # Only the first segment came in windows; the audio is the whole segments' audio.
    assert {t for t, _ in engine.windows_made} == {utt.segments[0].text}
    pcm = np.concatenate([c.samples for _, c in chunks])[:utt.audio_samples]
    whole, _ = _whole(ToneEngine(), TEXT)
    np.testing.assert_array_equal(pcm, whole)


def _whole(engine, text, volume=1.0, **config):
    sched, chunks, _ = _run(engine, **config)
    try:
        utt = submit_text(sched, text, VoiceParams(style=engine.styles[0], noise=0.0,
                                                   noise_w=0.0, sdp_ratio=0.0),
                          volume=volume)
        assert utt.wait(REAL_TIMEOUT_S) and utt.outcome is Outcome.SUCCEEDED
    finally:
        sched.shutdown()
    return np.concatenate([c.samples for _, c in chunks])[:utt.audio_samples], utt


def test_a_cancel_between_windows_ends_the_segment_there():
    engine = WindowedTone()
    engine.gate.clear()
    sched, chunks, got = _run(engine)
    try:
        utt = submit_text(sched, TEXT, VoiceParams())
        assert engine.first_window_out.wait(REAL_TIMEOUT_S) and got.wait(REAL_TIMEOUT_S)
        sent = len(chunks)
        assert sched.cancel(utt, CancelReason.CLIENT)
        canceled = len(chunks)  # the cut's fade went out before the cancel returned
        engine.gate.set()
        assert utt.wait(REAL_TIMEOUT_S) and utt.outcome is Outcome.CANCELED
        nxt = submit_text(sched, 'はい。', VoiceParams())
        assert nxt.wait(REAL_TIMEOUT_S) and nxt.outcome is Outcome.SUCCEEDED
    finally:
        sched.shutdown()
    first = utt.segments[0].text
    # The cancel came while the second window was being made (the tone engine cannot
    # stop inside it; hayakoe's decoder run can): it was not handed over, the third was
    # never asked for, and the engine's window iterator was closed.
    assert (first, 1) in engine.windows_made and (first, 2) not in engine.windows_made
    assert first in engine.closed
    # Nothing of it after the cancel but its fade-out (at most 10 ms, published by the
    # cancel itself): the next utterance's chunks only.
    fade = [c for uid, c in chunks[sent:canceled] if uid == utt.id]
    assert sum(c.valid_frames for c in fade) <= int(0.010 * engine.sample_rate) + 1
    assert all(uid != utt.id for uid, _ in chunks[canceled:])
    assert any(uid == nxt.id for uid, _ in chunks[canceled:])


def test_tiny_model_windowed_pipeline_publishes_the_whole_segment_pcm(
        tiny_model_root, hayakoe_clean_globals):
    uri = f'file://{tiny_model_root}'
    results = []
    for first_window_s in (0.05, 0):  # windows of 5 frames, doubling; whole segments
        # hayakoe's default cache: the optimised models and the cut of the run's other tests
        engine = HayakoeEngine('tiny-jp', speaker_source=uri, bert_source=uri, num_threads=1,
                               first_window_s=first_window_s)
        try:
            assert engine.windowed is bool(first_window_s)
            # The windows a start is planned for are the ones the engine then decodes.
            voice = VoiceParams(style=engine.styles[0])
            sizes = [w.audio.size for w in engine.synthesize_windows('会議室の準備です', voice)]
            seconds = [n / engine.sample_rate for n in sizes]
            assert (len(sizes) > 1) is bool(first_window_s)
            assert engine.window_seconds(sum(seconds), voice) == pytest.approx(seconds)
            results.append(_whole(engine, TEXT, volume=2.0, first_segment_morae=8))
        finally:
            engine.close()
    (windowed, utt), (whole, _) = results
    assert utt.segments[0].boundary is Boundary.WORD  # a short first segment, word join
    assert windowed.size == whole.size
    # 1e-4 of full scale times the gain, plus one int16 rounding step.
    assert np.abs(windowed.astype(int) - whole.astype(int)).max() <= 2e-4 * 32767 + 1


def test_phrase_cache_keeps_a_windowed_segment_whole(tmp_path):
    inner = WindowedTone()
    cache = CachingEngine(inner, max_mb=4)
    voice = VoiceParams()
    windows = list(cache.synthesize_windows('こんにちは', voice))
    assert len(windows) == 3 and cache.misses == 1
    again = list(cache.synthesize_windows('こんにちは', voice))
    assert len(again) == 1 and cache.hits == 1  # a hit: the whole segment, no windows
    np.testing.assert_array_equal(again[0].audio,
                                  np.concatenate([w.audio for w in windows]))
    # A miss abandoned after its first window is not remembered.
    it = cache.synthesize_windows('さようなら', voice)
    next(it)
    it.close()
    assert not cache.is_cached('さようなら', voice)


def test_gapless_plans_for_the_windows_still_to_decode():
    est = RateEstimate(rtf=0.9, seconds_per_char=0.1, segments=3)
    segs = [Segment('あいう', Boundary.WORD), Segment('かきくけこ', Boundary.SENTENCE)]
    whole = plan_start_delay(segs, 0, 0.9, est)
    # Only the first 0.1 s handed over, 0.2 + 0.6 s of the segment still to decode.
    windowed = plan_start_delay(segs, 0, 0.1, est, pending_s=(0.2, 0.6))
    assert windowed > whole
    from hayakoe_ros.speech.gapless import SAFETY
    # The first window plays 0.1 s; the next takes 0.9 x 0.2 x SAFETY to decode.
    assert windowed >= 0.9 * 0.2 * SAFETY - 0.1 - 1e-9


def test_the_first_segments_windows_still_to_decode_are_planned_at_the_decoders_rate():
    from hayakoe_ros.speech.gapless import SAFETY
    segs = [Segment('あいう', Boundary.SENTENCE)]
    whole_rate = RateEstimate(rtf=0.9, seconds_per_char=0.1, segments=5)
    measured = RateEstimate(rtf=0.9, seconds_per_char=0.1, segments=5, decoder_rtf=0.6)
    # 0.1 s handed over, windows of 0.2 and 0.6 s to come: the last is ready after
    # both are decoded and must be by the time 0.1 + 0.2 s have played.
    assert plan_start_delay(segs, 0, 0.1, measured, pending_s=(0.2, 0.6)) == \
        pytest.approx(0.6 * 0.8 * SAFETY - 0.3)
    # Before a decoder rate is known, at the whole synthesis rate (front end included).
    assert plan_start_delay(segs, 0, 0.1, whole_rate, pending_s=(0.2, 0.6)) == \
        pytest.approx(0.9 * 0.8 * SAFETY - 0.3)


def test_stream_limiter_limits_pieces_as_the_whole():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(30000) * 0.5).astype(np.float32)
    want = apply_gain_and_limit(x, 3.0, 44100)
    limiter = StreamLimiter(3.0, 44100)
    out = [limiter.push(x[a:b]) for a, b in ((0, 7), (7, 1500), (1500, 29000), (29000, 30000))]
    got = np.concatenate(out + [limiter.finish()])
    np.testing.assert_array_equal(got, want)


def test_gapless_windows_the_first_segment_once_it_has_a_rate_to_plan_with():
    from speech_fakes import ThreadClock, threaded_scheduler

    clock = ThreadClock()
    engine = WindowedTone(clock, rtf=0.3)
    sched = threaded_scheduler(engine, clock)
    try:
        utts = [submit_text(sched, t, VoiceParams()) for t in ('こんにちは。', 'さようなら。')]
        assert all(u.wait(REAL_TIMEOUT_S) and u.outcome is Outcome.SUCCEEDED for u in utts)
    finally:
        sched.shutdown()
    # A fresh scheduler knows no rate: the first utterance's segment came whole (its
    # start planned as before); the second, with a measured rate, in windows.
    assert {t for t, _ in engine.windows_made} == {'さようなら。'}
    assert [u.underruns for u in utts] == [0, 0]
