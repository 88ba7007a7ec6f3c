# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Measure the memory levers of the hayakoe engine, one fresh process per setting.

``python bench/memory_levers.py [--recipe full] [--threads 2] [--only NAME ...]
[--no-torch]`` runs, each in its own process and one after the other: raw hayakoe
(``TTS().load().prepare()`` then ``Speaker.generate()``), and hayakoe_ros' engine with the
node's pipeline (the speech scheduler, pacing off, no ROS) under each setting of
:data:`SETTINGS` (allocator, trim, offline-optimised models, session options; the
optimised models are made first, in processes of their own, and kept under
``.cache/hayakoe``). ``--no-torch`` hides torch from every process, as on a Raspberry Pi
where it is not installed (transformers imports it whenever it can). Every process loads,
warms up (one 3-sentence text), then speaks the benchmark's 1-, 3- and 10-sentence texts.
Printed per setting (MB = 10**6 bytes): RSS after load, peak RSS (VmHWM) over load and
speaking, RSS idle after speaking, and CPU seconds per audio second (all threads), which
on this shared machine is steadier than wall-clock speed. A Markdown table goes to stdout
at the end. Not part of ``make bench`` (about 1-2 minutes per setting on the full model).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tools.submit import submit_text  # noqa: E402

from bench.raw_worker import VOICE  # noqa: E402
from bench.texts import benchmark_texts  # noqa: E402
from hayakoe_ros.engines import memory  # noqa: E402

MIB = memory.MIB
#: Where the engine rows keep their offline-optimised models (``cache_dir`` of the engine).
HAYAKOE_CACHE = REPO / '.cache' / 'hayakoe'


@dataclasses.dataclass(frozen=True)
class Setting:
    """One measured configuration.

    Attributes:
        side: ``raw`` (hayakoe's own ``generate()``) or ``engine`` (the node's pipeline).
        alloc: glibc ``mallopt`` settings of the engine.
        trim: ``malloc_trim`` after each session, the load and the warm-up.
        optimized: sessions from offline-optimised models (``engines.ort_cache``).
        tweak: extra ONNX Runtime session options, for levers the node does not use:
            ``no-prepack-bert`` (``session.disable_prepacking`` on the BERT only),
            ``no-arena`` (``enable_cpu_mem_arena`` off on every session).
    """

    side: str
    alloc: memory.AllocatorSettings = memory.AllocatorSettings()
    trim: bool = False
    optimized: bool = False
    tweak: str = ''


SETTINGS = {
    'raw hayakoe': Setting('raw'),
    'engine, glibc default, no trim': Setting('engine'),
    'engine, trim only': Setting('engine', trim=True),
    'engine, mallopt 1 MiB only': Setting('engine', memory.NODE_ALLOCATOR),
    'engine, mallopt 1 MiB + trim': Setting('engine', memory.NODE_ALLOCATOR, True),
    'engine, mallopt 1 MiB + trim + 2 arenas': Setting(
        'engine', memory.AllocatorSettings(MIB, MIB, 2), True),
    'engine, optimised models only': Setting('engine', optimized=True),
    'engine, mallopt 1 MiB + trim + optimised models (node)': Setting(
        'engine', memory.NODE_ALLOCATOR, True, True),
    'engine, node + BERT prepacking off': Setting(
        'engine', memory.NODE_ALLOCATOR, True, True, 'no-prepack-bert'),
    'engine, node + ONNX Runtime arena off': Setting(
        'engine', memory.NODE_ALLOCATOR, True, True, 'no-arena'),
}


def _tweak_sessions(tweak: str) -> None:
    """Apply a :attr:`Setting.tweak` to every session the engine builds (this process)."""
    if not tweak:
        return
    from hayakoe_ros.engines import ort_cache

    original = ort_cache.OptimizedModelCache.session_source

    def session_source(self, source, options):
        if tweak == 'no-prepack-bert' and 'bert' in os.path.basename(source):
            options.add_session_config_entry('session.disable_prepacking', '1')
        elif tweak == 'no-arena':
            options.enable_cpu_mem_arena = False
        return original(self, source, options)

    ort_cache.OptimizedModelCache.session_source = session_source  # type: ignore


