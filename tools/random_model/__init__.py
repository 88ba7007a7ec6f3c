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

One module per part: :mod:`.recipes` (sizes and targets), :mod:`.bert` (tokenizer and
INT8 BERT), :mod:`.synthesizer` (calibrated random weights), :mod:`.export` (the ONNX
speaker graphs); this one builds and caches whole trees.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
from importlib import metadata
import json
import logging
import os
from pathlib import Path
import shutil
import sys
import tempfile
import time
from typing import Iterator
import warnings

from tools.random_model.bert import make_bert, write_onnx_bert, write_tokenizer
from tools.random_model.export import write_onnx_speaker, write_speaker_common
from tools.random_model.recipes import DURATION_CALIBRATION_TEXTS, RECIPES, recipe_spec
from tools.random_model.synthesizer import (
    calibration_inputs,
    make_hyper_parameters,
    make_style_vectors,
    make_synthesizer,
)

__all__ = ['RECIPES', 'build_model', 'cache_key', 'cached_model', 'main',
           'unload_hayakoe_globals']

LOG = logging.getLogger(__name__)

# Version marker of the tree layout written here; bump on format changes.
FORMAT_VERSION = 1

# Packages whose versions change what a build produces (part of the cache key).
VERSIONED_PACKAGES = (
    'hayakoe', 'torch', 'transformers', 'onnx', 'onnxruntime', 'numpy', 'safetensors',
)


# --- public API ------------------------------------------------------------


def build_model(
    root: Path,
    recipe: str = 'tiny',
    speaker: str = 'tiny-jp',
    *,
    pytorch: bool = False,
    seed: int = 0,
    onnx: bool = True,
) -> Path:
    """Write a random-weight hayakoe model tree under ``root`` and return ``root``.

    The tree holds the shared tokenizer and INT8 ONNX BERT plus one ONNX
    speaker called ``speaker``; with ``pytorch=True`` also the fp32 PyTorch
    BERT and the speaker's safetensors (hayakoe's CUDA backend layout).
    ``onnx=False`` (with ``pytorch=True``) leaves out the ONNX files, whose
    export and quantisation are most of a full-size build; what the CUDA path
    loads stays the same.  The same ``recipe``/``speaker``/``seed`` give the
    same weights.

    Raises:
        ValueError: ``onnx`` and ``pytorch`` both false (nothing to write).
    """
    if not (onnx or pytorch):
        raise ValueError('build_model needs onnx=True or pytorch=True')
    spec = recipe_spec(recipe)
    root = Path(root)
    t0 = time.perf_counter()
    _check_speaker_name(speaker)

    import torch

    # fork_rng: seeding for the build must not disturb the caller's torch RNG.
    with _quiet_build(), torch.random.fork_rng(devices=[]):
        tokenizer = write_tokenizer(root / 'bert' / 'tokenizer')
        bert = make_bert(spec['bert'], len(tokenizer), seed)
        if onnx:
            write_onnx_bert(bert, tokenizer, spec['bert'], root / 'onnx' / 'bert' / 'q8')
        if pytorch:
            bert.save_pretrained(str(root / 'pytorch' / 'bert' / 'fp32'))

        hps = make_hyper_parameters(spec, speaker)
        style_vectors = make_style_vectors(spec, seed)
        calib = calibration_inputs(hps, tokenizer, bert, style_vectors[0])
        duration_calib = calib
        if spec.get('broad_duration_calibration'):
            duration_calib = calib + calibration_inputs(
                hps, tokenizer, bert, style_vectors[0], DURATION_CALIBRATION_TEXTS)
        net_g = make_synthesizer(hps, spec, seed, calib, duration_calib)

        if onnx:
            onnx_dir = root / 'onnx' / 'speakers' / speaker
            write_speaker_common(onnx_dir, hps, style_vectors)
            write_onnx_speaker(net_g, hps, calib, onnx_dir)
        if pytorch:
            pt_dir = root / 'pytorch' / 'speakers' / speaker
            write_speaker_common(pt_dir, hps, style_vectors)
            from hayakoe.models.utils.safetensors import save_safetensors

            save_safetensors(net_g, 0, pt_dir / f'{speaker}.safetensors', for_infer=True)

    manifest = {
        'format_version': FORMAT_VERSION,
        'recipe': recipe,
        'recipe_spec': spec,
        'speaker': speaker,
        'pytorch': pytorch,
        'onnx': onnx,
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
    onnx: bool = True,
) -> Path:
    """Return a built model tree under ``cache_dir``, building it only once.

    ``pytorch`` and ``onnx`` as for :func:`build_model` (a tree without ONNX files has a
    key of its own).

    The tree lives in ``cache_dir/<recipe>-<key>/`` where ``key`` hashes the
    recipe dict, this builder's source, the relevant package versions and the
    arguments, so any change rebuilds.  The build happens in a temporary
    sibling directory that is renamed into place, so a tree that exists is
    complete; concurrent builders race harmlessly (the loser discards its copy).
    """
    cache_dir = Path(cache_dir)
    final = cache_dir / f'{recipe}-{cache_key(recipe, speaker, pytorch, seed, onnx)}'
    if final.is_dir():
        return final
    cache_dir.mkdir(parents=True, exist_ok=True)
    _clean_stale_temps(cache_dir)
    tmp = Path(tempfile.mkdtemp(prefix=f'.{final.name}.tmp-', dir=cache_dir))
    try:
        build_model(tmp, recipe, speaker, pytorch=pytorch, seed=seed, onnx=onnx)
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


