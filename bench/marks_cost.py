# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speech marks: what they cost the node, and how well they sit on the audio.

``python bench/marks_cost.py [--engine openjtalk|hayakoe] [--recipe tiny|full] [--reps 5]
[--sizes 1,3,10] [--json FILE]`` (also part of ``make bench``).

Two ``tts_node`` processes on the same voice, ``pacing:=false``, one with ``marks:=true``
and one with ``marks:=false``, both with a subscriber on ``marks`` and ``audio``, speak the
benchmark's 1-, 3- and 10-sentence texts (test/data/texts.yaml) through ``text``,
alternating which goes first. Per run: CPU seconds of the node process (all threads,
/proc) per second of audio; the claim is the paired ratio marks on / off.

On the runs with marks, the marks are checked against the audio received:

* alignment: for each word that starts after a pause (at least :data:`PAUSE_MS` after the
  previous word's end: a sentence end, a comma, a break), |word mark ``time`` - onset|,
  where the onset is the first sample at or after the previous word's end (or 150 ms
  before the mark, whichever is later) louder than -50 dBFS in the published PCM. This is
  meaningful on Open JTalk (real speech); the random-weight hayakoe model babbles.
* stamps: every mark's ``stamp`` against the first chunk's ``header.stamp`` + ``time``
  (they must agree within 1 ms), and the ``start`` mark's stamp against it exactly.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import statistics
import sys
import tempfile
import threading
import time

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import report  # noqa: E402
from bench.node_driver import BenchClient, NodeProcess  # noqa: E402
from bench.texts import benchmark_texts  # noqa: E402

#: A word starts after a pause when the previous word ended at least this long before (ms).
PAUSE_MS = 50
#: Onset level (dBFS) and how far before a mark the onset is looked for (ms).
ONSET_DBFS = -50.0
LOOK_BACK_MS = 150
#: Targets: CPU with marks / without, <=; |mark - onset| at a word after a pause, <= (ms);
#: stamp - (first chunk's stamp + time), <= (ms).
TARGETS = {'cpu_ratio': 1.01, 'align_ms': 40.0, 'stamp_ms': 1.0}
#: Longest wait for an utterance's end mark once its audio is in (s).
END_WAIT_S = 5.0


class MarkLog:
    """Every mark received on one ``marks`` topic, in arrival order."""

    def __init__(self, node, topic: str) -> None:
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String

        self.lock = threading.Lock()
        self.marks: list = []
        self.sub = node.create_subscription(
            String, topic, self._on,
            QoSProfile(depth=10000, reliability=ReliabilityPolicy.RELIABLE))

    def _on(self, msg) -> None:
        with self.lock:
            self.marks.append(json.loads(msg.data))

    def count(self) -> int:
        """Marks received so far."""
        with self.lock:
            return len(self.marks)

    def since(self, index: int) -> list:
        """Marks received after the first ``index``."""
        with self.lock:
            return list(self.marks[index:])

    def wait_end(self, index: int, timeout: float) -> list:
        """Marks after ``index`` once one of them is an ``end`` mark (bounded wait)."""
        deadline = time.monotonic() + timeout
        while True:
            marks = self.since(index)
            if any(m['type'] == 'end' for m in marks):
                return marks
            if time.monotonic() > deadline:
                raise RuntimeError('no end mark')
            time.sleep(0.01)


def _ns(stamp: dict) -> int:
    return stamp['sec'] * 1_000_000_000 + stamp['nanosec']


def onset_ms(pcm: np.ndarray, rate: int, from_ms: float) -> float:
    """First time (ms) at or after ``from_ms`` louder than :data:`ONSET_DBFS`; NaN if none."""
    start = max(0, int(from_ms * rate / 1000))
    loud = np.flatnonzero(np.abs(pcm[start:].astype(np.float64)) / 32768
                          > 10 ** (ONSET_DBFS / 20))
    return (start + loud[0]) * 1000 / rate if loud.size else float('nan')


def check_marks(marks: list, msgs: list) -> dict:
    """Alignment and stamps of one utterance's ``marks`` against its audio ``msgs``.

    ``msgs``: ``(arrival, stamp ns, int16 samples, rate)`` per chunk, as
    :class:`bench.node_driver.BenchClient` records them.
    """
    pcm = np.concatenate([m[2] for m in msgs])
    rate, first_ns = msgs[0][3], msgs[0][1]
    start = next(m for m in marks if m['type'] == 'start')
    stamp_dev = [abs(_ns(m['stamp']) - first_ns - m['time'] * 1_000_000) / 1e6
                 for m in marks if m['type'] != 'end']
    errors, words = [], []
    prev_end = None
    for w in (m for m in marks if m['type'] == 'word'):
        if prev_end is not None and w['duration'] > 0 and w['time'] - prev_end >= PAUSE_MS:
            onset = onset_ms(pcm, rate, max(prev_end, w['time'] - LOOK_BACK_MS))
            errors.append(onset - w['time'])
            words.append(w['value'])
        prev_end = w['time'] + w['duration'] if prev_end is None else \
            max(prev_end, w['time'] + w['duration'])
    end = next(m for m in marks if m['type'] == 'end')
    return {'errors_ms': errors, 'words': words, 'stamp_dev_ms': max(stamp_dev),
            'start_exact': _ns(start['stamp']) == first_ns, 'marks': len(marks),
            'end': end['value']}


