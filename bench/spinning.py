# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""ONNX Runtime thread spinning (the ``spinning`` parameter): first audio and CPU, no ROS.

``python bench/spinning.py [--recipe full] [--threads 2] [--reps 3] [--idle-s 1] [--json F]``

One engine per :class:`~hayakoe_ros.engines.values.Spinning` mode (``none``;
``first_audio``, the node's default; ``all``) on the same model in this process. The
node's speech pipeline (the speech scheduler, pacing off, first_segment_morae 8) speaks the
benchmark's 1-, 3- and 10-sentence texts on each, rotating which goes first, after
``--idle-s`` of idle (a robot's reply comes after silence, when ONNX Runtime's sleeping
threads must be woken); the engines' feature caches are cleared before every run, so the
first segment's BERT is computed each time, as in raw hayakoe. Per run: first audio (s,
submit to the first chunk), wall seconds to the last chunk, and CPU seconds of the process
(all threads, ``os.times``) per second of audio. Printed: a Markdown table of medians
(min-max), and for each mode against ``none`` the paired first-audio difference (ms) and
CPU ratio.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import sys
import time

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.submit import submit_text  # noqa: E402

from bench import report  # noqa: E402
from bench.raw_worker import SPEAKER, model_root, warm_engine  # noqa: E402
from tools.texts import load_texts  # noqa: E402

#: Longest wait for one utterance (s).
UTTERANCE_TIMEOUT_S = 600.0
SIZES = (1, 3, 10)


def speak(engine, voice, text: str) -> dict:
    """Speak ``text`` through the pipeline (pacing off); first audio, wall, CPU, audio s."""
    from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler

    sched = SpeechScheduler(engine, lambda utt, chunk: None,
                            SchedulerConfig(pacing=False, first_segment_morae=8))
    engine.forget_features()
    try:
        c0, w0 = os.times(), time.perf_counter()
        utt = submit_text(sched, text, voice)
        if not utt.wait(UTTERANCE_TIMEOUT_S):
            raise RuntimeError('utterance did not finish')
        c1, w1 = os.times(), time.perf_counter()
    finally:
        sched.shutdown(timeout=60.0)
    cpu = c1.user + c1.system - c0.user - c0.system
    return {'ttfa_s': utt.ttfa_s, 'wall_s': w1 - w0, 'cpu_s': cpu, 'audio_s': utt.audio_s}


def main(argv=None) -> int:
    """Measure and print the table (and write JSON with ``--json``)."""
    from hayakoe_ros.engines.values import Spinning

    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--recipe', default='full', choices=tuple(SPEAKER))
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--reps', type=int, default=3)
    parser.add_argument('--idle-s', type=float, default=1.0,
                        help='idle before each run (s)')
    parser.add_argument('--sizes', type=int, nargs='+', default=list(SIZES),
                        help='text lengths (sentences)')
    parser.add_argument('--json', default=None)
    args = parser.parse_args(argv)
    sizes = tuple(args.sizes)
    root = model_root(args.recipe)
    texts = load_texts()['benchmark']
    modes = [m.value for m in Spinning]
    engines = {m: warm_engine(root, SPEAKER[args.recipe], args.threads, spinning=m)
               for m in modes}
    runs: dict = {f'{n}/{m}': [] for n in sizes for m in modes}
    out = {'recipe': args.recipe, 'threads': args.threads, 'reps': args.reps,
           'idle_s': args.idle_s, 'load_avg_start': os.getloadavg(), 'runs': runs}
    for m in modes:  # warm-up
        engine, voice = engines[m]
        speak(engine, voice, texts[0])
    for rep in range(args.reps):
        order = modes[rep % len(modes):] + modes[:rep % len(modes)]
        for n in sizes:
            text = ''.join(texts[:n])
            for m in order:
                engine, voice = engines[m]
                time.sleep(args.idle_s)  # the idle being measured, not a wait on a state
                runs[f'{n}/{m}'].append(speak(engine, voice, text))
        print(f'rep {rep + 1}/{args.reps} done', file=sys.stderr, flush=True)
    out['load_avg_end'] = os.getloadavg()
    lines = ['| text | spinning | first audio (ms) | CPU per audio s | first audio - none '
             '(ms, paired) | CPU / none (paired) |', '|---|---|---|---|---|---|']
    for n in sizes:
        off = runs[f'{n}/none']
        for m in modes:
            rs = runs[f'{n}/{m}']
            cpu = [r['cpu_s'] / r['audio_s'] for r in rs]
            ttfa = [r['ttfa_s'] * 1000 for r in rs]
            dt = [a['ttfa_s'] * 1000 - b['ttfa_s'] * 1000 for a, b in zip(rs, off)]
            ratio = [(a['cpu_s'] / a['audio_s']) / (b['cpu_s'] / b['audio_s'])
                     for a, b in zip(rs, off)]
            out[f'{n}/{m}_summary'] = {'ttfa_minus_none_ms': dt, 'cpu_over_none': ratio}
            paired = ('' if m == 'none' else
                      f' {report.fmt_values(dt, 0)} | {report.fmt_values(ratio)} |')
            lines.append(f'| {n} sentence{"s" if n > 1 else ""} | {m} | '
                         f'{report.fmt_values(ttfa, 0)} | {report.fmt_values(cpu)} |'
                         + (paired or ' | |'))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding='utf-8')
    print('\n'.join(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
