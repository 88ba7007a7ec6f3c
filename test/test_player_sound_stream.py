# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""player_node fed stamped audio on a PulseAudio null sink: rates, device, stamps, play-out.

The test publishes the audio (band-limited noise) and records the sink's monitor: a
rate change between utterances, an unknown device, a stamp far off, a best-effort
publisher, and audio still held when the player is stopped or deactivated, which must
still be heard to the end. End to end through tts_node and a cut are in
test_player_sound.py; the ``pulse`` fixture is conftest.py's, the helpers
test/pulse_sink.py's.
"""

import time

import numpy as np
import pytest
import soxr
from audio_common_msgs.msg import AudioStamped
from diagnostic_msgs.msg import DiagnosticStatus
from hayakoe_ros.node.runner import EXIT_NOT_STARTED

from tools.pulse import missing
from pulse_sink import (SINK_RATE, best_lag, noise_utterance, player_diagnostics,
                        publish_stamped, recorded, start_player, wait_heard,
                        wait_until_matched)
from pulse_sink import matched_publisher as _matched_publisher

pytestmark = [pytest.mark.ros, pytest.mark.alone,  # no underrun at 0.1 s latency
              pytest.mark.skipif(bool(missing()), reason=missing() or 'ok')]


def wait_player_idle(ros_client, player, timeout=10.0):
    """Wait until the player reports nothing queued (resampler tail included).

    Returns its diagnostics values.
    """
    deadline = time.monotonic() + timeout
    while True:
        values = {kv.key: kv.value for kv in ros_client.diagnostics(player).values}
        if values.get('queued_s') == '0.000':
            return values
        if time.monotonic() > deadline:
            raise AssertionError(f'the player still holds audio after {timeout} s: {values}')
        time.sleep(0.1)


def publish_utterance(pub, node, samples, rate, chunk):
    """Publish ``samples`` as stamped chunks at playback rate, 2 chunks ahead."""
    t0 = node.get_clock().now().nanoseconds
    start = time.monotonic()
    for k in range(0, samples.size, chunk):
        part = np.zeros(chunk, np.int16)
        part[:samples[k:k + chunk].size] = samples[k:k + chunk]
        msg = AudioStamped()
        ns = t0 + int(round(k / rate * 1e9))
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(ns, 1_000_000_000)
        info = msg.audio.info
        info.format, info.channels, info.rate, info.chunk = 8, 1, rate, chunk
        msg.audio.audio_data.int16_data = part.tolist()
        wait = start + (k - 2 * chunk) / rate - time.monotonic()
        if wait > 0:  # real time: a publisher that paces its chunks at playback rate
            time.sleep(wait)
        pub.publish(msg)


def assert_heard_to_the_end(heard, ref, lag):
    """``ref`` is in the recording from ``lag`` on, whole: its last two chunks correlate."""
    got = heard[lag:lag + ref.size]
    assert got.size == ref.size, 'the end is missing'
    tail = slice(ref.size - 4096, ref.size)  # the last two chunks, the last one above all
    corr = np.dot(got[tail], ref[tail]) / np.sqrt(np.dot(got[tail], got[tail]) *
                                                  np.dot(ref[tail], ref[tail]))
    assert corr > 0.99, corr


# A fixed device rate (the stream resampled): about 7 s here, left to make test-long; the
# resampling itself stays quick in test_playout.py.
@pytest.mark.parametrize('device_rate', [0, pytest.param(44100, marks=pytest.mark.long)])
def test_player_follows_a_rate_change_between_utterances(pulse, ros_client, device_rate):
    """16 kHz then 22.05 kHz: both utterances are heard whole.

    device_rate 0 reopens the device at each rate; 44100 makes the player resample.
    """
    from ros_utils import new_namespace

    ns = new_namespace()
    # Diagnostics 5 times a second: the test waits on them between the utterances.
    player = start_player(pulse, ns, device_rate=device_rate, diagnostics_period_s=0.2)
    try:
        pub = _matched_publisher(ros_client, player, ns)
        wait_until_matched(player)
        recording = pulse.record()
        parts = []
        for rate, seed in ((16000, 1), (22050, 2)):
            start = recorded(recording).size
            samples = noise_utterance(rate, 1.0, seed)
            publish_utterance(pub, ros_client.node, samples, rate, 1024)
            parts.append(soxr.resample(samples / 32768.0, rate, SINK_RATE))
            # Between utterances: the player has rendered all of it (its resampler's tail
            # too) and the sink has played it, for longer than the device's latency (the
            # player reopens the device only once what it rendered has been heard).
            latency = float(wait_player_idle(ros_client, player)['output_latency_s'])
            wait_heard(recording, parts[-1], start=start, tolerance=int(0.05 * SINK_RATE),
                       quiet_s=latency + 0.05)
        heard = recording.stop()
        for part in parts:  # each utterance is in the recording, whole and unbroken
            lag = best_lag(heard, part)
            got = heard[lag:lag + part.size]
            corr = np.dot(got, part) / np.sqrt(np.dot(got, got) * np.dot(part, part))
            assert corr > 0.95, corr
        status = ros_client.diagnostics(player)
        values = {kv.key: kv.value for kv in status.values}
        assert values['underruns'] == '0', values
        expected_rate = device_rate or 22050
        assert values['device_rate_hz'] == str(expected_rate)
        resampled = int(values['resampled_chunks'])
        assert (resampled > 0) == bool(device_rate), values
        ros_client.node.destroy_publisher(pub)
    finally:
        assert player.stop() == 0, player.log()


def test_unknown_device_fails_configure_naming_it_and_how_to_list_devices(pulse):
    from ros_utils import new_namespace

    player = start_player(pulse, new_namespace(), wait_ready=False, device='no-such-speaker')
    try:
        player.wait_exit(60)
    finally:
        code = player.stop()
    log = player.log()
    assert code == EXIT_NOT_STARTED, log
    assert "output device 'no-such-speaker'" in log and 'python3 -m sounddevice' in log, log


@pytest.mark.long  # about 5 s here; the play-out on deactivate stays quick (below)
def test_player_plays_out_what_it_holds_when_it_is_stopped(pulse, ros_client):
    """1.5 s of audio arrives at once (pacing off); SIGINT at once: all of it is heard."""
    from ros_utils import new_namespace

    ns = new_namespace()
    # Diagnostics every 0.1 s: the test stops the player once they count every chunk,
    # while most of the audio is still queued.
    player = start_player(pulse, ns, diagnostics_period_s=0.1)
    pub = _matched_publisher(ros_client, player, ns)
    try:
        wait_until_matched(player)
        recording = pulse.record()
        samples = noise_utterance(SINK_RATE, 1.5, 3)
        n = publish_stamped(pub, samples, ros_client.node.get_clock().now().nanoseconds)
        # Delivered (the player counts every chunk), and most of it still queued in it.
        values = player_diagnostics(ros_client, player, chunks=n)
        assert values['chunks'] == str(n) and float(values['queued_s']) > 0.5, values
        assert player.stop() == 0, player.log()
        heard = recording.stop()
        ref = samples / 32768.0
        assert_heard_to_the_end(heard, ref, best_lag(heard, ref))
    finally:
        ros_client.node.destroy_publisher(pub)
        player.stop()


@pytest.mark.parametrize('skew_s', [10.0, -10.0])
def test_a_stamp_far_off_plays_at_once_with_one_warning(pulse, ros_client, skew_s):
    """Stamped 10 s ahead (or behind): heard at once, not 10 s later; one WARN, counted."""
    from ros_utils import new_namespace

    ns = new_namespace()
    player = start_player(pulse, ns)
    pub = _matched_publisher(ros_client, player, ns)
    try:
        wait_until_matched(player)
        samples = noise_utterance(SINK_RATE, 0.5, 4)
        sent = time.monotonic()
        n = publish_stamped(pub, samples, ros_client.node.get_clock().now().nanoseconds
                            + int(skew_s * 1e9))
        deadline = sent + 5.0  # far less than the 10 s the stamp asks for
        while time.monotonic() < deadline:
            values = {kv.key: kv.value for kv in ros_client.diagnostics(player).values}
            if values.get('chunks') == str(n) and values.get('queued_s') == '0.000':
                break
            time.sleep(0.2)
        assert values.get('queued_s') == '0.000', values  # all of it played already
        assert values['stamps_out_of_range'] == '1', values  # the first; the rest follow it
        log = player.log()
        side = 'after' if skew_s > 0 else 'before'
        assert log.count(f's {side} its arrival (more than max_ahead_s 2.0 s)') == 1, log
    finally:
        ros_client.node.destroy_publisher(pub)
        player.stop()


def test_a_best_effort_publisher_is_reported_not_silently_ignored(pulse, ros_client):
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from ros_utils import new_namespace

    ns = new_namespace()
    player = start_player(pulse, ns)
    pub = ros_client.node.create_publisher(
        AudioStamped, f'{ns}/audio', QoSProfile(depth=10,
                                                reliability=ReliabilityPolicy.BEST_EFFORT))
    try:
        player.wait_for_log('a publisher offers a QoS this subscription cannot match '
                            '(RELIABILITY)', 20)
        assert f'qos_overrides.{ns}/audio.subscription.reliability:=best_effort' in \
            player.log()
        deadline = time.monotonic() + 10
        while True:
            status = ros_client.diagnostics(player)
            if status.level == DiagnosticStatus.ERROR or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        values = {kv.key: kv.value for kv in status.values}
        assert status.level == DiagnosticStatus.ERROR
        assert 'incompatible QoS (RELIABILITY)' in status.message, status.message
        assert values['incompatible_qos_publishers'] == '1'
    finally:
        ros_client.node.destroy_publisher(pub)
        player.stop()


def test_deactivate_answers_at_once_and_the_audio_still_plays_out(pulse, ros_client):
    """Deactivate answers while queued audio still plays, and all of it is heard.

    4 s of audio arrive at once; the node's only executor thread is not held by the
    play-out, so the transition and the diagnostics answer in the meantime.
    """
    from lifecycle_msgs.msg import Transition
    from ros_utils import change_state, new_namespace

    ns = new_namespace()
    player = start_player(pulse, ns)
    pub = _matched_publisher(ros_client, player, ns)
    try:
        wait_until_matched(player)
        recording = pulse.record()
        samples = noise_utterance(SINK_RATE, 4.0, 5)
        chunks = publish_stamped(pub, samples, ros_client.node.get_clock().now().nanoseconds)
        assert player_diagnostics(ros_client, player, chunks).get('chunks') == str(chunks)
        assert change_state(ros_client, player, Transition.TRANSITION_DEACTIVATE)
        recorded_at_answer = recording.path.stat().st_size // 2
        # Still serving while it plays: its diagnostics come in the meantime.
        values = {kv.key: kv.value for kv in ros_client.diagnostics(player).values}
        assert values.get('chunks') == str(chunks), values
        ref = samples / 32768.0
        # All of it out of the sink. Not "ref.size samples after the answer": the sound
        # may start after the answer (in one full run, at least 50 ms after).
        wait_heard(recording, ref)
        heard = recording.stop()
        lag = best_lag(heard, ref)
        # The transition answered with at least a second of the audio still to play.
        assert recorded_at_answer < lag + ref.size - SINK_RATE, (recorded_at_answer, lag)
        assert_heard_to_the_end(heard, ref, lag)
    finally:
        ros_client.node.destroy_publisher(pub)
        player.stop()
