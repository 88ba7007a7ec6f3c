# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Short first segment: node TTFA against raw hayakoe ``generate()``, no ROS.

``python bench/first_segment.py [--recipe full] [--threads 2] [--reps 3] [--morae 0 4 8 ...]
[--json FILE] [--underruns]``

For each long first sentence (``long_clause`` in test/data/texts.yaml: 99, 146 and 270
characters with only 、) and the benchmark's first sentence (21 characters):

* raw: hayakoe ``Speaker.generate()`` of the first sentence alone, timed in a
  ``bench/raw_worker.py`` process (the same worker ``make bench`` uses);
* node: time to first audio of the node's speech pipeline in this process (the speech
  scheduler on hayakoe_ros' engine, pacing on, as the node runs it, no ROS): submit to the
  first chunk handed to the sink, then ``stop()``; for each ``first_segment_morae`` value,
  gapless off (the first segment's synthesis alone) and on (plus the start delay it
  chose). The engine's feature cache is cleared before every run.

Raw and node runs alternate, after one warm-up of each. Printed: a Markdown table with the
medians and the ratio node TTFA / raw ``generate()`` (the target: <= 0.5; the
median of the per-repetition ratios); written with ``--json``. ``--underruns`` also
speaks the 146-character sentence whole, in real time (pacing on, gapless off), once per
morae value: underruns at its joins and the engine's compute per audio second, which is
what more, shorter segments cost.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import statistics
import subprocess
import sys
import threading
import time

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.submit import submit_text  # noqa: E402

from bench.raw_worker import SPEAKER, model_root, warm_engine  # noqa: E402
from tools.texts import load_texts  # noqa: E402

DEFAULT_MORAE = (0, 4, 6, 8, 12, 16)
#: Longest wait for one utterance (s).
UTTERANCE_TIMEOUT_S = 600.0


def first_sentences() -> dict:
    """Name -> text of the first sentences measured."""
    texts = load_texts()
    out = {'benchmark first (21 ch)': texts['benchmark'][0]}
    for text in texts['utterances']['long_clause']:
        out[f'only 、 ({len(text)} ch)'] = text
    return out


class Raw:
    """A ``bench/raw_worker.py hayakoe`` process (JSON lines over a pipe)."""

    def __init__(self, root: Path, speaker: str, threads: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / 'bench' / 'raw_worker.py'), 'hayakoe', '--root',
             str(root), '--speaker', speaker, '--threads', str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=REPO, text=True, bufsize=1)
        self.call_ready()

    def call_ready(self) -> None:
        """Wait for the worker's ``ready`` line (raise if it died)."""
        assert self.proc.stdout is not None
        if not json.loads(self.proc.stdout.readline() or '{}').get('ready'):
            raise RuntimeError('raw worker failed to start')

    def generate(self, text: str) -> float:
        """Seconds ``Speaker.generate(text)`` took."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({'op': 'generate', 'text': text}) + '\n')
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline() or '{"error": "worker died"}')
        if 'error' in reply:
            raise RuntimeError(reply['error'])
        return float(reply['compute_s'])

    def stop(self) -> None:
        """Quit the worker (killed after 30 s)."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write('{"op": "quit"}\n')
            self.proc.stdin.close()
            self.proc.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(30)


class Node:
    """The node's speech pipeline on hayakoe_ros' engine, in this process."""

    def __init__(self, root: Path, speaker: str, threads: int) -> None:
        self.engine, self.voice = warm_engine(root, speaker, threads)

    def ttfa(self, text: str, morae: int, gapless: bool) -> dict:
        """Submit ``text``; time to its first chunk (s), the start delay; then stop it."""
        from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler

        first = threading.Event()
        sched = SpeechScheduler(self.engine, lambda utt, chunk: first.set(),
                                SchedulerConfig(first_segment_morae=morae, gapless=gapless))
        self.engine.forget_features()
        try:
            utt = submit_text(sched, text, self.voice)
            if not first.wait(UTTERANCE_TIMEOUT_S):
                raise RuntimeError('no first chunk')
            sched.stop()
        finally:
            sched.shutdown(timeout=60.0)
        return {'ttfa_s': utt.ttfa_s, 'start_delay_s': utt.start_delay_s,
                'first_segment': utt.segments[0].text, 'segments': len(utt.segments)}

    def whole(self, text: str, morae: int) -> dict:
        """Speak ``text`` whole in real time (gapless off): underruns, compute per audio s."""
        from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler

        sched = SpeechScheduler(self.engine, lambda utt, chunk: None,
                                SchedulerConfig(first_segment_morae=morae))
        self.engine.forget_features()
        try:
            utt = submit_text(sched, text, self.voice)
            if not utt.wait(UTTERANCE_TIMEOUT_S):
                raise RuntimeError('utterance did not finish')
        finally:
            sched.shutdown(timeout=60.0)
        return {'segments': [s.text for s in utt.segments], 'underruns': utt.underruns,
                'audio_s': utt.audio_s, 'synth_s': utt.synth_seconds, 'rtf': utt.rtf,
                'ttfa_s': utt.ttfa_s}


