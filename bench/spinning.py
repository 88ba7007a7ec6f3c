# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""ONNX Runtime thread spinning (the ``allow_spinning`` parameter): CPU and speed, no ROS.

``python bench/spinning.py [--recipe full] [--threads 2] [--reps 3] [--json FILE]``

Two engines on the same model in this process, one built with
``session.intra_op.allow_spinning`` "1" (ONNX Runtime's default: idle intra-op threads
busy-wait for the next operator) and one with "0" (the node's default: they sleep). The
node's speech pipeline (the speech scheduler, pacing off, first_segment_morae 8) speaks the
benchmark's 1-, 3- and 10-sentence texts on each, alternating which goes first; the
engines' feature caches are cleared before every run. Per run: wall seconds from submit to
the last chunk, and CPU seconds of the process (all threads, ``os.times``) per second of
audio. Printed: a Markdown table of medians (min-max) and the paired ratios off / on.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import statistics
import sys
import time

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.submit import submit_text  # noqa: E402

from bench.raw_worker import SPEAKER, model_root, warm_engine  # noqa: E402
from tools.texts import load_texts  # noqa: E402

#: Longest wait for one utterance (s).
UTTERANCE_TIMEOUT_S = 600.0
SIZES = (1, 3, 10)


def speak(engine, voice, text: str) -> dict:
    """Speak ``text`` through the pipeline (pacing off); wall s, CPU s, audio s."""
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
    return {'wall_s': w1 - w0, 'cpu_s': cpu, 'audio_s': utt.audio_s}


def _stat(values: list, fmt: str = '{:.3f}') -> str:
    return (f'{fmt.format(statistics.median(values))} '
            f'({fmt.format(min(values))}–{fmt.format(max(values))})')


def main(argv=None) -> int:
    """Measure and print the table (and write JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--recipe', default='full', choices=tuple(SPEAKER))
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--reps', type=int, default=3)
    parser.add_argument('--json', default=None)
    args = parser.parse_args(argv)
    root = model_root(args.recipe)
    texts = load_texts()['benchmark']
    engines = {on: warm_engine(root, SPEAKER[args.recipe], args.threads, allow_spinning=on)
               for on in (True, False)}
    runs: dict = {f'{n}/{on}': [] for n in SIZES for on in (True, False)}
    out = {'recipe': args.recipe, 'threads': args.threads, 'reps': args.reps,
           'load_avg_start': os.getloadavg(), 'runs': runs}
    for on in (True, False):  # warm-up
        engine, voice = engines[on]
        speak(engine, voice, texts[0])
    for rep in range(args.reps):
        for n in SIZES:
            text = ''.join(texts[:n])
            for on in ((True, False) if rep % 2 == 0 else (False, True)):
                engine, voice = engines[on]
                runs[f'{n}/{on}'].append(speak(engine, voice, text))
        print(f'rep {rep + 1}/{args.reps} done', file=sys.stderr, flush=True)
    out['load_avg_end'] = os.getloadavg()
    lines = ['| text | CPU per audio s, spinning (ORT default) | CPU per audio s, no '
             'spinning (node default) | CPU off / on (paired) | wall off / on (paired) |',
             '|---|---|---|---|---|']
    for n in SIZES:
        on, off = runs[f'{n}/True'], runs[f'{n}/False']
        cpu_on = [r['cpu_s'] / r['audio_s'] for r in on]
        cpu_off = [r['cpu_s'] / r['audio_s'] for r in off]
        cpu_ratio = [b / a for a, b in zip(cpu_on, cpu_off)]
        wall_ratio = [b['wall_s'] / a['wall_s'] for a, b in zip(on, off)]
        out[f'{n}_summary'] = {'cpu_ratio': cpu_ratio, 'wall_ratio': wall_ratio}
        lines.append(f'| {n} sentence{"s" if n > 1 else ""} | {_stat(cpu_on)} | '
                     f'{_stat(cpu_off)} | {_stat(cpu_ratio)} | {_stat(wall_ratio)} |')
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding='utf-8')
    print('\n'.join(lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
