# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The CUDA path on a GPU: first audio against raw ``generate()``, and whether windows help.

``python bench/cuda.py [--model-root DIR] [--device cuda] [--reps 9] [--compile]
[--json FILE]``

Needs PyTorch that sees a GPU; without one it says so and exits 0 (``make bench`` on a
machine without a GPU). The model is the full-size random-weight one in hayakoe's
PyTorch layout (``tools.random_model``, ``onnx=False``: the CUDA path reads no ONNX file),
built on first use under ``$HAYAKOE_ROS_CACHE/models`` (default ``.cache/models``).

* raw and node, one sentence per repetition: hayakoe ``Speaker.generate()`` of the
  sentence on the engine's own speaker (the same loaded PyTorch model, BERT and
  synthesizer on the GPU; PyTorch's default cuDNN, on), and the speech pipeline in this
  process (pacing on, gapless off, the default ``first_segment_morae``) on hayakoe_ros'
  engine: submit to the first chunk, and the first chunk's stamp to its first sample
  above -40 dBFS. Four rows: sentences not heard before (distinct ones of
  test/data/texts.yaml, as a dialogue stack sends them) and the benchmark's first
  sentence again and again, each with the node's cuDNN off (its default) and on
  (``torch.backends.cudnn.enabled`` switched in this process, which is what the engine's
  ``cudnn`` option does). The ratio is the median of the per-repetition ratios;
* stages: for the first segment and for the whole first sentence, the seconds of the front
  end + BERT, of the synthesizer up to the decoder's input (text encoder, duration
  predictors, flow) and of the decoder on the whole latent, then of the decoder on the
  CPU path's window plan (first window alone, and every window), each window decoded with
  its receptive field around it (:class:`~hayakoe_ros.engines.decoder_receptive.ChainSpec`)
  and the audio copied to the host, as a windowed engine would; the windowed audio
  against the whole decode (max abs, full scale 1.0). Medians of ``--reps`` runs after
  two warm-ups, each between ``torch.cuda.synchronize()`` calls;
* memory: ``torch.cuda.max_memory_allocated``.

``--compile`` reloads the engine with ``compile`` on (``torch.compile`` of the BERT; its
load takes minutes) and repeats the first row.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
import statistics
import sys
import time
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.raw_worker import SPEAKER as SPEAKERS, VOICE, model_root  # noqa: E402
from tools.texts import load_texts  # noqa: E402

SPEAKER = SPEAKERS['full']


def _median_ms(values) -> float:
    return 1000.0 * statistics.median(values)


class _Capture:
    """Stands in for the decoder (``net_g.dec``): keeps its input, returns silence."""

    def __init__(self, hop: int) -> None:
        self.hop = hop
        self.z: Any = None
        self.g: Any = None

    def __call__(self, x, g=None):
        self.z, self.g = x, g
        return x.new_zeros(1, 1, x.shape[-1] * self.hop)


def stages(engine, voice, text: str, reps: int) -> dict:
    """Seconds of each stage of one segment on the GPU, whole and in windows (ms medians).

    Returns a dict: ``bert_ms``, ``first_stage_ms``, ``decoder_whole_ms``,
    ``first_window_ms``, ``windows_ms`` (all windows, one after another), ``frames``,
    ``windows`` (their sample bounds), ``max_abs`` (windows against whole),
    ``audio_s``.
    """
    import numpy as np
    import torch

    from hayakoe_ros.engines import hayakoe_internals as hk
    from hayakoe_ros.engines.decoder_receptive import ChainSpec
    from hayakoe_ros.engines.hayakoe_engine import FIRST_WINDOW_S
    from hayakoe_ros.engines.windowed_decoder import first_window_frames, window_plan

    spk = engine.speaker
    net_g = spk._ensure_pytorch_model()
    chain = ChainSpec.from_config(hk.model_config(spk))
    hop = chain.hop

    def timed(fn):
        times, result = [], None
        for i in range(reps + 2):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            result = fn()
            torch.cuda.synchronize()
            if i >= 2:
                times.append(time.perf_counter() - t0)
        return _median_ms(times), result

    bert_ms, feats = timed(lambda: hk.segment_features(spk, text))
    capture = _Capture(hop)
    dec = net_g.dec
    try:
        object.__setattr__(net_g, 'dec', capture)  # nn.Module would refuse a non-Module
        first_ms, _ = timed(lambda: hk.synthesize_features(spk, feats, voice))
    finally:
        object.__setattr__(net_g, 'dec', dec)
    z, g = capture.z, capture.g
    frames = int(z.shape[-1])

    def whole():
        with torch.no_grad():
            return dec(z, g=g)[0, 0].float().cpu().numpy()

    def window(lo: int, hi: int):
        in_lo, in_hi = chain.plan(lo, hi, frames)[0][:2]
        with torch.no_grad():
            out = dec(z[:, :, in_lo:in_hi], g=g)[0, 0, lo - in_lo * hop:hi - in_lo * hop]
            return out.float().cpu().numpy()

    plan = window_plan(frames, hop, first_window_frames(FIRST_WINDOW_S, engine.sample_rate,
                                                        hop))
    whole_ms, ref = timed(whole)
    win1_ms, _ = timed(lambda: window(*plan[0]))
    wins_ms, parts = timed(lambda: [window(lo, hi) for lo, hi in plan])
    audio = np.concatenate(parts)
    return {'text': text, 'frames': frames, 'audio_s': ref.size / engine.sample_rate,
            'windows': plan, 'bert_ms': bert_ms, 'first_stage_ms': first_ms,
            'decoder_whole_ms': whole_ms, 'first_window_ms': win1_ms, 'windows_ms': wins_ms,
            'same_length': audio.size == ref.size,
            'max_abs': float(np.abs(audio - ref).max()) if audio.size == ref.size
            else float('inf')}


