# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""What running Open JTalk in a worker process would cost (no ROS, no model).

``python bench/openjtalk_isolation.py [--reps 5] [--json FILE]``

Open JTalk can kill the process it runs in (hayakoe_ros.engines.openjtalk_guard). The node
keeps it in-process, behind the guard, with ``respawn`` in the launch file as the last
line; this measures the alternative. For every segment of the benchmark texts (the
speech pipeline's own segmenting) it times, in this process and through one persistent
worker process (``multiprocessing``, spawn, a pipe; the calls and their results pickled
both ways, as an isolating wrapper would do): the front end's NJD analysis
(``run_frontend``), the g2p that hayakoe's front end and ``say --print-reading`` run,
and the Open JTalk voice's synthesis (``tts``, 48 kHz float64 back over the pipe). It also
reports the worker's resident memory (a second copy of the dictionary) and its start-up.
Printed: a Markdown table of medians per call, in-process vs isolated, and the overhead.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
from pathlib import Path
import statistics
import sys
import time

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.texts import load_texts  # noqa: E402

CALLS = ('run_frontend', 'g2p', 'tts')


def _call(name: str, text: str):
    import pyopenjtalk

    if name == 'tts':
        return pyopenjtalk.tts(text)[0]
    return getattr(pyopenjtalk, name)(text)


def _worker(conn) -> None:
    _call('g2p', 'こんにちは')  # load the dictionary before the first timed call
    conn.send(('ready', os.getpid()))
    while True:
        msg = conn.recv()
        if msg is None:
            return
        conn.send(_call(*msg))


def _rss_mb(pid: int) -> float:
    with open(f'/proc/{pid}/status', encoding='utf-8') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return 0.0


def segments() -> list:
    """The pipeline's segments of test/data/texts.yaml (benchmark sentences, utterances)."""
    from hayakoe_ros.text.pipeline import prepare

    out: list = []
    table = load_texts()
    for text in table['benchmark'] + [t for ts in table['utterances'].values() for t in ts]:
        out.extend(s.text for s in prepare(text, 10 ** 6, 60, 8)[1])
    return out


def measure(reps: int) -> dict:
    """Median ms per call in-process and isolated, the worker's RSS and start-up."""
    segs = segments()
    _call('g2p', 'こんにちは')
    ctx = mp.get_context('spawn')
    t0 = time.perf_counter()
    here, there = ctx.Pipe()
    proc = ctx.Process(target=_worker, args=(there,), daemon=True)
    proc.start()
    _, pid = here.recv()
    startup_s = time.perf_counter() - t0
    times: dict = {(c, where): [] for c in CALLS for where in ('in', 'iso')}
    try:
        for _ in range(reps):
            for call in CALLS:
                for text in segs:
                    t = time.perf_counter()
                    _call(call, text)
                    times[(call, 'in')].append(time.perf_counter() - t)
                    t = time.perf_counter()
                    here.send((call, text))
                    here.recv()
                    times[(call, 'iso')].append(time.perf_counter() - t)
        worker_rss = _rss_mb(pid)
    finally:
        here.send(None)
        proc.join(10)
    rows = {}
    for call in CALLS:
        a = statistics.median(times[(call, 'in')]) * 1e3
        b = statistics.median(times[(call, 'iso')]) * 1e3
        rows[call] = {'in_process_ms': a, 'isolated_ms': b, 'overhead_ms': b - a,
                      'ratio': b / a if a else None, 'calls': len(times[(call, 'in')])}
    return {'segments': len(segs), 'reps': reps, 'calls': rows,
            'worker_rss_mb': worker_rss, 'worker_startup_s': startup_s,
            'this_process_rss_mb': _rss_mb(os.getpid())}


def markdown(r: dict) -> str:
    """The measurements as a Markdown table."""
    lines = ['| call | in-process (ms, median) | isolated (ms, median) | overhead (ms) | '
             'ratio |', '|---|---|---|---|---|']
    for call, row in r['calls'].items():
        lines.append(f"| `{call}` | {row['in_process_ms']:.3f} | {row['isolated_ms']:.3f} | "
                     f"{row['overhead_ms']:+.3f} | {row['ratio']:.2f} |")
    lines.append('')
    lines.append(f"{r['segments']} segments x {r['reps']} repetitions; worker process: "
                 f"{r['worker_rss_mb']:.0f} MB resident (its own dictionary and voice), "
                 f"{r['worker_startup_s']:.2f} s to start.")
    return '\n'.join(lines)


def main(argv=None) -> int:
    """Measure and print (and write ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--reps', type=int, default=5)
    parser.add_argument('--json', type=Path)
    args = parser.parse_args(argv)
    result = measure(args.reps)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + '\n', encoding='utf-8')
    print(markdown(result))
    return 0


if __name__ == '__main__':
    sys.exit(main())
