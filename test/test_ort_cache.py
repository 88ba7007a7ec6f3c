# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Offline-optimised ONNX models (engines.ort_cache), tiny model, no ROS.

Same audio, cached, invalidated, and a clean fallback to the plain model.
"""

import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import onnxruntime as ort
import pytest

from hayakoe_ros.engines import ort_cache
from hayakoe_ros.engines.base import VoiceParams
from hayakoe_ros.engines.decoder_receptive import ChainSpec
from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine

pytestmark = pytest.mark.unit

TEXTS = ('こんにちは、今日はいい天気ですね。', '音声合成の準備ができました。')
LEVEL = 'ORT_ENABLE_ALL'


def _engine(root, cache_dir, optimized: bool) -> HayakoeEngine:
    return HayakoeEngine('tiny-jp', speaker_source=f'file://{root}',
                         bert_source=f'file://{root}', cache_dir=str(cache_dir),
                         num_threads=1, optimized_models=optimized)


def _speak(engine: HayakoeEngine) -> tuple:
    voice = VoiceParams(style=engine.styles[0], noise=0.0, noise_w=0.0, sdp_ratio=0.0)
    audio = [engine.synthesize(t, voice) for t in TEXTS]
    return audio, engine.predict_pause(TEXTS[0], TEXTS[1], voice)


def _decoder_pieces(root) -> int:
    """How many pieces the tiny model's decoder is cut into (from its config)."""
    config = json.loads((root / 'onnx' / 'speakers' / 'tiny-jp' / 'config.json')
                        .read_text(encoding='utf-8'))['model']
    return len(ChainSpec.from_config(config).pieces())


def _cached_models(cache_dir) -> list:
    return sorted((cache_dir / 'hayakoe_ros' / 'ort-optimized').glob('*/model.onnx'))


@pytest.mark.long  # about 15 s here; the cache entries are checked in the quick set
def test_optimised_models_speak_exactly_like_the_plain_ones(tiny_model_root, tmp_path,
                                                            hayakoe_clean_globals):
    plain = _engine(tiny_model_root, tmp_path, optimized=False)
    try:
        want_audio, want_pause = _speak(plain)
    finally:
        plain.close()
    assert _cached_models(tmp_path) == []
    for _ in range(2):  # converts, then loads from the cache
        engine = _engine(tiny_model_root, tmp_path, optimized=True)
        try:
            audio, pause = _speak(engine)
            levels = {sess.get_session_options().graph_optimization_level
                      for sess in (engine.tts._bert_session, engine.speaker._synth_session,
                                   engine.speaker._dp_session)}
        finally:
            engine.close()
        assert levels == {ort.GraphOptimizationLevel.ORT_DISABLE_ALL}
        assert [len(a) for a in audio] == [len(a) for a in want_audio]
        for got, want in zip(audio, want_audio):
            assert np.max(np.abs(got)) > 0.01  # real audio, not silence
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
        assert pause == pytest.approx(want_pause, abs=1e-6)
    # BERT, synthesizer and duration predictor, each converted once, and the pieces the
    # synthesizer is cut into for the windowed decode (its first stage and the decoder's)
    assert len(_cached_models(tmp_path)) == 3 + 1 + _decoder_pieces(tiny_model_root)


def test_second_request_uses_the_cached_copy(tiny_model_root, tmp_path):
    src = str(next(tiny_model_root.glob('onnx/speakers/tiny-jp/duration_predictor.onnx')))
    cache = ort_cache.OptimizedModelCache(tmp_path)
    first = cache.optimized(src, LEVEL)
    assert first is not None and first.is_file()
    stamp = first.stat().st_mtime_ns
    assert cache.optimized(src, LEVEL) == first
    assert first.stat().st_mtime_ns == stamp  # not converted again
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert cache.session_source(src, options) == str(first)
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL


@pytest.mark.long  # about 10 s here; the cache's miss, hit and fall-backs stay quick
def test_a_changed_model_file_or_runtime_gets_a_new_entry(tiny_model_root, tmp_path,
                                                          monkeypatch):
    speaker_dir = tiny_model_root / 'onnx' / 'speakers' / 'tiny-jp'
    model = tmp_path / 'models' / 'model.onnx'
    model.parent.mkdir()
    shutil.copyfile(speaker_dir / 'duration_predictor.onnx', model)
    cache = ort_cache.OptimizedModelCache(tmp_path / 'cache')
    old = cache.optimized(str(model), LEVEL)
    shutil.copyfile(speaker_dir / 'synthesizer.onnx', model)  # same path, new content
    new = cache.optimized(str(model), LEVEL)
    assert new is not None and new != old
    assert not old.exists(), 'the entry of the replaced file was kept'
    sess = ort.InferenceSession(str(new), providers=['CPUExecutionProvider'])
    want = ort.InferenceSession(str(model), providers=['CPUExecutionProvider'])
    assert [i.name for i in sess.get_inputs()] == [i.name for i in want.get_inputs()]
    monkeypatch.setattr(ort, '__version__', '0.0.1')
    assert cache.entry_dir(str(model), LEVEL) != new.parent


def test_a_model_that_cannot_be_converted_falls_back_to_the_plain_file(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger='hayakoe_ros.engines.ort_cache')
    broken = tmp_path / 'broken.onnx'
    broken.write_bytes(b'not an onnx model')
    cache = ort_cache.OptimizedModelCache(tmp_path / 'cache')
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert cache.session_source(str(broken), options) == str(broken)
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert 'optimising' in caplog.text and 'failed' in caplog.text
    markers = list((tmp_path / 'cache').glob('*.failed'))
    assert len(markers) == 1 and 'Protobuf' in markers[0].read_text(encoding='utf-8')
    assert not list((tmp_path / 'cache').glob('.tmp-*'))
    caplog.clear()
    assert cache.optimized(str(broken), LEVEL) is None  # not retried while marked
    assert 'failed before' in caplog.text


@pytest.mark.long  # about 6 s here; the fall-back to the plain file stays quick (above)
def test_engine_loads_plain_models_when_the_cache_is_not_writable(tiny_model_root, tmp_path,
                                                                  hayakoe_clean_globals,
                                                                  caplog):
    blocker = tmp_path / 'not_a_dir'
    blocker.write_text('a file where the cache directory would be', encoding='utf-8')
    with caplog.at_level(logging.WARNING, logger='hayakoe_ros'):
        engine = _engine(tiny_model_root, blocker, optimized=True)
    # One cause, one WARNING, however many model files it keeps unoptimised.
    warned = [r for r in caplog.records if r.levelno == logging.WARNING
              and r.name.endswith('ort_cache') and 'is not writable' in r.getMessage()]
    assert len(warned) == 1, caplog.text
    # The synthesizer cannot be cut there either: whole segments, said once.
    assert [r.name for r in caplog.records if 'decoding whole segments' in r.getMessage()
            ] == ['hayakoe_ros.engines.hayakoe_staged']
    try:
        audio, _ = _speak(engine)
        level = engine.speaker._synth_session.get_session_options().graph_optimization_level
    finally:
        engine.close()
    assert level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert all(np.max(np.abs(a)) > 0.01 for a in audio)


@pytest.mark.long  # about 12 s here: a fresh interpreter loads the engine
def test_cpu_path_with_optimised_models_needs_no_torch(tiny_model_root, tmp_path):
    # A Raspberry Pi has no torch: hide it (import fails) and load, convert and speak.
    code = textwrap.dedent(f"""
        import sys
        sys.modules['torch'] = None
        from hayakoe_ros.engines.base import VoiceParams
        from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine
        uri = 'file://{tiny_model_root}'
        e = HayakoeEngine('tiny-jp', speaker_source=uri, bert_source=uri,
                          cache_dir='{tmp_path}', num_threads=1)
        print(len(e.synthesize('こんにちは。', VoiceParams(style=e.styles[0]))))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=300, check=False, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert int(proc.stdout.split()[-1]) > 10000
    # the cut pieces too: no torch needed
    assert len(_cached_models(tmp_path)) == 3 + 1 + _decoder_pieces(tiny_model_root)
