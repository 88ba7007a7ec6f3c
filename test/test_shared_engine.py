# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The shared engine of a fleet: fair turns, per-robot cancel, no deadlock on errors."""

from __future__ import annotations

import contextlib
import threading
import time

import numpy as np
import pytest

from hayakoe_ros.engines.base import (AudioWindow, CancelToken, Engine, EngineError,
                                      SynthesisCanceledError, VoiceParams)
from hayakoe_ros.engines.shared import FairArbiter, SharedEngine

pytestmark = pytest.mark.unit

VOICE = VoiceParams()
TIMEOUT = 10.0


class GatedEngine(Engine):
    """An engine whose calls block until the test lets them return, logging their order.

    Each call records ``(owner text, 'start')`` when it runs; ``release(n)`` lets n calls
    return. ``fail`` names texts whose call raises. Calls are checked never to overlap.
    ``cancellable`` counts how often it was entered (only while a turn is held).
    """

    name = 'gated'

    def __init__(self) -> None:
        self.log: list = []
        self.started = threading.Condition()
        self._gate = threading.Semaphore(0)
        self._inside = 0
        self.overlaps = 0
        self.fail: set = set()
        self.cancellable_entries = 0
        self.closed = False

    @property
    def sample_rate(self) -> int:
        return 16000

    @property
    def styles(self):
        return ('Neutral',)

    def release(self, n: int = 1) -> None:
        for _ in range(n):
            self._gate.release()

    def wait_started(self, count: int) -> None:
        with self.started:
            assert self.started.wait_for(lambda: len(self.log) >= count, TIMEOUT), self.log

    def _call(self, text: str) -> np.ndarray:
        with self.started:
            self._inside += 1
            self.overlaps += self._inside > 1
            self.log.append(text)
            self.started.notify_all()
        try:
            assert self._gate.acquire(timeout=TIMEOUT), f'{text} never released'
            if text in self.fail:
                raise RuntimeError(f'engine failed on {text}')
            return np.zeros(160, np.float32)
        finally:
            with self.started:
                self._inside -= 1

    def synthesize(self, text, voice):
        return self._call(text)

    def synthesize_windows(self, text, voice, first_audio=True):
        for k in range(3):
            yield AudioWindow(self._call(f'{text}#{k}'), later_s=(0.01,) * (2 - k))

    def predict_pause(self, left, right, voice):
        self._call(f'pause {left}')
        return 0.1

    @contextlib.contextmanager
    def cancellable(self, token):
        self.cancellable_entries += 1
        token.check()
        yield
        token.check()

    def close(self):
        self.closed = True


def run_in_thread(fn, *args):
    """Run ``fn(*args)`` in a thread; return (thread, result list: value or exception)."""
    out: list = []

    def target():
        try:
            out.append(fn(*args))
        except BaseException as exc:  # noqa: B036 - the test inspects it
            out.append(exc)
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, out


def waiting(arbiter: FairArbiter, n: int) -> None:
    deadline = time.monotonic() + TIMEOUT
    while arbiter.waiting < n:
        assert time.monotonic() < deadline, f'{arbiter.waiting} waiting, expected {n}'
        time.sleep(0.005)


def test_three_robots_are_served_round_robin_segment_by_segment():
    engine = GatedEngine()
    shared = SharedEngine(engine)
    views = {name: shared.view(name) for name in ('r1', 'r2', 'r3')}

    def speak(name: str, segments: int) -> None:
        for k in range(segments):
            views[name].synthesize(f'{name}.{k}', VOICE)

    # r1 starts a long announcement; r2 and r3 ask while its first segment runs.
    t1, _ = run_in_thread(speak, 'r1', 4)
    engine.wait_started(1)
    t2, _ = run_in_thread(speak, 'r2', 2)
    waiting(shared.arbiter, 1)
    t3, _ = run_in_thread(speak, 'r3', 1)
    waiting(shared.arbiter, 2)
    for k in range(7):
        engine.release()
        engine.wait_started(min(k + 2, 7))
        if k < 6:  # each robot is back in the queue before the next turn is given
            waiting(shared.arbiter, {0: 2, 1: 2, 2: 1, 3: 1, 4: 0, 5: 0}[k])
    for t in (t1, t2, t3):
        t.join(TIMEOUT)
    # r3's one-word reply waited for one segment of r1 and one of r2, never for the
    # whole announcement.
    assert engine.log == ['r1.0', 'r2.0', 'r3.0', 'r1.1', 'r2.1', 'r1.2', 'r1.3']
    assert engine.overlaps == 0
    assert shared.arbiter.stats.calls == 7


def test_each_window_advance_is_a_turn_of_its_own():
    engine = GatedEngine()
    shared = SharedEngine(engine)
    a, b = shared.view('a'), shared.view('b')
    ta, got = run_in_thread(lambda: [w.audio.size for w in a.synthesize_windows('A', VOICE)])
    engine.wait_started(1)
    tb, _ = run_in_thread(b.synthesize, 'B', VOICE)
    waiting(shared.arbiter, 1)
    engine.release(4)
    ta.join(TIMEOUT)
    tb.join(TIMEOUT)
    assert got == [[160, 160, 160]]
    assert engine.log == ['A#0', 'B', 'A#1', 'A#2']


