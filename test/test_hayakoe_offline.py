# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""hayakoe itself, offline, on the tiny random-weight model from tools/random_model/.

These tests pin what the rest of the project relies on: hayakoe loads a model
tree from ``file://`` without touching the network, multi-sentence Japanese
comes out at 44.1 kHz with the ONNX duration predictor's pauses between the
sentences, the raw float output is sane, and noise-free synthesis is exactly
repeatable.
"""

import socket
import time

import numpy as np
import pytest

from tools import random_model

# Third-party noise on importing hayakoe: its user dictionary uses pydantic v1-style
# validators, and hayakoe.models.commons decorates with torch.jit.script (deprecated in
# torch 2.13).
pytestmark = [
    pytest.mark.unit,
    pytest.mark.filterwarnings('ignore::pydantic.warnings.PydanticDeprecatedSince20'),
    pytest.mark.filterwarnings('ignore:`torch.jit.script` is deprecated:DeprecationWarning'),
]

SPEAKER = 'tiny-jp'
TEXT = 'こんにちは。今日はいい天気ですね。散歩に行きましょう。'
SAMPLE_RATE = 44100
HOP = 512
MIN_PAUSE_S = 0.08  # hayakoe's floor (_MIN_PAUSE_SEC) when nothing is predicted
DETERMINISTIC = {'noise': 0.0, 'noise_w': 0.0, 'sdp_ratio': 0.0}


@pytest.fixture
def refuse_network(monkeypatch):
    """Make every IP connection attempt fail; yield the list of attempted addresses."""
    attempts = []

    def refuse(address):
        attempts.append(address)
        raise ConnectionRefusedError(f'network disabled in this test: {address!r}')

    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            refuse(address)
        return real_connect(self, address)

    def connect_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            refuse(address)
        return real_connect_ex(self, address)

    def create_connection(address, *args, **kwargs):
        refuse(address)

    monkeypatch.setattr(socket.socket, 'connect', connect)
    monkeypatch.setattr(socket.socket, 'connect_ex', connect_ex)
    monkeypatch.setattr(socket, 'create_connection', create_connection)
    yield attempts


@pytest.fixture
def tts(tiny_model_root, hayakoe_clean_globals, refuse_network, tmp_path):
    """Return a prepared hayakoe TTS on the tiny model (CPU / ONNX backend)."""
    from hayakoe import TTS

    root = tiny_model_root
    engine = TTS(device='cpu', bert_source=f'file://{root}', cache_dir=tmp_path / 'hayakoe')
    engine.load(SPEAKER, source=f'file://{root}').prepare()
    yield engine
    assert refuse_network == [], f'hayakoe tried the network: {refuse_network}'


def _zero_runs(pcm, min_s):
    """Return (start_s, length_s) of runs of exact zeros at least ``min_s`` long."""
    zero = np.concatenate(([0], (pcm == 0).astype(np.int8), [0]))
    edges = np.flatnonzero(np.diff(zero))
    return [(start / SAMPLE_RATE, (end - start) / SAMPLE_RATE)
            for start, end in zip(edges[::2], edges[1::2])
            if end - start >= min_s * SAMPLE_RATE]


def test_tokenizer_is_one_token_per_character(tiny_model_root):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(
        str(tiny_model_root / 'bert' / 'tokenizer'), use_fast=True)
    for text in ('コンニチワ', '今日は天気', 'abcXYZ', '、。!?ー...', "ロボット,歩く-'α々"):
        ids = tokenizer(text)['input_ids']
        assert len(ids) == len(text) + 2, text
        assert tokenizer.unk_token_id not in ids, text
        assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id


def test_offline_multi_sentence_synthesis_with_predicted_pauses(tts):
    from hayakoe.api.speaker import _split_sentences, _SynthesisParams

    speaker = tts.speakers[SPEAKER]
    assert speaker.sampling_rate == SAMPLE_RATE
    assert speaker._dp_session is not None, 'duration_predictor.onnx was not loaded'

    sentences = _split_sentences(TEXT)
    assert len(sentences) == 3
    pauses = speaker._predict_pauses(TEXT, sentences, 'Neutral', 1.0, 0, 1.0, 0.0, 0.0)
    assert pauses is not None and len(pauses) == len(sentences) - 1
    # Real predictions, not hayakoe's fallback: above the 80 ms floor.
    assert all(MIN_PAUSE_S + 0.01 < p < 0.5 for p in pauses), pauses

    # Each sentence: raw float output, durations that explain its length.
    params = _SynthesisParams(**DETERMINISTIC)
    lengths = []
    for sentence in sentences:
        audio, timings = speaker._synthesize_one(sentence, params)
        frames = [t.duration * SAMPLE_RATE / HOP for t in timings]
        assert audio.dtype == np.float32 and np.isfinite(audio).all()
        assert 0.05 < float(np.abs(audio).max()) <= 1.0
        assert len(audio) == round(sum(frames)) * HOP
        assert 3.0 <= sum(frames) / len(frames) <= 8.0, 'frames per phoneme'
        lengths.append(len(audio))

    result = tts.speakers[SPEAKER].generate(TEXT, **DETERMINISTIC)
    assert result.sr == SAMPLE_RATE
    pcm = result.data
    assert pcm.dtype == np.int16
    assert np.count_nonzero(pcm) > 0.8 * (len(pcm) - sum(pauses) * SAMPLE_RATE)
    assert float(np.sqrt(np.mean(pcm.astype(np.float64) ** 2))) > 1000

    # The predicted pauses appear as digital silence between the sentences.
    gaps = _zero_runs(pcm, 0.05)
    assert len(gaps) == len(pauses), gaps
    expected_start = 0.0
    for (start, length), pause, sentence_len in zip(gaps, pauses, lengths):
        expected_start += sentence_len / SAMPLE_RATE
        assert abs(start - expected_start) < 4 * HOP / SAMPLE_RATE + 0.001, (start, gaps)
        assert pause - 0.03 <= length <= pause + 0.005, (length, pause)
        expected_start += length
    speech = len(pcm) - sum(length for _, length in gaps) * SAMPLE_RATE
    assert abs(speech - sum(lengths)) <= 4 * HOP * len(lengths)


def test_noise_free_synthesis_is_deterministic(tts):
    from hayakoe.api.speaker import _SynthesisParams

    speaker = tts.speakers[SPEAKER]
    first = speaker.generate(TEXT, **DETERMINISTIC)
    second = speaker.generate(TEXT, **DETERMINISTIC)
    assert np.array_equal(first.data, second.data)
    params = _SynthesisParams(**DETERMINISTIC)
    raw_a, _ = speaker._synthesize_one('今日はいい天気ですね。', params)
    raw_b, _ = speaker._synthesize_one('今日はいい天気ですね。', params)
    assert np.array_equal(raw_a, raw_b)


def test_default_noise_still_speaks(tts):
    speaker = tts.speakers[SPEAKER]
    result = speaker.generate('はい、わかりました？')
    assert result.sr == SAMPLE_RATE and len(result.data) > 0.2 * SAMPLE_RATE
    assert np.count_nonzero(result.data) > 0.8 * len(result.data)


def test_model_build_is_cached(tiny_model_root, monkeypatch):
    def no_rebuild(*args, **kwargs):
        raise AssertionError('cached_model rebuilt an existing model')

    stamp = (tiny_model_root / 'random_model.json').stat().st_mtime_ns
    monkeypatch.setattr(random_model, 'build_model', no_rebuild)
    t0 = time.perf_counter()
    again = random_model.cached_model(tiny_model_root.parent, 'tiny', SPEAKER)
    assert again == tiny_model_root
    assert time.perf_counter() - t0 < 2.0
    assert (tiny_model_root / 'random_model.json').stat().st_mtime_ns == stamp
    assert tiny_model_root.name.startswith('tiny-')
    assert not list(tiny_model_root.parent.glob(f'.{tiny_model_root.name}.tmp-*'))


@pytest.mark.long  # the CUDA backend's files, beside the CUDA-path tests (make test-long):
# a fresh clone builds the tiny model's PyTorch tree for it (about 45 s here)
def test_pytorch_artifacts_load_with_hayakoe(tiny_model_root, hayakoe_clean_globals):
    """The CUDA backend's files (built with pytorch=True) load through hayakoe's loaders."""
    from pathlib import Path

    from hayakoe.api.speaker import Speaker, _SynthesisParams
    from hayakoe.nlp import bert_models

    root = random_model.cached_model(tiny_model_root.parent, 'tiny', SPEAKER, pytorch=True)
    bert_models.load_tokenizer(str(root / 'bert' / 'tokenizer'))
    bert_models.load_model(str(root / 'pytorch' / 'bert' / 'fp32'), device='cpu')
    # hayakoe only picks the pytorch backend for CUDA; the loader itself runs on CPU.
    speaker = Speaker(name=SPEAKER, model_dir=Path(root) / 'pytorch' / 'speakers' / SPEAKER,
                      device='cpu', backend='pytorch')
    audio, timings = speaker._synthesize_one('こんにちは。', _SynthesisParams(**DETERMINISTIC))
    frames = sum(t.duration for t in timings) * SAMPLE_RATE / HOP
    assert len(audio) == round(frames) * HOP
    assert 0.05 < float(np.abs(audio).max()) <= 1.0
    assert 3.0 <= frames / len(timings) <= 8.0


@pytest.mark.long  # builds the tiny model's PyTorch tree twice over (about a minute here)
def test_pytorch_only_tree_holds_the_same_weights_without_onnx(tiny_model_root):
    """``onnx=False`` (what bench/cuda.py loads): no ONNX file, the same PyTorch weights."""
    from safetensors.numpy import load_file

    both = random_model.cached_model(tiny_model_root.parent, 'tiny', SPEAKER, pytorch=True)
    only = random_model.cached_model(tiny_model_root.parent, 'tiny', SPEAKER, pytorch=True,
                                     onnx=False)
    assert only != both and only.name.startswith('tiny-')
    assert not (only / 'onnx').exists() and (both / 'onnx').is_dir()
    name = f'{SPEAKER}.safetensors'
    a = load_file(both / 'pytorch' / 'speakers' / SPEAKER / name)
    b = load_file(only / 'pytorch' / 'speakers' / SPEAKER / name)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match='onnx=True or pytorch=True'):
        random_model.build_model(tiny_model_root.parent / 'never', 'tiny', SPEAKER, onnx=False)
