# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Races and failures in the speech scheduler (tone engine, virtual clock).

Shutdown refuses what comes while it cancels and never closes an engine under a call that
outlives it; a dead publisher or synthesis thread aborts everything and is reported; a
failing sink, on_chunk callback or engine call aborts its utterance only.
"""

import logging
import threading

import pytest

from hayakoe_ros.speech import (CancelReason, Outcome, SchedulerClosedError,
                                SchedulerFailedError, SpeechScheduler)
from scheduler_rig import THREE, T, VOICE
from scheduler_rig import wait_for as _wait_for
from speech_fakes import ToneEngine
from tools.submit import submit_text

pytestmark = pytest.mark.unit


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
