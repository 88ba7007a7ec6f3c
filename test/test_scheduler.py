# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The speech pipeline end to end on a real engine (tiny hayakoe model), without ROS."""

import threading
import time

import numpy as np
import pytest

from hayakoe_ros.engines import UnknownStyleError, VoiceParams
from hayakoe_ros.engines.hayakoe_internals import synthesize_float
from hayakoe_ros.speech import (InputError, Outcome, QueueFullError, SchedulerConfig,
                                SpeechScheduler)
from hayakoe_ros.speech.audio import LIMIT_CEILING

pytestmark = pytest.mark.unit

SIX_SENTENCES = ('こんにちは。今日はいい天気ですね。駅まで歩きましょう。'
                 '途中で本屋に寄ります。新しい本を買いたいです。それでは出発しましょう。')


class Recorder:
    """Sink that keeps every chunk with the time it was handed over."""

    def __init__(self):
        self.items = []
        self.lock = threading.Lock()

    def __call__(self, utt, chunk):
        with self.lock:
            self.items.append((time.monotonic(), utt.id, chunk))

    def chunks(self, utt):
        with self.lock:
            return [c for _, uid, c in self.items if uid == utt.id]

    def audio(self, utt):
        chunks = self.chunks(utt)
        return np.concatenate([c.samples for c in chunks]) if chunks else np.zeros(0)


class SpyEngine:
    """Wraps a real engine and records when each synthesis call ends (no behaviour change)."""

    def __init__(self, engine):
        self._engine = engine
        self.synth_done = []

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def synthesize(self, text, voice):
        audio = self._engine.synthesize(text, voice)
        self.synth_done.append((time.monotonic(), text))
        return audio


@pytest.fixture
def make_scheduler():
    made = []

    def make(engine, **config):
        rec = Recorder()
        sched = SpeechScheduler(engine, rec, SchedulerConfig(**config))
        made.append(sched)
        return sched, rec

    yield make
    for sched in made:
        sched.shutdown()


def _zero_runs(samples, min_len):
    """(start, length) of runs of exact zeros at least ``min_len`` samples long."""
    zero = np.concatenate([[False], samples == 0, [False]])
    edges = np.flatnonzero(np.diff(zero.astype(np.int8)))
    runs = [(s, e - s) for s, e in zip(edges[::2], edges[1::2])]
    return [r for r in runs if r[1] >= min_len]


def test_first_chunk_is_published_before_the_rest_is_synthesised(
        tiny_engine, det_voice, make_scheduler):
    spy = SpyEngine(tiny_engine)
    sched, rec = make_scheduler(spy, pacing=True, max_lead_s=0.05, chunk_frames=1024)
    utt = sched.submit(SIX_SENTENCES, det_voice)
    assert utt.wait(120) and utt.outcome is Outcome.SUCCEEDED
    first_chunk_at = rec.items[0][0]
    assert len(utt.segments) == 6
    # Streaming: audio went out while later segments were still being synthesised.
    assert first_chunk_at < spy.synth_done[-1][0]
    assert first_chunk_at <= spy.synth_done[1][0]


def test_pauses_are_the_predicted_ones_not_a_fixed_gap(tiny_engine, det_voice,
                                                       make_scheduler):
    sched, rec = make_scheduler(tiny_engine, pacing=False, chunk_frames=512)
    text = 'こんにちは。今日はいい天気ですね！散歩に行きましょうか？'
    utt = sched.submit(text, det_voice)
    assert utt.wait(60) and utt.outcome is Outcome.SUCCEEDED
    sr = tiny_engine.sample_rate
    assert len(utt.pauses) == 2
    direct = [tiny_engine.predict_pause(a.text, b.text, det_voice)
              for a, b in zip(utt.segments, utt.segments[1:])]
    np.testing.assert_allclose(utt.pauses, [max(p, 0.08) for p in direct], rtol=1e-6)
    # The tiny model's duration predictor is biased so pauses exceed hayakoe's 80 ms floor.
    assert all(p > 0.1 for p in utt.pauses)
    audio = rec.audio(utt)[:utt.audio_samples]
    gaps = _zero_runs(audio, int(0.03 * sr))
    assert len(gaps) == 2, gaps
    for (_start, length), predicted in zip(gaps, utt.pauses):
        # The random model's output is never silent, so the whole pause is inserted.
        assert abs(length / sr - predicted) < 0.003, (length / sr, predicted)
    assert abs(gaps[0][1] - gaps[1][1]) / sr > 0.005 or \
        abs(utt.pauses[0] - 0.08) > 0.02  # not a fixed gap


