# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""player_node against a real sound server: PulseAudio started here, a null sink.

The sink's monitor is recorded with parec while tts_node speaks through player_node (or
the test publishes stamped audio). The recording must be the published audio on its
stamps' timeline: no chunk lost, no gap beyond the stamped pauses, no underrun. Here:
text to sound end to end, and an utterance cut by its end mark; the player's rates,
device, stamps, QoS and play-out are in test_player_sound_stream.py. The ``pulse``
fixture is conftest.py's, the helpers test/pulse_sink.py's.
"""

import json
import time

import numpy as np
import pytest
from std_msgs.msg import String

from tools.pulse import missing
from pulse_sink import (SILENCE, SINK_RATE, best_lag, loud_extent, noise_utterance,
                        player_diagnostics, publish_stamped, start_player, wait_heard,
                        wait_until_matched)
from pulse_sink import matched_publisher as _matched_publisher
from ros_utils import NodeProcess

pytestmark = [pytest.mark.ros, pytest.mark.alone,  # no underrun at 0.1 s latency
              pytest.mark.skipif(bool(missing()), reason=missing() or 'ok')]


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
        pub = ros_client.matched_publisher(tts.topic('text'))
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
    marks = ros_client.matched_publisher(f'{ns}/marks', depth=100)
    try:
        wait_until_matched(player)
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
    marks = ros_client.matched_publisher(f'{ns}/marks', depth=100)
    try:
        wait_until_matched(player)
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
