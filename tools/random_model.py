# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Build random-weight hayakoe models in hayakoe 1.3.1's on-disk format.

The real voices and the Japanese DeBERTa live on a model hub that tests cannot
reach, so this module writes a *random-weight* model tree with exactly the
layout, file names, tensor names and I/O signatures hayakoe expects::

    ROOT/bert/tokenizer/                      char-level BertJapaneseTokenizer
    ROOT/onnx/bert/q8/bert_q8.onnx            INT8 dynamic-quantised DeBERTa-v2
    ROOT/onnx/speakers/NAME/config.json       HyperParameters (JP-Extra)
    ROOT/onnx/speakers/NAME/style_vectors.npy float32 [num_styles, 256]
    ROOT/onnx/speakers/NAME/synthesizer.onnx  net_g.infer -> (audio, durations)
    ROOT/onnx/speakers/NAME/duration_predictor.onnx   net_g.predict_durations
    ROOT/pytorch/bert/fp32/                   (pytorch=True) DebertaV2ForMaskedLM
    ROOT/pytorch/speakers/NAME/               (pytorch=True) *.safetensors + config

It loads with::

    TTS(device='cpu', bert_source=f'file://{root}', cache_dir=...)
        .load(name, source=f'file://{root}').prepare()

The weights are random, but calibrated so the fixture behaves like speech at
the level hayakoe inspects it: the duration predictor is biased to several
frames per phoneme (so predicted sentence pauses are measurable, above
hayakoe's 80 ms floor), and the decoder's last convolution is scaled so the
raw float waveform peaks at a speech-like level without clipping.

Building needs torch, transformers, onnx, onnxruntime and safetensors (torch
and onnx are not hayakoe CPU runtime dependencies).  A cache hit in
:func:`cached_model` imports none of them.

CLI::

    python -m tools.random_model --recipe tiny --out DIR [--pytorch]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
from dataclasses import dataclass
import hashlib
from importlib import metadata
import json
import logging
import math
import os
from pathlib import Path
import shutil
import sys
import tempfile
import time
from typing import Any, Callable, Iterator
import warnings

import numpy as np

LOG = logging.getLogger(__name__)

# Version marker of the tree layout written here; bump on format changes.
FORMAT_VERSION = 1

# hayakoe hard-codes these widths (TextEncoder.bert_proj / style_proj).
BERT_WIDTH = 1024
STYLE_WIDTH = 256

# DeBERTa-v2 settings shared by every recipe; they mirror
# ku-nlp/deberta-v2-large-japanese-char-wwm (the BERT hayakoe ships), so a
# recipe only chooses the size.
_DEBERTA_COMMON: dict[str, Any] = {
    'hidden_act': 'gelu',
    'hidden_dropout_prob': 0.1,
    'attention_probs_dropout_prob': 0.1,
    'initializer_range': 0.02,
    'layer_norm_eps': 1e-7,
    'max_position_embeddings': 512,
    'max_relative_positions': -1,
    'norm_rel_ebd': 'layer_norm',
    'pad_token_id': 0,
    'pooler_dropout': 0,
    'pooler_hidden_act': 'gelu',
    'pooler_hidden_size': BERT_WIDTH,
    'pos_att_type': ['p2c', 'c2p'],
    'position_biased_input': False,
    'position_buckets': 256,
    'relative_attention': True,
    'share_att_key': True,
    'type_vocab_size': 0,
}

# HyperParameters.data shared by every recipe (44.1 kHz, hop 512, JP-Extra).
_DATA_COMMON: dict[str, Any] = {
    'use_jp_extra': True,
    'sampling_rate': 44100,
    'filter_length': 2048,
    'hop_length': 512,
    'win_length': 2048,
    'n_mel_channels': 128,
    'mel_fmin': 0.0,
    'mel_fmax': None,
    'add_blank': True,
    'cleaned_text': True,
}

# Sentences used to calibrate durations and output level (and to trace).
_CALIBRATION_TEXTS = (
    'こんにちは。今日はいい天気ですね。散歩に行きましょう。',
    'ロボットが、ゆっくりと部屋の中を歩きます！',
    'はい、わかりました？',
)

# More sentences for the duration calibration of recipes with
# 'broad_duration_calibration' (kana, kanji and katakana words, questions,
# exclamations, clauses; none from the benchmark corpus): the speaking rate of a
# random-weight model varies a lot from sentence to sentence, so a rate set on
# three sentences alone does not hold for text in general.
_DURATION_CALIBRATION_TEXTS = (
    '明日の天気は晴れ時々曇りで、夕方から少し雨が降るでしょう。',
    'すみません、駅までの道を教えていただけますか？',
    'このボタンを押すと、ドアが自動的に開きます。',
    'ゆっくり休んでくださいね。',
    'コンピューターのソフトウェアをアップデートしています。',
    '私たちは毎朝七時に起きて、散歩に出かけます。',
    'わあ、すごい！本当にできたんだ！',
    '図書館は月曜日が休館日です。',
    'お客様、お荷物をお預かりしましょうか？',
    'プロジェクトの締め切りは来週の金曜日です。',
    'ねえ、ちょっと待って。',
    '新しい冷蔵庫を買ったので、古いものを処分しました。',
)

RECIPES: dict[str, dict[str, Any]] = {
    # Small enough to build in well under a minute on two cores and to
    # synthesise a sentence in a fraction of a second.  Widths hayakoe
    # hard-codes (BERT 1024, style 256), the 44.1 kHz / hop-512 framing, the
    # six-layer transformer flow and the three-kernel HiFi-GAN resblocks are
    # kept; only channel counts and depths shrink.
    'tiny': {
        'bert': {
            'arch': 'deberta-v2',
            'hidden_size': BERT_WIDTH,
            'num_hidden_layers': 3,  # hidden_states[-3] = output of layer 1
            'num_attention_heads': 4,
            'intermediate_size': 256,
            'quantize': 'int8',
        },
        'model': {
            'use_spk_conditioned_encoder': True,
            'use_noise_scaled_mas': True,
            'use_mel_posterior_encoder': False,
            'use_duration_discriminator': False,
            'use_wavlm_discriminator': True,
            'inter_channels': 32,
            'hidden_channels': 48,
            'filter_channels': 128,
            'n_heads': 2,
            'n_layers': 3,
            'kernel_size': 3,
            'p_dropout': 0.1,
            'resblock': '1',
            'resblock_kernel_sizes': [3, 7, 11],
            'resblock_dilation_sizes': [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
            'upsample_rates': [8, 8, 8],
            'upsample_initial_channel': 64,
            'upsample_kernel_sizes': [16, 16, 16],
            'n_layers_q': 3,
            'use_spectral_norm': False,
            'gin_channels': 16,
        },
        'styles': ['Neutral', 'Happy'],
        'style_std': 0.1,
        # Mean frames per phoneme (blanks included) and per pause symbol
        # (. ! ? , …) at length_scale 1, and the log-domain spread of the
        # deterministic duration predictor (see _calibrate_durations).
        'frames_per_phoneme': 4.5,
        'punctuation_frames': 12.0,
        'duration_spread': 0.3,
        # Raw (pre-normalisation) float peak of the calibration sentences.
        'raw_peak': 0.5,
    },
    # Real JP-Extra synthesizer dimensions and a DeBERTa-v2-large-size BERT
    # (24 layers, hidden 1024, 16 heads, intermediate 4096), INT8 dynamic-
    # quantised like hayakoe's bert_q8.onnx.  For benchmarks that need real
    # compute cost; the build takes minutes and several GiB of memory.
    'full': {
        'bert': {
            'arch': 'deberta-v2',
            'hidden_size': BERT_WIDTH,
            'num_hidden_layers': 24,
            'num_attention_heads': 16,
            'intermediate_size': 4096,
            'quantize': 'int8',
        },
        'model': {
            'use_spk_conditioned_encoder': True,
            'use_noise_scaled_mas': True,
            'use_mel_posterior_encoder': False,
            'use_duration_discriminator': False,
            'use_wavlm_discriminator': True,
            'inter_channels': 192,
            'hidden_channels': 192,
            'filter_channels': 768,
            'n_heads': 2,
            'n_layers': 6,
            'kernel_size': 3,
            'p_dropout': 0.1,
            'resblock': '1',
            'resblock_kernel_sizes': [3, 7, 11],
            'resblock_dilation_sizes': [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
            'upsample_rates': [8, 8, 2, 2, 2],
            'upsample_initial_channel': 512,
            'upsample_kernel_sizes': [16, 16, 8, 2, 2],
            'n_layers_q': 3,
            'use_spectral_norm': False,
            'gin_channels': 512,
        },
        'styles': ['Neutral', 'Happy'],
        'style_std': 0.1,
        # Speaking rate.  With 24 random BERT layers the duration predictor's
        # per-sentence rate spreads widely (5-18 phonemes/s at the tiny
        # recipe's settings), so the BERT projection into the text encoder is
        # scaled down (durations then depend on BERT less, compute is the
        # same) and the rate is set on a broad set of sentences.  3.3 frames
        # (38 ms) per symbol, blanks included, gives 11-14 phonemes/s, like
        # real read Japanese; bench/run.py measures it on the ITA corpus.
        'bert_proj_scale': 0.1,
        'broad_duration_calibration': True,
        'frames_per_phoneme': 3.3,
        'punctuation_frames': 12.0,
        'duration_spread': 0.3,
        'raw_peak': 0.5,
    },
}

# Packages whose versions change what a build produces (part of the cache key).
_VERSIONED_PACKAGES = (
    'hayakoe', 'torch', 'transformers', 'onnx', 'onnxruntime', 'numpy', 'safetensors',
)

_SPECIAL_TOKENS = ('[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]')

# Phoneme symbols that stand for pauses (hayakoe's sentence boundaries are . ! ?).
_PAUSE_SYMBOLS = ('.', '!', '?', ',', '…')


# --- public API ------------------------------------------------------------


def build_model(
    root: Path,
    recipe: str = 'tiny',
    speaker: str = 'tiny-jp',
    *,
    pytorch: bool = False,
    seed: int = 0,
) -> Path:
    """Write a random-weight hayakoe model tree under ``root`` and return ``root``.

    The tree holds the shared tokenizer and INT8 ONNX BERT plus one ONNX
    speaker called ``speaker``; with ``pytorch=True`` also the fp32 PyTorch
    BERT and the speaker's safetensors (hayakoe's CUDA backend layout).  The
    same ``recipe``/``speaker``/``seed`` give the same weights.
    """
    spec = _recipe(recipe)
    root = Path(root)
    t0 = time.perf_counter()
    _check_speaker_name(speaker)

    import torch

    # fork_rng: seeding for the build must not disturb the caller's torch RNG.
    with _quiet_build(), torch.random.fork_rng(devices=[]):
        tokenizer = _write_tokenizer(root / 'bert' / 'tokenizer')
        bert = _make_bert(spec['bert'], len(tokenizer), seed)
        _write_onnx_bert(bert, tokenizer, spec['bert'], root / 'onnx' / 'bert' / 'q8')
        if pytorch:
            bert.save_pretrained(str(root / 'pytorch' / 'bert' / 'fp32'))

        hps = _make_hyper_parameters(spec, speaker)
        style_vectors = _make_style_vectors(spec, seed)
        calib = _calibration_inputs(hps, tokenizer, bert, style_vectors[0])
        duration_calib = calib
        if spec.get('broad_duration_calibration'):
            duration_calib = calib + _calibration_inputs(
                hps, tokenizer, bert, style_vectors[0], _DURATION_CALIBRATION_TEXTS)
        net_g = _make_synthesizer(hps, spec, seed, calib, duration_calib)

        onnx_dir = root / 'onnx' / 'speakers' / speaker
        _write_speaker_common(onnx_dir, hps, style_vectors)
        _write_onnx_speaker(net_g, hps, calib, onnx_dir)
        if pytorch:
            pt_dir = root / 'pytorch' / 'speakers' / speaker
            _write_speaker_common(pt_dir, hps, style_vectors)
            from hayakoe.models.utils.safetensors import save_safetensors

            save_safetensors(net_g, 0, pt_dir / f'{speaker}.safetensors', for_infer=True)

    manifest = {
        'format_version': FORMAT_VERSION,
        'recipe': recipe,
        'recipe_spec': spec,
        'speaker': speaker,
        'pytorch': pytorch,
        'seed': seed,
        'versions': _package_versions(),
        'build_seconds': round(time.perf_counter() - t0, 2),
    }
    (root / 'random_model.json').write_text(
        json.dumps(manifest, indent=2, ensure_ascii=False) + '\n', encoding='utf-8')
    LOG.info('built %s model %r in %.1fs -> %s', recipe, speaker,
             time.perf_counter() - t0, root)
    return root


def cached_model(
    cache_dir: Path,
    recipe: str = 'tiny',
    speaker: str = 'tiny-jp',
    pytorch: bool = False,
    *,
    seed: int = 0,
) -> Path:
    """Return a built model tree under ``cache_dir``, building it only once.

    The tree lives in ``cache_dir/<recipe>-<key>/`` where ``key`` hashes the
    recipe dict, this builder's source, the relevant package versions and the
    arguments, so any change rebuilds.  The build happens in a temporary
    sibling directory that is renamed into place, so a tree that exists is
    complete; concurrent builders race harmlessly (the loser discards its copy).
    """
    cache_dir = Path(cache_dir)
    final = cache_dir / f'{recipe}-{cache_key(recipe, speaker, pytorch, seed)}'
    if final.is_dir():
        return final
    cache_dir.mkdir(parents=True, exist_ok=True)
    _clean_stale_temps(cache_dir)
    tmp = Path(tempfile.mkdtemp(prefix=f'.{final.name}.tmp-', dir=cache_dir))
    try:
        build_model(tmp, recipe, speaker, pytorch=pytorch, seed=seed)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the tree is plain data
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.is_dir():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # another process won the race
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def cache_key(recipe: str, speaker: str, pytorch: bool, seed: int = 0) -> str:
    """Return the cache key of a build: a hash of everything that shapes it."""
    payload = {
        'format_version': FORMAT_VERSION,
        'recipe': recipe,
        'spec': _recipe(recipe),
        'speaker': speaker,
        'pytorch': bool(pytorch),
        'seed': seed,
        'versions': _package_versions(),
        'source': hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode('utf-8')
    return hashlib.sha256(blob).hexdigest()[:16]


def unload_hayakoe_globals() -> None:
    """Drop hayakoe's module-level BERT tokenizer and model singletons.

    ``hayakoe.nlp.bert_models`` keeps the tokenizer (and the PyTorch BERT)
    for the whole process and ``TTS.prepare`` reuses whatever is loaded, so
    call this before loading a different model tree in the same process.
    """
    try:
        from hayakoe.nlp import bert_models
    except ImportError:  # hayakoe (or transformers) absent: nothing loaded
        return
    if bert_models.is_tokenizer_loaded():
        bert_models.unload_tokenizer()
    if bert_models.is_model_loaded():
        bert_models.unload_model()


# --- tokenizer -------------------------------------------------------------


def tokenizer_vocab() -> list[str]:
    """Return the character vocabulary: specials, ASCII, then EUC-JP characters.

    Every valid two-byte EUC-JP sequence (JIS X 0208 and half-width katakana)
    is decoded, which covers kana, the JIS level 1/2 kanji, full-width forms,
    Greek, and the punctuation hayakoe's normaliser leaves (、。！？ー… and
    their ASCII forms).
    """
    vocab = list(_SPECIAL_TOKENS)
    seen = set(vocab)

    def add(ch: str) -> None:
        if len(ch) == 1 and not ch.isspace() and ch not in seen:
            seen.add(ch)
            vocab.append(ch)

    for code in range(0x21, 0x7F):
        add(chr(code))
    leads = [(0x8E, range(0xA1, 0xE0))] + [(hi, range(0xA1, 0xFF)) for hi in range(0xA1, 0xFF)]
    for hi, lows in leads:
        for lo in lows:
            try:
                add(bytes((hi, lo)).decode('euc_jp'))
            except UnicodeDecodeError:
                continue
    return vocab


def _write_tokenizer(directory: Path):
    """Write the char-level tokenizer files and return the loaded tokenizer."""
    from transformers import AutoTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    (directory / 'vocab.txt').write_text('\n'.join(tokenizer_vocab()) + '\n', encoding='utf-8')
    config = {
        'tokenizer_class': 'BertJapaneseTokenizer',
        'do_lower_case': False,
        'do_word_tokenize': True,
        'do_subword_tokenize': True,
        'word_tokenizer_type': 'basic',
        'subword_tokenizer_type': 'character',
        'never_split': None,
        'mecab_kwargs': None,
        'sudachi_kwargs': None,
        'jumanpp_kwargs': None,
        'model_max_length': 512,
        'unk_token': '[UNK]',
        'sep_token': '[SEP]',
        'pad_token': '[PAD]',
        'cls_token': '[CLS]',
        'mask_token': '[MASK]',
    }
    specials = {
        'unk_token': '[UNK]', 'sep_token': '[SEP]', 'pad_token': '[PAD]',
        'cls_token': '[CLS]', 'mask_token': '[MASK]',
    }
    _write_json(directory / 'tokenizer_config.json', config)
    _write_json(directory / 'special_tokens_map.json', specials)
    # Load it the way hayakoe does, so a format problem surfaces here.
    return AutoTokenizer.from_pretrained(str(directory), use_fast=True)


# --- BERT ------------------------------------------------------------------


def _make_bert(bert_spec: dict[str, Any], vocab_size: int, seed: int):
    """Create a random DebertaV2ForMaskedLM of the recipe's size."""
    import torch
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM

    if bert_spec['arch'] != 'deberta-v2':
        raise ValueError(f"unsupported BERT arch {bert_spec['arch']!r}")
    if bert_spec['hidden_size'] != BERT_WIDTH:
        raise ValueError(f'hayakoe needs BERT hidden_size {BERT_WIDTH}')
    if bert_spec['num_hidden_layers'] < 2:
        raise ValueError('hayakoe reads hidden_states[-3]: need >= 2 layers')
    sizes = {k: bert_spec[k] for k in (
        'hidden_size', 'num_hidden_layers', 'num_attention_heads', 'intermediate_size')}
    config = DebertaV2Config(vocab_size=vocab_size, **sizes, **_DEBERTA_COMMON)
    config.architectures = ['DebertaV2ForMaskedLM']
    torch.manual_seed(seed)
    return DebertaV2ForMaskedLM(config).eval()


class _BertFeatures:
    """Module factory: DeBERTa wrapper returning ``hidden_states[-3]``."""

    @staticmethod
    def wrap(bert):
        """Return a module mapping (input_ids, attention_mask) to hidden_states[-3]."""
        import torch

        class BertHidden(torch.nn.Module):
            """What hayakoe's torch path takes from the BERT: hidden_states[-3]."""

            def __init__(self, model) -> None:
                super().__init__()
                self.model = model

            def forward(self, input_ids, attention_mask):
                """Return the third-to-last hidden state [batch, seq, 1024]."""
                out = self.model.deberta(
                    input_ids=input_ids, attention_mask=attention_mask,
                    output_hidden_states=True)
                return out.hidden_states[-3]

        return BertHidden(bert).eval()


def _write_onnx_bert(bert, tokenizer, bert_spec: dict[str, Any], directory: Path) -> None:
    """Export the BERT feature extractor to ONNX and INT8-quantise it."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    import torch

    directory.mkdir(parents=True, exist_ok=True)
    wrapper = _BertFeatures.wrap(bert)
    # A padded batch of two, so the attention-mask path is traced.
    enc = tokenizer(['コンニチワ。キョーワイイテンキデスネ。', 'ハイ、ワカリマシタ!'],
                    return_tensors='pt', padding=True)
    args = (enc['input_ids'], enc['attention_mask'])
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / 'bert_fp32.onnx'
        with torch.no_grad():
            torch.onnx.export(
                wrapper, args, str(fp32), dynamo=False, opset_version=17,
                input_names=['input_ids', 'attention_mask'],
                output_names=['hidden_states'],
                dynamic_axes={
                    'input_ids': {0: 'batch', 1: 'seq'},
                    'attention_mask': {0: 'batch', 1: 'seq'},
                    'hidden_states': {0: 'batch', 1: 'seq'},
                })
        out = directory / 'bert_q8.onnx'
        if bert_spec.get('quantize') == 'int8':
            quantize_dynamic(str(fp32), str(out), op_types_to_quantize=['MatMul', 'Gemm'],
                             weight_type=QuantType.QInt8)
        else:
            shutil.copyfile(fp32, out)

    # Self-check on a longer input than traced (dynamic axes, relative buckets).
    probe = tokenizer(['ア' * 300, 'イ'], return_tensors='np', padding=True)
    sess = ort.InferenceSession(str(out), providers=['CPUExecutionProvider'])
    got = sess.run(None, {'input_ids': probe['input_ids'],
                          'attention_mask': probe['attention_mask']})[0]
    with torch.no_grad():
        ref = wrapper(torch.from_numpy(probe['input_ids']),
                      torch.from_numpy(probe['attention_mask'])).numpy()
    if got.shape != ref.shape:
        raise RuntimeError(f'ONNX BERT output shape {got.shape} != {ref.shape}')
    valid = probe['attention_mask'].astype(bool)  # padding rows are don't-care
    err = float(np.abs(got - ref)[valid].mean())
    if not np.isfinite(got[valid]).all() or err > 0.05:
        raise RuntimeError(f'ONNX BERT disagrees with torch (mean abs err {err:.4f})')


# --- synthesizer -----------------------------------------------------------


def _make_hyper_parameters(spec: dict[str, Any], speaker: str):
    """Return the speaker's HyperParameters (what config.json holds)."""
    from hayakoe.models.hyper_parameters import (
        HyperParameters,
        HyperParametersData,
        HyperParametersModel,
    )

    model = spec['model']
    if model['n_layers'] < 3:
        raise ValueError('the text encoder conditions on layer 2: n_layers must be >= 3')
    if model['inter_channels'] % 2:
        raise ValueError('inter_channels must be even (coupling halves)')
    if math.prod(model['upsample_rates']) != _DATA_COMMON['hop_length']:
        raise ValueError('upsample_rates must multiply to hop_length')
    styles = list(spec['styles'])
    if not styles or styles[0] != 'Neutral':
        raise ValueError("the first style must be 'Neutral' (row 0 = mean)")
    data = HyperParametersData(
        **_DATA_COMMON,
        training_files=f'Data/{speaker}/train.list',
        validation_files=f'Data/{speaker}/val.list',
        n_speakers=1,
        spk2id={speaker: 0},
        num_styles=len(styles),
        style2id={name: i for i, name in enumerate(styles)},
    )
    return HyperParameters(
        model_name=speaker,
        version='2.0-JP-Extra',
        data=data,
        model=HyperParametersModel(**model),
    )


def _make_style_vectors(spec: dict[str, Any], seed: int) -> np.ndarray:
    """Return float32 [num_styles, 256]; row 0 is the mean (Neutral) style."""
    rng = np.random.default_rng(seed + 1)
    std = float(spec['style_std'])
    mean = rng.normal(0.0, std, STYLE_WIDTH)
    rows = [mean] + [mean + rng.normal(0.0, std, STYLE_WIDTH)
                     for _ in spec['styles'][1:]]
    return np.stack(rows).astype(np.float32)


def _new_net_g(hps):
    """Instantiate SynthesizerTrn exactly as hayakoe's ``get_net_g`` does."""
    from hayakoe.models.models_jp_extra import SynthesizerTrn
    from hayakoe.nlp.symbols import SYMBOLS

    m = hps.model
    return SynthesizerTrn(
        n_vocab=len(SYMBOLS),
        spec_channels=hps.data.filter_length // 2 + 1,
        segment_size=hps.train.segment_size // hps.data.hop_length,
        n_speakers=hps.data.n_speakers,
        use_spk_conditioned_encoder=m.use_spk_conditioned_encoder,
        use_noise_scaled_mas=m.use_noise_scaled_mas,
        use_mel_posterior_encoder=m.use_mel_posterior_encoder,
        use_duration_discriminator=m.use_duration_discriminator,
        use_wavlm_discriminator=m.use_wavlm_discriminator,
        inter_channels=m.inter_channels,
        hidden_channels=m.hidden_channels,
        filter_channels=m.filter_channels,
        n_heads=m.n_heads,
        n_layers=m.n_layers,
        kernel_size=m.kernel_size,
        p_dropout=m.p_dropout,
        resblock=m.resblock,
        resblock_kernel_sizes=m.resblock_kernel_sizes,
        resblock_dilation_sizes=m.resblock_dilation_sizes,
        upsample_rates=m.upsample_rates,
        upsample_initial_channel=m.upsample_initial_channel,
        upsample_kernel_sizes=m.upsample_kernel_sizes,
        n_layers_q=m.n_layers_q,
        use_spectral_norm=m.use_spectral_norm,
        gin_channels=m.gin_channels,
        slm=m.slm,
    )


def _calibration_inputs(hps, tokenizer, bert, style_vec: np.ndarray,
                        texts: tuple = _CALIBRATION_TEXTS) -> list[dict[str, Any]]:
    """Run hayakoe's text front end + the torch BERT on ``texts`` (the calibration texts).

    Mirrors ``hayakoe.nlp.japanese.bert_feature.extract_bert_feature`` without
    touching hayakoe's global tokenizer/model singletons.
    """
    from hayakoe.models.text_preprocess import prepare_phone_sequences
    from hayakoe.nlp.japanese.g2p import text_to_sep_kata
    import torch

    wrapper = _BertFeatures.wrap(bert)
    items = []
    for text in texts:
        # hayakoe's g2p splits words with the *global* tokenizer (word2ph).
        with _borrowed_global_tokenizer(tokenizer):
            norm_text, phone, tone, language, word2ph = prepare_phone_sequences(text, hps)
        clean = ''.join(text_to_sep_kata(norm_text, raise_yomi_error=False)[0])
        enc = tokenizer(clean, return_tensors='pt')
        if enc['input_ids'].shape[1] != len(clean) + 2 or len(word2ph) != len(clean) + 2:
            raise RuntimeError(f'tokenizer is not one token per character for {clean!r}')
        with torch.no_grad():
            hidden = wrapper(enc['input_ids'], enc['attention_mask'])[0]
        feats = torch.repeat_interleave(hidden, torch.tensor(word2ph), dim=0).T
        items.append({
            'x': torch.LongTensor(phone).unsqueeze(0),
            'x_lengths': torch.LongTensor([len(phone)]),
            'sid': torch.LongTensor([0]),
            'tone': torch.LongTensor(tone).unsqueeze(0),
            'language': torch.LongTensor(language).unsqueeze(0),
            'bert': feats.unsqueeze(0).float(),
            'style_vec': torch.from_numpy(style_vec).unsqueeze(0),
        })
    return items


def _make_synthesizer(hps, spec: dict[str, Any], seed: int, calib: list[dict[str, Any]],
                      duration_calib: list[dict[str, Any]] | None = None):
    """Create the random SynthesizerTrn and calibrate durations and level.

    Durations are calibrated on ``duration_calib`` (default: ``calib``), the output
    level on ``calib``.  The recipe's optional ``bert_proj_scale`` first scales the
    text encoder's BERT projection.
    """
    import torch

    torch.manual_seed(seed + 2)
    net_g = _new_net_g(hps).eval()
    bert_scale = float(spec.get('bert_proj_scale', 1.0))
    if bert_scale != 1.0:
        with torch.no_grad():
            net_g.enc_p.bert_proj.weight.mul_(bert_scale)

    _calibrate_durations(net_g, spec, duration_calib or calib)

    # Output level: scale the decoder's last conv so the raw waveform of the
    # calibration sentences peaks at ``raw_peak`` (tanh stays unsaturated).
    captured: list[float] = []
    handle = net_g.dec.conv_post.register_forward_hook(
        lambda _m, _i, out: captured.append(float(out.abs().max())))
    try:
        with torch.no_grad():
            for c in calib:
                net_g.infer(**c, noise_scale=0.0, noise_scale_w=0.0, sdp_ratio=0.0)
    finally:
        handle.remove()
    pre_peak = max(captured)
    if not math.isfinite(pre_peak) or pre_peak <= 0:
        raise RuntimeError('random decoder produced silence or non-finite output')
    with torch.no_grad():
        net_g.dec.conv_post.weight.mul_(math.atanh(float(spec['raw_peak'])) / pre_peak)
    return net_g


def _calibrate_durations(net_g, spec: dict[str, Any], calib: list[dict[str, Any]]) -> None:
    """Make the random duration predictors speak at a realistic rate.

    An untrained predictor gives about one frame per phoneme, which puts
    every predicted sentence pause under hayakoe's 80 ms floor.  So: scale the
    deterministic predictor's output projection to the recipe's log-domain
    spread; set its bias so phonemes average ``frames_per_phoneme`` (after
    ceil); nudge the text encoder's embeddings of the pause symbols (. ! ? ,
    and the ellipsis) along the gradient of their predicted log-duration until
    they average ``punctuation_frames``, so pauses are longer than phonemes,
    as in speech, and vary with context; finally centre the stochastic
    predictor on the same rate.  Everything is deterministic.
    """
    from hayakoe.nlp.symbols import SYMBOLS
    import torch

    target = float(spec['frames_per_phoneme'])
    pause_target = float(spec['punctuation_frames'])
    proj = net_g.dp.proj
    pause_ids = torch.tensor([SYMBOLS.index(p) for p in _PAUSE_SYMBOLS if p in SYMBOLS])
    masks = [torch.isin(c['x'][0], pause_ids) for c in calib]

    def logw_split():
        with torch.no_grad():
            logw = [_dp_logw(net_g, c) for c in calib]
        pause = torch.cat([w[m] for w, m in zip(logw, masks)]).numpy()
        other = torch.cat([w[~m] for w, m in zip(logw, masks)]).numpy()
        return pause, other

    def frames(logw):
        return float(np.ceil(np.exp(logw)).mean())

    def set_bias():  # bisection: mean frames of non-pause phonemes == target
        other = logw_split()[1] - float(proj.bias)
        lo, hi = -8.0, 8.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if frames(other + mid) < target else (lo, mid)
        with torch.no_grad():
            proj.bias.fill_((lo + hi) / 2)

    with torch.no_grad():
        proj.bias.zero_()
        logw = torch.cat([_dp_logw(net_g, c) for c in calib])
        proj.weight.mul_(float(spec['duration_spread']) / max(float(logw.std()), 1e-6))
    set_bias()

    emb = net_g.enc_p.emb.weight
    for _ in range(100):
        if frames(logw_split()[0]) >= pause_target:
            break
        emb.grad = None
        loss = torch.stack([_dp_logw(net_g, c, grad=True)[m].sum()
                            for c, m in zip(calib, masks)]).sum()
        loss.backward()
        with torch.no_grad():
            grad = emb.grad[pause_ids]
            step = grad / grad.norm(dim=1, keepdim=True).clamp_min(1e-12)
            emb[pause_ids] += 0.1 * step * emb[pause_ids].norm(dim=1, keepdim=True)
    net_g.zero_grad(set_to_none=True)
    set_bias()

    with torch.no_grad():
        # The stochastic predictor's flows start as identity; its final
        # (reverse) affine step yields logw = -m, so centre it likewise.
        net_g.sdp.flows[0].m.fill_(-math.log(target))


def _dp_logw(net_g, c: dict[str, Any], grad: bool = False):
    """Return the deterministic duration predictor's logw for one input.

    ``DurationPredictor.forward`` detaches its input; with ``grad=True`` the
    same layers run without the detach so gradients reach the text encoder.
    """
    import torch

    g = net_g.emb_g(c['sid']).unsqueeze(-1)
    x, _, _, x_mask = net_g.enc_p(c['x'], c['x_lengths'], c['tone'], c['language'],
                                  c['bert'], c['style_vec'], g=g)
    dp = net_g.dp
    if not grad:
        return dp(x, x_mask, g=g).flatten()
    x = x + dp.cond(g)
    x = dp.norm_1(torch.relu(dp.conv_1(x * x_mask)))
    x = dp.norm_2(torch.relu(dp.conv_2(x * x_mask)))
    return (dp.proj(x * x_mask) * x_mask).flatten()


_SYNTH_INPUTS = ('x', 'x_lengths', 'sid', 'tone', 'language', 'bert', 'style_vec',
                 'noise_scale', 'length_scale', 'noise_scale_w', 'sdp_ratio')
_DP_INPUTS = tuple(n for n in _SYNTH_INPUTS if n != 'noise_scale')
_N_TENSOR_INPUTS = 7  # x .. style_vec: positional; the scalars after them are keywords
_PHONE_AXES = {'x': {1: 'phones'}, 'tone': {1: 'phones'}, 'language': {1: 'phones'},
               'bert': {2: 'phones'}, 'durations': {1: 'phones'}}


@dataclass(frozen=True)
class _Graph:
    """One of hayakoe's speaker graphs: which ``net_g`` method it runs, its I/O names."""

    method: str                     # SynthesizerTrn method the graph's forward calls
    inputs: tuple[str, ...]         # input names, tensors first, then keyword scalars
    outputs: tuple[str, ...]        # output names
    post: Callable[[Any], Any]      # method result -> the graph's outputs
    axes: dict[str, dict[int, str]]  # dynamic axes


_GRAPHS = {
    # net_g.infer -> (audio [1, 1, samples], durations [1, phones]): the frames per
    # phoneme actually used.
    'synthesizer.onnx': _Graph('infer', _SYNTH_INPUTS, ('audio', 'durations'),
                               lambda out: (out[0], out[1].sum(2)[:, 0, :]),
                               {**_PHONE_AXES, 'audio': {2: 'samples'}}),
    # net_g.predict_durations -> durations [1, phones] (same code path as infer).
    'duration_predictor.onnx': _Graph('predict_durations', _DP_INPUTS, ('durations',),
                                      lambda durations: durations.unsqueeze(0), _PHONE_AXES),
}


def _export_graph(net_g, name: str, example: dict[str, Any], scalars: dict[str, float],
                  path: Path) -> None:
    """Export graph ``name`` of :data:`_GRAPHS` from ``net_g`` to ``path`` (ONNX opset 17).

    ``example`` holds the calibration tensors traced with; ``scalars`` the values of the
    graph's scalar inputs used while tracing.
    """
    import torch

    graph = _GRAPHS[name]
    keywords = graph.inputs[_N_TENSOR_INPUTS:]

    class Graph(torch.nn.Module):
        """``forward(*inputs)`` = ``graph.post(net_g.<graph.method>(tensors, **scalars))``."""

        def __init__(self, net) -> None:
            super().__init__()
            self.net_g = net

        def forward(self, *args):
            """Run the method on the graph inputs, in :data:`_GRAPHS` order."""
            result = getattr(self.net_g, graph.method)(
                *args[:_N_TENSOR_INPUTS], **dict(zip(keywords, args[_N_TENSOR_INPUTS:])))
            return graph.post(result)

    feeds = _feeds(example, graph.inputs, **{k: scalars[k] for k in keywords})
    torch.onnx.export(
        Graph(net_g).eval(), tuple(feeds.values()), str(path), dynamo=False,
        opset_version=17, input_names=list(graph.inputs), output_names=list(graph.outputs),
        dynamic_axes=graph.axes)


def _feeds(c: dict[str, Any], names: tuple[str, ...], **scalars: float) -> dict[str, Any]:
    """Return torch inputs by name: the calibration tensors plus [1] scalars."""
    import torch

    out = dict(c)
    for key, value in scalars.items():
        out[key] = torch.tensor([value], dtype=torch.float32)
    return {n: out[n] for n in names}


def _write_speaker_common(directory: Path, hps, style_vectors: np.ndarray) -> None:
    """Write config.json and style_vectors.npy."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / 'config.json').write_text(hps.model_dump_json(indent=2) + '\n',
                                           encoding='utf-8')
    np.save(directory / 'style_vectors.npy', style_vectors)


def _write_onnx_speaker(net_g, hps, calib: list[dict[str, Any]], directory: Path) -> None:
    """Export synthesizer.onnx and duration_predictor.onnx, then self-check them."""
    import torch
    from torch.nn.utils import parametrize

    # A fresh copy (deepcopy does not separate parametrizations cleanly).
    export_net = _new_net_g(hps).eval()
    export_net.load_state_dict(net_g.state_dict())
    for module in export_net.modules():  # fold weight norm into plain weights
        if parametrize.is_parametrized(module):
            for name in list(module.parametrizations.keys()):
                parametrize.remove_parametrizations(module, name, leave_parametrized=True)

    scalars = {'noise_scale': 0.667, 'length_scale': 1.0, 'noise_scale_w': 0.8,
               'sdp_ratio': 0.2}
    example = min(calib, key=lambda c: c['x'].shape[1])  # shortest traces fastest
    synth_path = directory / 'synthesizer.onnx'
    dp_path = directory / 'duration_predictor.onnx'
    with torch.no_grad():
        for path in (synth_path, dp_path):
            _export_graph(export_net, path.name, example, scalars, path)
    _check_onnx_speaker(net_g, calib, synth_path, dp_path)


def _check_onnx_speaker(net_g, calib, synth_path: Path, dp_path: Path) -> None:
    """Compare the exported graphs with torch on inputs of other lengths."""
    import onnxruntime as ort
    import torch

    synth = ort.InferenceSession(str(synth_path), providers=['CPUExecutionProvider'])
    dp = ort.InferenceSession(str(dp_path), providers=['CPUExecutionProvider'])
    det = {'noise_scale': 0.0, 'length_scale': 1.0, 'noise_scale_w': 0.0, 'sdp_ratio': 0.0}
    for c in calib:
        feeds = {k: v.numpy() for k, v in _feeds(c, _SYNTH_INPUTS, **det).items()}
        audio, durations = synth.run(None, feeds)
        feeds.pop('noise_scale')
        dp_durations = dp.run(None, feeds)[0]
        with torch.no_grad():
            ref_audio, attn, _, _ = net_g.infer(**c, noise_scale=0.0, noise_scale_w=0.0,
                                                sdp_ratio=0.0)
        ref_durations = attn.sum(2)[:, 0, :].numpy()
        n = c['x'].shape[1]
        hop = int(np.prod(net_g.upsample_rates))
        ok = (
            durations.shape == (1, n) and dp_durations.shape == (1, n)
            and audio.shape == (1, 1, int(durations.sum()) * hop)
            and np.isfinite(audio).all()
            # ceil() may flip a frame where fp rounding differs; nothing more.
            and _nearly_equal_frames(durations, ref_durations)
            and _nearly_equal_frames(dp_durations, durations)
        )
        if ok and np.array_equal(durations, ref_durations):
            ok = float(np.abs(audio - ref_audio.numpy()).max()) < 1e-3
        if not ok:
            raise RuntimeError(f'exported speaker graphs disagree with torch on {n} phones')


def _nearly_equal_frames(a: np.ndarray, b: np.ndarray) -> bool:
    """Return True if frame counts differ by at most 1 in at most 2 places."""
    if a.shape != b.shape:
        return False
    diff = np.abs(a - b)
    return bool(diff.max(initial=0) <= 1 and (diff > 0).sum() <= 2)


# --- helpers ---------------------------------------------------------------


def _recipe(name: str) -> dict[str, Any]:
    """Return a recipe by name (a deep copy), or raise a helpful KeyError."""
    if name not in RECIPES:
        raise KeyError(f'unknown recipe {name!r}; known: {sorted(RECIPES)}')
    return copy.deepcopy(RECIPES[name])


def _check_speaker_name(speaker: str) -> None:
    """Reject names that would escape the speakers directory."""
    if not speaker or '/' in speaker or '\\' in speaker or speaker in ('.', '..'):
        raise ValueError(f'invalid speaker name {speaker!r}')


def _package_versions() -> dict[str, str]:
    """Return installed versions of the packages that shape a build."""
    versions = {}
    for name in _VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = 'missing'
    return versions


def _write_json(path: Path, data: Any) -> None:
    """Write JSON as UTF-8 with a trailing newline."""
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + '\n', encoding='utf-8')


def _clean_stale_temps(cache_dir: Path, max_age_s: float = 6 * 3600) -> None:
    """Remove temporary build dirs left behind by killed builds."""
    now = time.time()
    for path in cache_dir.glob('.*.tmp-*'):
        try:
            if path.is_dir() and now - path.stat().st_mtime > max_age_s:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue


@contextlib.contextmanager
def _borrowed_global_tokenizer(tokenizer) -> Iterator[None]:
    """Install ``tokenizer`` as hayakoe's global tokenizer, then restore the old one.

    hayakoe's g2p calls ``bert_models.load_tokenizer()`` without a path; with
    nothing loaded that would try to download the real tokenizer.
    """
    from hayakoe.nlp import bert_models

    previous = bert_models._loaded_tokenizer
    bert_models._loaded_tokenizer = tokenizer
    try:
        yield
    finally:
        bert_models._loaded_tokenizer = previous


@contextlib.contextmanager
def _quiet_build() -> Iterator[None]:
    """Silence exporter/quantiser chatter (tracer warnings, advisory logs)."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.ERROR))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            yield
    finally:
        root.setLevel(level)


def main(argv: list[str] | None = None) -> int:
    """Run the command-line interface; return the exit status."""
    parser = argparse.ArgumentParser(
        prog='python -m tools.random_model',
        description='Build a random-weight hayakoe model tree (offline test fixture).')
    parser.add_argument('--recipe', default='tiny', choices=sorted(RECIPES))
    parser.add_argument('--out', type=Path, required=True,
                        help='output root (with --cache: the cache directory)')
    parser.add_argument('--speaker', default='tiny-jp')
    parser.add_argument('--pytorch', action='store_true',
                        help='also write the PyTorch (CUDA backend) artifacts')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--cache', action='store_true',
                        help='treat --out as a cache dir and reuse an existing build')
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    t0 = time.perf_counter()
    if args.cache:
        root = cached_model(args.out, args.recipe, args.speaker, args.pytorch, seed=args.seed)
    else:
        root = build_model(args.out, args.recipe, args.speaker, pytorch=args.pytorch,
                           seed=args.seed)
    print(root)
    print(f'done in {time.perf_counter() - t0:.1f}s', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
