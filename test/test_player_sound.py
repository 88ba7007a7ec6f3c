# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""player_node against a real sound server: PulseAudio started here, a null sink.

The sink's monitor is recorded with parec while tts_node speaks through player_node (or
the test publishes stamped audio). The recording must be the published audio on its
stamps' timeline: no chunk lost, no gap beyond the stamped pauses, no underrun.
"""

import json
import sys
import time

import numpy as np
import pytest
import soxr
from audio_common_msgs.msg import AudioStamped
from diagnostic_msgs.msg import DiagnosticStatus
from std_msgs.msg import String

from tools.pulse import PulseServer, missing
from ros_utils import NodeProcess

pytestmark = [pytest.mark.ros,
              pytest.mark.skipif(bool(missing()), reason=missing() or 'ok')]

SINK_RATE = 48000
SILENCE = 10 ** (-50 / 20)  # -50 dBFS: below any speech, above the sink's zeros


@pytest.fixture(scope='module')
def pulse(tmp_path_factory):
    server = PulseServer(tmp_path_factory.mktemp('pulse'), rate=SINK_RATE)
    yield server
    server.stop()


def start_player(pulse, namespace, wait_ready=True, **params):
    return NodeProcess(dict(params), name='player_node',
                       command=(sys.executable, '-m', 'hayakoe_ros.player_node'),
                       namespace=namespace, env=pulse.client_env(), timeout=60,
                       wait_ready=wait_ready)


def wait_until_matched(player, timeout=20.0):
    """Wait until the player's ``audio`` subscription has matched its publisher.

    Discovery is not symmetric: the test's own node can see both endpoints while the
    player's reader has not yet matched the writer (seen up to 0.2 s after the text was
    sent on a busy 2-core machine); what the writer sends before that never reaches the
    player (the subscription is volatile), and the start of the utterance is missing.
    """
    player.wait_for_log(f'{player.namespace}/audio: 1 publisher(s) matched', timeout)


def player_diagnostics(ros_client, player, chunks, timeout=10.0):
    """The player's diagnostics values once they count ``chunks``.

    A busy machine can delay the diagnostics timer; the last values seen are returned
    when the time is up.
    """
    deadline = time.monotonic() + timeout
    while True:
        status = ros_client.diagnostics(player)
        values = {kv.key: kv.value for kv in status.values}
        if values.get('chunks') == str(chunks) or time.monotonic() > deadline:
            return values
        time.sleep(0.1)


def stamp_s(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def stamped_timeline(msgs, rate):
    """The received chunks placed on their stamps' timeline (float, +-1): what to hear."""
    t0 = stamp_s(msgs[0])
    starts = [int(round((stamp_s(m) - t0) * rate)) for m in msgs]
    out = np.zeros(starts[-1] + len(msgs[-1].audio.audio_data.int16_data))
    for start, m in zip(starts, msgs):
        data = np.asarray(m.audio.audio_data.int16_data, np.float64) / 32768.0
        out[start:start + data.size] = data
    return out


def best_lag(recording, reference):
    """Lag (samples) of ``reference`` inside ``recording`` by FFT cross-correlation."""
    n = 1 << int(np.ceil(np.log2(recording.size + reference.size)))
    xc = np.fft.irfft(np.fft.rfft(recording, n) * np.conj(np.fft.rfft(reference, n)), n)
    return int(np.argmax(xc[:recording.size]))


def loud_extent(x):
    loud = np.nonzero(np.abs(x) > SILENCE)[0]
    return (loud[0], loud[-1]) if loud.size else (0, 0)


