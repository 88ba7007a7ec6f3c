# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Unit tests of the node layer's pure parts: parameter specs, messages, diagnostics."""

import numpy as np
import pytest
from audio_common_msgs.action import TTS
from diagnostic_msgs.msg import DiagnosticStatus

from hayakoe_ros.node.diagnostics import Snapshot, SpeechStats, build_status
from hayakoe_ros.node.messages import PA_INT16, StampClock, chunk_to_msg
from hayakoe_ros.node.parameters import (PARAMETERS, Apply, scheduler_config,
                                         unknown_parameters, voice_params)
from hayakoe_ros.node.say_action import goal_error
from hayakoe_ros.speech import AudioChunk, QueuePolicy

pytestmark = pytest.mark.unit


@pytest.mark.parametrize('name, value, words', [
    ('queue_policy', 'bogus', ["'queue_policy'", "'bogus'", 'enqueue, interrupt']),
    ('engine', 'foo', ["'engine'", "'foo'", 'hayakoe, openjtalk']),
    ('rate', 9.0, ["'rate'", '9.0', '[0.25, 4]']),
    ('chunk', 'big', ["'chunk'", "'big'", 'expected an int']),
    ('max_queue', -1, ['out of range', '[0, 1000]']),
    ('rate', float('nan'), ['out of range']),
])
def test_invalid_values_are_named_with_what_is_allowed(name, value, words):
    error = PARAMETERS[name].check(value)
    assert error is not None
    for word in words:
        assert word in error


def test_valid_values_pass_and_ints_are_accepted_for_doubles():
    assert PARAMETERS['rate'].check(2) is None
    assert PARAMETERS['queue_policy'].check('interrupt') is None
    assert PARAMETERS['autostart'].check(False) is None
    assert PARAMETERS['max_queue'].check(True) is not None  # a bool is not an int


def test_descriptors_carry_ranges_choices_and_when_they_apply():
    desc = PARAMETERS['queue_policy'].descriptor()
    assert 'one of: enqueue, interrupt' in desc.additional_constraints
    assert not desc.read_only
    rate = PARAMETERS['rate'].descriptor().floating_point_range[0]
    assert (rate.from_value, rate.to_value) == (0.25, 4.0)
    speaker = PARAMETERS['speaker']
    assert speaker.apply is Apply.RELOAD
    assert 'next configure' in speaker.descriptor().additional_constraints


def test_unknown_overrides_get_the_closest_declared_name():
    found = dict(unknown_parameters(['volumee', 'rate', 'qos_overrides./audio.publisher.depth',
                                     'use_sim_time', 'zzz']))
    assert found == {'volumee': 'volume', 'zzz': ''}


def test_voice_and_scheduler_config_come_from_parameter_values():
    values = {name: spec.default for name, spec in PARAMETERS.items()}
    values.update(rate=2.0, queue_policy='interrupt', chunk=512)
    voice = voice_params(values, goal_rate=2.0)
    assert voice.length_scale == pytest.approx(0.25)
    config = scheduler_config(values)
    assert config.chunk_frames == 512
    assert QueuePolicy(config.queue_policy) is QueuePolicy.INTERRUPT


def test_goal_fields_are_checked():
    assert goal_error(TTS.Goal(text='あ', language='ja', rate=1.0, volume=1.0)) is None
    assert 'unsupported language' in goal_error(TTS.Goal(text='あ', language='fr',
                                                         rate=1.0, volume=1.0))
    assert 'rate 9.0 is out of range' in goal_error(TTS.Goal(text='あ', rate=9.0,
                                                             volume=1.0))


def test_chunk_to_msg_carries_samples_rate_and_stamp():
    samples = (np.arange(256, dtype=np.int16) - 128) * 100
    chunk = AudioChunk(samples=samples, valid_frames=200, sample_rate=44100,
                       play_time=12.5, index=3)
    msg = chunk_to_msg(chunk, 1_700_000_000_123_456_789, 'mouth')
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (1_700_000_000, 123_456_789)
    assert msg.header.frame_id == 'mouth'
    info = msg.audio.info
    assert (info.format, info.channels, info.rate, info.chunk) == (PA_INT16, 1, 44100, 256)
    np.testing.assert_array_equal(np.asarray(msg.audio.audio_data.int16_data), samples)


def test_stamps_are_exactly_chunk_periods_apart_within_an_utterance():
    now = [5_000_000_000]
    mono = [100.0]
    clock = StampClock(lambda: now[0], lambda: mono[0])
    first = clock.stamp_ns(1, 100.0)
    now[0] += 7_777  # the ROS clock moves while the utterance plays: no jitter in stamps
    assert clock.stamp_ns(1, 100.0 + 2048 / 44100) - first == round(2048 / 44100 * 1e9)
    assert first == 5_000_000_000


