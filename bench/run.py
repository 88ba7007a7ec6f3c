# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``make bench``: tts_node against raw hayakoe on a full-size random-weight model.

One run measures, on the same model, voice settings and texts (1, 3 and 10 sentences of
the repository's own texts, test/data/texts.yaml, each a prefix of the next):

* throughput: speed factor (audio s / compute s) of hayakoe ``Speaker.generate()`` and of
  the node end to end (text published on ``text`` -> last chunk received over the rmw,
  ``pacing:=false``), and their ratio;
* time to first audio: the node (text published -> first chunk received), hayakoe
  ``stream()`` (first chunk) and ``generate()``; and TTFA(10 sentences) / TTFA(1);
* cancel latency: ``say`` cancel request sent -> last chunk received (pacing on);
* peak RSS (VmHWM) and steady RSS (idle after speaking) of the node process and of a raw
  hayakoe process doing the same work, and their ratio (``bench/memory_report.py``);
* thread scaling (``num_threads`` 1 and 2), the Open JTalk engine, the phoneme rate of the
  model's duration predictor, and what the node's per-boundary pause prediction costs;
* speech marks (``bench/marks_cost.py``): node CPU per audio second with ``marks`` on vs
  off (Open JTalk, and hayakoe on the 1- and 3-sentence texts), and on Open JTalk how far
  word marks lie from the sound's onset in the published PCM and from their stamps.
* ``tts_fleet`` with 4 robots against one ``tts_node`` (``bench/fleet.py``): TTFA at once
  vs idle, throughput, peak RSS.

Raw hayakoe runs in worker processes (``bench/raw_worker.py``), the node as a subprocess;
raw and node runs alternate (raw first on even repetitions, node first on odd ones) after
both have been warmed up. Voice: deterministic (``noise``, ``noise_w``, ``sdp_ratio`` 0;
style Neutral; speed 1). The results go to ``bench/results.json`` and, between the markers,
to ``BENCHMARKS.md``; the table is printed too.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import subprocess
import sys
import tempfile
import time
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # tools/ is a top-level package, not installed
    sys.path.insert(0, str(REPO))

from bench import (fleet, frontend_speed, marks_cost, memory_report,  # noqa: E402
                   openjtalk_isolation, pulse_playout, report, responsiveness, stream_ttfa)
from bench.node_driver import BenchClient, NodeProcess, read_cpu_s, read_vm_kib  # noqa: E402
from bench.raw_worker import SPEAKER, VOICE, model_root  # noqa: E402
from bench.texts import benchmark_sentences, benchmark_texts, rate_sentences  # noqa: E402,E501
from tools import dds_domain  # noqa: E402

MARK_BEGIN = '<!-- bench:begin (written by bench/run.py; edit outside the markers) -->'
MARK_END = '<!-- bench:end -->'
SIZES = (1, 3, 10)

TARGETS: dict[str, Any] = {
    'speed_ratio': 0.97,      # node speed factor / raw speed factor, >=
    'ttfa_ratio': 1.2,        # node TTFA(10) / TTFA(1), <=
    'cancel_ms': 100.0,       # cancel sent -> last chunk received, <=
    'phoneme_rate': (11.0, 14.0),
}


class RawWorker:
    """A ``bench/raw_worker.py`` process and its JSON-lines pipe."""

    def __init__(self, mode: str, log_dir: Path, root: Path | None = None,
                 speaker: str = '', threads: int = 0) -> None:
        args = [sys.executable, str(REPO / 'bench' / 'raw_worker.py'), mode]
        if root is not None:
            args += ['--root', str(root), '--speaker', speaker, '--threads', str(threads)]
        self.name = f'{mode}-t{threads}'
        self._log = open(Path(log_dir) / f'raw_{self.name}.log', 'w', encoding='utf-8')
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, cwd=REPO, text=True, bufsize=1)
        self.load_s = 0.0

    def wait_until_ready(self) -> 'RawWorker':
        """Block until the worker has loaded its engine; return self."""
        hello = self._read()
        self.load_s = hello['load_s']
        return self

    def _read(self) -> dict:
        assert self.proc.stdout is not None  # Popen(stdout=PIPE)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f'raw worker {self.name} died; see {self._log.name}')
        return json.loads(line)

    def call(self, op: str, **kwargs) -> dict:
        """Send one request and return the reply (raise on a reported error).

        ``cpu_s`` is added: CPU time the worker used meanwhile (all threads).
        """
        cpu0 = read_cpu_s(self.proc.pid)
        assert self.proc.stdin is not None  # Popen(stdin=PIPE)
        self.proc.stdin.write(json.dumps({'op': op, **kwargs}) + '\n')
        self.proc.stdin.flush()
        reply = self._read()
        if 'error' in reply:
            raise RuntimeError(f'raw worker {self.name}: {op}: {reply["error"]}')
        reply['cpu_s'] = read_cpu_s(self.proc.pid) - cpu0
        return reply

    def peak_rss_kib(self) -> int:
        """Peak resident set size of the worker (VmHWM), KiB."""
        return read_vm_kib(self.proc.pid)

    def stop(self) -> None:
        """Ask the worker to quit and wait for it."""
        if self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.write(json.dumps({'op': 'quit'}) + '\n')
                self.proc.stdin.close()
                self.proc.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def log(msg: str) -> None:
    """Progress line on stderr, with the elapsed time."""
    print(f'[bench {time.perf_counter() - _T0:6.0f}s] {msg}', file=sys.stderr, flush=True)


