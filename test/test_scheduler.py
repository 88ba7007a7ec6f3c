# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The speech scheduler on a deterministic tone engine and a virtual clock (no ROS, no model).

The real engines have their own tests (test_engines.py, test_node_speech.py); here every
wait runs on :class:`VirtualClock`, so pacing costs no wall-clock time.
"""

import contextlib
import logging
import threading

import numpy as np
import pytest

from hayakoe_ros.engines import VoiceParams
from hayakoe_ros.speech import (CancelReason, Outcome, QueueFullError, QueuePolicy,
                                SchedulerClosedError, SchedulerConfig, SchedulerFailedError,
                                SpeechScheduler)
from hayakoe_ros.text import InputError
from hayakoe_ros.text.pipeline import prepare
from hayakoe_ros.speech.audio import LIMIT_CEILING
from speech_fakes import REAL_TIMEOUT_S, ToneEngine, VirtualClock
from tools.submit import submit_text

pytestmark = pytest.mark.unit

SR = ToneEngine.RATE
VOICE = VoiceParams()
THREE = 'こんにちは。散歩に行きましょう！今日はいい天気ですね？'
T = REAL_TIMEOUT_S


class Recorder:
    """Sink that keeps every chunk, and can fail on demand."""

    def __init__(self):
        self.items = []
        self.lock = threading.Lock()
        self.fail_with = None
        self.got = threading.Event()

    def __call__(self, utt, chunk):
        if self.fail_with is not None:
            raise self.fail_with
        with self.lock:
            self.items.append((utt.id, chunk))
        self.got.set()

    def chunks(self, utt):
        with self.lock:
            return [c for uid, c in self.items if uid == utt.id]

    def audio(self, utt):
        chunks = self.chunks(utt)
        pcm = np.concatenate([c.samples for c in chunks]) if chunks else np.zeros(0, np.int16)
        return pcm[:utt.audio_samples]


@pytest.fixture
def rig():
    """make(**config) -> (scheduler, recorder, engine, clock, speaking calls)."""
    made = []

    def make(**config):
        clock = VirtualClock()
        engine = ToneEngine(clock)
        rec = Recorder()
        speaking = []
        sched = SpeechScheduler(engine, rec, SchedulerConfig(**config),
                                on_speaking=speaking.append, clock=clock, waiter=clock.wait)
        made.append((sched, engine))
        return sched, rec, engine, clock, speaking

    yield make
    for sched, engine in made:
        engine.release()
        sched.shutdown()


def _zero_runs(samples, min_len):
    """(start, length) of runs of exact zeros at least ``min_len`` samples long."""
    zero = np.concatenate([[False], samples == 0, [False]])
    edges = np.flatnonzero(np.diff(zero.astype(np.int8)))
    return [(s, e - s) for s, e in zip(edges[::2], edges[1::2]) if e - s >= min_len]


def _wait_published(rec, utt, samples):
    """Block (bounded) until ``samples`` of ``utt`` have reached the sink."""
    while sum(c.valid_frames for c in rec.chunks(utt)) < samples:
        assert rec.got.wait(T)
        rec.got.clear()


FIRST_LEN = ToneEngine.samples_for('こんにちは。')


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


def test_no_chunk_after_cancel_returns_and_the_queue_is_untouched(rig):
    sched, rec, engine, _, _ = rig(chunk_frames=256)
    engine.hold('散歩')
    long_utt = submit_text(sched, THREE, VOICE)
    queued = submit_text(sched, '次の発話です。', VOICE)
    assert engine.entered.wait(T)
    _wait_published(rec, long_utt, FIRST_LEN)
    assert sched.cancel(long_utt, CancelReason.CLIENT)
    n_at_cancel = len(rec.chunks(long_utt))
    assert n_at_cancel > 0
    assert long_utt.outcome is Outcome.CANCELED
    assert long_utt.cancel_reason is CancelReason.CLIENT
    assert long_utt.error == 'canceled by the client'
    engine.release()
    assert queued.wait(T) and queued.outcome is Outcome.SUCCEEDED
    assert len(rec.chunks(long_utt)) == n_at_cancel
    assert len(rec.chunks(queued)) > 0
    assert not sched.cancel(long_utt, CancelReason.STOP)  # already finished
    assert long_utt.cancel_reason is CancelReason.CLIENT
    with pytest.raises(ValueError):
        sched.cancel(queued, 'because')


@pytest.mark.parametrize('how', ['cancel', 'stop', 'interrupt'])
def test_cancel_stop_and_interrupt_abort_the_engine_call_in_flight(rig, how):
    sched, rec, engine, _, _ = rig()
    engine.hold('散歩')
    first = submit_text(sched, THREE, VOICE)
    assert engine.entered.wait(T)
    if how == 'cancel':
        sched.cancel(first, CancelReason.CLIENT)
    elif how == 'stop':
        sched.stop()
    else:
        sched.configure(queue_policy='interrupt')
    nxt = submit_text(sched, '次です。', VOICE)
    assert first.outcome is Outcome.CANCELED
    # The held call was cut short by the cancel (never released by the test).
    assert nxt.wait(T) and nxt.outcome is Outcome.SUCCEEDED
    assert engine.aborted == [first.segments[1].text]
    assert engine.calls[-1] == '次です。'


def test_interrupt_policy_cancels_the_current_utterance_only(rig):
    sched, rec, engine, _, _ = rig(queue_policy='interrupt')
    assert sched.config.queue_policy is QueuePolicy.INTERRUPT
    engine.hold('散歩')
    first = submit_text(sched, THREE, VOICE)
    assert engine.entered.wait(T)
    sched.configure(queue_policy=QueuePolicy.ENQUEUE)
    waiting = submit_text(sched, '二つ目です。', VOICE)
    sched.configure(queue_policy='interrupt')
    urgent = submit_text(sched, '止まってください。', VOICE)
    assert first.done and first.outcome is Outcome.CANCELED
    assert first.cancel_reason is CancelReason.INTERRUPTED
    engine.release()
    assert urgent.wait(T) and waiting.wait(T)
    assert urgent.outcome is Outcome.SUCCEEDED and waiting.outcome is Outcome.SUCCEEDED
    # The interrupting utterance is spoken next; the older waiter keeps its place after.
    assert rec.chunks(urgent)[0].play_time < rec.chunks(waiting)[0].play_time


class UncancelableHoldEngine(ToneEngine):
    """Like ToneEngine, but a held call ignores cancels: it ends only when released.

    The synthesis thread then stays inside the canceled utterance's call while others
    arrive, so none of them can be taken meanwhile, whatever the threads' timing.
    """

    @contextlib.contextmanager
    def cancellable(self, token):
        yield


def _first_chunk_order(rec, utts):
    firsts = {}
    with rec.lock:
        for uid, chunk in rec.items:
            firsts.setdefault(uid, chunk.play_time)
    return sorted((u for u in utts), key=lambda u: firsts[u.id])


def test_an_interrupting_burst_is_spoken_in_arrival_order_then_the_earlier_queue():
    clock = VirtualClock()
    engine = UncancelableHoldEngine(clock)
    rec = Recorder()
    sched = SpeechScheduler(engine, rec, SchedulerConfig(), clock=clock, waiter=clock.wait)
    try:
        engine.hold('話している')
        speaking = submit_text(sched, 'いま話している文です。', VOICE)
        assert engine.entered.wait(T)
        earlier = [submit_text(sched, t, VOICE) for t in ('前の一つ目です。', '前の二つ目です。')]
        sched.configure(queue_policy='interrupt')
        burst = [submit_text(sched, t, VOICE)
                 for t in ('割り込み一。', '割り込み二。', '割り込み三。', '割り込み四。')]
        assert speaking.outcome is Outcome.CANCELED
        assert speaking.cancel_reason is CancelReason.INTERRUPTED
        assert sched.queue_depth == 5  # the burst and the earlier queue, less the first
        engine.release()
        assert all(u.wait(T) and u.outcome is Outcome.SUCCEEDED for u in burst + earlier)
        assert _first_chunk_order(rec, burst + earlier) == burst + earlier
        assert engine.calls[1:] == [u.text for u in burst + earlier]
    finally:
        engine.release()
        sched.shutdown()


def test_replace_drops_the_speaking_the_synthesised_ahead_and_the_waiting():
    """Newest wins: every other utterance ends CANCELED (replaced), its outcome given once."""
    clock = VirtualClock()
    engine = ToneEngine(clock)
    rec = Recorder()
    gate = threading.Event()

    def held_playback(halt, timeout):  # the first utterance plays until the test says
        while not gate.is_set() and not halt.is_set():
            gate.wait(0.005)
        return clock.wait(halt, timeout)

    outcomes = []
    sched = SpeechScheduler(engine, rec, SchedulerConfig(max_queue=3), clock=clock,
                            waiter=held_playback)
    try:
        engine.hold('三つ目')
        old = [submit_text(sched, t, VOICE, on_done=lambda u: outcomes.append(u.id))
               for t in ('一つ目です。', '二つ目です。', '三つ目です。', '四つ目です。')]
        assert engine.entered.wait(T)  # one speaking, one synthesised ahead, one in the
        _wait_published(rec, old[0], 1)  # engine, one waiting
        with pytest.raises(QueueFullError):
            submit_text(sched, '溢れます。', VOICE)
        sched.configure(queue_policy='replace')
        newest = submit_text(sched, '最新です。', VOICE,
                             on_done=lambda u: outcomes.append(u.id))
        published = {u.id: len(rec.chunks(u)) for u in old}
        for utt in old:
            assert utt.done and utt.outcome is Outcome.CANCELED
            assert utt.cancel_reason is CancelReason.REPLACED
            assert utt.error == 'replaced by a newer utterance (queue_policy=replace)'
        _wait_for(lambda: engine.aborted == ['三つ目です。'])  # its call cut short
        gate.set()
        assert newest.wait(T) and newest.outcome is Outcome.SUCCEEDED
        assert sorted(outcomes) == sorted(u.id for u in old + [newest])  # once each
        assert {u.id: len(rec.chunks(u)) for u in old} == published  # nothing after
        assert '四つ目です。' not in engine.calls
    finally:
        gate.set()
        engine.release()
        sched.shutdown()


def test_replace_is_never_refused_by_max_queue():
    clock = VirtualClock()
    engine = ToneEngine(clock)
    gate = threading.Event()

    def held_playback(halt, timeout):  # nothing finishes playing until the test says
        while not gate.is_set() and not halt.is_set():
            gate.wait(0.005)
        return clock.wait(halt, timeout)

    sched = SpeechScheduler(engine, Recorder(), SchedulerConfig(max_queue=0), clock=clock,
                            waiter=held_playback)
    try:
        engine.hold('一つ目')
        first = submit_text(sched, '一つ目です。', VOICE)
        assert engine.entered.wait(T)
        sched.configure(queue_policy='replace')
        second = submit_text(sched, '二つ目です。', VOICE)
        third = submit_text(sched, '三つ目です。', VOICE)
        assert first.cancel_reason is CancelReason.REPLACED
        assert second.done and second.cancel_reason is CancelReason.REPLACED
        gate.set()
        assert third.wait(T) and third.outcome is Outcome.SUCCEEDED
    finally:
        gate.set()
        engine.release()
        sched.shutdown()


def test_queue_bound_rejects_with_a_clear_error_and_drops_nothing(rig):
    sched, _, engine, _, _ = rig(max_queue=1)
    engine.hold('一つ目')
    speaking = submit_text(sched, '一つ目です。', VOICE)
    assert engine.entered.wait(T)
    waiting = submit_text(sched, '二つ目です。', VOICE)
    with pytest.raises(QueueFullError, match='max_queue=1'):
        submit_text(sched, '三つ目です。', VOICE)
    engine.release()
    assert speaking.wait(T) and waiting.wait(T)
    assert speaking.outcome is Outcome.SUCCEEDED and waiting.outcome is Outcome.SUCCEEDED


def test_max_queue_zero_speaks_only_when_idle_but_may_interrupt(rig):
    sched, _, engine, _, _ = rig(max_queue=0)
    engine.hold('一つ目')
    first = submit_text(sched, '一つ目です。', VOICE)
    assert engine.entered.wait(T)
    with pytest.raises(QueueFullError):
        submit_text(sched, '二つ目です。', VOICE)
    sched.configure(queue_policy='interrupt')
    urgent = submit_text(sched, '割り込みです。', VOICE)
    assert first.outcome is Outcome.CANCELED
    engine.release()
    assert urgent.wait(T) and urgent.outcome is Outcome.SUCCEEDED


def test_stop_silences_and_flushes_then_serves_again(rig):
    sched, rec, engine, _, speaking = rig()
    engine.hold('散歩')
    utts = [submit_text(sched, t, VOICE) for t in (THREE, '二つ目です。', '三つ目です。')]
    assert engine.entered.wait(T)
    _wait_published(rec, utts[0], 1)
    assert sched.stop() == 3
    n = len(rec.items)
    assert all(u.outcome is Outcome.CANCELED and u.cancel_reason is CancelReason.STOP
               for u in utts)
    assert sched.queue_depth == 0
    assert speaking == [True, False]
    engine.release()
    again = submit_text(sched, 'また話せます。', VOICE)
    assert again.wait(T) and again.outcome is Outcome.SUCCEEDED
    assert len(rec.items) > n and all(uid == again.id for uid, _ in rec.items[n:])


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
    utt = submit_text(sched, '\x1bROSの\x00nodeを起動します。', VOICE)
    assert utt.wait(T) and utt.outcome is Outcome.SUCCEEDED
    assert utt.text == 'ROSのnodeを起動します。'
    assert utt.audio_samples == ToneEngine.samples_for(utt.text)


def test_queue_policy_accepts_the_strings_and_rejects_others_by_name():
    assert SchedulerConfig(queue_policy='enqueue').validated().queue_policy \
        is QueuePolicy.ENQUEUE
    assert SchedulerConfig(queue_policy='replace').validated().queue_policy \
        is QueuePolicy.REPLACE
    with pytest.raises(ValueError,
                       match="one of: enqueue, interrupt, replace; got 'random'"):
        SchedulerConfig(queue_policy='random').validated()


# ---------------------------------------------------------------- races and failures
def test_shutdown_refuses_what_is_submitted_while_it_cancels(rig):
    """Regression: shutdown() canceled first and closed second; a submit in between hung."""
    sched, _, engine, _, _ = rig()
    late = []

    def resubmit(_utt):  # runs in shutdown's thread, between its cancel and its return
        try:
            late.append(submit_text(sched, '後から来ました。', VOICE))
        except SchedulerClosedError as exc:
            late.append(exc)
        engine.release()  # let the synthesis thread see the shutdown at once

    engine.hold('一つ目')
    first = submit_text(sched, '一つ目です。', VOICE, on_done=resubmit)
    assert engine.entered.wait(T)
    sched.shutdown(timeout=T)
    assert first.outcome is Outcome.CANCELED
    assert first.cancel_reason is CancelReason.SHUTDOWN
    assert len(late) == 1
    assert isinstance(late[0], SchedulerClosedError), \
        f'accepted after shutdown began: outcome {late[0].outcome}'
    with pytest.raises(SchedulerClosedError):
        submit_text(sched, 'もう一度。', VOICE)


def test_a_dead_publisher_thread_aborts_everything_and_is_reported(rig):
    sched, _, engine, clock, _ = rig()
    engine.hold('散歩')
    speaking = submit_text(sched, THREE, VOICE)
    waiting = submit_text(sched, '待っています。', VOICE)
    assert engine.entered.wait(T)
    assert sched.failure is None
    clock.fail_once('tts-publisher', RuntimeError('clock broke'))
    engine.release()
    assert speaking.wait(T) and waiting.wait(T)
    for utt in (speaking, waiting):
        assert utt.outcome is Outcome.ABORTED
        assert 'publisher thread died: RuntimeError: clock broke' in utt.error
    assert 'publisher thread died' in sched.failure
    with pytest.raises(SchedulerFailedError, match='clock broke'):
        submit_text(sched, 'まだ話せますか。', VOICE)


def test_a_dead_synthesis_thread_aborts_everything_and_is_reported(rig):
    sched, _, engine, clock, _ = rig()
    engine.hold('一つ目')
    first = submit_text(sched, '一つ目です。', VOICE)
    second = submit_text(sched, '二つ目です。', VOICE)
    assert engine.entered.wait(T)
    clock.fail_once('tts-synthesis', KeyError('bug'))
    engine.release()
    assert first.wait(T) and second.wait(T)
    assert first.outcome is Outcome.ABORTED and second.outcome is Outcome.ABORTED
    assert 'synthesis thread died: KeyError' in second.error
    with pytest.raises(SchedulerFailedError, match='synthesis thread died'):
        submit_text(sched, '三つ目です。', VOICE)


def test_a_failing_sink_aborts_its_utterance_logs_once_and_serves_on(rig, caplog):
    sched, rec, _, _, speaking = rig(chunk_frames=64)
    rec.fail_with = OSError('device gone')
    with caplog.at_level(logging.ERROR, logger='hayakoe_ros'):
        utt = submit_text(sched, THREE, VOICE)
        assert utt.wait(T)
    assert utt.outcome is Outcome.ABORTED
    assert utt.error == 'audio sink failed: OSError: device gone'
    assert len([r for r in caplog.records if 'audio sink failed' in r.getMessage()]) == 1
    rec.fail_with = None
    again = submit_text(sched, 'また話せます。', VOICE)
    assert again.wait(T) and again.outcome is Outcome.SUCCEEDED
    assert sched.failure is None
    assert speaking[-1] is False


def test_a_failing_on_chunk_callback_aborts_its_utterance(rig):
    sched, _, _, _, _ = rig()

    def on_chunk(utt, chunk):
        raise ValueError('bad feedback')

    utt = submit_text(sched, THREE, VOICE, on_chunk=on_chunk)
    assert utt.wait(T)
    assert utt.outcome is Outcome.ABORTED
    assert utt.error == 'audio sink failed: ValueError: bad feedback'


def test_an_engine_failure_aborts_that_utterance_only(rig):
    sched, _, engine, _, _ = rig()
    engine.fail('壊れ')
    bad = submit_text(sched, 'これは壊れます。', VOICE)
    good = submit_text(sched, 'これは大丈夫です。', VOICE)
    assert bad.wait(T) and good.wait(T)
    assert bad.outcome is Outcome.ABORTED
    assert bad.error.startswith('synthesis failed: RuntimeError: tone engine failure')
    assert good.outcome is Outcome.SUCCEEDED and sched.failure is None


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


def test_utterances_synthesised_ahead_still_count_against_max_queue():
    """Goals that arrive one at a time: those synthesised ahead but not spoken still wait."""
    clock = VirtualClock()
    engine = ToneEngine(clock)
    gate, first_chunk = threading.Event(), threading.Event()

    def sink(utt, chunk):  # holds the speaking utterance at its first chunk
        first_chunk.set()
        assert gate.wait(T)

    sched = SpeechScheduler(engine, sink, SchedulerConfig(max_queue=2), clock=clock,
                            waiter=clock.wait)
    try:
        speaking = submit_text(sched, '一つ目です。', VOICE)
        assert first_chunk.wait(T)
        waiting = []
        for text in ('二つ目です。', '三つ目です。'):
            waiting.append(submit_text(sched, text, VOICE))
            _wait_for(lambda t=text: any(t in call for call in engine.calls))  # synthesised
        assert sched.queue_depth == 2
        with pytest.raises(QueueFullError, match='2 utterances waiting'):
            submit_text(sched, '四つ目です。', VOICE)
        gate.set()
        assert all(u.wait(T) and u.outcome is Outcome.SUCCEEDED
                   for u in [speaking] + waiting)
        assert sched.queue_depth == 0
    finally:
        gate.set()
        sched.shutdown()


def _wait_for(condition, timeout=T):
    done = threading.Event()
    deadline = threading.Timer(timeout, done.set)
    deadline.start()
    try:
        while not condition():
            assert not done.wait(0.005), 'condition not met in time'
    finally:
        deadline.cancel()


class UnabortableEngine(ToneEngine):
    """A synthesis call that no cancel can cut short (Open JTalk, a CUDA kernel, g2p)."""

    def __init__(self):
        super().__init__()
        self.inside, self.go_on = threading.Event(), threading.Event()
        self.closed_during_call = None

    def synthesize(self, text, voice):
        self.inside.set()
        assert self.go_on.wait(T)
        audio = super().synthesize(text, voice)
        self.inside.clear()
        return audio

    def close(self):
        self.closed_during_call = self.inside.is_set()


def test_an_engine_call_that_outlives_shutdown_is_never_closed_under():
    engine = UnabortableEngine()
    sched = SpeechScheduler(engine, lambda utt, chunk: None)
    utt = submit_text(sched, '終わらない文です。', VOICE)
    assert engine.inside.wait(T)
    assert sched.shutdown(timeout=0.05) is False  # the call goes on
    assert utt.outcome is Outcome.CANCELED
    sched.when_stopped(engine.close)
    assert engine.closed_during_call is None  # not yet: the call still runs
    engine.go_on.set()
    _wait_for(lambda: engine.closed_during_call is not None)
    assert engine.closed_during_call is False
    done = []
    sched.when_stopped(lambda: done.append(True))  # after the end: at once
    assert done == [True]
    assert sched.shutdown(timeout=1.0) is True


class HeldPauseEngine(ToneEngine):
    """A pause prediction after ``left`` waits until released (a call in flight).

    Its calls check no cancel token: the interrupt then lands where it can with any
    engine, between the engine's return and the synthesis thread's write of the result.
    """

    def __init__(self, clock, left):
        super().__init__(clock)
        self.left, self.waiting, self.go_on = left, threading.Event(), threading.Event()

    @contextlib.contextmanager
    def cancellable(self, token):
        yield

    def predict_pause(self, left, right, voice):
        if left == self.left and not self.go_on.is_set():
            self.waiting.set()
            assert self.go_on.wait(T)
        return super().predict_pause(left, right, voice)


def test_an_interrupt_restarts_an_utterance_whose_dropped_attempt_writes_nothing_into_it():
    """The synthesis thread finishes the dropped attempt's pause after the restart."""
    clock = VirtualClock()
    engine = HeldPauseEngine(clock, '次の一つ目の文です。')
    gate = threading.Event()

    def held_playback(halt, timeout):  # pacing holds playback until gate (or a cancel)
        while not gate.is_set() and not halt.is_set():
            gate.wait(0.005)
        return clock.wait(halt, timeout)

    sched = SpeechScheduler(engine, lambda utt, chunk: None, clock=clock,
                            waiter=held_playback)
    try:
        first = submit_text(sched, 'いま話している文です。', VOICE)
        later = sched.submit(prepare('次の一つ目の文です。次の二つ目の文です。', 2000, 60)[1],
                             VOICE)
        assert engine.waiting.wait(T)  # `later` is synthesised ahead, inside its pause
        dropped = later.attempt
        sched.configure(queue_policy='interrupt')
        urgent = submit_text(sched, '割り込みです。', VOICE)
        assert later.attempt is not dropped and later.attempt.number == 1
        engine.go_on.set()  # the dropped attempt's pause prediction returns now
        gate.set()
        assert urgent.wait(T) and later.wait(T)
        assert first.outcome is Outcome.CANCELED and later.outcome is Outcome.SUCCEEDED
        assert len(later.pauses) == len(later.segments) - 1 == 1  # its own pause only
        assert dropped.pauses == [pytest.approx(ToneEngine.pause_for('次の一つ目の文です。'))]
    finally:
        gate.set()
        engine.go_on.set()
        sched.shutdown()