def measure(params: dict, reps: int, log_dir: Path, ns: str, sizes=(1, 3, 10),
            log=print) -> dict:
    """Run the marks on / off comparison on nodes with ``params``; the raw runs."""
    texts = benchmark_texts()
    nodes = {on: NodeProcess({**params, 'pacing': False, 'marks': on},
                             f"{ns}_marks_{'on' if on else 'off'}", log_dir=log_dir,
                             wait_ready=False) for on in (True, False)}
    clients: dict = {}
    try:
        for node in nodes.values():
            node.wait_until_ready()
        for on, node in nodes.items():
            clients[on] = BenchClient(node, f"bench_marks_{'on' if on else 'off'}")
        logs = {on: MarkLog(clients[on].node, nodes[on].topic('marks')) for on in nodes}
        deadline = time.monotonic() + 10
        while logs[True].sub.get_publisher_count() < 1:
            if time.monotonic() > deadline:
                raise RuntimeError('marks publisher not matched')
            time.sleep(0.05)
        time.sleep(0.5)
        for on in nodes:  # warm-up
            clients[on].speak_topic(texts[3])
        runs: dict = {str(n): {'on': [], 'off': []} for n in sizes}
        checks: list = []
        for rep in range(reps):
            for n in sizes:
                for on in ((True, False) if rep % 2 == 0 else (False, True)):
                    index, mark = logs[on].count(), clients[on].rec.mark()
                    run = clients[on].speak_topic(texts[n])
                    runs[str(n)]['on' if on else 'off'].append(
                        {k: run[k] for k in ('cpu_s', 'audio_s', 'total_s')})
                    if on:
                        marks = logs[on].wait_end(index, END_WAIT_S)
                        checks.append({'size': n, **check_marks(
                            marks, clients[on].rec.since(mark))})
            log(f'marks: rep {rep + 1}/{reps} done')
    finally:
        for client in clients.values():
            client.close()
        for node in nodes.values():
            node.stop()
    return {'engine': params.get('engine', 'hayakoe'), 'reps': reps, 'runs': runs,
            'checks': checks}


def analyse(raw: dict) -> dict:
    """Summaries: CPU per audio s on / off and their paired ratio, per size and pooled."""
    out: dict = {'engine': raw['engine'], 'sizes': {}}
    pooled = []
    for n, side in raw['runs'].items():
        on = [r['cpu_s'] / r['audio_s'] for r in side['on']]
        off = [r['cpu_s'] / r['audio_s'] for r in side['off']]
        ratio = [a / b for a, b in zip(on, off)]
        pooled += ratio
        out['sizes'][n] = {'on': report.summary(on), 'off': report.summary(off),
                           'ratio': report.summary(ratio),
                           'audio_s': statistics.median(r['audio_s'] for r in side['on'])}
    out['ratio'] = report.summary(pooled)
    # CPU over all runs on / off: long texts weigh more, where /proc's 10 ms ticks matter
    # least.
    total = {side: sum(r['cpu_s'] for s in raw['runs'].values() for r in s[side]) /
             sum(r['audio_s'] for s in raw['runs'].values() for r in s[side])
             for side in ('on', 'off')}
    out['total_ratio'] = total['on'] / total['off']
    errors = [abs(e) for c in raw['checks'] for e in c['errors_ms']]
    words = {w for c in raw['checks'] for w in c['words']}
    out['align'] = report.summary(errors) if errors else None
    signed = [e for c in raw['checks'] for e in c['errors_ms']]
    out['align_bias_ms'] = statistics.median(signed) if signed else None
    out['align_words'] = len(words)
    out['align_within'] = sum(e <= TARGETS['align_ms'] for e in errors)
    out['stamp_ms'] = max(c['stamp_dev_ms'] for c in raw['checks'])
    out['start_exact'] = all(c['start_exact'] for c in raw['checks'])
    out['utterances'] = len(raw['checks'])
    return out


