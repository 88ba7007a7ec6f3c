# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A cut utterance in the player's timeline (no ROS, no sound card).

The held audio is dropped after a fade of what would have followed, late chunks of the
cut utterance are dropped, the next one plays at its stamp; the mark follower cuts a
suspended utterance where the next starts. The device is simulated as in
test_playout.py (test/playout_device.py).
"""

import json

import numpy as np
import pytest

from hayakoe_ros.player.playout import Playout
from playout_device import Device

pytestmark = pytest.mark.unit


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