def test_chunks_have_exact_frames_and_only_the_last_is_padded(tiny_engine, det_voice,
                                                              make_scheduler):
    sched, rec = make_scheduler(tiny_engine, pacing=False, chunk_frames=777)
    utt = sched.submit('こんにちは。元気ですか。', det_voice)
    assert utt.wait(60) and utt.outcome is Outcome.SUCCEEDED
    chunks = rec.chunks(utt)
    assert all(len(c.samples) == 777 and c.samples.dtype == np.int16 for c in chunks)
    assert [c.valid_frames for c in chunks[:-1]] == [777] * (len(chunks) - 1)
    assert 0 < chunks[-1].valid_frames <= 777
    assert utt.audio_samples == 777 * (len(chunks) - 1) + chunks[-1].valid_frames
    assert [c.index for c in chunks] == list(range(len(chunks)))
    plays = [c.play_time for c in chunks]
    np.testing.assert_allclose(np.diff(plays), 777 / tiny_engine.sample_rate, rtol=1e-6)


def test_no_chunk_after_cancel_returns_and_the_queue_is_untouched(
        openjtalk_engine, make_scheduler):
    sched, rec = make_scheduler(openjtalk_engine, pacing=True, max_lead_s=0.1,
                                chunk_frames=1024)
    long_utt = sched.submit(SIX_SENTENCES, VoiceParams())
    queued = sched.submit('次の発話です。', VoiceParams())
    deadline = time.monotonic() + 30
    while not rec.chunks(long_utt) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    assert sched.cancel(long_utt)
    n_at_cancel = len(rec.chunks(long_utt))
    canceled_at = time.monotonic()
    assert long_utt.outcome is Outcome.CANCELED
    assert queued.wait(30) and queued.outcome is Outcome.SUCCEEDED
    assert len(rec.chunks(long_utt)) == n_at_cancel
    assert all(t <= canceled_at for t, uid, _ in rec.items if uid == long_utt.id)
    assert len(rec.chunks(queued)) > 0
    assert not sched.cancel(long_utt)  # already finished


def test_interrupt_policy_cancels_the_current_utterance_only(openjtalk_engine,
                                                            make_scheduler):
    sched, rec = make_scheduler(openjtalk_engine, pacing=True, max_lead_s=0.1,
                                queue_policy='interrupt')
    first = sched.submit(SIX_SENTENCES, VoiceParams())
    deadline = time.monotonic() + 30
    while not rec.chunks(first) and time.monotonic() < deadline:
        time.sleep(0.01)
    urgent = sched.submit('止まってください。', VoiceParams())
    assert first.wait(5) and first.outcome is Outcome.CANCELED
    assert 'interrupt' in first.error
    assert urgent.wait(30) and urgent.outcome is Outcome.SUCCEEDED
    # A second urgent one interrupts the first urgent one, and does not drop older waiters.
    sched.configure(queue_policy='enqueue')
    a = sched.submit('一つ目の長い説明をします。とても長い説明です。', VoiceParams())
    b = sched.submit('二つ目です。', VoiceParams())
    while not rec.chunks(a) and time.monotonic() < deadline + 30:
        time.sleep(0.01)
    sched.configure(queue_policy='interrupt')
    c = sched.submit('三つ目です。', VoiceParams())
    assert a.wait(5) and a.outcome is Outcome.CANCELED
    assert c.wait(30) and b.wait(30)
    assert c.outcome is Outcome.SUCCEEDED and b.outcome is Outcome.SUCCEEDED
    first_c = rec.chunks(c)[0].play_time
    first_b = rec.chunks(b)[0].play_time
    assert first_c < first_b  # the interrupting utterance is spoken next


def test_queue_bound_rejects_with_a_clear_error_and_drops_nothing(openjtalk_engine,
                                                                  make_scheduler):
    sched, rec = make_scheduler(openjtalk_engine, pacing=True, max_queue=1)
    speaking = sched.submit('一つ目の発話です。少し長めに話します。', VoiceParams())
    deadline = time.monotonic() + 30
    while not rec.chunks(speaking) and time.monotonic() < deadline:
        time.sleep(0.01)
    waiting = sched.submit('二つ目です。', VoiceParams())
    with pytest.raises(QueueFullError, match='max_queue=1'):
        sched.submit('三つ目です。', VoiceParams())
    assert speaking.wait(30) and waiting.wait(30)
    assert speaking.outcome is Outcome.SUCCEEDED and waiting.outcome is Outcome.SUCCEEDED


def test_stop_silences_and_flushes_then_serves_again(openjtalk_engine, make_scheduler):
    sched, rec = make_scheduler(openjtalk_engine, pacing=True)
    utts = [sched.submit(t, VoiceParams()) for t in
            ('一つ目の発話です。少し長めに話します。', '二つ目です。', '三つ目です。')]
    deadline = time.monotonic() + 30
    while not rec.chunks(utts[0]) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sched.stop() == 3
    n = len(rec.items)
    assert all(u.outcome is Outcome.CANCELED for u in utts)
    assert sched.queue_depth == 0
    time.sleep(0.3)
    assert len(rec.items) == n
    again = sched.submit('また話せます。', VoiceParams())
    assert again.wait(30) and again.outcome is Outcome.SUCCEEDED