def cache_key(recipe: str, speaker: str, pytorch: bool, seed: int = 0,
              onnx: bool = True) -> str:
    """Return the cache key of a build: a hash of everything that shapes it."""
    payload = {
        'format_version': FORMAT_VERSION,
        'recipe': recipe,
        'spec': recipe_spec(recipe),
        'speaker': speaker,
        'pytorch': bool(pytorch),
        'seed': seed,
        'versions': _package_versions(),
        'source': _source_digest(),
    }
    if not onnx:  # only then: the keys of trees with ONNX files stay as they were
        payload['onnx'] = False
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode('utf-8')
    return hashlib.sha256(blob).hexdigest()[:16]


def _source_digest() -> str:
    """SHA-256 (hex) of this package's source files, in name order: the builder's code."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob('*.py')):
        digest.update(path.name.encode('utf-8') + b'\0' + path.read_bytes())
    return digest.hexdigest()


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


# --- helpers ---------------------------------------------------------------
def _check_speaker_name(speaker: str) -> None:
    """Reject names that would escape the speakers directory."""
    if not speaker or '/' in speaker or '\\' in speaker or speaker in ('.', '..'):
        raise ValueError(f'invalid speaker name {speaker!r}')


def _package_versions() -> dict[str, str]:
    """Return installed versions of the packages that shape a build."""
    versions = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = 'missing'
    return versions


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
    parser.add_argument('--no-onnx', action='store_true',
                        help='with --pytorch: leave out the ONNX files (the CUDA path only)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--cache', action='store_true',
                        help='treat --out as a cache dir and reuse an existing build')
    args = parser.parse_args(argv)
    if args.no_onnx and not args.pytorch:
        parser.error('--no-onnx needs --pytorch (the tree would hold no model)')
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    t0 = time.perf_counter()
    if args.cache:
        root = cached_model(args.out, args.recipe, args.speaker, args.pytorch, seed=args.seed,
                            onnx=not args.no_onnx)
    else:
        root = build_model(args.out, args.recipe, args.speaker, pytorch=args.pytorch,
                           seed=args.seed, onnx=not args.no_onnx)
    print(root)
    print(f'done in {time.perf_counter() - t0:.1f}s', file=sys.stderr)
    return 0