def _hide_torch() -> None:
    """Make ``import torch`` fail in this process, as on a Raspberry Pi without it.

    transformers (hayakoe's tokenizer) imports torch whenever it is installed: on this
    machine (torch is there for the CUDA-path tests) that is about 190 MB of RSS on
    both sides.
    """
    sys.modules['torch'] = None  # type: ignore[assignment]


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child(name: str, root: str, speaker: str, threads: int, no_torch: bool = False) -> dict:
    """Run one setting in this process; return its figures (KiB, s)."""
    setting = SETTINGS[name]
    if no_torch:
        _hide_torch()
    texts = benchmark_texts()
    t0 = time.perf_counter()
    if setting.side == 'raw':
        from hayakoe_ros.engines import ort_session

        with ort_session.onnx_session_hooks(threads):
            from hayakoe import TTS

            uri = f'file://{root}'
            tts = TTS(device='cpu', bert_source=uri).load(speaker, source=uri).prepare()
        spk = tts.speakers[speaker]
        rate = spk.sampling_rate

        def speak(text: str) -> float:
            return len(spk.generate(text, **VOICE).data) / rate
    else:
        _tweak_sessions(setting.tweak)
        speak = _engine_speaker(root, speaker, threads, setting)
    load_s = time.perf_counter() - t0
    out = {'load_s': load_s, 'rss_load': memory.vm_kib('VmRSS'),
           'hwm_load': memory.vm_kib('VmHWM')}
    speak(texts[3])  # warm-up, as in make bench
    cpu0, audio = _cpu_s(), 0.0
    for n in (1, 3, 10):
        audio += speak(texts[n])
    out['cpu_per_audio_s'] = (_cpu_s() - cpu0) / audio
    time.sleep(2.0)  # idle: let the scheduler's threads finish
    out['rss_idle'] = memory.vm_kib('VmRSS')
    out['hwm'] = memory.vm_kib('VmHWM')
    out['torch_imported'] = sys.modules.get('torch') is not None
    return out


def _engine_speaker(root: str, speaker: str, threads: int, setting: Setting):
    """Load and warm up the engine for ``setting``; return ``speak(text) -> audio s``.

    ``speak`` runs the node's pipeline (speech scheduler, pacing off) on the text.
    """
    from hayakoe_ros.engines.base import VoiceParams
    from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine
    from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler

    uri = f'file://{root}'
    eng = HayakoeEngine(speaker, speaker_source=uri, bert_source=uri,
                        cache_dir=str(HAYAKOE_CACHE), num_threads=threads,
                        allocator=setting.alloc, trim=setting.trim,
                        optimized_models=setting.optimized)
    eng.warmup()
    voice = VoiceParams(style=eng.styles[0], **VOICE)

    def speak(text: str) -> float:
        samples = []
        sched = SpeechScheduler(eng, lambda utt, chunk: samples.append(chunk.valid_frames),
                                SchedulerConfig(pacing=False))
        try:
            submit_text(sched, text, voice).wait(600.0)
        finally:
            sched.shutdown()
        return sum(samples) / eng.sample_rate
    return speak