def test_an_interrupt_cuts_the_speaking_one_even_while_a_cancel_is_finishing(monkeypatch):
    """An interrupt cuts the utterance speaking, whatever a cancel still finishing holds.

    X is canceled (halted) but its canceler has not yet given it its outcome when B
    interrupts: A, the one speaking, is cut at once; it is not restarted and played on.
    """
    from hayakoe_ros.speech import lineup

    chunks: list = []
    sched = SpeechScheduler(ToneEngine(), lambda u, c: chunks.append(u.id),
                            SchedulerConfig(chunk_frames=800, max_queue=4))
    try:
        # Prepared first: X must still be speaking (0.5 s) when its cancel comes, also
        # where the front end is slow (emulated aarch64).
        x_text, a_text = 'あいうえおかきくけこ。', 'かきくけこさしすせそ' * 3 + '。'
        (_, x_segs), (_, a_segs) = (prepare(t, 2000, 60) for t in (x_text, a_text))
        x = sched.submit(x_segs, VOICE, text=x_text)
        a = sched.submit(a_segs, VOICE, text=a_text)
        held, release = threading.Event(), threading.Event()
        real_remove = lineup.Lineup.remove

        def remove(self, utt):  # the canceling thread, pre-empted between halt and finish
            if utt is x:
                held.set()
                assert release.wait(T)
            return real_remove(self, utt)

        monkeypatch.setattr(lineup.Lineup, 'remove', remove)
        canceler = threading.Thread(target=sched.cancel, args=(x, CancelReason.CLIENT))
        canceler.start()
        assert held.wait(T) and x.halted and not x.done
        pause = threading.Event()
        for _ in range(int(T / 0.01)):  # until the publisher has moved on to A
            if a.id in chunks:
                break
            pause.wait(0.01)
        sched.configure(queue_policy='interrupt')
        b = submit_text(sched, 'たちつ。', VOICE)
        assert a.wait(T) and a.cancel_reason is CancelReason.INTERRUPTED, a.outcome
        release.set()
        canceler.join(T)
        assert b.wait(T) and b.outcome is Outcome.SUCCEEDED
        assert a.attempt.number == 0  # cut, not restarted
        assert b.id not in chunks[:chunks.index(a.id)]
    finally:
        sched.shutdown()



