# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The player's timeline (no ROS, no sound card): stamps, gaplessness, underruns, rates.

The device is simulated by calling :meth:`Playout.render` the way PortAudio's callback
does (blocks of frames with their DAC time); the rate policy of :class:`Player` runs
against a fake ``sounddevice`` module (the sound card is the boundary).
"""

import json
import types

import numpy as np
import pytest
import soxr

from hayakoe_ros.player.device import Player, PlayerConfig
from hayakoe_ros.player.playout import Playout

pytestmark = pytest.mark.unit

RATE = 16000


class Device:
    """Renders a Playout block by block; ``t`` is the DAC time of the next block."""

    def __init__(self, playout, t0=100.0, latency=0.02):
        self.playout, self.t, self.latency = playout, t0, latency
        self.rate = playout.device_rate
        self.block = self.rate // 100  # 10 ms buffers
        self.out = []

    def run(self, seconds):
        for _ in range(int(round(seconds * 100))):
            buf = np.zeros(self.block, np.float32)
            self.playout.render(buf, self.t, self.t - self.latency)
            self.out.append(buf)
            self.t += self.block / self.rate

    @property
    def now(self):  # wall time of the next callback
        return self.t - self.latency

    def heard(self):
        return np.concatenate(self.out)


def ramp(n, start=0):
    return ((np.arange(start, start + n) % 1000) / 1000.0 + 0.001).astype(np.float32)


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
    rng = np.random.default_rng(0)
    src = np.convolve(rng.standard_normal(16000), np.ones(8) / 8, 'same').astype(np.float32)
    src *= 0.5 / np.max(np.abs(src))
    stamp = dev.t + 0.02
    for k in range(0, src.size, 1600):
        playout.push(stamp + k / RATE, src[k:k + 1600], RATE, dev.now)
    assert not playout.drained  # the resampler still holds the end of the last chunk
    playout.flush_idle(dev.now + 1.0, idle_s=0.2)
    dev.run(1.3)
    heard = np.concatenate(dev.out)
    expected = soxr.resample(src, RATE, 48000)
    s0 = int(round((stamp - 100.0) * 48000))
    got = heard[s0:s0 + expected.size]
    assert np.max(np.abs(got - expected)) < 1e-3  # same signal, up to the very end
    assert playout.stats.resampled == 10 and playout.drained


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


# ---------------------------------------------------------------- a cut utterance
TONE_RATE = 48000


def tone(n, start=0, amplitude=0.5, frequency=440.0):
    t = np.arange(start, start + n) / TONE_RATE
    return (amplitude * np.sin(2 * np.pi * frequency * t)).astype(np.float32)


def cut_rig(chunks=8, chunk=2048):
    """A 440 Hz utterance queued (stamped 20 ms ahead, contiguous), its start announced."""
    playout = Playout(TONE_RATE)
    dev = Device(playout)
    dev.run(0.05)
    stamp = dev.t + 0.02
    playout.begin(stamp)
    for k in range(chunks):
        playout.push(stamp + k * chunk / TONE_RATE, tone(chunk, k * chunk), TONE_RATE,
                     dev.now)
    return playout, dev, stamp


def test_a_cut_drops_the_held_audio_after_a_fade_of_what_would_have_followed():
    from hayakoe_ros.player.cut import FADE_S

    playout, dev, stamp = cut_rig()
    dev.run(0.1)  # 80 ms of the tone heard, ~260 ms still held
    cut_frame = playout._frame  # the next frame the device renders
    end = stamp + 8 * 2048 / TONE_RATE
    dropped = playout.cut(stamp, end)
    dev.run(0.5)
    heard = dev.heard()
    s0 = int(round((stamp - 100.0) * TONE_RATE))
    at = cut_frame  # the device's frame 0 is heard[0]
    ref = tone(at - s0)
    np.testing.assert_array_equal(heard[s0:at], ref)  # untouched up to the cut
    n = int(round(FADE_S * TONE_RATE))
    fade = heard[at:at + n]
    following = tone(n, at - s0)
    assert n <= 0.010 * TONE_RATE
    assert np.all(np.abs(fade) <= np.abs(following) + 1e-7)  # the same samples, faded
    assert np.abs(fade[0] - following[0]) < 1e-3 and abs(fade[-1]) < 2e-3
    assert not heard[at + n:].any()  # then silence: the rest is dropped
    own_step = np.max(np.abs(np.diff(tone(4800))))
    steps = np.abs(np.diff(heard[s0 - 1:at + n + 1]))
    assert np.max(steps) <= own_step + 1e-6  # no click at the cut
    assert dropped == pytest.approx((s0 + 8 * 2048 - at - n) / TONE_RATE, abs=1e-9)
    assert playout.stats.cuts == 1 and playout.drained


def test_after_a_cut_the_next_utterance_plays_at_its_stamp_and_late_chunks_are_dropped():
    playout, dev, stamp = cut_rig()
    dev.run(0.1)
    end = stamp + 8 * 2048 / TONE_RATE
    playout.cut(stamp, end)
    # A chunk of the cut utterance that arrives after its end mark (another topic): dropped.
    assert not playout.push(stamp + 8 * 2048 / TONE_RATE, tone(2048), TONE_RATE, dev.now)
    # The next utterance, stamped 30 ms from now: inside the cut one's span.
    nxt = dev.t + 0.03
    assert nxt < end
    playout.begin(nxt)
    playout.push(nxt, tone(2048, amplitude=0.25), TONE_RATE, dev.now)
    # One more chunk of the cut utterance, continuing its chain: dropped, not the next's.
    playout.push(stamp + 9 * 2048 / TONE_RATE, tone(2048), TONE_RATE, dev.now)
    playout.push(nxt + 2048 / TONE_RATE, tone(2048, 2048, amplitude=0.25), TONE_RATE,
                 dev.now)
    dev.run(0.5)
    heard = dev.heard()
    s1 = int(round((nxt - 100.0) * TONE_RATE))
    np.testing.assert_array_equal(heard[s1:s1 + 4096], tone(4096, amplitude=0.25))
    assert not heard[s1 + 4096:].any()
    assert playout.stats.dropped_chunks == 2 and playout.stats.underruns == 0


def test_a_cut_before_the_utterance_is_heard_drops_it_whole_without_a_fade():
    playout, dev, stamp = cut_rig(chunks=3)
    playout.cut(stamp, stamp + 3 * 2048 / TONE_RATE)  # still in the jitter buffer
    dev.run(0.3)
    assert not dev.heard().any()
    assert playout.stats.dropped_s == pytest.approx(3 * 2048 / TONE_RATE)


def test_a_cut_without_a_start_mark_uses_the_span_before_the_end():
    playout = Playout(TONE_RATE)
    dev = Device(playout)
    dev.run(0.05)
    stamp = dev.t + 0.02
    for k in range(4):
        playout.push(stamp + k * 2048 / TONE_RATE, tone(2048, k * 2048), TONE_RATE, dev.now)
    dev.run(0.05)
    end = stamp + 4 * 2048 / TONE_RATE
    playout.cut(None, end, approx_start=stamp - 0.001)
    dev.run(0.3)
    heard = dev.heard()
    s0 = int(round((stamp - 100.0) * TONE_RATE))
    assert not heard[s0 + int(0.05 * TONE_RATE):].any()


def test_a_cut_of_another_utterance_leaves_the_one_playing_alone():
    playout, dev, stamp = cut_rig(chunks=4)
    dev.run(0.05)
    playout.cut(stamp + 5.0, stamp + 6.0)  # an utterance never heard here
    dev.run(0.3)
    heard = dev.heard()
    s0 = int(round((stamp - 100.0) * TONE_RATE))
    np.testing.assert_array_equal(heard[s0:s0 + 4 * 2048], tone(4 * 2048))


def test_mark_follower_cuts_a_suspended_utterance_where_the_next_starts():
    from hayakoe_ros.player.marks import MarkFollower, parse_mark

    cuts, begins = [], []
    follower = MarkFollower(begins.append,
                            lambda start, end, approx: cuts.append((start, end)) or 0.25)

    def mark(utt, kind, ns, value=''):
        sec, nanosec = divmod(ns, 1_000_000_000)
        return parse_mark(json.dumps({'utterance': utt, 'type': kind, 'time': 0,
                                      'stamp': {'sec': sec, 'nanosec': nanosec},
                                      'value': value}))

    assert follower.on_mark(mark('a', 'start', 10_000_000_000)) is None
    # An urgent text starts while 'a' has not ended: 'a' is cut where it starts.
    line = follower.on_mark(mark('u', 'start', 11_500_000_000))
    assert cuts == [(10.0, 11.5)] and 'suspended by u' in line
    assert follower.on_mark(mark('u', 'end', 12_000_000_000, 'succeeded')) is None
    # 'a' goes on and succeeds: nothing more is cut; a canceled one is cut at its end.
    assert follower.on_mark(mark('a', 'end', 14_000_000_000, 'succeeded')) is None
    follower.on_mark(mark('b', 'start', 15_000_000_000))
    follower.on_mark(mark('b', 'end', 15_400_000_000, 'canceled'))
    assert cuts[1:] == [(pytest.approx(15.0), pytest.approx(15.4))]
    assert begins == [10.0, 11.5, pytest.approx(15.0)]
