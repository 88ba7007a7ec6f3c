# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Cancel aborts the engine call in flight: ONNX Runtime's terminate flag (tiny model)."""

import numpy as np
import pytest

from hayakoe_ros.engines import CancelToken, SynthesisCanceledError
from hayakoe_ros.engines import hayakoe_internals as hk

pytestmark = pytest.mark.unit

TEXT = 'こんにちは、今日はいい天気ですね。'


def test_a_cancel_terminates_the_onnx_run_in_flight_and_leaves_no_trace(tiny_engine,
                                                                        det_voice):
    reference = tiny_engine.synthesize(TEXT, det_voice)
    sessions = hk.terminable_sessions(tiny_engine.tts, tiny_engine.speaker)
    assert len({id(s) for s in sessions}) >= 2  # BERT, decoder (+ duration predictor)
    token = CancelToken()
    with pytest.raises(SynthesisCanceledError) as info:
        with tiny_engine.cancellable(token):
            token.cancel()  # as the scheduler's cancel does, from another thread
            tiny_engine.synthesize('今日は晴れです。', det_voice)
    # ONNX Runtime itself refused to run on: the terminate flag reached the session run.
    assert 'terminate' in str(info.value.__cause__).lower()
    assert all('run' not in vars(s) for s in sessions)  # the shadowing is gone
    # The next call, with a fresh token, is unaffected and gives the same audio.
    with tiny_engine.cancellable(CancelToken()):
        again = tiny_engine.synthesize(TEXT, det_voice)
    np.testing.assert_array_equal(again, reference)


def test_a_canceled_token_stops_before_any_run(tiny_engine, det_voice):
    token = CancelToken()
    token.cancel()
    with pytest.raises(SynthesisCanceledError):
        with tiny_engine.cancellable(token):
            pytest.fail('the block must not run')


def test_terminable_runs_is_checked_by_check_compatible():
    from hayakoe.api import speaker as speaker_mod

    assert hk._terminable_run_problems(speaker_mod) == []
    hk.check_compatible()


def test_terminable_runs_puts_back_a_run_wrapper_that_was_there(tiny_engine, det_voice):
    # A wrapper on the instance (a profiler, the benchmark's session timers) survives the
    # block; before, the block deleted it, and removing it later raised AttributeError.
    sessions = hk.terminable_sessions(tiny_engine.tts, tiny_engine.speaker)
    calls = []
    for s in sessions:
        def counting(*args, _run=s.run, **kwargs):
            calls.append(1)
            return _run(*args, **kwargs)
        s.run = counting
    try:
        with tiny_engine.cancellable(CancelToken()):
            tiny_engine.synthesize(TEXT, det_voice)
        assert calls  # the wrapper was called inside the block
        assert all(vars(s).get('run') is not None for s in sessions)
        n = len(calls)
        tiny_engine.synthesize(TEXT, det_voice)
        assert len(calls) > n  # and is still in place after it
    finally:
        for s in sessions:
            vars(s).pop('run', None)
