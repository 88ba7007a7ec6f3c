# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Engines on their own: Open JTalk and hayakoe (tiny random-weight model), no ROS."""

import shutil

import numpy as np
import pytest

from hayakoe_ros.engines import (EngineLoadError, NothingToSpeakError, UnknownStyleError,
                                 VoiceParams, create_engine)
from hayakoe_ros.engines import hayakoe_internals
from hayakoe_ros.engines import ort_session
from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine

pytestmark = pytest.mark.unit


def test_hayakoe_internals_used_by_the_node_are_still_there():
    # Fails loudly when a hayakoe release moves or renames what hayakoe_internals uses.
    hayakoe_internals.check_compatible()
    import hayakoe
    from importlib.metadata import version

    assert version('hayakoe').rsplit('.', 1)[0] in hayakoe_internals.TESTED_VERSIONS, \
        'hayakoe version not tested: run the suite, then add it to TESTED_VERSIONS'
    assert hasattr(hayakoe, 'TTS')


def test_the_compatibility_check_names_every_private_name_hayakoe_internals_uses():
    """A private name used but not checked would break silently on a new hayakoe."""
    import ast
    import inspect

    from tools import hayakoe_probe

    # The test and bench probes reach the same private API; a name only they use must be
    # checked too.
    tree = ast.Module(body=[*ast.parse(inspect.getsource(hayakoe_internals)).body,
                            *ast.parse(inspect.getsource(hayakoe_probe)).body],
                      type_ignores=[])
    ours = {node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    used = {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr.startswith('_')
            and not node.attr.startswith('__')}
    used |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and (node.module or '').startswith('hayakoe') for alias in node.names
             if alias.name.startswith('_')}
    used |= {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
             and isinstance(node.value, str) and node.value.startswith('_')
             and node.value.isidentifier() and not node.value.startswith('__')}
    checked = ''.join(inspect.getsource(f) for f in (
        hayakoe_internals.check_compatible, hayakoe_internals._terminable_run_problems,
        hayakoe_internals._staged_problems))
    missing = sorted(name for name in used - ours if name not in checked)
    assert not missing, f'used in hayakoe_internals or the probes, not checked: {missing}'
    # Nothing else in the package reaches into hayakoe's private API.
    from pathlib import Path
    package = Path(hayakoe_internals.__file__).resolve().parents[1]
    for path in package.rglob('*.py'):
        if path.name == 'hayakoe_internals.py':
            continue
        text = path.read_text(encoding='utf-8')
        for needle in ('._speaker._', '._tts._', 'speaker._', 'from hayakoe.api'):
            assert needle not in text, f'{path}: {needle!r}'


def test_openjtalk_speaks_japanese_offline(openjtalk_engine, no_network):
    audio = openjtalk_engine.synthesize('こんにちは。今日はいい天気ですね。', VoiceParams())
    assert openjtalk_engine.sample_rate == 48000
    assert audio.dtype == np.float32
    seconds = audio.size / 48000
    assert 1.5 < seconds < 5.0, seconds  # ~16 morae at natural speed
    rms = float(np.sqrt(np.mean(audio.astype(np.float64) ** 2)))
    assert rms > 0.02
    faster = openjtalk_engine.synthesize('こんにちは。今日はいい天気ですね。',
                                         VoiceParams(length_scale=0.5))
    assert faster.size < 0.7 * audio.size


def test_openjtalk_rejects_unspeakable_and_unknown_style(openjtalk_engine):
    with pytest.raises(NothingToSpeakError):
        openjtalk_engine.synthesize('😀', VoiceParams())
    with pytest.raises(UnknownStyleError):
        openjtalk_engine.synthesize('あ', VoiceParams(style='Happy'))


def test_hayakoe_engine_synthesises_raw_float_audio(tiny_engine, det_voice):
    audio = tiny_engine.synthesize('こんにちは、今日はいい天気ですね。', det_voice)
    assert tiny_engine.sample_rate == 44100
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert np.all(np.isfinite(audio)) and np.max(np.abs(audio)) > 0.01
    again = tiny_engine.synthesize('こんにちは、今日はいい天気ですね。', det_voice)
    np.testing.assert_array_equal(audio, again)  # noise = noise_w = sdp_ratio = 0