_T0 = time.perf_counter()


def mb(kib: float) -> float:
    """KiB -> MB (10^6 bytes)."""
    return kib * 1024 / 1e6


def hayakoe_params(root: Path, speaker: str, threads: int) -> dict:
    """Node parameters: the benchmark model, deterministic voice, pacing off."""
    return dict(engine='hayakoe', fallback_engine='none', speaker=speaker,
                speaker_source=f'file://{root}', bert_source=f'file://{root}',
                num_threads=threads, pacing=False, **VOICE)


def measure_hayakoe(args, root: Path, speaker: str, texts: dict, log_dir: Path,
                    ns: str) -> dict:
    """Throughput, TTFA, thread scaling, memory and cancel latency (hayakoe engine)."""
    threads_main, threads_low = args.threads, 1
    log(f'starting raw hayakoe and tts_node processes at {threads_main} and '
        f'{threads_low} thread(s)')
    raw = RawWorker('hayakoe', log_dir, root, speaker, threads_main)
    # stream() in a process of its own, so that `raw` does exactly what the node does
    # (the same texts, whole) and the two peak RSS values compare like with like.
    raw_stream = RawWorker('hayakoe', log_dir, root, speaker, threads_main)
    raw_low = RawWorker('hayakoe', log_dir, root, speaker, threads_low)
    node = NodeProcess(hayakoe_params(root, speaker, threads_main), f'{ns}_t{threads_main}',
                       log_dir=log_dir, wait_ready=False)
    node_low = NodeProcess(hayakoe_params(root, speaker, threads_low),
                           f'{ns}_t{threads_low}', log_dir=log_dir, wait_ready=False)
    procs: list[RawWorker | NodeProcess] = [raw, raw_stream, raw_low, node, node_low]
    clients = []
    try:
        for p in procs:
            p.wait_until_ready()
        client = BenchClient(node, 'bench_client_main')
        client_low = BenchClient(node_low, 'bench_client_low')
        clients = [client, client_low]
        startup = {'raw_load_s': raw.load_s, 'node_ready_s': node.start_s}
        log('warming up (one 3-sentence text on each process, then a 1-sentence stream)')
        for w in (raw, raw_low):
            w.call('generate', text=texts[3])
        raw_stream.call('stream_first', text=texts[1])
        for c in clients:
            c.speak_topic(texts[3])

        gen: dict[int, list] = {n: [] for n in SIZES}
        stream: dict[int, list] = {n: [] for n in SIZES}
        node_run: dict[int, list] = {n: [] for n in SIZES}
        low: dict[str, list] = {'raw': [], 'node': []}
        for rep in range(args.reps):
            log(f'repetition {rep + 1}/{args.reps} ({"raw" if rep % 2 == 0 else "node"} first)')
            for n in SIZES:
                sides = ['raw', 'node'] if rep % 2 == 0 else ['node', 'raw']
                for side in sides:
                    if side == 'raw':
                        gen[n].append(raw.call('generate', text=texts[n]))
                        stream[n].append(raw_stream.call('stream_first', text=texts[n]))
                    else:
                        node_run[n].append(client.speak_topic(texts[n]))
            for side in (['raw', 'node'] if rep % 2 == 0 else ['node', 'raw']):
                if rep >= args.scaling_reps:
                    break
                if side == 'raw':
                    low['raw'].append(raw_low.call('generate', text=texts[3]))
                else:
                    low['node'].append(client_low.speak_topic(texts[3]))
        rss = memory_report.collect({'raw': raw, 'node': node, 'raw_1thread': raw_low,
                                     'node_1thread': node_low})
        for p in (raw_low, node_low, raw_stream):
            p.stop()
        client_low.close()
        clients.remove(client_low)

        log(f'cancel latency: {args.cancel_trials} canceled goals, pacing on '
            '(max_lead_s 0.3)')
        client.set_parameter('pacing', True)
        cancels = []
        for k in range(args.cancel_trials):
            cancels.append(client.cancel_after(texts[10], after_audio_s=0.8 + 0.17 * k))
        log(f'cancel -> next goal: {args.cancel_trials} idle / after-cancel pairs')
        cancel_next = responsiveness.measure_cancel_next(client, texts, args.cancel_trials)
        client.set_parameter('pacing', False)
        rss['node_after_cancel_kib'] = node.peak_rss_kib()
    finally:
        for c in clients:
            c.close()
        for p in procs:
            p.stop()
    return {'startup': startup, 'generate': gen, 'stream': stream, 'node': node_run,
            'threads_low': low, 'threads': [threads_low, threads_main], 'rss': rss,
            'cancel': cancels, 'cancel_next': cancel_next,
            'cache': measure_cache(args, root, speaker, texts, log_dir, ns)}