def test_level_is_the_models_own_times_one_gain(tiny_engine, det_voice, make_scheduler):
    sched, rec = make_scheduler(tiny_engine, pacing=False, chunk_frames=4096)
    texts = ['あ。', 'こんにちは、今日はいい天気ですね。']
    raw = [synthesize_float(tiny_engine.speaker, t, det_voice) for t in texts]
    out = []
    for text in texts:
        utt = sched.submit(text, det_voice, volume=0.5)
        assert utt.wait(60)
        out.append(rec.audio(utt)[:utt.audio_samples].astype(np.float64) / 32767)
    for r, o in zip(raw, out):
        # One fixed gain: published = 0.5 x raw model output (no peak normalisation).
        assert len(o) == len(r)
        expected = np.clip(0.5 * r, -LIMIT_CEILING, LIMIT_CEILING)
        assert np.max(np.abs(o - expected)) < 2e-4 + 1e-3 * (np.max(np.abs(0.5 * r))
                                                            > LIMIT_CEILING)
    peak_ratio = np.max(np.abs(out[0])) / np.max(np.abs(out[1]))
    raw_ratio = np.max(np.abs(raw[0])) / np.max(np.abs(raw[1]))
    assert abs(peak_ratio - raw_ratio) < 0.02 * raw_ratio
    # hayakoe's public generate() peak-normalises each to full scale; we do not.
    gen = [tiny_engine.speaker.generate(t, noise=0, noise_w=0, sdp_ratio=0).data
           for t in texts]
    assert all(np.max(np.abs(g)) >= 32766 for g in gen)
    # The same text twice gives the same level (and samples).
    again = sched.submit(texts[1], det_voice, volume=0.5)
    assert again.wait(60)
    np.testing.assert_array_equal(rec.audio(again)[:again.audio_samples],
                                  np.rint(out[1] * 32767).astype(np.int16))


def test_limiter_keeps_loud_volume_from_clipping(tiny_engine, det_voice, make_scheduler):
    sched, rec = make_scheduler(tiny_engine, pacing=False)
    utt = sched.submit('こんにちは、今日はいい天気ですね。', det_voice, volume=4.0)
    assert utt.wait(60)
    audio = rec.audio(utt)
    assert np.max(np.abs(audio.astype(np.int32))) <= int(LIMIT_CEILING * 32767) + 1


@pytest.mark.parametrize('text, code', [('', 'empty'), ('  ', 'empty'),
                                        ('！？。', 'nothing_speakable'),
                                        ('😀😀😀', 'nothing_speakable'),
                                        ('あ' * 3001, 'too_long')])
def test_bad_input_is_rejected_and_the_queue_keeps_serving(tiny_engine, det_voice,
                                                           make_scheduler, text, code):
    sched, rec = make_scheduler(tiny_engine, pacing=False, max_chars=3000)
    good = sched.submit('こんにちは。', det_voice)
    with pytest.raises(InputError) as info:
        sched.submit(text, det_voice)
    assert info.value.code == code
    assert good.wait(60) and good.outcome is Outcome.SUCCEEDED
    assert len(rec.chunks(good)) > 0


def test_unknown_style_and_speaker_are_rejected(tiny_engine, det_voice, make_scheduler):
    sched, _ = make_scheduler(tiny_engine, pacing=False)
    with pytest.raises(UnknownStyleError, match="unknown style 'Furious'"):
        sched.submit('こんにちは。', VoiceParams(style='Furious'))
    with pytest.raises(UnknownStyleError, match='speaker id 7'):
        sched.submit('こんにちは。', VoiceParams(style=det_voice.style, speaker_id=7))


def test_control_characters_are_stripped_and_mixed_text_spoken(tiny_engine, det_voice,
                                                               make_scheduler):
    sched, rec = make_scheduler(tiny_engine, pacing=False)
    utt = sched.submit('\x1bROSの\x00nodeを起動します。', det_voice)
    assert utt.wait(60) and utt.outcome is Outcome.SUCCEEDED
    assert utt.text == 'ROSのnodeを起動します。'
    assert utt.audio_samples > 0.3 * tiny_engine.sample_rate


def test_max_queue_zero_speaks_only_when_idle(openjtalk_engine, make_scheduler):
    sched, rec = make_scheduler(openjtalk_engine, pacing=True, max_queue=0)
    first = sched.submit('一つ目の発話です。少し長めに話します。', VoiceParams())
    with pytest.raises(QueueFullError):
        sched.submit('二つ目です。', VoiceParams())
    assert first.wait(30) and first.outcome is Outcome.SUCCEEDED
    idle = sched.submit('また話せます。少し長めに話します。', VoiceParams())
    deadline = time.monotonic() + 30
    while not rec.chunks(idle) and time.monotonic() < deadline:
        time.sleep(0.01)
    sched.configure(queue_policy='interrupt')
    urgent = sched.submit('割り込みです。', VoiceParams())  # interrupting is allowed
    assert idle.wait(10) and idle.outcome is Outcome.CANCELED
    assert urgent.wait(30) and urgent.outcome is Outcome.SUCCEEDED