def test_hayakoe_pause_prediction_uses_the_duration_predictor(tiny_engine, det_voice):
    sentence = tiny_engine.predict_pause('こんにちは。', '今日はいい天気ですね。', det_voice)
    clause = tiny_engine.predict_pause('こんにちは、', '今日はいい天気ですね。', det_voice)
    none = tiny_engine.predict_pause('こんにちは', '今日は。', det_voice)
    assert sentence > 0.08 and clause > 0.0
    assert none == 0.0
    slow = tiny_engine.predict_pause('こんにちは。', '今日はいい天気ですね。',
                                     VoiceParams(**{**det_voice.__dict__,
                                                    'length_scale': 2.0}))
    assert slow > 1.5 * sentence  # pauses scale with the speaking rate


def _spinning_by_kind(engine) -> dict:
    """``{'front': {...}, 'decoder': {...}}``: the spinning entries of each kind of session.

    BERT, the duration predictor and the synthesizer's first stage are on the way to a
    segment's first audio; the decoder pieces run its windows.
    """
    spinning = engine.session_spinning()
    assert {'bert', 'synthesizer', 'duration_predictor', 'decoder.0'} <= set(spinning)
    return {'front': {spinning[r] for r in ('bert', 'synthesizer', 'duration_predictor')},
            'decoder': {v for r, v in spinning.items() if r.startswith('decoder.')}}


@pytest.mark.parametrize('mode, front, decoder', [('all', '1', '1'), ('none', '0', '0'),
                                                   ('first_audio', '1', '0')])
def test_num_threads_and_spinning_reach_every_onnx_session(tiny_model_root, mode, front,
                                                           decoder):
    engine = HayakoeEngine('tiny-jp', speaker_source=f'file://{tiny_model_root}',
                           bert_source=f'file://{tiny_model_root}', num_threads=1,
                           spinning=mode)
    try:
        threads = engine.session_threads()
        # The synthesizer runs as its first stage and decoder pieces (windowed decode).
        assert {'bert', 'synthesizer', 'duration_predictor', 'decoder.0'} <= set(threads)
        assert set(threads.values()) == {1}
        assert _spinning_by_kind(engine) == {'front': {front}, 'decoder': {decoder}}
        _assert_spinning_stops_with_the_run(engine)
    finally:
        engine.close()


def _assert_spinning_stops_with_the_run(engine) -> None:
    # Spinning threads stop when a run returns: a pool spinning on would take a core
    # from the next session's run (the pieces run one after the other).
    spinning = engine.session_spinning()
    stop = engine.session_config(ort_session.SPINNING_STOP_KEY)
    assert {role: stop[role] for role in spinning} == \
        {role: '1' if v == '1' else '' for role, v in spinning.items()}


def test_default_spinning_is_the_way_to_first_audio_within_its_runs(tiny_engine):
    # BERT and the first stage spin, the decoder's windows sleep: 'all' bought about 4 ms
    # of first audio for 0.7 % more CPU over four paired runs (BENCHMARKS.md).
    assert _spinning_by_kind(tiny_engine) == {'front': {'1'}, 'decoder': {'0'}}
    _assert_spinning_stops_with_the_run(tiny_engine)


def test_unknown_spinning_mode_is_a_load_error(tiny_model_root):
    with pytest.raises(EngineLoadError, match="spinning 'sometimes' is unknown; use one "
                       'of: none, first_audio, all'):
        HayakoeEngine('tiny-jp', speaker_source=f'file://{tiny_model_root}',
                      bert_source=f'file://{tiny_model_root}', spinning='sometimes')


def test_hayakoe_rejects_unknown_style_and_unspeakable_text(tiny_engine, det_voice):
    with pytest.raises(UnknownStyleError, match='offers'):
        tiny_engine.synthesize('あ', VoiceParams(style='NoSuchStyle'))
    with pytest.raises(NothingToSpeakError):
        tiny_engine.synthesize('。。', det_voice)


def test_missing_model_is_a_clear_load_error(tmp_path):
    with pytest.raises(EngineLoadError, match='cannot load hayakoe speaker'):
        create_engine('hayakoe', speaker='tiny-jp', speaker_source=f'file://{tmp_path}',
                      bert_source=f'file://{tmp_path}')


def test_corrupt_model_file_is_a_clear_load_error(tiny_model_root, tmp_path):
    broken = tmp_path / 'model'
    shutil.copytree(tiny_model_root, broken)
    (broken / 'onnx' / 'speakers' / 'tiny-jp' / 'synthesizer.onnx').write_bytes(b'garbage')
    with pytest.raises(EngineLoadError, match='synthesizer|INVALID|protobuf|Load'):
        create_engine('hayakoe', speaker='tiny-jp', speaker_source=f'file://{broken}',
                      bert_source=f'file://{broken}')


def test_unknown_engine_name():
    with pytest.raises(EngineLoadError, match="unknown engine 'festival'"):
        create_engine('festival')