def measure_cache(args, root: Path, speaker: str, texts: dict, log_dir: Path,
                  ns: str) -> dict:
    """Phrase-cache hit and miss TTFA on a node of its own (pacing on)."""
    log(f'phrase cache: a node with phrase_cache_mb {responsiveness.CACHE_MB}, the '
        '1-sentence text preloaded')
    params = dict(hayakoe_params(root, speaker, args.threads), pacing=True,
                  phrase_cache_mb=responsiveness.CACHE_MB, preload_phrases=texts[1])
    node = NodeProcess(params, f'{ns}_cache', log_dir=log_dir, wait_ready=False)
    client = None
    try:
        node.wait_until_ready()
        client = BenchClient(node, 'bench_client_cache')
        return responsiveness.measure_cache(client, texts[1], benchmark_sentences()[1:],
                                            reps=args.reps)
    finally:
        if client is not None:
            client.close()
        node.stop()


def measure_micro(args, root: Path, speaker: str, texts: dict, rate_texts: dict,
                  log_dir: Path) -> dict:
    """Per-boundary pause-prediction cost and the duration predictor's phoneme rate.

    The phoneme rate is measured on the repository's sentences (``rate_texts['repo']``)
    and, when the shared ITA corpus is present, on up to ``--rate-sentences`` of its
    sentences as well (``phoneme_rate_ita``).
    """
    log('micro-measurements: per-segment and per-boundary costs, phoneme rate')
    worker = RawWorker('engine', log_dir, root, speaker, args.threads).wait_until_ready()
    try:
        micro = worker.call('micro', text=texts[10], reps=args.micro_reps)
        out = {'micro': micro, 'phoneme_rate': dict(
            worker.call('phoneme_rate', texts=rate_texts['repo']), source='repo')}
        if rate_texts.get('ita'):
            out['phoneme_rate_ita'] = dict(worker.call(
                'phoneme_rate', texts=rate_texts['ita'][:args.rate_sentences]), source='ita')
    finally:
        worker.stop()
    return out


def measure_openjtalk(args, texts: dict, log_dir: Path, ns: str) -> dict:
    """Speed factor and TTFA of the Open JTalk engine: pyopenjtalk vs. the node."""
    log('Open JTalk: pyopenjtalk vs. tts_node engine:=openjtalk')
    raw = RawWorker('openjtalk', log_dir)
    node = NodeProcess({'engine': 'openjtalk', 'pacing': False}, f'{ns}_ojt',
                       log_dir=log_dir, wait_ready=False)
    client = None
    try:
        raw.wait_until_ready()
        node.wait_until_ready()
        client = BenchClient(node, 'bench_client_ojt')
        raw.call('generate', text=texts[3])
        client.speak_topic(texts[3])
        gen: dict[int, list] = {n: [] for n in SIZES}
        node_run: dict[int, list] = {n: [] for n in SIZES}
        for rep in range(args.reps):
            for n in SIZES:
                for side in (['raw', 'node'] if rep % 2 == 0 else ['node', 'raw']):
                    if side == 'raw':
                        gen[n].append(raw.call('generate', text=texts[n]))
                    else:
                        node_run[n].append(client.speak_topic(texts[n]))
        rss = {'raw_kib': raw.peak_rss_kib(), 'node_kib': node.peak_rss_kib()}
    finally:
        if client is not None:
            client.close()
        raw.stop()
        node.stop()
    return {'generate': gen, 'node': node_run, 'rss': rss}


# --------------------------------------------------------------------------- analysis


def speed(runs: list, time_key: str) -> list:
    """Speed factors (audio s / compute s) of a list of run dicts."""
    return [r['audio_s'] / r[time_key] for r in runs]