def claims(a: dict) -> list:
    """Claims-table rows: cost ratio, alignment, stamps."""
    eng = 'Open JTalk' if a['engine'] == 'openjtalk' else 'hayakoe'
    rows = [[f"CPU per audio s, marks on / off ({eng}, paired, {a['ratio']['n']} pairs)",
             f"{report.fmt(a['ratio'], digits=3)}; all runs' CPU: {a['total_ratio']:.3f}",
             f"≤ {TARGETS['cpu_ratio']}",
             report.status(a['ratio']['median'], TARGETS['cpu_ratio'], False)]]
    if a['engine'] == 'openjtalk' and a['align']:
        al = a['align']
        rows.append([f"word mark vs sound onset in the PCM, words after a pause (Open JTalk, "
                     f"{al['n']} words, {a['align_words']} distinct): median (max)",
                     f"{al['median']:.1f} ms ({al['max']:.1f} ms)",
                     f"≤ {TARGETS['align_ms']:.0f} ms",
                     report.status(al['max'], TARGETS['align_ms'], False)])
    ok = a['stamp_ms'] <= TARGETS['stamp_ms'] and a['start_exact']
    rows.append([f"mark stamp − (first chunk stamp + time), max over {a['utterances']} "
                 f"utterances ({eng}); start stamp = first chunk stamp",
                 f"{a['stamp_ms']:.3f} ms; {'exact' if a['start_exact'] else 'NOT exact'}",
                 f"≤ {TARGETS['stamp_ms']:.0f} ms", 'met' if ok else '**MISSED**'])
    return rows


def markdown(a: dict) -> list:
    """Lines of the report section for one engine's analysis."""
    eng = 'Open JTalk' if a['engine'] == 'openjtalk' else 'hayakoe'
    rows = [['text', 'audio', 'CPU per audio s, marks off', 'marks on', 'on / off (paired)']]
    for n, s in a['sizes'].items():
        rows.append([f"{n} sentence{'s' * (n != '1')}", f"{s['audio_s']:.1f} s",
                     report.fmt(s['off'], digits=4), report.fmt(s['on'], digits=4),
                     report.fmt(s['ratio'], digits=3)])
    lines = [f'### Speech marks: cost and alignment ({eng}, bench/marks_cost.py)', '',
             'Two nodes, `marks:=true` and `marks:=false`, pacing off, the same texts, '
             'alternating; CPU = the node process, all threads.', '',
             report.table(rows), '',
             f"All runs' CPU per audio s, marks on / off: {a['total_ratio']:.3f}.", '']
    if a['align']:
        al = a['align']
        lines += [f"Words after a pause ({al['n']} over {a['utterances']} utterances): "
                  f"|word mark − sound onset (−50 dBFS) in the published PCM| median "
                  f"{al['median']:.1f} ms, max {al['max']:.1f} ms; {a['align_within']} of "
                  f"{al['n']} within {TARGETS['align_ms']:.0f} ms; signed median (onset "
                  f"after the mark when positive) {a['align_bias_ms']:+.1f} ms. Every "
                  f"mark's stamp = "
                  f"first chunk's stamp + `time` within {a['stamp_ms']:.3f} ms; start "
                  f"stamp = first chunk stamp: {'always' if a['start_exact'] else 'NOT'}.",
                  '']
    return lines


def main(argv=None) -> int:
    """Measure one engine and print the section (and write JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--engine', default='openjtalk', choices=('openjtalk', 'hayakoe'))
    parser.add_argument('--recipe', default='tiny', choices=('tiny', 'full'),
                        help='hayakoe: the random-weight model')
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--reps', type=int, default=5)
    parser.add_argument('--sizes', default='1,3,10')
    parser.add_argument('--json', default=None)
    args = parser.parse_args(argv)
    from tools import dds_domain

    os.environ['ROS_DOMAIN_ID'] = str(dds_domain.claim())
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    if args.engine == 'openjtalk':
        params: dict = {'engine': 'openjtalk'}
    else:
        from bench.raw_worker import SPEAKER, VOICE, model_root

        root = model_root(args.recipe)
        params = dict(engine='hayakoe', fallback_engine='none', speaker=SPEAKER[args.recipe],
                      speaker_source=f'file://{root}', bert_source=f'file://{root}',
                      num_threads=args.threads, **VOICE)
    import rclpy

    rclpy.init()
    try:
        with tempfile.TemporaryDirectory(prefix='hayakoe_marks_') as tmp:
            raw = measure(params, args.reps, Path(tmp), f'/marks{os.getpid()}',
                          tuple(int(s) for s in args.sizes.split(',')),
                          lambda msg: print(msg, file=sys.stderr, flush=True))
    finally:
        rclpy.shutdown()
    a = analyse(raw)
    if args.json:
        Path(args.json).write_text(json.dumps({'raw': raw, 'summary': a}, indent=1,
                                              ensure_ascii=False, default=float),
                                   encoding='utf-8')
    print('\n'.join(markdown(a) + [report.table([['claim', 'measured', 'target', 'status']]
                                                + claims(a))]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