def test_an_interrupting_text_not_yet_heard_is_not_cut_by_the_next_of_its_burst():
    """Texts sent back to back under ``interrupt``: each is spoken, in arrival order.

    The first of a burst cuts the one speaking and the synthesis thread takes it at once;
    the second arrives before any of the first is published. Cutting the first then lost
    it unheard (the node spoke the second and third texts of a burst of three, never the
    first). Once one is heard, the next interrupting text cuts it as before.
    """
    from hayakoe_ros.speech.lineup import Lineup
    from hayakoe_ros.speech.utterance import Utterance

    line = Lineup()
    made = iter(range(1, 100))

    def utterance(text):
        _, segments = prepare(text, 1000, 60, 0)
        return Utterance(next(made), text, segments, VOICE, 1.0, 0.0)

    def admit(utt, policy):
        return line.admit(utt, QueuePolicy(policy), 16, lambda: None)

    speaking = utterance('いま話している文です。')
    assert admit(speaking, 'enqueue') == []
    assert line.take()[0] is speaking
    speaking.first_audio_at = 0.0  # its first chunk is out: it is heard
    first, second, third = (utterance(t) for t in ('一つ目。', '二つ目。', '三つ目。'))
    assert admit(first, 'interrupt') == [speaking] and speaking.halted
    assert line.take()[0] is first  # in synthesis, nothing of it published yet
    assert admit(second, 'interrupt') == [] and not first.halted
    assert admit(third, 'interrupt') == [] and not first.halted
    line.finished(speaking)
    line.finished(first)
    assert line.take()[0] is second
    second.first_audio_at = 1.0
    later = utterance('四つ目。')
    assert admit(later, 'interrupt') == [second] and second.halted
    assert [line.take()[0] for _ in range(2)] == [third, later]