def node_vs_raw(engine, voice, texts, reps: int, cudnn: bool, engine_cudnn: bool) -> dict:
    """Raw ``generate()`` and the node's TTFA, alternating, one text per repetition.

    ``texts``: one per repetition, plus one for the warm-up (the same text over and over
    measures a sentence already heard). The node runs with cuDNN ``cudnn``
    (``torch.backends.cudnn.enabled``, as the engine's ``cudnn`` option sets it), raw
    ``generate()`` with PyTorch's default (on), as an application gets it; afterwards the
    flag is ``engine_cudnn`` again (what the engine was loaded with). Medians; the ratio
    is the median of the per-repetition ratios.
    """
    import torch

    from bench.windowed import _first_sound_ms, _speak

    spk = engine.speaker
    raw, node, sound, ratios = [], [], [], []
    try:
        for i in range(reps + 1):
            text = texts[i % len(texts)]
            torch.backends.cudnn.enabled = cudnn
            run = _speak(engine, voice, text, pacing=True, first_only=True)
            torch.backends.cudnn.enabled = True
            t0 = time.perf_counter()
            spk.generate(text, **VOICE)
            r = time.perf_counter() - t0
            if i == 0:
                continue  # warm-up of both
            raw.append(r)
            node.append(run['ttfa_s'])
            sound.append(_first_sound_ms(run['pcm'], run['rate']))
            ratios.append(run['ttfa_s'] / r)
    finally:
        torch.backends.cudnn.enabled = engine_cudnn
    return {'raw_generate_ms': _median_ms(raw), 'node_ttfa_ms': _median_ms(node),
            'ratio': statistics.median(ratios), 'first_sound_ms': statistics.median(sound),
            'reps': reps, 'texts': len(set(texts[1:reps + 1]))}


def new_sentences() -> list:
    """Distinct sentences of test/data/texts.yaml (9 to 59 characters), in file order."""
    texts = load_texts()
    pool = texts['benchmark'] + [s for v in texts['utterances'].values() for s in v]
    return list(dict.fromkeys(s for s in pool if 8 < len(s) < 60))


def load_engine(root: Path, device: str, compile_bert: bool, cudnn: bool = False) -> tuple:
    """hayakoe_ros' engine on ``device``, warmed up: ``(engine, voice, load_s, warm_s)``."""
    from hayakoe_ros.engines.base import VoiceParams
    from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine

    uri = f'file://{root}'
    t0 = time.perf_counter()
    engine = HayakoeEngine(SPEAKER, device=device, speaker_source=uri, bert_source=uri,
                           compile=compile_bert, cudnn=cudnn)
    t1 = time.perf_counter()
    engine.warmup()
    return (engine, VoiceParams(style=engine.styles[0], **VOICE), t1 - t0,
            time.perf_counter() - t1)