def analyse(h: dict, micro: dict, ojt: dict, extras: dict | None = None) -> dict:
    """Turn raw measurements into summaries and claims (``extras``: the speech scripts')."""
    out: dict = {'throughput': {}, 'ttfa': {}, 'claims': []}
    for n in SIZES:
        raw_sf = speed(h['generate'][n], 'compute_s')
        node_sf = speed(h['node'][n], 'total_s')
        out['throughput'][n] = {
            'raw': report.summary(raw_sf), 'node': report.summary(node_sf),
            'ratio': report.ratios(node_sf, raw_sf),
            'raw_audio_s': report.summary([r['audio_s'] for r in h['generate'][n]]),
            'node_audio_s': report.summary([r['audio_s'] for r in h['node'][n]])}
        raw_cpu = [r['cpu_s'] / r['audio_s'] for r in h['generate'][n]]
        node_cpu = [r['cpu_s'] / r['audio_s'] for r in h['node'][n]]
        out['throughput'][n].update({
            'raw_cpu': report.summary(raw_cpu), 'node_cpu': report.summary(node_cpu),
            'cpu_ratio': report.ratios(node_cpu, raw_cpu)})
        out['ttfa'][n] = {
            'node': report.summary([r['ttfa_s'] for r in h['node'][n]]),
            'stream': report.summary([r['ttfa_s'] for r in h['stream'][n]]),
            'generate': report.summary([r['compute_s'] for r in h['generate'][n]])}
    out['lost_chunks'] = sum(r.get('lost_chunks', 0) for n in SIZES for r in h['node'][n])
    out['ttfa_ratio'] = {
        'node': report.ratios([r['ttfa_s'] for r in h['node'][10]],
                              [r['ttfa_s'] for r in h['node'][1]]),
        'stream': report.ratios([r['ttfa_s'] for r in h['stream'][10]],
                                [r['ttfa_s'] for r in h['stream'][1]]),
        'generate': report.ratios([r['compute_s'] for r in h['generate'][10]],
                                  [r['compute_s'] for r in h['generate'][1]])}
    out['responsiveness'] = responsiveness.analyse(h, extras or {})
    out['marks'] = {engine: marks_cost.analyse(raw)
                    for engine, raw in (extras or {}).get('marks', {}).items()}
    if extras and extras.get('fleet'):
        out['fleet'] = fleet.analyse(extras['fleet'])
    out['cancel'] = {k: report.summary([c[k] for c in h['cancel']])
                     for k in ('latency_s', 'ack_s', 'late_chunks', 'downstream_s')}
    rss = h['rss']
    out['rss_mb'] = memory_report.analyse(rss)
    low = h['threads_low']
    t_lo, t_hi = h['threads']
    k = len(low['raw'])  # the 1-thread runs were paired with the first k repetitions
    out['threads'] = {
        'raw': {t_lo: report.summary(speed(low['raw'], 'compute_s')),
                t_hi: report.summary(speed(h['generate'][3][:k], 'compute_s'))},
        'node': {t_lo: report.summary(speed(low['node'], 'total_s')),
                 t_hi: report.summary(speed(h['node'][3][:k], 'total_s'))}}
    if ojt:
        out['openjtalk'] = {n: {
            'raw': report.summary(speed(ojt['generate'][n], 'compute_s')),
            'node': report.summary(speed(ojt['node'][n], 'total_s')),
            'ratio': report.ratios(speed(ojt['node'][n], 'total_s'),
                                   speed(ojt['generate'][n], 'compute_s')),
            'cpu_ratio': report.ratios([r['cpu_s'] / r['audio_s'] for r in ojt['node'][n]],
                                       [r['cpu_s'] / r['audio_s']
                                        for r in ojt['generate'][n]]),
            'ttfa_node': report.summary([r['ttfa_s'] for r in ojt['node'][n]]),
            'ttfa_raw': report.summary([r['compute_s'] for r in ojt['generate'][n]])}
            for n in SIZES}
        out['openjtalk_ttfa_ratio'] = report.ratios(
            [r['ttfa_s'] for r in ojt['node'][10]], [r['ttfa_s'] for r in ojt['node'][1]])
    if micro:
        m = dict(micro['micro'])
        m['e2e_ratio'] = out['throughput'][10]['ratio']['median']
        # The synthesizer runs are the same computation on both sides (their difference
        # is run-to-run noise), so the systematic difference is everything else.
        m['extra'] = sum(m.get(f'node_{k}', 0.0) - m.get(f'hk_{k}', 0.0)
                         for k in ('bert', 'dp', 'other'))
        m['predicted_ratio'] = m['hk_total'] / (m['hk_total'] + m['extra'])
        m['predicted_ratio_no_pair_dp'] = m['hk_total'] / (
            m['hk_total'] + m['extra'] - m.get('node_dp', 0.0))
        pair, left = m.get('pause_pair_s'), m.get('pause_left_only_s')
        if pair and left:
            m['pause_median_ms'] = report.summary(pair)['median'] * 1000
            m['pause_context_diff_ms'] = report.summary(
                [abs(a - b) for a, b in zip(pair, left)])['median'] * 1000
        out['micro'] = m
        out['phoneme_rate'] = micro['phoneme_rate']
        if 'phoneme_rate_ita' in micro:
            out['phoneme_rate_ita'] = micro['phoneme_rate_ita']
    return out


