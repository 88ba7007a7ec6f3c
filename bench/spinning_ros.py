# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``spinning`` parameter over ROS: first audio and CPU of one-sentence replies.

``python bench/spinning_ros.py [--recipe full] [--threads 2] [--rounds 40] [--json F]``

One ``tts_node`` per :class:`~hayakoe_ros.engines.values.Spinning` mode (``none``,
``first_audio``, ``all``) on the benchmark model, pacing off, and raw hayakoe
(``generate()``) in a process of its own. Each round takes the next benchmark sentence
and sends it to each of the four in turn (rotating which goes first), so that every node
finds its pools asleep (the others ran meanwhile) and computes the sentence's first
segment (the sentence it spoke before was another one), as raw hayakoe does. Per reply:
first audio (text published -> first chunk received), the node's CPU seconds per audio
second, and raw's ``generate()`` time and CPU for the same sentence. Printed: a Markdown
table of medians (min-max), and for each mode against ``none`` the paired first-audio
difference (ms), how many replies came sooner, and the CPU ratio.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
import sys
import tempfile

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import report  # noqa: E402
from bench.node_driver import BenchClient, read_cpu_s  # noqa: E402
from bench.raw_client import RawWorker  # noqa: E402
from bench.raw_worker import SPEAKER, model_root  # noqa: E402
from bench.run import hayakoe_params  # noqa: E402
from bench.texts import benchmark_sentences  # noqa: E402
from tools.node_process import NodeProcess  # noqa: E402


def measure(args, modes: list) -> dict:
    """``{mode: [reply, ...], 'raw': [...]}``: ``args.rounds`` rounds of one sentence each."""
    root, speaker = model_root(args.recipe), SPEAKER[args.recipe]
    params = hayakoe_params(root, speaker, args.threads)
    log_dir = Path(tempfile.mkdtemp(prefix='spinning_ros_'))
    raw = RawWorker('hayakoe', log_dir, root, speaker, args.threads)
    nodes = {m: NodeProcess(dict(params, spinning=m), f'/bench_spin_{m}', log_dir=log_dir,
                            wait_ready=False) for m in modes}
    procs: list[RawWorker | NodeProcess] = [raw, *nodes.values()]
    clients: dict = {}
    try:
        for p in procs:
            p.wait_until_ready()
        clients = {m: BenchClient(n, f'bench_spin_client_{m}') for m, n in nodes.items()}
        sentences = benchmark_sentences()
        raw.call('generate', text=''.join(sentences[:3]))  # warm-up
        for c in clients.values():
            c.speak_topic(''.join(sentences))
        runs: dict = {m: [] for m in ['raw', *modes]}
        for k in range(args.rounds):
            text = sentences[k % len(sentences)]
            order = ['raw', *modes]
            for side in order[k % len(order):] + order[:k % len(order)]:
                if side == 'raw':
                    cpu0 = read_cpu_s(raw.proc.pid)
                    reply = raw.call('generate', text=text)
                    reply['cpu_s'] = read_cpu_s(raw.proc.pid) - cpu0
                    runs['raw'].append(reply)
                else:
                    runs[side].append(clients[side].speak_topic(text))
            print(f'round {k + 1}/{args.rounds} done', file=sys.stderr, flush=True)
        return runs
    finally:
        for c in clients.values():
            c.close()
        for p in procs:
            p.stop()


def table(runs: dict, modes: list) -> list:
    """Markdown lines of :func:`measure`'s runs."""
    raw = runs['raw']
    lines = ['| spinning | first audio (ms) | first audio / raw generate() | CPU per audio s '
             '| CPU / raw | first audio - none (ms, paired) | sooner than none | CPU / none '
             '(paired) |', '|---|---|---|---|---|---|---|---|']

    def cpu(r: dict) -> float:
        return r['cpu_s'] / r['audio_s']

    for m in modes:
        rs, base = runs[m], runs[modes[0]]
        cells = [report.fmt_values([r['ttfa_s'] * 1000 for r in rs], 0),
                 report.fmt_values([r['ttfa_s'] / w['compute_s'] for r, w in zip(rs, raw)]),
                 report.fmt_values([cpu(r) for r in rs]),
                 report.fmt_values([cpu(r) / cpu(w) for r, w in zip(rs, raw)])]
        if m == modes[0]:
            cells += ['', '', '']
        else:
            dt = [(r['ttfa_s'] - b['ttfa_s']) * 1000 for r, b in zip(rs, base)]
            cells += [report.fmt_values(dt, 0), f'{sum(d < 0 for d in dt)} of {len(dt)}',
                      report.fmt_values([cpu(r) / cpu(b) for r, b in zip(rs, base)])]
        lines.append(f"| {m} | {' | '.join(cells)} |")
    return lines


def main(argv=None) -> int:
    """Measure and print the table (and write JSON with ``--json``)."""
    import rclpy

    from hayakoe_ros.engines.values import Spinning

    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--recipe', default='full', choices=tuple(SPEAKER))
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--rounds', type=int, default=40)
    parser.add_argument('--json', default=None)
    args = parser.parse_args(argv)
    modes = [m.value for m in Spinning]
    rclpy.init()
    try:
        runs = measure(args, modes)
    finally:
        rclpy.shutdown()
    if args.json:
        Path(args.json).write_text(json.dumps({'recipe': args.recipe, 'threads': args.threads,
                                               'runs': runs}, indent=1), encoding='utf-8')
    print('\n'.join(table(runs, modes)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