def test_status_levels_and_values():
    snap = Snapshot(name='n', hardware_id='cpu', lifecycle_state='active',
                    engine='openjtalk', voice='openjtalk/mei_normal',
                    stats=SpeechStats(spoken=2, last_error='x', last_rtf=0.25))
    status = build_status(snap)
    values = {kv.key: kv.value for kv in status.values}
    assert status.level == DiagnosticStatus.OK
    assert values['voice'] == 'openjtalk/mei_normal'
    assert values['utterances_spoken'] == '2' and values['last_rtf'] == '0.250'
    # A fleet robot whose host failed its last utterance: WARN, though DDS still lists
    # the host (a dead participant stays until its lease ends); OK again once it speaks.
    snap.extra = {'offboard_action': '/fleet/r1/say', 'offboard_host': 'found',
                  'offboard_failures_in_a_row': '2',
                  'offboard_last_failure': 'no audio from the host within 2 s'}
    status = build_status(snap)
    assert status.level == DiagnosticStatus.WARN
    assert status.message == ('active; the host /fleet/r1/say failed 2 time(s) in a row '
                              '(last: no audio from the host within 2 s): speaking onboard')
    snap.extra['offboard_failures_in_a_row'] = '0'
    assert build_status(snap).level == DiagnosticStatus.OK
    snap.fallback_reason = 'model missing'
    assert build_status(snap).level == DiagnosticStatus.WARN
    snap.pipeline_failure = 'publisher thread died'
    assert build_status(snap).level == DiagnosticStatus.ERROR
    assert 'publisher thread died' in build_status(snap).message


def test_log_line_and_status_report_the_gapless_start_delay_and_underruns():
    from hayakoe_ros.engines import VoiceParams
    from hayakoe_ros.node.diagnostics import rate_values
    from hayakoe_ros.speech import Outcome, Utterance
    from hayakoe_ros.speech.gapless import RateEstimator
    from hayakoe_ros.text.segment import Boundary, Segment
    from speech_fakes import ToneEngine

    utt = Utterance(7, 'こんにちは。', [Segment('こんにちは。', Boundary.END)], VoiceParams(),
                    1.0, submitted_at=10.0)
    utt.first_audio_at, utt.sample_rate, utt.audio_samples = 10.9, 8000, 16000
    att = utt.attempt  # what its (one) attempt measured
    att.synth_seconds, att.start_delay_s, att.underruns = 3.0, 0.625, 2
    utt.outcome = Outcome.SUCCEEDED
    stats = SpeechStats()
    line = stats.record(utt, 'topic')
    assert 'TTFA 0.900 s (start delay 0.625 s), RTF 1.500, 2 underrun(s): succeeded' in line
    rates, engine = RateEstimator(), ToneEngine()
    assert rate_values(rates, engine) == {'rtf_estimate': '', 'decoder_rtf_estimate': ''}
    rates.update('tone/tone', synth_s=1.2, audio_s=1.0, chars=10)
    assert rate_values(rates, engine)['decoder_rtf_estimate'] == ''  # no windows yet
    rates.update_decoder('tone/tone', synth_s=0.5, audio_s=1.25)
    snap = Snapshot(name='n', hardware_id='cpu', lifecycle_state='active', stats=stats,
                    extra=rate_values(rates, engine))
    values = {kv.key: kv.value for kv in build_status(snap).values}
    assert values['last_start_delay_s'] == '0.625' and values['last_underruns'] == '2'
    assert values['rtf_estimate'] == '1.200'
    assert values['decoder_rtf_estimate'] == '0.400'


def test_player_node_loads_none_of_the_speech_stack():
    """A robot that only plays audio needs no engine, front end or scheduler in memory."""
    import subprocess
    import sys

    code = ('import sys, hayakoe_ros.player_node; print(" ".join(sorted(m for m in sys.modules '
            'if m.startswith(("hayakoe", "onnxruntime", "pyopenjtalk", "transformers", '
            '"torch", "e2k")))))')
    loaded = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            timeout=60, check=True).stdout.split()
    assert 'hayakoe_ros.player_node' in loaded
    assert not [m for m in loaded if m.startswith(('hayakoe_ros.speech', 'hayakoe_ros.engines',
                                                   'hayakoe.', 'onnxruntime', 'pyopenjtalk',
                                                   'transformers', 'torch', 'e2k'))], loaded


@pytest.mark.parametrize('label, message', [
    ('active', 'the node is stopping: not accepting speech'),  # a shutdown under way
    ('inactive', 'the node is inactive, not active: not accepting speech'),
])
def test_a_node_that_takes_no_speech_says_why_without_contradiction(label, message):
    import types

    from hayakoe_ros.node.speech_in import _not_active

    assert str(_not_active(types.SimpleNamespace(lifecycle_label=label))) == message
