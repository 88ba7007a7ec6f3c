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
  vs idle, throughput, peak RSS;
* what an idle ``tts_node``, a 4-robot ``tts_fleet`` and ``player_node`` cost in CPU
  (``bench/idle_cpu.py``).

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

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # tools/ is a top-level package, not installed
    sys.path.insert(0, str(REPO))

from bench import (cuda, fleet, frontend_speed, idle_cpu, marks_cost, memory_report,  # noqa: E402
                   openjtalk_isolation, pulse_playout, report, responsiveness, stream_ttfa)
from bench.node_driver import BenchClient, NodeProcess  # noqa: E402
from bench.raw_client import RawWorker  # noqa: E402
from bench.raw_worker import SPEAKER, VOICE, model_root  # noqa: E402
from bench.summary import SIZES, analyse, markdown, write_benchmarks_md  # noqa: E402
from bench.texts import benchmark_sentences, benchmark_texts, rate_sentences  # noqa: E402,E501
from tools import dds_domain  # noqa: E402


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
        log('warming up (a 3-sentence text on each raw process, a 1-sentence stream, '
            'the 10-sentence text on each node)')
        for w in (raw, raw_low):
            w.call('generate', text=texts[3])
        raw_stream.call('stream_first', text=texts[1])
        # The node keeps the features of its last 4 segments, and every text here begins
        # with the same one: after the 10-sentence text, the 1-sentence text's first
        # segment is computed in every repetition, as raw hayakoe computes it (after a
        # 3-sentence warm-up the first repetition found it kept).
        for c in clients:
            c.speak_topic(texts[10])

        gen: dict[int, list] = {n: [] for n in SIZES}
        stream: dict[int, list] = {n: [] for n in SIZES}
        node_run: dict[int, list] = {n: [] for n in SIZES}
        low: dict[str, list] = {'raw': [], 'node': []}
        # The 1-sentence rows (first audio, CPU of a lone reply) swing most between
        # pairs on a shared machine (CPU node / raw 1.00-1.14 within one run of 5): they
        # get more pairs, and the longer texts stay at --reps. Before each extra pair
        # the node speaks four other sentences (not measured), so that its feature
        # cache no longer holds the 1-sentence text's segments, as after the 10-sentence
        # text in a full repetition: without it the node skipped their BERT runs, which
        # raw hayakoe computes every time.
        reps = args.short_reps
        evict = ''.join(benchmark_sentences()[1:5])
        for rep in range(reps):
            log(f'repetition {rep + 1}/{reps} ({"raw" if rep % 2 == 0 else "node"} first)')
            if rep >= args.reps:
                client.speak_topic(evict)
            for n in (SIZES if rep < args.reps else (1,)):
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
    parser.add_argument('--short-reps', type=int, default=15,
                        help='alternating repetitions of the 1-sentence text (at least '
                             '--reps)')
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
    parser.add_argument('--no-cuda', action='store_true',
                        help='skip bench/cuda.py (the CUDA path; it skips itself without a GPU)')
    parser.add_argument('--render', type=Path, metavar='RESULTS_JSON',
                        help='measure nothing: re-render the tables of a results.json')
    parser.add_argument('--out-json', type=Path, default=REPO / 'bench' / 'results.json')
    parser.add_argument('--out-md', type=Path, default=REPO / 'BENCHMARKS.md')
    args = parser.parse_args(argv)
    args.short_reps = max(args.reps, args.short_reps)
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
                log('idle CPU: tts_node, tts_fleet with 4 robots, player_node')
                extras['idle_cpu'] = idle_cpu.measure()
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
                if not args.no_cuda:
                    log('the CUDA path (bench/cuda.py; skipped where PyTorch sees no GPU)')
                    try:
                        extras['cuda'] = cuda.measure(log_dir)
                    except (RuntimeError, subprocess.TimeoutExpired) as exc:
                        # The GPU's part alone: what was measured before it is kept.
                        extras['cuda'] = {'skipped': f'bench/cuda.py failed: {exc}'}
                    if 'skipped' in extras['cuda']:
                        log(extras['cuda']['skipped'])
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
            'short_reps': args.short_reps,
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
