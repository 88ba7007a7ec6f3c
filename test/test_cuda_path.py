# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The CUDA (PyTorch) path, as far as a machine without a GPU allows.

hayakoe picks its PyTorch backend for ``cuda`` devices; the same backend runs on the CPU
when a ``Speaker`` is built with ``backend='pytorch'``, which exercises every line of
hayakoe_internals' PyTorch branch. Only the GPU itself is missing here.
"""

import numpy as np
import pytest

from hayakoe_ros.engines import EngineLoadError, VoiceParams, create_engine
from tools import hayakoe_probe

# Long (about 70 s here: torch and a PyTorch model tree load): the PyTorch backend, not
# the ONNX path that the robots run and the quick set covers.
pytestmark = [pytest.mark.unit, pytest.mark.long]

torch = pytest.importorskip('torch')


@pytest.fixture(scope='module')
def pytorch_speaker():
    from hayakoe.api.speaker import Speaker
    from hayakoe.nlp import bert_models

    from conftest import model_cache_dir
    from tools.random_model import cached_model, unload_hayakoe_globals

    root = cached_model(model_cache_dir(), 'tiny', 'tiny-jp', pytorch=True)
    unload_hayakoe_globals()
    bert_models.load_tokenizer(str(root / 'bert' / 'tokenizer'))
    bert_models.load_model(str(root / 'pytorch' / 'bert' / 'fp32'), device='cpu')
    speaker = Speaker('tiny-jp', root / 'pytorch' / 'speakers' / 'tiny-jp', device='cpu',
                      backend='pytorch')
    yield speaker
    unload_hayakoe_globals()
    # Leave a tokenizer loaded, as found: later tests run hayakoe's g2p without an engine
    # of their own, and with none loaded hayakoe would try to fetch one from the Hub.
    bert_models.load_tokenizer(str(root / 'bert' / 'tokenizer'))


def test_cuda_device_without_a_gpu_is_a_clear_load_error(tiny_model_root):
    if torch.cuda.is_available():
        pytest.skip('a GPU is present')
    with pytest.raises(EngineLoadError, match="device 'cuda' requested but CUDA is not"):
        create_engine('hayakoe', speaker='tiny-jp', device='cuda',
                      speaker_source=f'file://{tiny_model_root}',
                      bert_source=f'file://{tiny_model_root}')


def test_pytorch_backend_synthesises_and_predicts_durations(pytorch_speaker, det_voice,
                                                             tiny_engine):
    text = 'こんにちは。今日はいい天気ですね。'
    audio = hayakoe_probe.synthesize_float(pytorch_speaker, 'こんにちは。', det_voice)
    assert audio.dtype == np.float32 and audio.size > 0.2 * 44100
    assert np.all(np.isfinite(audio)) and np.max(np.abs(audio)) > 0.01
    ids, frames = hayakoe_probe.predict_durations(pytorch_speaker, text, det_voice)
    assert len(ids) == len(frames) and np.all(frames >= 0)
    onnx_ids, onnx_frames = hayakoe_probe.predict_durations(tiny_engine.speaker, text, det_voice)
    assert ids == onnx_ids
    # fp32 BERT (PyTorch) vs INT8 BERT (ONNX): the same model, durations within a frame or
    # two per phoneme.
    assert np.mean(np.abs(np.asarray(frames) - onnx_frames)) < 1.0
    slow = hayakoe_probe.predict_durations(pytorch_speaker, text,
                                VoiceParams(**{**det_voice.__dict__, 'length_scale': 2.0}))
    assert slow[1].sum() > 1.8 * frames.sum()


def test_pytorch_backend_times_its_phonemes(pytorch_speaker, det_voice):
    """The CUDA engine's synthesis (hayakoe_internals, PyTorch branch) gives phones too."""
    from hayakoe_ros.engines import hayakoe_internals as hk
    from hayakoe_ros.engines.hayakoe_phonemes import phones_from_frames

    feats = hk.segment_features(pytorch_speaker, 'こんにちは、世界。')
    audio, frames = hk.synthesize_features(pytorch_speaker, feats, det_voice)
    assert frames is not None and len(frames) == len(feats.phones)
    phones = phones_from_frames(feats.phones, frames, hk.hop_length(pytorch_speaker),
                                len(audio))
    assert int(frames.sum()) * hk.hop_length(pytorch_speaker) == len(audio)
    assert phones[0].start == 0 and phones[-1].end == len(audio)
    assert all(a.end == b.start for a, b in zip(phones, phones[1:]))
    assert [p.symbol for p in phones if p.symbol not in ('sil', 'pau')] == \
        ['k', 'o', 'N', 'n', 'i', 'ch', 'i', 'w', 'a', 's', 'e', 'k', 'a', 'i']


@pytest.mark.parametrize('cudnn', [False, True])
def test_cuda_load_sets_cudnn_for_the_process(tiny_model_root, monkeypatch, caplog, cudnn):
    """``cudnn`` reaches torch's flag before the model loads (a GPU mocked as present).

    Without a real GPU the load itself then fails (a clear load error); the flag is set
    first, as on a machine with one.
    """
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(torch.cuda, 'device_count', lambda: 1)
    before = torch.backends.cudnn.enabled
    torch.backends.cudnn.enabled = not cudnn
    try:
        with caplog.at_level('INFO', logger='hayakoe_ros.engines.hayakoe_load'), \
                pytest.raises(EngineLoadError):
            create_engine('hayakoe', speaker='tiny-jp', device='cuda', cudnn=cudnn,
                          speaker_source=f'file://{tiny_model_root}',
                          bert_source=f'file://{tiny_model_root}')
        assert torch.backends.cudnn.enabled is cudnn
        assert f"cuDNN {'enabled' if cudnn else 'disabled'} for this process" in caplog.text
    finally:
        torch.backends.cudnn.enabled = before
