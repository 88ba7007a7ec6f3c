# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The speech scheduler's queue: max_queue and the replace policy (tone engine, virtual clock).

A full queue refuses with a clear error and drops nothing; utterances synthesised ahead
still count; ``replace`` drops every other utterance and is never refused; queue_policy
takes its names as strings.
"""

import threading

import pytest

from hayakoe_ros.speech import (CancelReason, Outcome, QueueFullError, QueuePolicy,
                                SchedulerConfig, SpeechScheduler)
from scheduler_rig import T, VOICE, Recorder
from scheduler_rig import wait_for as _wait_for
from scheduler_rig import wait_published as _wait_published
from speech_fakes import ToneEngine, VirtualClock
from tools.submit import submit_text

pytestmark = pytest.mark.unit


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


def test_a_full_routine_line_never_keeps_an_urgent_text_out(rig):
    sched, _, engine, _, _ = rig(max_queue=1)
    engine.hold('す')  # every text here: each waits in synthesis until release()
    speaking = submit_text(sched, '一つ目です。', VOICE)
    assert engine.entered.wait(T)
    waiting = submit_text(sched, '二つ目です。', VOICE)
    with pytest.raises(QueueFullError, match='1 utterances waiting'):
        submit_text(sched, '三つ目です。', VOICE)
    # The line is full of routine speech; urgent texts still go in, ahead of it, and
    # only urgent ones count against max_queue for them.
    first = submit_text(sched, '危ないです。', VOICE, urgent=True)
    second = submit_text(sched, '止まります。', VOICE, urgent=True)
    with pytest.raises(QueueFullError, match='2 urgent texts speaking or waiting'):
        submit_text(sched, '下がります。', VOICE, urgent=True)
    engine.release()
    for utt in (speaking, waiting, first, second):
        assert utt.wait(T) and utt.outcome is Outcome.SUCCEEDED, utt.error
    # The one cut goes on from its sentence after the urgent ones, then the line.
    assert engine.calls == ['一つ目です。', '危ないです。', '止まります。', '一つ目です。',
                            '二つ目です。']


def test_queue_policy_accepts_the_strings_and_rejects_others_by_name():
    assert SchedulerConfig(queue_policy='enqueue').validated().queue_policy \
        is QueuePolicy.ENQUEUE
    assert SchedulerConfig(queue_policy='replace').validated().queue_policy \
        is QueuePolicy.REPLACE
    with pytest.raises(ValueError,
                       match="one of: enqueue, interrupt, replace; got 'random'"):
        SchedulerConfig(queue_policy='random').validated()


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


@pytest.mark.parametrize('max_queue', [0, 1, 3])
def test_an_interrupting_burst_keeps_at_most_max_queue_waiting(max_queue):
    """A burst of interrupting texts: one speaks, at most ``max_queue`` wait behind it.

    The first of a burst to interrupt is not cut by the next before any of it is heard
    (it would be lost unheard), so that next one waits in line, and counts there: the
    line held ``max_queue`` + 1 before. Playback is held, so nothing ends by itself.
    """
    clock = VirtualClock()
    engine = ToneEngine(clock)
    gate = threading.Event()

    def held_playback(halt, timeout):
        while not gate.is_set() and not halt.is_set():
            gate.wait(0.005)
        return clock.wait(halt, timeout)

    sched = SpeechScheduler(engine, Recorder(), SchedulerConfig(
        max_queue=max_queue, queue_policy='interrupt'), clock=clock, waiter=held_playback)
    admitted, refused = [], []
    try:
        # Every text of the burst is held in synthesis, so none of it is heard while the
        # burst comes: on a slow machine (emulated aarch64, loaded) the second one was
        # synthesised and its first chunk out before the third came, which then cut it.
        engine.hold('つ目')
        for i, n in enumerate('一二三四五六七八'):
            try:
                admitted.append(submit_text(sched, f'{n}つ目です。', VOICE))
            except QueueFullError as exc:
                refused.append(str(exc))
            if i == 0:
                assert engine.entered.wait(T)  # the first is speaking when the burst comes
            live = [u.text for u in admitted if not u.done]
            assert 1 <= len(live) <= max_queue + 1, (i, live)
        assert refused and all(f'max_queue={max_queue}' in r for r in refused)
        for reason in refused:  # the count it gives is the bound it names
            assert int(reason.split('queue full: ')[1].split()[0]) == max_queue, reason
    finally:
        gate.set()
        engine.release()
        for utt in admitted:
            assert utt.wait(T)
        sched.shutdown()