def claims(a: dict) -> list:
    """Rows of the claims table: claim, measured, target, status."""
    rows = []
    for n in SIZES:
        r = a['throughput'][n]['ratio']
        rows.append([f'speed factor node / raw, {n} sentence{"s" * (n > 1)}',
                     report.fmt(r), f'≥ {TARGETS["speed_ratio"]}',
                     report.status(r['median'], TARGETS['speed_ratio'], True)])
    cpu_target = 1 / TARGETS['speed_ratio']
    for n in SIZES:
        r = a['throughput'][n]['cpu_ratio']
        rows.append([f'CPU s per audio s node / raw, {n} sentence{"s" * (n > 1)} '
                     '(same claim, load-robust)', report.fmt(r, digits=3),
                     f'≤ {cpu_target:.3f}', report.status(r['median'], cpu_target, False)])
    r = a['ttfa_ratio']['node']
    rows.append(['node TTFA(10 sentences) / TTFA(1)', report.fmt(r),
                 f'≤ {TARGETS["ttfa_ratio"]}',
                 report.status(r['median'], TARGETS['ttfa_ratio'], False)])
    c = a['cancel']['latency_s']
    rows.append(['cancel sent → last chunk received (pacing on)',
                 report.fmt(c, ' ms', 1000, 1), f'≤ {TARGETS["cancel_ms"]:.0f} ms',
                 report.status(c['median'] * 1000, TARGETS['cancel_ms'], False)])
    rows += responsiveness.claims(a['responsiveness'])
    for m in a.get('marks', {}).values():
        rows += marks_cost.claims(m)
    rows += memory_report.claims(a['rss_mb'])
    if 'fleet' in a:
        rows += fleet.claims(a['fleet'])
    if 'phoneme_rate' in a:
        pr = a['phoneme_rate']
        lo, hi = TARGETS['phoneme_rate']
        ok = lo <= pr['articulation'] <= hi
        rows.append(['model phoneme rate (articulation; overall incl. pauses)',
                     f"{pr['articulation']:.1f} ph/s ({pr['overall']:.1f})",
                     f'{lo:.0f}–{hi:.0f} ph/s', 'met' if ok else '**MISSED**'])
    return rows