def recorded(recording):
    """What the recorder has written so far (float64, +-1), while it goes on recording."""
    data = recording.path.read_bytes()
    return np.frombuffer(data[:len(data) // 2 * 2], '<i2').astype(np.float64) / 32768.0


def wait_heard(recording, reference, start=0, tolerance=2048, quiet_s=0.05, timeout=30.0):
    """Wait until the sink has played all of ``reference`` (at the sink's rate).

    In the recording from sample ``start`` on: its span from the first loud sample to
    the last is the reference's (less ``tolerance`` frames, what the checks allow), and
    after it come the reference's own trailing silence and ``quiet_s`` more, so the end
    has come out of the device and is not a pause in the speech.
    """
    r0, r1 = loud_extent(reference)
    span = r1 - r0 - tolerance
    tail = reference.size - 1 - r1 + int(quiet_s * SINK_RATE)
    deadline = time.monotonic() + timeout
    while True:
        x = recorded(recording)[start:]
        first, last = loud_extent(x)
        if last > first and last - first >= span and x.size - 1 - last >= tail:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f'in {timeout} s the sink played {(last - first) / SINK_RATE:.3f}'
                                 f' s of the {(r1 - r0) / SINK_RATE:.3f} s sent')
        time.sleep(0.05)  # the recorder writes as the sink plays


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


def longest_silence(x, rate):
    """Longest run (s) under the silence threshold inside the loud extent of ``x``."""
    first, last = loud_extent(x)
    quiet = np.abs(x[first:last + 1]) <= SILENCE
    best = run = 0
    for q in quiet:
        run = run + 1 if q else 0
        best = max(best, run)
    return best / rate


def assert_recording_matches(recording, reference, chunk_frames):
    """Correlation, duration within one chunk, no gap beyond the reference's own."""
    lag = best_lag(recording, reference)
    heard = recording[lag:lag + reference.size]
    assert heard.size == reference.size, 'the recording stops before the audio ended'
    corr = float(np.dot(heard, reference) /
                 np.sqrt(np.dot(heard, heard) * np.dot(reference, reference)))
    assert corr > 0.98, corr
    # Window by window (a quarter chunk), so that one chunk missing or displaced fails.
    win = chunk_frames // 4
    for k in range(0, reference.size - win, win):
        ref, got = reference[k:k + win], heard[k:k + win]
        if np.sqrt(np.mean(ref ** 2)) > 0.01:  # -40 dBFS: speech, not a pause
            err = np.sqrt(np.mean((got - ref) ** 2) / np.mean(ref ** 2))
            assert err < 0.3, f'window at {k / SINK_RATE:.3f} s differs ({err:.2f})'
    r0, r1 = loud_extent(recording)
    e0, e1 = loud_extent(reference)
    assert abs((r1 - r0) - (e1 - e0)) <= chunk_frames, ((r1 - r0), (e1 - e0))
    # One block of silence too many anywhere (a dropped or late chunk) shows here.
    assert longest_silence(recording, SINK_RATE) <= \
        longest_silence(reference, SINK_RATE) + 0.010
    return lag, corr


def test_tts_node_speaks_through_player_node_into_pulseaudio(pulse, ros_client, tmp_path):
    """End to end: text -> tts_node (Open JTalk, 48 kHz) -> player_node -> null sink."""
    tts = NodeProcess({'engine': 'openjtalk', 'chunk': 2048})
    player = start_player(pulse, tts.namespace)
    try:
        rec = ros_client.audio_recorder(tts.topic('audio'), node=tts)
        pub = ros_client.node.create_publisher(String, tts.topic('text'), 10)
        ros_client.wait_for_subscribers(tts.topic('audio'))
        deadline = time.monotonic() + 10
        while ros_client.node.count_subscribers(tts.topic('audio')) < 2 and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        wait_until_matched(player)
        recording = pulse.record()
        text = 'こんにちは。ロボットが話しています、聞こえますか。'
        t_text = time.monotonic()
        pub.publish(String(data=text))
        rec.wait_quiet(quiet_s=1.0, timeout=60)
        msgs = [m for _, m in rec.msgs]
        assert msgs and all(m.audio.info.rate == SINK_RATE for m in msgs)
        reference = stamped_timeline(msgs, SINK_RATE)
        wait_heard(recording, reference)  # the last chunk's way through the device
        heard = recording.stop()
        lag, corr = assert_recording_matches(heard, reference, 2048)
        first_sound = recording.t0 + loud_extent(heard)[0] / SINK_RATE
        latency = first_sound - t_text
        (tmp_path / 'latency.txt').write_text(f'{latency:.3f}\n')
        ttfa = [line.split('TTFA ')[1].split(',')[0] for line in tts.log().splitlines()
                if 'TTFA' in line]
        lead_in = loud_extent(reference)[0] / SINK_RATE
        values = player_diagnostics(ros_client, player, chunks=len(msgs))
        print(f'text -> first sound on the null sink: {latency * 1000:.0f} ms (of which the '
              f"voice's own leading silence {lead_in * 1000:.0f} ms; tts_node TTFA "
              f"{ttfa[-1] if ttfa else '?'}); correlation {corr:.4f}; player: {values}")
        assert values['underruns'] == '0' and values['xruns'] == '0', values
        assert int(values['chunks']) == len(msgs)
        assert values['device_rate_hz'] == str(SINK_RATE)
        assert float(values['output_latency_s']) > 0
        assert 0 < latency < 2.0
        ros_client.node.destroy_subscription(rec.sub)
        ros_client.node.destroy_publisher(pub)
    finally:
        assert player.stop() == 0, player.log()
        assert tts.stop() == 0, tts.log()


def publish_stamped(pub, samples, t0_ns, chunk=2048):
    """Publish int16 ``samples`` as contiguous chunks, the first stamped ``t0_ns``."""
    for k in range(0, samples.size, chunk):
        part = np.zeros(chunk, np.int16)
        part[:samples[k:k + chunk].size] = samples[k:k + chunk]
        msg = AudioStamped()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(
            t0_ns + int(round(k / SINK_RATE * 1e9)), 1_000_000_000)
        info = msg.audio.info
        info.format, info.channels, info.rate, info.chunk = 8, 1, SINK_RATE, chunk
        msg.audio.audio_data.int16_data = part.tolist()
        pub.publish(msg)
    return -(-samples.size // chunk)


def noise_utterance(rate, seconds, seed):
    """Band-limited noise (under 3.5 kHz) with a 20 ms fade: survives any resampling."""
    rng = np.random.default_rng(seed)
    n = int(seconds * rate)
    spectrum = np.fft.rfft(rng.standard_normal(n))
    spectrum[np.fft.rfftfreq(n, 1 / rate) > 3500] = 0
    x = np.fft.irfft(spectrum, n)
    x *= 0.3 / np.max(np.abs(x))
    fade = int(0.02 * rate)
    x[:fade] *= np.linspace(0, 1, fade)
    x[-fade:] *= np.linspace(1, 0, fade)
    return (x * 32767).astype(np.int16)


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


@pytest.mark.parametrize('device_rate', [0, 44100])
def test_player_follows_a_rate_change_between_utterances(pulse, ros_client, device_rate):
    """16 kHz then 22.05 kHz: both utterances are heard whole.

    device_rate 0 reopens the device at each rate; 44100 makes the player resample.
    """
    from ros_utils import new_namespace

    ns = new_namespace()
    # Diagnostics 5 times a second: the test waits on them between the utterances.
    player = start_player(pulse, ns, device_rate=device_rate, diagnostics_period_s=0.2)
    try:
        pub = ros_client.node.create_publisher(AudioStamped, f'{ns}/audio', 100)
        deadline = time.monotonic() + 10
        while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
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
        player.proc.wait(60)
    finally:
        code = player.stop()
    log = player.log()
    assert code == 1, log
    assert "output device 'no-such-speaker'" in log and 'python3 -m sounddevice' in log, log


def assert_heard_to_the_end(heard, ref, lag):
    """``ref`` is in the recording from ``lag`` on, whole: its last two chunks correlate."""
    got = heard[lag:lag + ref.size]
    assert got.size == ref.size, 'the end is missing'
    tail = slice(ref.size - 4096, ref.size)  # the last two chunks, the last one above all
    corr = np.dot(got[tail], ref[tail]) / np.sqrt(np.dot(got[tail], got[tail]) *
                                                  np.dot(ref[tail], ref[tail]))
    assert corr > 0.99, corr


def test_player_plays_out_what_it_holds_when_it_is_stopped(pulse, ros_client):
    """1.5 s of audio arrives at once (pacing off); SIGINT at once: all of it is heard."""
    from ros_utils import new_namespace

    ns = new_namespace()
    # Diagnostics every 0.1 s: the test stops the player once they count every chunk,
    # while most of the audio is still queued.
    player = start_player(pulse, ns, diagnostics_period_s=0.1)
    pub = ros_client.node.create_publisher(AudioStamped, f'{ns}/audio', 100)
    try:
        deadline = time.monotonic() + 10
        while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
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


def _matched_publisher(ros_client, player, ns, qos=100):
    pub = ros_client.node.create_publisher(AudioStamped, f'{ns}/audio', qos)
    deadline = time.monotonic() + 10
    while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    return pub


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
    pub = ros_client.node.create_publisher(AudioStamped, f'{ns}/audio', 100)
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


def _mark(kind, stamp_ns, time_ms, value=''):
    sec, nanosec = divmod(stamp_ns, 1_000_000_000)
    return String(data=json.dumps({'utterance': 'u1', 'type': kind, 'time': time_ms,
                                   'stamp': {'sec': sec, 'nanosec': nanosec},
                                   'value': value, 'start': 0, 'end': 0}))


def test_a_canceled_utterance_stops_at_once_without_a_click(pulse, ros_client):
    """An end mark 'canceled' while 0.3 s are held: the sound stops a device latency after.

    A steady 440 Hz tone, stamped as tts_node stamps (first chunk at now, then
    contiguous), published 0.3 s ahead of its stamps; its start mark first. The sound
    must stop within the device's latency + 50 ms of the end mark's arrival (not 0.3 s
    later) and with no step larger than the tone's own.
    """
    from ros_utils import new_namespace

    ns = new_namespace()
    player = start_player(pulse, ns)
    pub = _matched_publisher(ros_client, player, ns)
    marks = ros_client.node.create_publisher(String, f'{ns}/marks', 100)
    try:
        wait_until_matched(player)
        deadline = time.monotonic() + 10
        while marks.get_subscription_count() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        recording = pulse.record()
        chunk, amplitude = 2048, 0.3
        n = 40 * chunk  # 1.7 s, of which about 0.6 s is heard
        tone = np.round(amplitude * 32767 * np.sin(2 * np.pi * 440 * np.arange(n) /
                                                   SINK_RATE)).astype(np.int16)
        clock = ros_client.node.get_clock()
        t0_ns = clock.now().nanoseconds
        marks.publish(_mark('start', t0_ns, 0))
        t_first = time.monotonic()
        k = 0
        while True:  # at playback rate, 0.3 s ahead of the stamps, as tts_node paces
            due = t_first + k * chunk / SINK_RATE - 0.3
            if due > t_first + 0.6 - 0.3:
                break
            if due > time.monotonic():  # real time: paced as tts_node paces
                time.sleep(due - time.monotonic())
            publish_stamped(pub, tone[k * chunk:(k + 1) * chunk],
                            t0_ns + int(round(k * chunk / SINK_RATE * 1e9)), chunk)
            k += 1
        end_ns = clock.now().nanoseconds + 50_000_000
        marks.publish(_mark('end', end_ns, (end_ns - t0_ns) // 1_000_000, 'canceled'))
        t_end = time.monotonic()
        # One more chunk of it, after its end mark (another topic may deliver it late).
        publish_stamped(pub, tone[k * chunk:(k + 1) * chunk],
                        t0_ns + int(round(k * chunk / SINK_RATE * 1e9)), chunk)
        held_s = k * chunk / SINK_RATE - (t_end - t_first)
        values = {}
        deadline = time.monotonic() + 10
        while int(values.get('cut_late_chunks', 0)) < 1 and time.monotonic() < deadline:
            values = {kv.key: kv.value for kv in ros_client.diagnostics(player).values}
        # A real duration: 0.8 s of the sink past the end mark, to show that nothing
        # plays after the cut (the recorder writes as the sink plays).
        while (recording.path.stat().st_size // 2 <
               (t_end - recording.t0 + 0.8) * SINK_RATE and time.monotonic() < deadline):
            time.sleep(0.05)
        heard = recording.stop()
        first, last = loud_extent(heard)
        latency = float(values['output_latency_s'])
        # The first chunk was heard buffer + latency after it arrived, the last sample
        # latency + fade after the end mark arrived: no clock of the recording needed.
        stop_after_mark = (last - first) / SINK_RATE - (t_end - t_first) + 0.1 + latency
        window = heard[max(first, last - 4800):last + 4800]
        own_step = amplitude * 2 * np.pi * 440 / SINK_RATE
        largest = float(np.max(np.abs(np.diff(window))))
        print(f'cut: sound stopped {stop_after_mark * 1e3:.1f} ms after the end mark '
              f'(device latency {latency * 1e3:.1f} ms, {held_s:.3f} s held); largest '
              f'step at the cut {largest:.4f} (the tone: {own_step:.4f}); player: {values}')
        assert held_s > 0.25
        # The chunk sent after the end mark, and any sent before it that came after it.
        assert values['cut_utterances'] == '1' and int(values['cut_late_chunks']) >= 1, values
        assert float(values['cut_dropped_s']) > 0.15, values
        # The first chunk's own way to the sink is taken as buffer + the latency the
        # device reports; on this machine the sink has run up to 30 ms behind that
        # (2-6 ms past it in some runs, 31 ms in others, the same code): 50 ms is allowed,
        # against the 0.3 s held that would play on without the cut.
        assert stop_after_mark <= latency + 0.050, stop_after_mark
        assert largest <= own_step + 2 / 32768, (largest, own_step)
        assert not np.any(np.abs(heard[last + 1:]) > SILENCE)
    finally:
        ros_client.node.destroy_publisher(pub)
        ros_client.node.destroy_publisher(marks)
        player.stop()


def test_a_bad_speech_mark_is_a_warning_and_the_player_plays_on(pulse, ros_client):
    from ros_utils import new_namespace

    ns = new_namespace()
    player = start_player(pulse, ns)
    pub = _matched_publisher(ros_client, player, ns)
    marks = ros_client.node.create_publisher(String, f'{ns}/marks', 100)
    try:
        wait_until_matched(player)
        deadline = time.monotonic() + 10
        while marks.get_subscription_count() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        marks.publish(String(data='{not json'))
        player.wait_for_log('speech mark ignored: not JSON', 20)
        samples = noise_utterance(SINK_RATE, 0.3, 6)
        n = publish_stamped(pub, samples, ros_client.node.get_clock().now().nanoseconds)
        values = player_diagnostics(ros_client, player, chunks=n)
        assert values['chunks'] == str(n) and values['cut_utterances'] == '0', values
    finally:
        ros_client.node.destroy_publisher(pub)
        ros_client.node.destroy_publisher(marks)
        player.stop()


def test_a_canceled_goal_goes_silent_on_the_speaker_at_once(pulse, ros_client):
    """End to end: tts_node (Open JTalk) -> player_node; a say goal canceled mid-speech.

    tts_node publishes up to 0.3 s ahead; without the end mark the player would play it
    all. The sound must stop within the device latency + 100 ms of the cancel (the
    cancel's way to the node and the end mark's back included: 5 ms on a quiet machine,
    up to 60 ms under the full suite's load), not 0.3 s later, and without a click.
    """
    from ros_utils import send_goal, wait_future

    tts = NodeProcess({'engine': 'openjtalk', 'chunk': 2048})
    player = start_player(pulse, tts.namespace)
    try:
        wait_until_matched(player)
        action = ros_client.action_client(tts.topic('say'))
        recording = pulse.record()
        text = 'これから館内をご案内します。まず一階の受付へ参りましょう。'
        handle, feedback = send_goal(ros_client, action, text)
        deadline = time.monotonic() + 30
        while len(feedback) < 16 and time.monotonic() < deadline:  # 0.7 s of speech out
            time.sleep(0.01)
        t_first = feedback[0][0]
        t_cancel = time.monotonic()
        wait_future(handle.cancel_goal_async(), 10)
        result = wait_future(handle.get_result_async(), 30)
        assert result.result.text and result.result.text != text  # what was heard
        values = {}
        while int(values.get('cut_utterances', 0)) < 1 and time.monotonic() < deadline:
            values = {kv.key: kv.value for kv in ros_client.diagnostics(player).values}
        # A real duration: 1 s of the sink past the cancel, to show that nothing plays
        # after the cut (the recorder writes as the sink plays).
        while (recording.path.stat().st_size // 2 < (t_cancel - recording.t0 + 1.0)
               * SINK_RATE and time.monotonic() < deadline):
            time.sleep(0.05)
        heard = recording.stop()
        first, last = loud_extent(heard)
        latency = float(values['output_latency_s'])
        # The first chunk was heard buffer + latency after it arrived (its first 10 ms
        # are the voice's lead-in): the sound's end, on the same footing as the cancel.
        stop_after_cancel = ((last - first) / SINK_RATE - (t_cancel - t_first) + 0.1
                             + latency + 0.010)
        window = heard[max(first, last - 4800):last + 4800]
        largest_end_step = float(np.max(np.abs(np.diff(window[-600:]))))
        print(f'say canceled: sound stopped {stop_after_cancel * 1e3:.0f} ms after the cancel '
              f'(device latency {latency * 1e3:.0f} ms); player {values}')
        assert values['cut_utterances'] == '1', values
        assert float(values['cut_dropped_s']) > 0.15, values  # the lead held, dropped
        assert stop_after_cancel <= latency + 0.100, stop_after_cancel
        assert largest_end_step < 0.05, largest_end_step
    finally:
        assert player.stop() == 0, player.log()
        assert tts.stop() == 0, tts.log()