def report(out: dict) -> str:
    """Markdown tables of :func:`main`'s results."""
    lines = [f"GPU: {out['gpu']}; torch {out['torch']}; hayakoe {out['hayakoe']}", '',
             f"engine load {out['load_s']:.1f} s, warm-up {out['warm_s']:.1f} s", '',
             '| run | texts | raw generate() (ms) | node TTFA (ms) | node / raw '
             '| first sound (ms) |', '|---|---|---|---|---|---|']
    for name, row in out['node'].items():
        lines.append(f"| {name} | {row['texts']} | {row['raw_generate_ms']:.1f} | "
                     f"{row['node_ttfa_ms']:.1f} | {row['ratio']:.2f} | "
                     f"{row['first_sound_ms']:.1f} |")
    lines += ['', '| segment | audio (s) | BERT | up to decoder | decoder whole | '
              'first window | all windows | windowed max abs |',
              '|---|---|---|---|---|---|---|---|']
    for name, row in out['stages'].items():
        lines.append(f"| {name} ({row['frames']} frames, {len(row['windows'])} windows) | "
                     f"{row['audio_s']:.2f} | {row['bert_ms']:.1f} | "
                     f"{row['first_stage_ms']:.1f} | {row['decoder_whole_ms']:.1f} | "
                     f"{row['first_window_ms']:.1f} | {row['windows_ms']:.1f} | "
                     f"{row['max_abs']:.1e} |")
    lines += ['', f"peak GPU memory allocated: {out['gpu_peak_mb']:.0f} MB"]
    return '\n'.join(lines)


def _write(out: dict, path: str | None) -> None:
    """Print the tables so far; write them as JSON to ``path`` (when given)."""
    import torch

    out['gpu_peak_mb'] = torch.cuda.max_memory_allocated() / 2 ** 20
    print(report(out), flush=True)
    if path:
        Path(path).write_text(json.dumps(out, indent=1, ensure_ascii=False) + '\n',
                              encoding='utf-8')


def measure(log_dir: Path, reps: int = 9) -> dict:
    """Run this script in a subprocess (torch stays out of the caller); its results.

    Returns:
        The JSON it wrote, or ``{'skipped': reason}`` (no GPU: its one line of output).

    Raises:
        RuntimeError: the script failed (the end of its output in the message).
        subprocess.TimeoutExpired: it ran for over an hour.
    """
    import subprocess

    out = log_dir / 'cuda.json'
    out.unlink(missing_ok=True)  # an earlier run's results are not this one's
    proc = subprocess.run([sys.executable, str(Path(__file__)), '--reps', str(reps),
                           '--json', str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=3600, check=False)
    if proc.returncode:
        raise RuntimeError(f'bench/cuda.py failed: {(proc.stdout + proc.stderr)[-2000:]}')
    if not out.is_file():
        return {'skipped': proc.stdout.strip().splitlines()[-1]}
    return json.loads(out.read_text(encoding='utf-8'))


def main(argv=None) -> int:
    """Measure; print Markdown; write JSON with ``--json``."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--model-root', default=None)
    parser.add_argument('--device', default='cuda', help="'cuda' or 'cuda:N'")
    parser.add_argument('--reps', type=int, default=9)
    parser.add_argument('--compile', action='store_true')
    parser.add_argument('--json', default=None)
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error(f'--reps must be at least 1, not {args.reps}')
    import torch

    if not torch.cuda.is_available():
        print('bench/cuda.py: skipped, PyTorch sees no GPU')
        return 0
    import importlib.metadata

    from hayakoe_ros.text.pipeline import prepare

    root = model_root('full', args.model_root, pytorch=True, onnx=False)
    first = load_texts()['benchmark'][0]
    sentences = new_sentences()
    n = args.reps + 1
    if 2 * n > len(sentences):
        parser.error(f'--reps {args.reps}: only {len(sentences)} distinct sentences')
    engine, voice, load_s, warm_s = load_engine(root, args.device, False)
    out: dict = {'gpu': torch.cuda.get_device_name(), 'torch': torch.__version__,
                 'hayakoe': importlib.metadata.version('hayakoe'), 'load_s': load_s,
                 'warm_s': warm_s, 'node': {}, 'stages': {}}
    rows = (('new sentences, cuDNN off (default)', sentences[:n], False),
            ('new sentences, cuDNN on', sentences[n:2 * n], True),
            ('one sentence again, cuDNN off', [first] * n, False),
            ('one sentence again, cuDNN on', [first] * n, True))
    for name, texts, cudnn in rows:
        out['node'][name] = node_vs_raw(engine, voice, texts, args.reps, cudnn, False)
        _write(out, args.json)
    segment = prepare(first, 100000, 60, 8)[1][0].text
    out['stages']['first segment'] = stages(engine, voice, segment, args.reps)
    out['stages']['first sentence'] = stages(engine, voice, first, args.reps)
    _write(out, args.json)
    if args.compile:
        engine.close()
        engine, voice, load_s, warm_s = load_engine(root, args.device, True)
        out['node'][f'compile (load {load_s:.0f} s), new sentences, cuDNN off'] = \
            node_vs_raw(engine, voice, sentences[:n], args.reps, False, False)
        _write(out, args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