def markdown(a: dict, results: dict) -> str:
    """The generated part of BENCHMARKS.md."""
    cfg = results['config']
    fmt = report.fmt
    parts = [
        f"Model: random-weight `{cfg['recipe']}` recipe ({cfg['model_note']}), speaker "
        f"`{cfg['speaker']}`; {cfg['reps']} alternating repetitions, medians with "
        f"(min–max); voice deterministic (noise, noise_w, sdp_ratio 0, Neutral, speed 1); "
        f"ONNX Runtime threads {cfg['threads']} (raw and node alike) unless stated.",
        '',
        report.machine_markdown(results['machine']),
        '',
        '### Claims',
        '',
        report.table([['claim', 'measured', 'target', 'status']] + claims(a)),
        '',
        '### Throughput: speed factor (audio s / compute s; higher is faster)',
        '',
        'raw = hayakoe `Speaker.generate()` in its own process; node = text published on '
        '`text` → last chunk received by a subscriber (`pacing:=false`); chunks lost on '
        f"the way (gaps in the stamps): {a['lost_chunks']}. CPU = CPU seconds the process "
        'used (all threads, from /proc) per second of audio: it shows whether the node '
        'does more work or waits more.',
        '',
    ]
    rows = [['text', 'audio (raw / node)', 'hayakoe generate()', 'tts_node end to end',
             'node / raw', 'status', 'CPU per audio s (raw / node)', 'CPU node / raw']]
    for n in SIZES:
        t = a['throughput'][n]
        rows.append([f'{n} sentence{"s" * (n > 1)}',
                     f"{t['raw_audio_s']['median']:.1f} s / {t['node_audio_s']['median']:.1f} s",
                     fmt(t['raw']), fmt(t['node']), fmt(t['ratio'], digits=3),
                     report.status(t['ratio']['median'], TARGETS['speed_ratio'], True),
                     f"{t['raw_cpu']['median']:.2f} / {t['node_cpu']['median']:.2f}",
                     fmt(t['cpu_ratio'], digits=3)])
    parts += [report.table(rows), '', '### Time to first audio', '',
              'node: text published → first chunk received; stream(): hayakoe '
              '`Speaker.stream()` → first chunk; generate(): the whole text (it returns '
              'nothing earlier).', '']
    rows = [['text', 'tts_node', 'hayakoe stream()', 'hayakoe generate()']]
    for n in SIZES:
        t = a['ttfa'][n]
        rows.append([f'{n} sentence{"s" * (n > 1)}', fmt(t['node'], ' ms', 1000, 0),
                     fmt(t['stream'], ' ms', 1000, 0), fmt(t['generate'], ' ms', 1000, 0)])
    r = a['ttfa_ratio']
    rows.append([f'TTFA(10) / TTFA(1) (target node ≤ {TARGETS["ttfa_ratio"]}: '
                 f"{report.status(r['node']['median'], TARGETS['ttfa_ratio'], False)})",
                 fmt(r['node']), fmt(r['stream']), fmt(r['generate'])])
    parts += [report.table(rows), '']
    c = a['cancel']
    parts += ['### Cancel latency (`say` goal on the 10-sentence text, pacing on, '
              'max_lead_s 0.3)', '',
              report.table([
                  ['measure', f"median (min–max), {c['latency_s']['n']} cancels"],
                  ['cancel sent → last chunk received on `audio` (0 if none came after)',
                   fmt(c['latency_s'], ' ms', 1000, 1)],
                  ['cancel sent → cancel response', fmt(c['ack_s'], ' ms', 1000, 1)],
                  ['chunks received after the cancel was sent', fmt(c['late_chunks'],
                                                                    digits=0)],
                  ['audio published before the cancel that plays after it (stamps)',
                   fmt(c['downstream_s'], ' ms', 1000, 0)]]), '']
    parts += responsiveness.markdown(a['responsiveness'])
    for m in a.get('marks', {}).values():
        parts += marks_cost.markdown(m)
    t_lo, t_hi = results['config']['threads_compared']
    parts += memory_report.markdown(a['rss_mb'], t_lo, t_hi)
    parts += ['### Thread scaling', '']
    th = a['threads']
    rows = [['speed factor, 3 sentences', f'{t_lo} thread', f'{t_hi} threads',
             f'{t_hi} / {t_lo}']]
    for side, label in (('raw', 'hayakoe generate()'), ('node', 'tts_node')):
        rows.append([label, fmt(th[side][t_lo]), fmt(th[side][t_hi]),
                     f"{th[side][t_hi]['median'] / th[side][t_lo]['median']:.2f}"])
    parts += [report.table(rows), '']
    if 'openjtalk' in a:
        parts += ['### Open JTalk engine', '',
                  'raw = `pyopenjtalk.tts()` on the whole text (no streaming API: its TTFA '
                  'is the whole synthesis); node = `engine:=openjtalk`, pacing off.', '']
        rows = [['text', 'speed factor raw', 'speed factor node', 'node / raw',
                 'CPU node / raw', 'TTFA raw', 'TTFA node']]
        for n in SIZES:
            o = a['openjtalk'][n]
            rows.append([f'{n} sentence{"s" * (n > 1)}', fmt(o['raw'], digits=1),
                         fmt(o['node'], digits=1), fmt(o['ratio'], digits=2),
                         fmt(o['cpu_ratio'], digits=2), fmt(o['ttfa_raw'], ' ms', 1000, 0),
                         fmt(o['ttfa_node'], ' ms', 1000, 0)])
        rows.append(['node TTFA(10) / TTFA(1)', '', '', '', '', '',
                     fmt(a['openjtalk_ttfa_ratio'])])
        parts += [report.table(rows), '']
    if 'micro' in a:
        mi = a['micro']
        rows = [['10-sentence text', 'hayakoe generate()', 'node pipeline, no ROS',
                 'node − hayakoe']]
        for role, label in (('bert', 'BERT session'), ('dp', 'duration-predictor session'),
                            ('synth', 'synthesizer session')):
            if f'hk_{role}' not in mi:
                continue
            runs = {side: mi[f'{side}_{role}_runs'] for side in ('hk', 'node')}
            rows.append([label] + [
                f"{mi[f'{side}_{role}']:.2f} s ({runs[side]:.0f} run"
                f"{'s' * (runs[side] != 1)})" for side in ('hk', 'node')] + [
                f"{mi[f'node_{role}'] - mi[f'hk_{role}']:+.2f} s"])
        rows.append(['other (text front end, gain and limiter, threads)',
                     f"{mi['hk_other']:.2f} s", f"{mi['node_other']:.2f} s",
                     f"{mi['node_other'] - mi['hk_other']:+.2f} s"])
        rows.append(['total', f"{mi['hk_total']:.2f} s", f"{mi['node_total']:.2f} s",
                     f"{mi['node_total'] - mi['hk_total']:+.2f} s: node / raw = "
                     f"{mi['ratio']:.3f}"])
        parts += [
            "### Where the node's compute goes (10-sentence text)", '',
            'One process, no ROS, after the runs above: hayakoe `generate()` and the '
            "node's pipeline (its scheduler, pacing off, chunks dropped) alternate, with "
            "every ONNX Runtime session's `run` timed (medians; engine used through its "
            'public methods, so this measures it as it is).', '',
            report.table(rows), '',
            f"The synthesizer runs are the same computation on both sides (their "
            f"difference is run-to-run noise); the rest differs by {mi['extra']:+.2f} s, "
            f"which predicts node / raw = {mi['predicted_ratio']:.3f} (end to end over ROS: "
            f"{mi['e2e_ratio']:.3f}, throughput table). Without the per-boundary "
            f"duration-predictor runs (the pause read from the synthesizer's own "
            f"`durations` output instead) it would predict "
            f"{mi['predicted_ratio_no_pair_dp']:.3f}.", '']
        if 'pause_context_diff_ms' in mi:
            parts += [f"Pauses predicted from the pair (the node now) vs. from the left "
                      f"segment alone (what the synthesizer's own `durations` output gives "
                      f"at no cost): median pause {mi['pause_median_ms']:.0f} ms, median "
                      f"|difference| {mi['pause_context_diff_ms']:.0f} ms over "
                      f"{mi['boundaries']} boundaries.", '']
    if 'phoneme_rate' in a:
        pr = a['phoneme_rate']
        source = ("the repository's {} speaking-rate sentences (test/data/texts.yaml)"
                  if pr.get('source') == 'repo' else '{} ITA sentences')  # older runs: ITA
        parts += [f"Duration predictor speaking rate over "
                  f"{source.format(pr['sentences'])}: "
                  f"{pr['articulation']:.1f} phonemes/s articulation rate "
                  f"(pauses and punctuation left out), {pr['overall']:.1f} phonemes/s "
                  f"overall ({pr['phonemes']} phonemes, {pr['audio_s']:.0f} s).", '']
    if 'phoneme_rate_ita' in a:
        pr = a['phoneme_rate_ita']
        parts += [f"The same over {pr['sentences']} ITA sentences (shared corpus, extra "
                  f"input): {pr['articulation']:.1f} phonemes/s articulation rate, "
                  f"{pr['overall']:.1f} overall.", '']
    iso = results['raw'].get('extras', {}).get('openjtalk_isolation')
    if iso:
        parts += ['### Open JTalk in a worker process (bench/openjtalk_isolation.py)', '',
                  openjtalk_isolation.markdown(iso), '']
    pp = results['raw'].get('extras', {}).get('pulse_playout')
    if pp:
        parts += ['### Playing through player_node (bench/pulse_playout.py)', '',
                  pulse_playout.markdown(pp), '']
    st = results['raw'].get('extras', {}).get('stream_ttfa')
    if st:
        parts += ['### Streamed replies (bench/stream_ttfa.py)', '', stream_ttfa.markdown(st),
                  '']
    if 'fleet' in a:
        parts += fleet.markdown(a['fleet'])
    fe = results['raw'].get('extras', {}).get('frontend')
    if fe:
        parts += ['### Text front end (bench/frontend_speed.py)', '',
                  frontend_speed.markdown(fe), '']
    return '\n'.join(parts)


