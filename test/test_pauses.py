# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The voices' own edge silence and the pauses heard (no ROS).

Open JTalk pads every call with about 0.3 s of silence on each side: before the trim,
the first sound came 0.36 s after the first chunk and each pause was that much longer
than predicted. Measured here on the published samples, as a listener hears them.
"""

import numpy as np
import pytest

from hayakoe_ros.engines import VoiceParams
from hayakoe_ros.speech import Outcome, SchedulerConfig, SpeechScheduler
from hayakoe_ros.speech.pauses import LEAD_IN_S, ONSET_LEVEL, trim_own_silence
from speech_fakes import REAL_TIMEOUT_S, VirtualClock
from tools.submit import submit_text

pytestmark = pytest.mark.unit

#: A sample counts as sound from -40 dBFS on (the level the first-sound claims use).
SOUND = 10.0 ** (-40.0 / 20.0)


def _speak(engine, text):
    chunks = []
    sched = SpeechScheduler(engine, lambda utt, chunk: chunks.append(chunk),
                            SchedulerConfig(pacing=False, first_segment_morae=0),
                            clock=VirtualClock())
    try:
        utt = submit_text(sched, text, VoiceParams(style=engine.styles[0], noise=0.0,
                                                   noise_w=0.0, sdp_ratio=0.0))
        assert utt.wait(REAL_TIMEOUT_S) and utt.outcome is Outcome.SUCCEEDED
    finally:
        sched.shutdown()
    pcm = np.concatenate([c.samples for c in chunks])[:utt.audio_samples]
    return utt, pcm.astype(np.float64) / 32767.0


def _sound_runs(audio, sr, level=SOUND):
    """(first sound, last sound, longest silent run inside) in seconds."""
    loud = np.flatnonzero(np.abs(audio) > level)
    gaps = np.diff(loud)
    return loud[0] / sr, (audio.size - 1 - loud[-1]) / sr, gaps.max() / sr


def test_openjtalk_first_sound_comes_with_the_first_chunk(openjtalk_engine):
    raw = openjtalk_engine.synthesize('こんにちは。', VoiceParams())
    sr = openjtalk_engine.sample_rate
    assert _sound_runs(raw, sr)[0] > 0.3  # the voice's own padding, untrimmed
    for text in ('こんにちは。', 'さようなら', 'はい、わかりました。'):
        utt, audio = _speak(openjtalk_engine, text)
        first, _, _ = _sound_runs(audio, sr)
        assert first <= 0.030, (text, first)  # stamp of the first chunk -> first sound
        # After the last sample above -60 dBFS (the voice's decay is kept), the lead-in.
        tail = _sound_runs(audio, sr, ONSET_LEVEL)[1]
        assert tail <= LEAD_IN_S + 1 / sr, (text, tail)


def test_openjtalk_pause_heard_is_the_predicted_one(openjtalk_engine):
    sr = openjtalk_engine.sample_rate
    utt, audio = _speak(openjtalk_engine, 'こんにちは。今日はいい天気ですね。')
    assert len(utt.segments) == 2 and utt.pauses[0] == pytest.approx(0.35)
    _, _, longest = _sound_runs(audio, sr)
    # Heard: from the last sound of one sentence to the first of the next (decay and
    # onset below -40 dBFS count as silence here, a few ms each). Untrimmed it was
    # the pause plus the second call's 0.36 s of padding.
    assert utt.pauses[0] - 0.01 <= longest <= utt.pauses[0] + 0.05, longest


def test_trim_keeps_a_soft_onset_and_a_short_lead_in():
    sr = 48000
    rng = np.random.default_rng(1)
    silence = rng.uniform(-5e-4, 5e-4, sr // 2).astype(np.float32)  # under ONSET_LEVEL
    # A 200 ms fade-in from -80 dBFS, then a tone, then the same silence again.
    t = np.arange(sr) / sr
    tone = (0.5 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    fade = np.geomspace(1e-4 / 0.5, 1.0, sr // 5).astype(np.float32)
    tone[:fade.size] *= fade
    audio = np.concatenate([silence, tone, silence])
    out = trim_own_silence(audio, sr)
    onset = int(np.flatnonzero(np.abs(audio) > ONSET_LEVEL)[0])
    keep = round(LEAD_IN_S * sr)
    start = onset - keep
    assert out.size < audio.size - sr // 2
    np.testing.assert_array_equal(out[:out.size], audio[start:start + out.size])
    assert np.flatnonzero(np.abs(out) > ONSET_LEVEL)[0] == keep
    last = int(np.flatnonzero(np.abs(audio) > ONSET_LEVEL)[-1])
    assert out.size == last + 1 + keep - start
    # A segment already without edge silence, or too quiet to have any sound, stays.
    plain = (0.5 * np.sin(2 * np.pi * 220 * t + 0.3)).astype(np.float32)
    np.testing.assert_array_equal(trim_own_silence(plain, sr), plain)
    np.testing.assert_array_equal(trim_own_silence(silence, sr), silence)
