# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The recipes of the random-weight models: sizes, calibration targets, shared settings.

A recipe chooses the sizes of the DeBERTa and of the JP-Extra synthesizer and the targets
the builder calibrates the random weights to (frames per phoneme, pause length, raw peak);
everything else mirrors the real model hayakoe ships.
"""

from __future__ import annotations

import copy
from typing import Any

# hayakoe hard-codes these widths (TextEncoder.bert_proj / style_proj).
BERT_WIDTH = 1024
STYLE_WIDTH = 256

# DeBERTa-v2 settings shared by every recipe; they mirror
# ku-nlp/deberta-v2-large-japanese-char-wwm (the BERT hayakoe ships), so a
# recipe only chooses the size.
DEBERTA_COMMON: dict[str, Any] = {
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
DATA_COMMON: dict[str, Any] = {
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
CALIBRATION_TEXTS = (
    'こんにちは。今日はいい天気ですね。散歩に行きましょう。',
    'ロボットが、ゆっくりと部屋の中を歩きます！',
    'はい、わかりました？',
)

# More sentences for the duration calibration of recipes with
# 'broad_duration_calibration' (kana, kanji and katakana words, questions,
# exclamations, clauses; none from the benchmark corpus): the speaking rate of a
# random-weight model varies a lot from sentence to sentence, so a rate set on
# three sentences alone does not hold for text in general.
DURATION_CALIBRATION_TEXTS = (
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

# Phoneme symbols that stand for pauses (hayakoe's sentence boundaries are . ! ?).
PAUSE_SYMBOLS = ('.', '!', '?', ',', '…')


def recipe_spec(name: str) -> dict[str, Any]:
    """Return a recipe by name (a deep copy), or raise a helpful KeyError."""
    if name not in RECIPES:
        raise KeyError(f'unknown recipe {name!r}; known: {sorted(RECIPES)}')
    return copy.deepcopy(RECIPES[name])