def test_robots_starting_at_once_each_get_their_first_window_before_a_second():
    engine = GatedEngine()
    shared = SharedEngine(engine)
    views = [shared.view(n) for n in 'ABC']
    threads = []

    def speak(view, name):
        return [w.audio.size for w in view.synthesize_windows(name, VOICE)]

    threads.append(run_in_thread(speak, views[0], 'A')[0])
    engine.wait_started(1)  # A's first window runs
    threads.append(run_in_thread(speak, views[1], 'B')[0])
    waiting(shared.arbiter, 1)
    engine.release()  # B's first window runs; A asks for its second
    engine.wait_started(2)
    waiting(shared.arbiter, 1)
    threads.append(run_in_thread(speak, views[2], 'C')[0])  # C's request comes after A's
    waiting(shared.arbiter, 2)
    engine.release(9)
    for t in threads:
        t.join(TIMEOUT)
    # C's first window went ahead of A's second (asked for earlier): C's listener waits
    # for three first windows, not also for A's later ones.
    assert engine.log[:4] == ['A#0', 'B#0', 'C#0', 'A#1']
    assert sorted(engine.log) == sorted(f'{n}#{k}' for n in 'ABC' for k in range(3))
    assert engine.overlaps == 0


@pytest.mark.parametrize('first_audio', [True, False])
def test_only_first_audio_windows_go_ahead_of_a_waiting_segment(first_audio):
    engine = GatedEngine()
    shared = SharedEngine(engine)
    a, b, c = (shared.view(n) for n in 'ABC')
    threads = [run_in_thread(a.synthesize, 'A', VOICE)[0]]
    engine.wait_started(1)  # A's segment runs
    threads.append(run_in_thread(c.synthesize, 'C', VOICE)[0])  # C's segment waits
    waiting(shared.arbiter, 1)
    threads.append(run_in_thread(
        lambda: [w.audio.size for w in b.synthesize_windows('B', VOICE, first_audio)])[0])
    waiting(shared.arbiter, 2)
    engine.release(9)
    for t in threads:
        t.join(TIMEOUT)
    # B's first window goes ahead of C's segment when it brings B its first audio; the
    # windows of a later segment of B's (windowed to play in time) wait their turn.
    assert engine.log[:3] == (['A', 'B#0', 'C'] if first_audio else ['A', 'C', 'B#0'])
    assert engine.overlaps == 0


def test_first_audio_turns_overtake_a_waiting_turn_a_bounded_number_of_times():
    from hayakoe_ros.engines.arbiter import MAX_OVERTAKES
    arbiter = FairArbiter()
    order: list = []
    hold = threading.Event()

    def take(name, first):
        with arbiter.turn(owner=name, first=first):
            order.append(name)
            if name == 'holder':
                assert hold.wait(TIMEOUT)

    threads = [run_in_thread(take, 'holder', False)[0]]
    while not arbiter.busy:
        time.sleep(0.005)
    threads.append(run_in_thread(take, 'speaking', False)[0])
    waiting(arbiter, 1)
    firsts = [f'new{k}' for k in range(MAX_OVERTAKES + 2)]
    for k, name in enumerate(firsts):
        threads.append(run_in_thread(take, name, True)[0])
        waiting(arbiter, k + 2)
    hold.set()
    for t in threads:
        t.join(TIMEOUT)
    # A robot already speaking is overtaken by at most MAX_OVERTAKES new utterances'
    # first windows, then served: a burst of new replies cannot starve it.
    assert order == (['holder'] + firsts[:MAX_OVERTAKES] + ['speaking']
                     + firsts[MAX_OVERTAKES:])


@pytest.mark.alone  # the woken thread joined within 50 ms
def test_a_cancel_while_waiting_ends_only_that_robots_wait_at_once():
    engine = GatedEngine()
    shared = SharedEngine(engine)
    r1, r2, r3 = (shared.view(n) for n in ('r1', 'r2', 'r3'))
    t1, out1 = run_in_thread(r1.synthesize, 'r1', VOICE)
    engine.wait_started(1)
    token = CancelToken()

    def waiting_call():
        with r2.cancellable(token):
            return r2.synthesize('r2', VOICE)
    t2, out2 = run_in_thread(waiting_call)
    waiting(shared.arbiter, 1)
    t3, out3 = run_in_thread(r3.synthesize, 'r3', VOICE)
    waiting(shared.arbiter, 2)
    t_cancel = time.monotonic()
    token.cancel()
    t2.join(TIMEOUT)
    assert time.monotonic() - t_cancel < 0.05  # woken by the cancel, not by a poll
    assert isinstance(out2[0], SynthesisCanceledError)
    assert shared.arbiter.waiting == 1  # r3 still waits; r1 still runs
    engine.release(2)
    t1.join(TIMEOUT)
    t3.join(TIMEOUT)
    assert engine.log == ['r1', 'r3']
    assert out1[0].size == out3[0].size == 160
    assert shared.arbiter.stats.canceled == 1