def speed_pair(root: str, speaker: str, threads: int, reps: int) -> dict:
    """CPU s per audio s of plain vs optimised models, paired, in this one process.

    Both engines (the node's allocator and trim) are loaded side by side; each repetition
    speaks the 10-sentence text on both, alternating which goes first, so that the load
    of this shared machine hits both alike. Returns the per-repetition figures and the
    median of the paired ratios optimised / plain.
    """
    base = Setting('engine', memory.NODE_ALLOCATOR, True)
    sides = {'plain': _engine_speaker(root, speaker, threads, base),
             'optimised': _engine_speaker(root, speaker, threads,
                                          dataclasses.replace(base, optimized=True))}
    text = benchmark_texts()[10]
    for speak in sides.values():
        speak(benchmark_texts()[3])  # warm-up
    runs: dict = {name: [] for name in sides}
    for rep in range(reps):
        for name in (('plain', 'optimised') if rep % 2 == 0 else ('optimised', 'plain')):
            cpu0 = _cpu_s()
            audio = sides[name](text)
            runs[name].append((_cpu_s() - cpu0) / audio)
    ratios = sorted(o / p for o, p in zip(runs['optimised'], runs['plain']))
    return {'cpu_per_audio_s': runs, 'median_ratio': ratios[len(ratios) // 2],
            'ratios': ratios}


def prepare_optimized(root: Path) -> None:
    """Make the offline-optimised copies of the tree's models before measuring.

    Each in its own process, as the engine would on its first load, so that no measured
    load includes a conversion.
    """
    from hayakoe_ros.engines import ort_cache

    cache = ort_cache.OptimizedModelCache(HAYAKOE_CACHE / 'hayakoe_ros' / 'ort-optimized')
    for model in sorted(Path(root).glob('onnx/**/*.onnx')):
        if cache.optimized(str(model), 'ORT_ENABLE_ALL') is None:
            print(f'{model}: no optimised copy (see the log)', file=sys.stderr)


def table(rows: dict) -> str:
    """Markdown table of the figures (MB, CPU s per audio s, ratios to raw hayakoe)."""
    raw = rows.get('raw hayakoe')
    head = ('| setting | RSS after load | peak RSS | steady RSS (idle after speaking) '
            '| peak / raw peak | CPU s per audio s | CPU / raw |\n|---|---|---|---|---|---|---|')
    lines = [head]
    for name, r in rows.items():
        ratio = f"{r['hwm'] / raw['hwm']:.2f}" if raw else '–'
        cpu = f"{r['cpu_per_audio_s'] / raw['cpu_per_audio_s']:.3f}" if raw else '–'
        load, peak, idle = (r[k] * 1024 / 1e6 for k in ('rss_load', 'hwm', 'rss_idle'))
        lines.append(f"| {name} | {load:.0f} MB | {peak:.0f} MB | {idle:.0f} MB | {ratio} "
                     f"| {r['cpu_per_audio_s']:.3f} | {cpu} |")
    return '\n'.join(lines)


def main(argv=None) -> int:
    """Run every setting (or ``--only``) in a child process and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--recipe', default='full', choices=('full', 'tiny'))
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--only', nargs='*', default=None, help='setting names to run')
    parser.add_argument('--child', default=None, help=argparse.SUPPRESS)
    parser.add_argument('--root', default=None, help=argparse.SUPPRESS)
    parser.add_argument('--json', default=None, help='also write the figures here')
    parser.add_argument('--speed-pair', type=int, default=0, metavar='REPS',
                        help='instead: CPU per audio s of plain vs optimised models, '
                        'REPS paired runs of the 10-sentence text in one process')
    parser.add_argument('--no-torch', action='store_true',
                        help='hide torch from every process (as on a Raspberry Pi)')
    parser.add_argument('--model-root', default=None,
                        help='a model tree built earlier (default: the cached recipe)')
    args = parser.parse_args(argv)
    speaker = {'full': 'full-jp', 'tiny': 'tiny-jp'}[args.recipe]
    if args.child:
        print(json.dumps(child(args.child, args.root, speaker, args.threads, args.no_torch)),
              flush=True)
        return 0
    from tools.random_model import cached_model

    cache = Path(os.environ.get('HAYAKOE_ROS_CACHE', REPO / '.cache')) / 'models'
    root = args.model_root or cached_model(cache, args.recipe, speaker)
    if args.speed_pair:
        prepare_optimized(Path(root))
        if args.no_torch:
            _hide_torch()
        result = speed_pair(str(root), speaker, args.threads, args.speed_pair)
        print(json.dumps(result, indent=1))
        return 0
    names = args.only or list(SETTINGS)
    if any(SETTINGS[name].optimized for name in names):
        prepare_optimized(Path(root))
    rows = {}
    for name in names:
        proc = subprocess.run(
            [sys.executable, __file__, '--child', name, '--root', str(root),
             '--recipe', args.recipe, '--threads', str(args.threads)]
            + (['--no-torch'] if args.no_torch else []),
            capture_output=True, text=True, cwd=REPO, timeout=900, check=False)
        if proc.returncode != 0:
            print(f'{name}: failed\n{proc.stderr[-2000:]}', file=sys.stderr)
            continue
        rows[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f'{name}: {rows[name]}', file=sys.stderr, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding='utf-8')
    print(table(rows))
    return 0


if __name__ == '__main__':
    sys.exit(main())
