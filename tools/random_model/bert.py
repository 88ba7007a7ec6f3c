# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The tokenizer and the INT8 ONNX DeBERTa of a random-weight model tree."""

from __future__ import annotations

import json
from pathlib import Path
import shutil
import tempfile
from typing import Any

import numpy as np

from tools.random_model.recipes import BERT_WIDTH, DEBERTA_COMMON

SPECIAL_TOKENS = ('[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]')



def tokenizer_vocab() -> list[str]:
    """Return the character vocabulary: specials, ASCII, then EUC-JP characters.

    Every valid two-byte EUC-JP sequence (JIS X 0208 and half-width katakana)
    is decoded, which covers kana, the JIS level 1/2 kanji, full-width forms,
    Greek, and the punctuation hayakoe's normaliser leaves (、。！？ー… and
    their ASCII forms).
    """
    vocab = list(SPECIAL_TOKENS)
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


def write_tokenizer(directory: Path):
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
    write_json(directory / 'tokenizer_config.json', config)
    write_json(directory / 'special_tokens_map.json', specials)
    # Load it the way hayakoe does, so a format problem surfaces here.
    return AutoTokenizer.from_pretrained(str(directory), use_fast=True)


# --- BERT ------------------------------------------------------------------


def make_bert(bert_spec: dict[str, Any], vocab_size: int, seed: int):
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
    config = DebertaV2Config(vocab_size=vocab_size, **sizes, **DEBERTA_COMMON)
    config.architectures = ['DebertaV2ForMaskedLM']
    torch.manual_seed(seed)
    return DebertaV2ForMaskedLM(config).eval()


class BertFeatures:
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


def write_onnx_bert(bert, tokenizer, bert_spec: dict[str, Any], directory: Path) -> None:
    """Export the BERT feature extractor to ONNX and INT8-quantise it."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    import torch

    directory.mkdir(parents=True, exist_ok=True)
    wrapper = BertFeatures.wrap(bert)
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


def write_json(path: Path, data: Any) -> None:
    """Write JSON as UTF-8 with a trailing newline."""
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + '\n', encoding='utf-8')