def test_a_token_canceled_before_the_wait_never_takes_a_turn():
    engine = GatedEngine()
    view = SharedEngine(engine).view('r1')
    token = CancelToken()
    token.cancel()
    with pytest.raises(SynthesisCanceledError):
        with view.cancellable(token):
            view.synthesize('never', VOICE)
    assert engine.log == []


def test_a_cancel_while_running_reaches_only_the_running_robots_call():
    engine = GatedEngine()
    shared = SharedEngine(engine)
    r1, r2 = shared.view('r1'), shared.view('r2')
    t1_token, t2_token = CancelToken(), CancelToken()

    def call(view, token, text):
        with view.cancellable(token):
            return view.synthesize(text, VOICE)
    t1, out1 = run_in_thread(call, r1, t1_token, 'r1')
    engine.wait_started(1)
    t2, out2 = run_in_thread(call, r2, t2_token, 'r2')
    waiting(shared.arbiter, 1)
    # The engine's own cancellable is entered only by the call holding the turn.
    assert engine.cancellable_entries == 1
    t1_token.cancel()  # the gated call returns; its cancellable then raises
    engine.release(2)
    t1.join(TIMEOUT)
    t2.join(TIMEOUT)
    assert isinstance(out1[0], SynthesisCanceledError)
    assert out2[0].size == 160 and not t2_token.canceled
    assert engine.log == ['r1', 'r2']


def test_an_engine_error_gives_the_turn_back():
    engine = GatedEngine()
    engine.fail = {'bad'}
    shared = SharedEngine(engine)
    r1, r2 = shared.view('r1'), shared.view('r2')
    t1, out1 = run_in_thread(r1.synthesize, 'bad', VOICE)
    engine.wait_started(1)
    t2, out2 = run_in_thread(r2.synthesize, 'good', VOICE)
    waiting(shared.arbiter, 1)
    engine.release(2)
    t1.join(TIMEOUT)
    t2.join(TIMEOUT)
    assert isinstance(out1[0], RuntimeError)
    assert out2[0].size == 160
    assert not shared.arbiter.busy and shared.arbiter.waiting == 0
    # ... and a window iterator abandoned half way (a cancel between windows) too.
    windows = r1.synthesize_windows('w', VOICE)
    engine.release(1)
    next(windows)
    windows.close()
    engine.release(1)
    assert r2.synthesize('after', VOICE).size == 160
    assert engine.log[-1] == 'after'


def test_lookups_take_no_turn_and_views_close_without_the_engine():
    engine = GatedEngine()
    shared = SharedEngine(engine)
    r1, r2 = shared.view('r1'), shared.view('r2')
    t1, _ = run_in_thread(r1.synthesize, 'long', VOICE)
    engine.wait_started(1)
    # While r1's call holds the engine, r2's lookups answer at once.
    r2.check_voice(VOICE)
    assert not r2.is_cached('x', VOICE)
    assert r2.sample_rate == 16000 and r2.styles == ('Neutral',)
    r2.warmup()  # a no-op: no engine call
    r2.close()
    assert not engine.closed and shared.owners == ['r1']
    with pytest.raises(EngineError):
        r2.synthesize('closed view', VOICE)
    # Closing the shared engine while r1's call runs frees it when that call ends.
    shared.close()
    assert not engine.closed
    engine.release()
    t1.join(TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while not engine.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert engine.closed
    with pytest.raises(EngineError):
        r1.synthesize('after close', VOICE)
    with pytest.raises(EngineError):
        shared.view('r3')


def test_a_phrase_cache_above_the_turns_serves_hits_while_another_robot_computes():
    from hayakoe_ros.engines.phrase_cache import CachingEngine

    engine = GatedEngine()
    shared = SharedEngine(engine)
    shared.serve(CachingEngine(shared.gated, 4))
    r1, r2 = shared.view('r1'), shared.view('r2')
    token = CancelToken()

    def timed(view, text):
        with view.cancellable(token):
            return view.synthesize_timed(text, VOICE)
    t, _ = run_in_thread(timed, r2, 'hello')  # a miss: computed in a turn, then cached
    engine.release()
    t.join(TIMEOUT)
    assert engine.log == ['hello'] and r1.is_cached('hello', VOICE)
    t1, _ = run_in_thread(timed, r1, 'long')  # r1 holds the engine...
    engine.wait_started(2)
    t0 = time.monotonic()
    hit = timed(r2, 'hello')  # ...and r2's hit does not wait for it
    assert time.monotonic() - t0 < 0.5 and hit.audio.size == 160
    assert shared.arbiter.busy and engine.log == ['hello', 'long']
    engine.release()
    t1.join(TIMEOUT)
    shared.close()
    assert engine.closed
