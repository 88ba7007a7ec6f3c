# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The speech scheduler on a deterministic tone engine and a virtual clock (no ROS, no model).

What it publishes: the first chunk before the rest is synthesised, predicted pauses,
exact chunks paced at playback rate, the level, bad input, the speaking flag, the debug
log. Cancel, stop and interrupt are in test_scheduler_cancel.py, the queue's bound and
policies in test_scheduler_queue.py, races and failures in test_scheduler_failures.py;
the ``rig`` fixture is conftest.py's. The real engines have their own tests
(test_engines.py, test_node_speech.py); here every wait runs on :class:`VirtualClock`,
so pacing costs no wall-clock time.
"""

import logging

import numpy as np
import pytest

from hayakoe_ros.speech import CancelReason, Outcome
from hayakoe_ros.text import InputError
from hayakoe_ros.speech.audio import LIMIT_CEILING
from scheduler_rig import FIRST_LEN, SR, THREE, T, VOICE
from scheduler_rig import wait_published as _wait_published
from speech_fakes import ToneEngine
from tools.submit import submit_text

pytestmark = pytest.mark.unit


def _zero_runs(samples, min_len):
    """(start, length) of runs of exact zeros at least ``min_len`` samples long."""
    zero = np.concatenate([[False], samples == 0, [False]])
    edges = np.flatnonzero(np.diff(zero.astype(np.int8)))
    return [(s, e - s) for s, e in zip(edges[::2], edges[1::2]) if e - s >= min_len]


def test_first_chunk_is_published_before_the_rest_is_synthesised(rig):
    sched, rec, engine, _, _ = rig(chunk_frames=256)
    engine.hold('散歩')
    utt = submit_text(sched, THREE, VOICE)
    assert engine.entered.wait(T)
    # The second segment is still being synthesised; the first is already out.
    _wait_published(rec, utt, FIRST_LEN)
    assert not utt.done
    engine.release()
    assert utt.wait(T) and utt.outcome is Outcome.SUCCEEDED


def test_without_pacing_queued_utterances_are_stamped_one_after_the_other(rig):
    # Released at once, each utterance's first stamp was its release time: the second's
    # audio claimed to play while the first's still did (4.4 s apart over ROS).
    sched, rec, _, _, _ = rig(pacing=False, chunk_frames=512)
    utts = [submit_text(sched, text, VOICE) for text in (THREE, 'はい。', THREE)]
    for utt in utts:
        assert utt.wait(T) and utt.outcome is Outcome.SUCCEEDED
    for before, after in zip(utts, utts[1:]):
        first = rec.chunks(after)[0].play_time
        assert first == pytest.approx(before.end_play_time, abs=1e-9)
    # Within one utterance, each chunk plays where the one before ends (gapless).
    chunks = [c for utt in utts for c in rec.chunks(utt)]
    for a, b in zip(chunks, chunks[1:]):
        assert b.play_time == pytest.approx(a.play_time + a.valid_frames / SR, abs=1e-9)


@pytest.mark.parametrize('cut', ['cancel', 'stop'])
def test_without_pacing_an_utterance_after_a_cut_one_is_stamped_at_its_release(rig, cut):
    # What was released of a cut utterance is dropped downstream (its end mark says
    # where): the next one does not wait behind it (it was stamped after all of it).
    sched, rec, engine, clock, _ = rig(pacing=False, chunk_frames=256)
    engine.hold('散歩')
    first = submit_text(sched, THREE, VOICE)
    assert engine.entered.wait(T)
    _wait_published(rec, first, FIRST_LEN)
    if cut == 'cancel':
        assert sched.cancel(first, CancelReason.CLIENT)
    else:
        assert sched.stop() == 1
    engine.release()
    released_to = first.end_play_time
    assert released_to > clock() + 0.1  # pacing off: released ahead of playback
    after = submit_text(sched, 'はい。', VOICE)
    assert after.wait(T) and after.outcome is Outcome.SUCCEEDED
    assert rec.chunks(after)[0].play_time < released_to


def test_pauses_are_the_predicted_ones_not_a_fixed_gap(rig):
    sched, rec, engine, _, _ = rig(pacing=False, chunk_frames=512)
    utt = submit_text(sched, THREE, VOICE)
    assert utt.wait(T) and utt.outcome is Outcome.SUCCEEDED
    expected = [max(ToneEngine.pause_for(s.text), 0.08) for s in utt.segments[:-1]]
    assert utt.pauses == pytest.approx(expected)
    audio = rec.audio(utt)
    gaps = _zero_runs(audio, int(0.03 * SR))
    assert [round(length / SR, 3) for _, length in gaps] == pytest.approx(expected, abs=1e-3)
    assert abs(gaps[0][1] - gaps[1][1]) / SR > 0.01  # two different predicted pauses
    # Segment audio sits between the gaps, sample-exact.
    seg_lens = [ToneEngine.samples_for(s.text) for s in utt.segments]
    assert gaps[0][0] == seg_lens[0]
    # Each tone starts with one zero sample (sin 0), which the pause before it counts as
    # that segment's lead-in (.speech.pauses).
    assert len(audio) == sum(seg_lens) + sum(round(p * SR) - 1 for p in expected)


def test_chunks_have_exact_frames_and_are_paced_at_playback_rate(rig):
    sched, rec, _, clock, _ = rig(chunk_frames=777, max_lead_s=0.05)
    start = clock()
    utt = submit_text(sched, 'こんにちは。元気ですか。', VOICE)
    assert utt.wait(T) and utt.outcome is Outcome.SUCCEEDED
    chunks = rec.chunks(utt)
    assert all(len(c.samples) == 777 and c.samples.dtype == np.int16 for c in chunks)
    assert [c.valid_frames for c in chunks[:-1]] == [777] * (len(chunks) - 1)
    assert 0 < chunks[-1].valid_frames <= 777
    assert utt.audio_samples == 777 * (len(chunks) - 1) + chunks[-1].valid_frames
    assert [c.index for c in chunks] == list(range(len(chunks)))
    np.testing.assert_allclose(np.diff([c.play_time for c in chunks]), 777 / SR)
    # It ends when its last sample has played on the (virtual) clock, not before.
    assert utt.finished_at == pytest.approx(chunks[0].play_time + utt.audio_samples / SR)
    assert utt.finished_at - start >= utt.audio_s - 1e-9  # float rounding of the clock


def test_level_is_the_engines_own_times_one_gain_and_limited(rig):
    sched, rec, _, _, _ = rig(pacing=False, chunk_frames=4096)
    utt = submit_text(sched, 'あいうえお。', VOICE, volume=0.5)
    assert utt.wait(T)
    raw = ToneEngine.tone(ToneEngine.samples_for('あいうえお。'))
    np.testing.assert_allclose(rec.audio(utt) / 32767, 0.5 * raw, atol=1 / 32767)
    loud = submit_text(sched, 'あいうえお。', VOICE, volume=4.0)
    assert loud.wait(T)
    assert np.max(np.abs(rec.audio(loud).astype(np.int32))) <= int(LIMIT_CEILING * 32767) + 1


@pytest.mark.parametrize('text, code', [('', 'empty'), ('  ', 'empty'),
                                        ('！？。', 'nothing_speakable'),
                                        ('😀😀😀', 'nothing_speakable'),
                                        ('あ' * 3001, 'too_long')])
def test_bad_input_is_rejected_and_the_queue_keeps_serving(rig, text, code):
    sched, rec, _, _, _ = rig(pacing=False, max_chars=3000)
    good = submit_text(sched, 'こんにちは。', VOICE)
    with pytest.raises(InputError) as info:
        submit_text(sched, text, VOICE)
    assert info.value.code == code
    assert good.wait(T) and good.outcome is Outcome.SUCCEEDED
    assert len(rec.chunks(good)) > 0


def test_control_characters_are_stripped(rig):
    sched, _, _, _, _ = rig(pacing=False)
    utt = submit_text(sched, '\x1bロボットの\x00電源を入れます。', VOICE)
    assert utt.wait(T) and utt.outcome is Outcome.SUCCEEDED
    assert utt.text == 'ロボットの電源を入れます。'
    assert utt.audio_samples == ToneEngine.samples_for(utt.text)


def test_speaking_stays_true_across_queued_utterances(rig):
    sched, _, engine, _, speaking = rig()
    engine.hold('一つ目')
    utts = [submit_text(sched, t, VOICE) for t in ('一つ目です。', '二つ目です。', '三つ目です。')]
    assert engine.entered.wait(T)
    engine.release()
    assert all(u.wait(T) and u.outcome is Outcome.SUCCEEDED for u in utts)
    assert speaking == [True, False]  # no False/True blip between them
    alone = submit_text(sched, 'もう一つ。', VOICE)
    assert alone.wait(T)
    assert speaking == [True, False, True, False]


def test_speaking_stays_true_when_the_current_one_is_canceled_and_another_waits(rig):
    sched, rec, engine, _, speaking = rig()
    engine.hold('散歩')
    first = submit_text(sched, THREE, VOICE)
    second = submit_text(sched, '次です。', VOICE)
    assert engine.entered.wait(T)
    _wait_published(rec, first, 1)
    sched.cancel(first, CancelReason.CLIENT)
    assert speaking == [True]
    engine.release()
    assert second.wait(T) and second.outcome is Outcome.SUCCEEDED
    assert speaking == [True, False]


def test_without_pacing_speaking_ends_when_the_audio_released_ahead_has_played():
    """Pacing off releases an utterance at once; ``speaking`` goes false at its end stamp.

    Real time (the scheduler's default clock): the tone engine's 0.6 s of audio.
    """
    import time

    from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler
    from scheduler_rig import Recorder

    engine, events = ToneEngine(), []
    sched = SpeechScheduler(engine, Recorder(), SchedulerConfig(pacing=False),
                            on_speaking=lambda on: events.append((time.monotonic(), on)))
    try:
        utt = submit_text(sched, 'ロボットの電源を入れます。', VOICE)
        assert utt.wait(T) and utt.outcome is Outcome.SUCCEEDED
        assert [on for _, on in events] == [True]  # released, not yet played
        deadline = time.monotonic() + T
        while len(events) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [on for _, on in events] == [True, False]
        assert events[1][0] >= utt.end_play_time > events[0][0] + 0.5, (events, utt.end_play_time)
    finally:
        sched.shutdown()


def test_debug_log_names_each_segment_and_pause(rig, caplog):
    sched, _, _, _, _ = rig(pacing=False)
    with caplog.at_level(logging.DEBUG, logger='hayakoe_ros.speech'):
        utt = submit_text(sched, THREE, VOICE)
        assert utt.wait(T)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith('hayakoe_ros.speech')]
    segs = [m for m in lines if f'utterance {utt.id}: segment' in m]
    pauses = [m for m in lines if f'utterance {utt.id}: pause' in m]
    assert len(segs) == 3 and 'segment 1/3 synthesised: 6 chars, 0.250 s audio' in segs[0]
    assert len(pauses) == 2 and f'{utt.pauses[0]:.3f} s' in pauses[0]