def write_benchmarks_md(path: Path, generated: str) -> None:
    """Replace the generated block of BENCHMARKS.md, keeping the text around it."""
    block = f'{MARK_BEGIN}\n{generated}\n{MARK_END}'
    if path.exists():
        text = path.read_text(encoding='utf-8')
        if MARK_BEGIN in text and MARK_END in text:
            head = text.split(MARK_BEGIN, 1)[0]
            tail = text.split(MARK_END, 1)[1]
            path.write_text(head + block + tail, encoding='utf-8')
            return
    path.write_text('# Benchmarks\n\nRun `make bench` to regenerate the block below.\n\n'
                    + block + '\n', encoding='utf-8')


def _by_size(d: dict) -> dict:
    """JSON turned the text-size keys into strings; turn them back into ints."""
    return {int(k): v for k, v in d.items()}


def render(path: Path, out_md: Path) -> int:
    """Re-analyse a results.json (e.g. after changing the tables) and rewrite the report."""
    results = json.loads(path.read_text(encoding='utf-8'))
    h = dict(results['raw']['hayakoe'])
    for key in ('generate', 'stream', 'node'):
        h[key] = _by_size(h[key])
    ojt = dict(results['raw']['openjtalk'])
    for key in ('generate', 'node'):
        if key in ojt:
            ojt[key] = _by_size(ojt[key])
    a = analyse(h, results['raw']['micro'], ojt, results['raw'].get('extras'))
    results['summary'] = a
    generated = markdown(a, results)
    path.write_text(json.dumps(results, indent=1, ensure_ascii=False, default=str) + '\n',
                    encoding='utf-8')
    write_benchmarks_md(out_md, generated)
    print(generated)
    return 0


