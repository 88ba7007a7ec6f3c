# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Loudness, silence measurement, chunking and pacing (no engine, no ROS)."""

import threading

import numpy as np
import pytest

from hayakoe_ros.speech.audio import (LIMIT_CEILING, Chunker, apply_gain_and_limit,
                                      to_int16, trailing_silence_s)
from hayakoe_ros.speech.pacing import Pacer

pytestmark = pytest.mark.unit

SR = 44100


def _tone(seconds, amplitude, freq=220.0):
    t = np.arange(int(SR * seconds)) / SR
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def test_gain_below_ceiling_is_exactly_linear():
    x = _tone(0.5, 0.2)
    np.testing.assert_allclose(apply_gain_and_limit(x, 2.0, SR), 2.0 * x, rtol=1e-6)


def test_limiter_never_clips_and_leaves_quiet_parts_alone():
    x = np.concatenate([_tone(1.0, 0.1), _tone(1.0, 0.9)])
    y = apply_gain_and_limit(x, 3.0, SR)
    assert np.max(np.abs(y)) <= LIMIT_CEILING + 1e-6
    # The quiet first half (0.3 after gain) is far from the loud part: untouched.
    np.testing.assert_allclose(y[:SR - 2000], 3.0 * x[:SR - 2000], rtol=1e-5)
    # The loud half is held near the ceiling, not squashed.
    assert np.max(np.abs(y[SR + 2000:])) > 0.85


def test_int16_conversion_rounds_and_saturates():
    y = to_int16(np.array([0.0, 0.5, -1.0, 1.5, -1.5], np.float32))
    assert y.dtype == np.int16
    assert list(y) == [0, 16384, -32767, 32767, -32768]


def test_trailing_silence_measures_the_quiet_tail():
    x = np.concatenate([_tone(0.3, 0.5), np.zeros(int(0.25 * SR), np.float32)])
    assert abs(trailing_silence_s(x, SR) - 0.25) <= 0.011
    assert trailing_silence_s(_tone(0.3, 0.5), SR) == 0.0


def test_chunker_emits_exact_frames_and_pads_only_the_tail():
    chunker = Chunker(1000)
    out = chunker.add(np.arange(1500, dtype=np.int16))
    out += chunker.add(np.arange(800, dtype=np.int16))
    assert [len(c) for c in out] == [1000, 1000]
    tail, valid = chunker.flush()
    assert len(tail) == 1000 and valid == 300
    assert np.all(tail[300:] == 0)
    assert chunker.flush() is None


class FakeClock:
    """A clock that advances only when the pacer waits."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class AdvancingEvent(threading.Event):
    """Event whose wait() advances the fake clock instead of sleeping."""

    def __init__(self, clock):
        super().__init__()
        self.clock = clock
        self.waits = []

    def wait(self, timeout=None):
        self.waits.append(timeout)
        self.clock.now += timeout
        return False


def test_pacer_releases_at_most_max_lead_ahead_of_playback():
    clock = FakeClock()
    pacer = Pacer(1000, max_lead_s=0.2, clock=clock)
    stop = AdvancingEvent(clock)
    releases = []
    for n in range(0, 2000, 100):  # 2 s of audio in 0.1 s chunks
        play = pacer.release(n, stop)
        releases.append((clock.now, play))
    for released_at, play in releases:
        assert play - released_at <= 0.2 + 1e-9
    assert abs(releases[-1][1] - releases[0][1] - 1.9) < 1e-9  # playback clock: gapless
    # The first 0.2 s go out at once, then one chunk per 0.1 s of playback.
    assert releases[2][0] == releases[0][0]


def test_pacer_underrun_moves_the_clock_and_keeps_stamps_truthful():
    clock = FakeClock()
    pacer = Pacer(1000, max_lead_s=0.1, clock=clock)
    stop = threading.Event()
    first = pacer.release(0, stop)
    clock.now += 5.0  # synthesis stalled for 5 s
    late = pacer.release(100, stop)
    assert late == clock.now  # plays when released, not in the past
    assert pacer.underruns == 1
    assert late - first > 0.1


def test_pacer_wait_is_interrupted_by_stop():
    pacer = Pacer(1000, max_lead_s=0.0)
    stop = threading.Event()
    pacer.release(0, stop)
    stop.set()
    assert pacer.release(10_000, stop) is None  # would wait 10 s


def test_pacer_lead_is_capped_at_three_chunks_whatever_max_lead_s():
    """0.3 s of lead with 2048-frame chunks at 44.1 kHz is 6.5 chunks: capped at 3."""
    from hayakoe_ros.speech.pacing import MAX_LEAD_CHUNKS

    clock = FakeClock()
    pacer = Pacer(44100, max_lead_s=0.3, clock=clock)
    stop = AdvancingEvent(clock)
    released_at = []
    for k in range(40):
        pacer.release(k * 2048, stop)
        released_at.append(clock.now)
    chunk_s = 2048 / 44100
    assert MAX_LEAD_CHUNKS == 3 and abs(pacer.lead_s - 3 * chunk_s) < 1e-12
    # Chunks 0..3 go out at once (chunk 0 plays now, 1..3 within the lead), chunk 4 waits.
    assert released_at[3] == released_at[0] and released_at[4] > released_at[0]
    for k, t in enumerate(released_at):  # never more than 3 chunks ahead of playback
        assert (released_at[0] + k * chunk_s) - t <= 3 * chunk_s + 1e-9
    # A short max_lead_s is still the bound.
    small = Pacer(44100, max_lead_s=0.05, clock=FakeClock())
    small.release(0, stop), small.release(2048, stop)
    assert small.lead_s == 0.05
