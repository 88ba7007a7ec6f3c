# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Helpers for the player's sound tests (test_player_sound*.py): a PulseAudio null sink.

Not a test module. player_node plays into the sink of a PulseAudio server started for the
tests (the ``pulse`` fixture, conftest.py); its monitor is recorded with parec. Here: the
player's process and diagnostics, stamped audio to publish, and what the recording holds.
"""

import sys
import time

import numpy as np
from audio_common_msgs.msg import AudioStamped

from ros_utils import NodeProcess

SINK_RATE = 48000
SILENCE = 10 ** (-50 / 20)  # -50 dBFS: below any speech, above the sink's zeros


def start_player(pulse, namespace, wait_ready=True, **params):
    """player_node in ``namespace``, a client of the ``pulse`` server, with ``params``."""
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


def best_lag(recording, reference):
    """Lag (samples) of ``reference`` inside ``recording`` by FFT cross-correlation."""
    n = 1 << int(np.ceil(np.log2(recording.size + reference.size)))
    xc = np.fft.irfft(np.fft.rfft(recording, n) * np.conj(np.fft.rfft(reference, n)), n)
    return int(np.argmax(xc[:recording.size]))


def loud_extent(x):
    """First and last sample of ``x`` above :data:`SILENCE` (``(0, 0)`` if none)."""
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


def matched_publisher(ros_client, player, ns, qos=100):
    """An ``AudioStamped`` publisher on ``ns``/audio, once the player subscribes (bounded)."""
    return ros_client.matched_publisher(f'{ns}/audio', AudioStamped, qos)
