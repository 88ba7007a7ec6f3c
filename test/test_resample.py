# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""output_rate: both voices resampled to 16 and 48 kHz keep their duration and speech."""

import numpy as np
import pytest
import soxr

from hayakoe_ros.engines import VoiceParams
from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler
from hayakoe_ros.engines.resample import ResampledEngine
from tools.submit import submit_text

pytestmark = pytest.mark.unit

TEXT = 'こんにちは、今日はいい天気ですね。'


def band(x, rate, top_hz):
    """``x`` with everything above ``top_hz`` removed (FFT brick wall)."""
    spectrum = np.fft.rfft(x)
    spectrum[np.fft.rfftfreq(x.size, 1 / rate) > top_hz] = 0
    return np.fft.irfft(spectrum, x.size)


@pytest.fixture(params=['hayakoe', 'openjtalk'])
def voice_engine(request, det_voice):
    if request.param == 'hayakoe':
        return request.getfixturevalue('tiny_engine'), det_voice
    return request.getfixturevalue('openjtalk_engine'), VoiceParams()


@pytest.mark.parametrize('rate', [16000, 48000])
def test_resampled_voice_has_the_rate_duration_and_speech_of_the_engine(voice_engine, rate):
    engine, voice = voice_engine
    own = engine.synthesize(TEXT, voice)
    wrapped = ResampledEngine(engine, rate)
    out = wrapped.synthesize(TEXT, voice)
    assert wrapped.sample_rate == rate and out.dtype == np.float32
    assert abs(out.size / rate - own.size / engine.sample_rate) < 1.0 / rate + 1e-9
    # Back at the engine's rate, in the band both rates carry, it is the same speech.
    back = soxr.resample(out, rate, engine.sample_rate)
    n = min(back.size, own.size)
    assert own.size - n <= 1
    top = 0.45 * min(rate, engine.sample_rate)
    a, b = band(own[:n], engine.sample_rate, top), band(back[:n], engine.sample_rate, top)
    corr = np.dot(a, b) / np.sqrt(np.dot(a, a) * np.dot(b, b))
    assert corr > 0.99, corr
    assert wrapped.predict_pause('今日は。', '明日は。', voice) == \
        engine.predict_pause('今日は。', '明日は。', voice)


def test_pipeline_output_at_16k_has_the_same_pauses_in_seconds(openjtalk_engine):
    """Chunked through the scheduler: same audio length in seconds at 16 kHz as at 48."""
    lengths = {}
    for rate in (16000, 48000):
        chunks: list = []
        sched = SpeechScheduler(ResampledEngine(openjtalk_engine, rate),
                                lambda u, c, out=chunks: out.append(c),
                                SchedulerConfig(pacing=False, chunk_frames=512))
        try:
            utt = submit_text(sched, '一つ目の文です。二つ目の文です。', VoiceParams())
            assert utt.wait(60)
        finally:
            sched.shutdown()
        assert {c.sample_rate for c in chunks} == {rate}
        lengths[rate] = utt.audio_samples / rate
    # The pause tops up the segment's own trailing silence, measured in 10 ms windows
    # (hayakoe's rule): at most a window or two apart between the rates.
    assert lengths[16000] == pytest.approx(lengths[48000], abs=0.025)


def test_output_rate_out_of_range_is_refused(openjtalk_engine):
    with pytest.raises(ValueError, match='output_rate 100 Hz is out of range'):
        ResampledEngine(openjtalk_engine, 100)