def _median(values: list) -> float:
    return statistics.median(values) if values else float('nan')


def _paired(node: list, raw: list) -> float:
    """Median of node / raw over the repetitions (each pair measured back to back)."""
    return _median([n / r for n, r in zip(node, raw)])


def table(rows: dict, morae: list) -> str:
    """Markdown: per sentence, raw generate() and node TTFA per morae value.

    Seconds are medians; ratios are medians of the per-repetition ratios (a node run and
    the raw run next to it), steadier than a ratio of medians on a shared machine.
    """
    head = ['first sentence', 'raw generate()'] + [
        f'node TTFA, {m} morae' if m else 'node TTFA, off' for m in morae]
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for name, row in rows.items():
        cells = [name, f"{_median(row['raw_s']):.2f} s"]
        for m in morae:
            cell = row['node'][str(m)]
            cells.append(f"{_median(cell['off']):.2f} s = {cell['ratio_off']:.2f} x; "
                         f"gapless {_median(cell['on']):.2f} s = {cell['ratio_on']:.2f} x "
                         f"(delay {_median(cell['delay']):.2f} s)")
        lines.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def main(argv=None) -> int:
    """Measure and print the table (and write JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--recipe', default='full', choices=tuple(SPEAKER))
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--reps', type=int, default=3)
    parser.add_argument('--morae', type=int, nargs='+', default=list(DEFAULT_MORAE))
    parser.add_argument('--json', default=None)
    parser.add_argument('--underruns', action='store_true')
    parser.add_argument('--model-root', default=None)
    args = parser.parse_args(argv)
    speaker = SPEAKER[args.recipe]
    root = model_root(args.recipe, args.model_root)
    sentences = first_sentences()
    t0 = time.perf_counter()
    raw = Raw(root, speaker, args.threads)
    node = Node(root, speaker, args.threads)
    out: dict = {'recipe': args.recipe, 'threads': args.threads, 'reps': args.reps,
                 'load_avg_start': os.getloadavg(), 'sentences': {}}
    rows = out['sentences']
    try:
        raw.generate(sentences['benchmark first (21 ch)'])  # warm-up
        node.ttfa(sentences['benchmark first (21 ch)'], 0, False)
        for name, text in sentences.items():
            rows[name] = {'chars': len(text), 'raw_s': [], 'node': {
                str(m): {'off': [], 'on': [], 'delay': [], 'first_segment': ''}
                for m in args.morae}}
        for rep in range(args.reps):
            for name, text in sentences.items():
                row = rows[name]
                order = ('raw', 'node') if rep % 2 == 0 else ('node', 'raw')
                for side in order:
                    if side == 'raw':
                        row['raw_s'].append(raw.generate(text))
                        continue
                    for m in args.morae:
                        cell = row['node'][str(m)]
                        off = node.ttfa(text, m, False)
                        on = node.ttfa(text, m, True)
                        cell['off'].append(off['ttfa_s'])
                        cell['on'].append(on['ttfa_s'])
                        cell['delay'].append(on['start_delay_s'])
                        cell['first_segment'] = off['first_segment']
                print(f'[{time.perf_counter() - t0:.0f} s] rep {rep} {name}: raw '
                      f"{row['raw_s'][-1]:.2f} s", file=sys.stderr, flush=True)
        if args.underruns:
            text = load_texts()['utterances']['long_clause'][1]
            out['whole'] = {str(m): node.whole(text, m) for m in args.morae}
            for m, r in out['whole'].items():
                print(f'whole, {m} morae: {r}', file=sys.stderr, flush=True)
    finally:
        raw.stop()
    out['load_avg_end'] = os.getloadavg()
    for row in rows.values():
        for cell in row['node'].values():
            cell['ratio_off'] = _paired(cell['off'], row['raw_s'])
            cell['ratio_on'] = _paired(cell['on'], row['raw_s'])
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, ensure_ascii=False),
                                   encoding='utf-8')
    print(table(rows, args.morae))
    return 0


if __name__ == '__main__':
    sys.exit(main())
