# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The player's timeline (no ROS, no sound card): stamps, gaplessness, underruns, rates.

The device is simulated by calling :meth:`Playout.render` the way PortAudio's callback
does (blocks of frames with their DAC time: test/playout_device.py); the rate policy of
:class:`Player` runs against a fake ``sounddevice`` module (the sound card is the
boundary). A cut utterance is in test_playout_cut.py.
"""

import types

import numpy as np
import pytest
import soxr

from hayakoe_ros.player.device import Player, PlayerConfig
from hayakoe_ros.player.playout import TAIL_MARGIN_S, Playout
from playout_device import Device

pytestmark = pytest.mark.unit

RATE = 16000


def ramp(n, start=0):
    return ((np.arange(start, start + n) % 1000) / 1000.0 + 0.001).astype(np.float32)


def smooth_noise(n, seed):
    """``n`` samples of low-passed noise peaking at 0.5 (float32): a signal to resample."""
    rng = np.random.default_rng(seed)
    src = np.convolve(rng.standard_normal(n), np.ones(8) / 8, 'same').astype(np.float32)
    return src * np.float32(0.5 / np.max(np.abs(src)))


def test_contiguous_chunks_play_gaplessly_from_the_first_stamp():
    playout = Playout(RATE)
    dev = Device(playout)
    dev.run(0.1)
    stamp = dev.t + 0.05  # the first chunk is stamped 50 ms ahead
    audio = ramp(8 * 400)
    for k in range(8):
        late = playout.push(stamp + k * 400 / RATE, audio[k * 400:(k + 1) * 400], RATE,
                            dev.now)
        assert not late
        dev.run(400 / RATE)
    dev.run(0.2)
    heard = dev.heard()
    first = int(np.nonzero(heard)[0][0])
    assert abs(first - int(round((stamp - 100.0) * RATE))) <= 1  # at its stamp
    np.testing.assert_array_equal(heard[first:first + audio.size], audio)  # nothing lost
    assert playout.stats.underruns == 0 and playout.drained


def test_a_late_chunk_plays_at_once_and_counts_as_an_underrun():
    playout = Playout(RATE)
    dev = Device(playout)
    dev.run(0.05)
    stamp = dev.t
    playout.push(stamp, ramp(400), RATE, dev.now)
    dev.run(0.1)  # the device plays chunk 0 and runs dry: chunk 1 is 75 ms late
    assert playout.push(stamp + 400 / RATE, ramp(400, 400), RATE, dev.now)
    next_frame_time = dev.t
    dev.run(0.1)
    heard = dev.heard()
    start = int(round((next_frame_time - 100.0) * RATE))
    np.testing.assert_array_equal(heard[start:start + 400], ramp(400, 400))  # at once
    assert playout.stats.underruns == 1
    assert playout.stats.late_s == pytest.approx(0.075, abs=0.011)


def test_a_pause_in_the_stamps_is_reproduced_and_queued_audio_is_never_overlapped():
    playout = Playout(RATE)
    dev = Device(playout)
    dev.run(0.05)
    stamp = dev.t + 0.02
    playout.push(stamp, ramp(800), RATE, dev.now)                 # 50 ms
    playout.push(stamp + 0.25, ramp(800, 800), RATE, dev.now)     # 200 ms pause, then 50
    # A third chunk stamped before the second ends (an interrupting utterance) waits.
    playout.push(stamp + 0.26, ramp(400, 5000), RATE, dev.now)
    dev.run(0.5)
    heard = dev.heard()
    s0 = int(round((stamp - 100.0) * RATE))
    np.testing.assert_array_equal(heard[s0:s0 + 800], ramp(800))
    assert not heard[s0 + 800:s0 + 4000].any()                   # the stamped pause
    np.testing.assert_array_equal(heard[s0 + 4000:s0 + 4800], ramp(800, 800))
    np.testing.assert_array_equal(heard[s0 + 4800:s0 + 5200], ramp(400, 5000))
    assert playout.stats.underruns == 0


def test_clock_reading_jitter_never_moves_a_chunk_within_an_utterance():
    """Stamps are judged in the publisher's clock, not through jittery clock readings.

    ROS-time stamps, a clock offset read at every chunk with 0.5 ms of jitter (as seen on a
    busy 2-core machine) and a DAC time that wobbles: the sound stays gapless.
    """
    playout = Playout(RATE, buffer_s=0.05)
    dev = Device(playout)
    dev.run(0.05)
    rng = np.random.default_rng(1)
    ros_t0 = 1_796_095_127.611853278  # ROS time (s) of the first chunk's stamp
    offset = dev.now - ros_t0         # monotonic minus ROS time, as read exactly
    audio = ramp(12 * 480)
    for k in range(12):  # 30 ms chunks at playback rate
        jitter = rng.uniform(-0.0005, 0.0005)
        playout.push(ros_t0 + k * 480 / RATE, audio[k * 480:(k + 1) * 480], RATE, dev.now,
                     clock_offset=offset + jitter)
        for _ in range(3):  # 10 ms buffers whose reported DAC time wobbles by +-2 ms
            buf = np.zeros(dev.block, np.float32)
            wobble = rng.uniform(-0.002, 0.002)
            playout.render(buf, dev.t + wobble, dev.t - dev.latency)
            dev.out.append(buf)
            dev.t += dev.block / RATE
    dev.run(0.2)
    heard = dev.heard()
    first = int(np.nonzero(heard)[0][0])
    np.testing.assert_array_equal(heard[first:first + audio.size], audio)  # no gap, no seam
    assert playout.stats.underruns == 0 and playout.stats.min_headroom_s > 0


def test_a_pause_while_playing_is_timed_from_the_previous_chunk_not_the_device_clock():
    """A pause while audio plays is reproduced from the stamps, sample-exact.

    The first chunk arrives before the device's first callback, so its place rests on the
    latency the stream announced (100 ms) while the device then reports 20 ms: a 30 ms
    pause in the stamps later is still exactly 30 ms of silence.
    """
    playout = Playout(RATE, buffer_s=0.05)
    dev = Device(playout, latency=0.02)
    stamp = dev.now
    playout.push(stamp, ramp(1600), RATE, dev.now, latency_s=0.1)  # 100 ms of audio
    dev.run(0.05)
    assert playout.push(stamp + 0.13, ramp(800, 1600), RATE, dev.now) is False
    dev.run(0.4)
    heard = dev.heard()
    s0 = int(np.nonzero(heard)[0][0])
    np.testing.assert_array_equal(heard[s0:s0 + 1600], ramp(1600))
    assert not heard[s0 + 1600:s0 + 2080].any()                      # 30 ms, exactly
    np.testing.assert_array_equal(heard[s0 + 2080:s0 + 2880], ramp(800, 1600))


def test_a_new_stream_renders_its_latency_at_once_without_eating_the_jitter_buffer():
    """The jitter buffer counts from when the first chunk is rendered, not in frames.

    PortAudio prefills a starting stream: its first callbacks render the whole output
    latency (100 ms) back to back. The first chunk arrives before them; the second, 60 ms
    later, is still within the 80 ms jitter buffer, so it is not late.
    """
    playout = Playout(RATE, buffer_s=0.08)
    dev = Device(playout, latency=0.1)
    stamp = dev.now
    playout.push(stamp, ramp(480), RATE, dev.now, latency_s=0.1)  # 30 ms
    for _ in range(10):  # the prefill: 100 ms rendered at once, at the stream's start
        buf = np.zeros(dev.block, np.float32)
        playout.render(buf, dev.t, stamp)
        dev.out.append(buf)
        dev.t += dev.block / RATE
    dev.run(0.06)  # then in real time: 60 ms later, the next chunk arrives
    assert not playout.push(stamp + 0.03, ramp(480, 480), RATE, dev.now, latency_s=0.1)
    dev.run(0.3)
    heard = dev.heard()
    s0 = int(np.nonzero(heard)[0][0])
    np.testing.assert_array_equal(heard[s0:s0 + 960], ramp(960))
    assert playout.stats.underruns == 0
    assert playout.stats.min_headroom_s == pytest.approx(0.08 - 0.06 + 0.03, abs=0.011)


def test_another_rate_is_resampled_and_the_last_chunk_is_flushed_whole():
    playout = Playout(48000)
    dev = Device(playout)
    dev.run(0.05)
    src = smooth_noise(16000, seed=0)
    stamp = dev.t + 0.02
    for k in range(0, src.size, 1600):
        playout.push(stamp + k / RATE, src[k:k + 1600], RATE, dev.now)
    assert not playout.drained  # the resampler still holds the end of the last chunk
    assert playout.holds_tail
    # The tail is due just before the device would render past the run (1 s queued).
    due_in = playout.flush_tail(dev.now)
    # (less the held part itself, the device block and its latency)
    assert 0.9 < due_in < stamp + 1.0 - dev.now - TAIL_MARGIN_S
    assert not playout.drained
    assert playout.flush_tail(dev.now + due_in) is None  # queued now: no more upkeep
    assert playout.flush_tail(dev.now + 2.0) is None
    assert not playout.holds_tail
    dev.run(1.3)
    heard = np.concatenate(dev.out)
    expected = soxr.resample(src, RATE, 48000)
    s0 = int(round((stamp - 100.0) * 48000))
    got = heard[s0:s0 + expected.size]
    assert np.max(np.abs(got - expected)) < 1e-3  # same signal, up to the very end
    assert playout.stats.resampled == 10 and playout.drained


def test_a_resampled_run_s_tail_plays_right_after_it_when_its_chunks_come_in_real_time():
    """The run's held-back end is queued before the device gets there: no gap, no late end.

    A publisher paces 50 ms chunks 100 ms ahead of their stamps; the upkeep calls
    flush_tail when it says the tail is due (player_node's timer). Queued only once the
    run had been idle a while, the last ~10 ms came after a gap.
    """
    playout = Playout(48000)
    dev = Device(playout)
    dev.run(0.05)
    src = smooth_noise(8000, seed=1)
    src[-800:] = 0.5  # the run ends loud: a late tail would be heard
    stamp = dev.t + 0.1
    pushed, wake = 0, None
    while dev.t < stamp + 1.0:
        if pushed < src.size and stamp + pushed / RATE - dev.t <= 0.1:
            playout.push(stamp + pushed / RATE, src[pushed:pushed + 800], RATE, dev.now)
            pushed += 800
            if wake is None:
                wake = dev.now
        if wake is not None and dev.now >= wake:
            due_in = playout.flush_tail(dev.now)
            wake = None if due_in is None else dev.now + max(due_in, 0.002)
        dev.run(0.01)
    assert not playout.holds_tail and playout.drained
    heard = dev.heard()
    expected = soxr.resample(src, RATE, 48000)
    s0 = int(round((stamp - 100.0) * 48000))
    np.testing.assert_allclose(heard[s0:s0 + expected.size], expected, atol=1e-3)
    assert not np.any(heard[s0 + expected.size:])  # nothing after it
    assert playout.stats.underruns == 0


class FakeSoundDevice:
    """The part of ``sounddevice`` the Player uses; the card takes only ``rates``."""

    PortAudioError = RuntimeError

    def __init__(self, rates, default_rate):
        self.rates, self.default_rate = rates, default_rate
        self.opened = []

    def query_devices(self, device, kind):
        return {'name': 'fake card', 'default_samplerate': float(self.default_rate)}

    def check_output_settings(self, device, channels, dtype, samplerate):
        if samplerate not in self.rates:
            raise self.PortAudioError('Invalid sample rate')

    def OutputStream(self, samplerate, channels, dtype, device, latency, callback):  # noqa: N802
        self.opened.append(samplerate)
        return types.SimpleNamespace(time=0.0, latency=latency, start=lambda: None,
                                     abort=lambda: None, close=lambda: None)


def test_player_opens_the_streams_rate_or_resamples_when_the_device_refuses_it():
    fake = FakeSoundDevice(rates={16000, 48000}, default_rate=48000)
    player = Player(PlayerConfig(), backend=fake)
    player.submit(0.0, np.zeros(160, np.float32), 16000)
    assert fake.opened == [16000]  # the device takes it: no conversion
    # Between utterances (nothing queued): 44100 is refused -> the default 48000 + soxr.
    player._playout.render(np.zeros(6400, np.float32), 0.0, 0.0)  # 0.4 s: played out
    player.submit(1.0, np.zeros(441, np.float32), 44100)
    assert fake.opened == [16000, 48000] and player.stats().resampled == 1
    forced = Player(PlayerConfig(device_rate=48000), backend=FakeSoundDevice({16000}, 16000))
    assert forced.rate_for(16000) == 48000


@pytest.mark.parametrize('skew_s', [10.0, -10.0, -100.0])
def test_a_stamp_far_from_its_arrival_plays_on_arrival_and_is_counted(skew_s):
    """A clock 10 s ahead, 10 s behind, or a zero stamp: no 10 s wait, one count."""
    playout = Playout(RATE, buffer_s=0.05, max_ahead_s=2.0)
    dev = Device(playout)
    dev.run(0.05)
    arrival = dev.now
    assert not playout.push(arrival + skew_s, ramp(800), RATE, dev.now)
    assert playout.last_started_idle
    assert playout.last_stamp_issue.startswith(f'stamp {abs(skew_s):.3f} s')
    dev.run(0.3)
    first = int(np.nonzero(dev.heard())[0][0]) / RATE
    # Heard the jitter buffer after its arrival (no latency given), as a fresh stamp is.
    assert first == pytest.approx(arrival + 0.05 - 100.0, abs=0.011)
    assert playout.stats.stamps_out_of_range == 1


def test_a_stamp_within_the_bound_is_believed():
    playout = Playout(RATE, buffer_s=0.05, max_ahead_s=2.0)
    dev = Device(playout)
    dev.run(0.05)
    stamp = dev.now + 1.5
    playout.push(stamp, ramp(800), RATE, dev.now)
    assert playout.last_stamp_issue == ''
    dev.run(1.8)
    first = int(np.nonzero(dev.heard())[0][0]) / RATE
    assert first == pytest.approx(stamp - 100.0, abs=0.011)  # at its stamp
    assert playout.stats.stamps_out_of_range == 0


def test_stamps_that_jump_within_a_run_play_on_and_are_counted():
    playout = Playout(RATE, buffer_s=0.05, max_ahead_s=2.0)
    dev = Device(playout)
    dev.run(0.05)
    stamp = dev.now + 0.02
    playout.push(stamp, ramp(1600), RATE, dev.now)                 # 100 ms
    playout.push(stamp - 10.0, ramp(800, 1600), RATE, dev.now)     # jumps back 10 s
    assert playout.last_stamp_issue.startswith('stamp went back 10.100 s')
    assert not playout.last_started_idle
    playout.push(stamp + 30.0, ramp(800, 2400), RATE, dev.now)     # 30 s ahead
    assert playout.last_stamp_issue == 'stamp 39.950 s after the end of the audio before it'
    dev.run(0.5)
    heard = dev.heard()
    s0 = int(np.nonzero(heard)[0][0])
    np.testing.assert_array_equal(heard[s0:s0 + 3200], ramp(3200))  # back to back
    assert playout.stats.stamps_out_of_range == 2


def test_player_stats_are_a_copy_never_the_counters_themselves():
    player = Player(PlayerConfig(), backend=FakeSoundDevice({16000}, 16000))
    first = player.stats()  # no stream open yet: the totals of closed streams
    first.underruns = 99
    assert player.stats().underruns == 0 and player.stats() is not first
    player.submit(0.0, np.zeros(160, np.float32), 16000)
    second = player.stats()
    second.chunks = 99
    assert player.stats().chunks == 1
