# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Cancel, stop and interrupt in the speech scheduler (tone engine, virtual clock).

What is cut and when: no chunk after a cancel returns, the engine call in flight aborted,
an interrupt cutting only the utterance speaking (also while a cancel is finishing or an
attempt is dropped), a burst of interrupting texts spoken in arrival order.
"""

import contextlib
import threading
import time

import pytest

from hayakoe_ros.speech import (CancelReason, Outcome, QueuePolicy, SchedulerConfig,
                                SpeechScheduler)
from hayakoe_ros.text.pipeline import prepare
from scheduler_rig import FIRST_LEN, THREE, T, VOICE, Recorder
from scheduler_rig import wait_published as _wait_published
from speech_fakes import ToneEngine, VirtualClock
from tools.submit import submit_text

pytestmark = pytest.mark.unit


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


def test_stop_lets_no_utterance_synthesised_ahead_start_after_the_one_speaking_ends():
    """A stop halts every utterance before it ends any (real clock, paced publishing).

    One at a time, the publisher, free as soon as the one speaking had ended, started the
    next one already synthesised: over ROS a start mark and 0.2 s of loud audio after a
    ``stop``, and two such utterances stamped over each other.
    """
    engine = ToneEngine(VirtualClock())
    rec = Recorder()
    sched = SpeechScheduler(engine, rec, SchedulerConfig())
    seen_at_end: list = []
    try:
        def on_first_done(_utt):
            # Between the first one's end and the others': what the publisher may do now.
            nxt = utts[1]
            deadline = time.monotonic() + T
            while not nxt.halted and not rec.chunks(nxt) and time.monotonic() < deadline:
                rec.got.wait(0.05)
            seen_at_end.append(len(rec.chunks(nxt)))

        engine.hold('三つ目')
        utts = [submit_text(sched, THREE, VOICE, on_done=on_first_done)]
        utts += [submit_text(sched, t, VOICE) for t in ('二つ目です。', '三つ目です。')]
        assert engine.entered.wait(T)  # the first two are synthesised
        _wait_published(rec, utts[0], FIRST_LEN)
        assert sched.stop() == 3
        assert seen_at_end == [0]
        assert rec.chunks(utts[1]) == [] and rec.chunks(utts[2]) == []
        assert all(u.outcome is Outcome.CANCELED for u in utts)
    finally:
        engine.release()
        sched.shutdown()