def main(argv=None) -> int:
    """Run every benchmark and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--recipe', default='full', choices=sorted(SPEAKER),
                        help='random-weight model recipe (tiny: a quick smoke run)')
    parser.add_argument('--reps', type=int, default=5, help='alternating repetitions')
    parser.add_argument('--scaling-reps', type=int, default=3,
                        help='repetitions of the 1-thread runs (thread scaling)')
    parser.add_argument('--cancel-trials', type=int, default=7)
    parser.add_argument('--micro-reps', type=int, default=3)
    parser.add_argument('--rate-sentences', type=int, default=50,
                        help='ITA sentences for the extra phoneme-rate check (only when '
                             'the shared corpus ../shared/corpus is present)')
    parser.add_argument('--threads', type=int, default=2,
                        help='ONNX Runtime threads of the main comparison')
    parser.add_argument('--no-openjtalk', action='store_true')
    parser.add_argument('--no-micro', action='store_true')
    parser.add_argument('--no-marks', action='store_true',
                        help='skip bench/marks_cost.py (speech marks: cost, alignment)')
    parser.add_argument('--no-speech-scripts', action='store_true',
                        help='skip bench/first_segment.py and bench/gapless.py (no ROS)')
    parser.add_argument('--no-fleet', action='store_true',
                        help='skip bench/fleet.py (tts_fleet with 4 robots)')
    parser.add_argument('--render', type=Path, metavar='RESULTS_JSON',
                        help='measure nothing: re-render the tables of a results.json')
    parser.add_argument('--out-json', type=Path, default=REPO / 'bench' / 'results.json')
    parser.add_argument('--out-md', type=Path, default=REPO / 'BENCHMARKS.md')
    args = parser.parse_args(argv)
    if args.render:
        return render(args.render, args.out_md)

    os.environ['ROS_DOMAIN_ID'] = str(dds_domain.claim())  # no other run's
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    ns = f'/bench{os.getpid()}'
    machine = report.machine_info()
    texts = benchmark_texts()
    rate_texts = rate_sentences()

    speaker = SPEAKER[args.recipe]
    log(f'model: {args.recipe} recipe (cached under $HAYAKOE_ROS_CACHE/models or '
        '.cache/models; a cold build takes minutes)')
    t0 = time.perf_counter()
    root = model_root(args.recipe)
    model_s = time.perf_counter() - t0
    manifest = json.loads((root / 'random_model.json').read_text(encoding='utf-8'))
    log(f'model ready in {model_s:.0f} s: {root}')

    import rclpy

    rclpy.init()
    try:
        with tempfile.TemporaryDirectory(prefix='hayakoe_bench_') as tmp:
            log_dir = Path(tmp)
            try:
                h = measure_hayakoe(args, root, speaker, texts, log_dir, ns)
                partial = args.out_json.with_suffix('.partial.json')  # if a later part fails
                partial.write_text(json.dumps(h, default=str) + '\n', encoding='utf-8')
                log(f'hayakoe measurements kept in {partial} until the run completes')
                micro = {} if args.no_micro else measure_micro(
                    args, root, speaker, texts, rate_texts, log_dir)
                ojt = {} if args.no_openjtalk else measure_openjtalk(args, texts, log_dir,
                                                                     ns)
                extras = {} if args.no_speech_scripts else responsiveness.run_scripts(
                    args.recipe, root, log_dir, log)
                log('Open JTalk in-process vs in a worker process (no ROS)')
                extras['openjtalk_isolation'] = openjtalk_isolation.measure(3)
                extras['frontend'] = frontend_speed.measure()
                log('20 utterances through player_node into PulseAudio (underruns)')
                extras['pulse_playout'] = pulse_playout.measure()
                log('a streamed reply on text_stream: first audio after its first sentence')
                extras['stream_ttfa'] = stream_ttfa.measure()
                if not args.no_marks:
                    log('speech marks: marks on vs off (Open JTalk, then hayakoe)')
                    extras['marks'] = {
                        'openjtalk': marks_cost.measure({'engine': 'openjtalk'}, args.reps,
                                                        log_dir, ns, log=log),
                        'hayakoe': marks_cost.measure(
                            hayakoe_params(root, speaker, args.threads), args.reps,
                            log_dir, ns, sizes=(1, 3), log=log)}
                if not args.no_fleet:
                    log('tts_fleet with 4 robots vs one tts_node (bench/fleet.py)')
                    extras['fleet'] = fleet.measure(
                        argparse.Namespace(robots=4, reps=2, threads=args.threads), root,
                        speaker, log_dir, log)
            except Exception:
                for f in sorted(log_dir.iterdir()):  # the processes' logs explain it
                    print(f'--- {f.name}\n{f.read_text(errors="replace")[-4000:]}',
                          file=sys.stderr)
                raise
    finally:
        rclpy.shutdown()

    machine['loadavg_end'] = os.getloadavg()[0]
    machine['bench_wall_s'] = time.perf_counter() - _T0
    bert = manifest['recipe_spec']['bert']
    results = {
        'machine': machine,
        'config': {
            'recipe': args.recipe, 'speaker': speaker, 'reps': args.reps,
            'threads': args.threads, 'threads_compared': h['threads'],
            'cancel_trials': args.cancel_trials, 'voice': VOICE,
            'texts': {str(n): t for n, t in texts.items()},
            'model_note': f"BERT {bert['num_hidden_layers']} layers / hidden "
                          f"{bert['hidden_size']} / {bert['num_attention_heads']} heads / "
                          f"intermediate {bert['intermediate_size']}, "
                          f"{bert.get('quantize', 'fp32')}",
            'model_root': str(root), 'model_ready_s': model_s,
            'model_build_s': manifest.get('build_seconds'),
        },
        'startup': h['startup'],
        'raw': {'hayakoe': h, 'micro': micro, 'openjtalk': ojt, 'extras': extras},
    }
    a = analyse(h, micro, ojt, extras)
    results['summary'] = a
    generated = markdown(a, results)
    args.out_json.write_text(json.dumps(results, indent=1, ensure_ascii=False,
                                        default=str) + '\n', encoding='utf-8')
    write_benchmarks_md(args.out_md, generated)
    args.out_json.with_suffix('.partial.json').unlink(missing_ok=True)
    print(generated)
    log(f'wrote {args.out_json} and {args.out_md}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
