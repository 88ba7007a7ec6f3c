# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Measure the memory levers of the hayakoe engine, one fresh process per setting.

``python bench/memory_levers.py [--recipe full] [--threads 2] [--only NAME ...]`` runs,
each in its own process and one after the other: raw hayakoe (``TTS().load().prepare()``
then ``Speaker.generate()``), and hayakoe_ros' engine with the node's pipeline (the speech
scheduler, pacing off, no ROS) under each allocator/trim setting. Every process loads,
warms up (one 3-sentence text), then speaks the benchmark's 1-, 3- and 10-sentence texts.
Printed per setting (MB = 10**6 bytes): RSS after load, peak RSS (VmHWM) over load and
speaking, RSS idle after speaking, and CPU seconds per audio second (all threads), which
on this shared machine is steadier than wall-clock speed. A Markdown table goes to stdout
at the end. Not part of ``make bench`` (about 1-2 minutes per setting on the full model).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.raw_worker import VOICE  # noqa: E402
from bench.texts import benchmark_texts  # noqa: E402
from hayakoe_ros.engines import memory  # noqa: E402

MIB = memory.MIB
#: name -> (side, allocator settings, trim after load)
SETTINGS = {
    'raw hayakoe': ('raw', memory.AllocatorSettings(), False),
    'engine, glibc default, no trim': ('engine', memory.AllocatorSettings(), False),
    'engine, trim only': ('engine', memory.AllocatorSettings(), True),
    'engine, mallopt 1 MiB only': ('engine', memory.NODE_ALLOCATOR, False),
    'engine, mallopt 1 MiB + trim (node)': ('engine', memory.NODE_ALLOCATOR, True),
    'engine, mallopt 1 MiB + trim + 2 arenas': (
        'engine', memory.AllocatorSettings(MIB, MIB, 2), True),
}


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child(name: str, root: str, speaker: str, threads: int) -> dict:
    """Run one setting in this process; return its figures (KiB, s)."""
    side, alloc, trim = SETTINGS[name]
    texts = benchmark_texts()
    t0 = time.perf_counter()
    if side == 'raw':
        from hayakoe_ros.engines import hayakoe_internals as hk

        with hk.onnx_session_hooks(threads):
            from hayakoe import TTS

            uri = f'file://{root}'
            tts = TTS(device='cpu', bert_source=uri).load(speaker, source=uri).prepare()
        spk = tts.speakers[speaker]
        rate = spk.sampling_rate

        def speak(text: str) -> float:
            return len(spk.generate(text, **VOICE).data) / rate
    else:
        from hayakoe_ros.engines.base import VoiceParams
        from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine
        from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler

        uri = f'file://{root}'
        eng = HayakoeEngine(speaker, speaker_source=uri, bert_source=uri,
                            num_threads=threads, allocator=alloc, trim=trim)
        eng.warmup()
        voice = VoiceParams(style=eng.styles[0], **VOICE)
        rate = eng.sample_rate

        def speak(text: str) -> float:
            samples = []
            sched = SpeechScheduler(eng, lambda utt, chunk: samples.append(chunk.valid_frames),
                                    SchedulerConfig(pacing=False))
            try:
                sched.submit(text, voice).wait(600.0)
            finally:
                sched.shutdown()
            return sum(samples) / rate
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
    return out


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
    parser.add_argument('--model-root', default=None,
                        help='a model tree built earlier (default: the cached recipe)')
    args = parser.parse_args(argv)
    speaker = {'full': 'full-jp', 'tiny': 'tiny-jp'}[args.recipe]
    if args.child:
        print(json.dumps(child(args.child, args.root, speaker, args.threads)), flush=True)
        return 0
    from tools.random_model import cached_model

    cache = Path(os.environ.get('HAYAKOE_ROS_CACHE', REPO / '.cache')) / 'models'
    root = args.model_root or cached_model(cache, args.recipe, speaker)
    rows = {}
    for name in args.only or SETTINGS:
        proc = subprocess.run(
            [sys.executable, __file__, '--child', name, '--root', str(root),
             '--recipe', args.recipe, '--threads', str(args.threads)],
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
