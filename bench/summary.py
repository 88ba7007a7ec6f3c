# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``make bench``'s summary: the ratios and claims from the raw measurements, the tables.

:func:`analyse` turns what ``bench/run.py`` measured into medians and ratios,
:func:`claims` checks them against :data:`TARGETS`, :func:`markdown` writes the tables
that go between the markers of ``BENCHMARKS.md`` (:func:`write_benchmarks_md`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import (cuda, fleet, frontend_speed, idle_cpu, marks_cost, memory_report,
                   openjtalk_isolation, pulse_playout, report, responsiveness, stream_ttfa)

MARK_BEGIN = '<!-- bench:begin (written by bench/run.py; edit outside the markers) -->'
MARK_END = '<!-- bench:end -->'
SIZES = (1, 3, 10)

TARGETS: dict[str, Any] = {
    'speed_ratio': 0.97,      # node speed factor / raw speed factor, >=
    'ttfa_ratio': 1.2,        # node TTFA(10) / TTFA(1), <=
    'cancel_ms': 100.0,       # cancel sent -> last chunk received, <=
    'phoneme_rate': (11.0, 14.0),
}


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
        f"`{cfg['speaker']}`; {cfg['reps']} alternating repetitions (the 1-sentence text "
        f"{cfg.get('short_reps', cfg['reps'])}), medians with "
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
              'nothing earlier). The node keeps the BERT features of its last 4 '
              'segments, and each text begins with the segment that began the text '
              'spoken before it, except the 1-sentence text (it follows the 10-sentence '
              'one): the 3- and 10-sentence rows skip that BERT run (about 50 ms).', '']
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
    idle = results['raw'].get('extras', {}).get('idle_cpu')
    if idle:
        parts += ['### An idle node (bench/idle_cpu.py)', '', idle_cpu.markdown(idle), '']
    if 'fleet' in a:
        parts += fleet.markdown(a['fleet'])
    gpu = results['raw'].get('extras', {}).get('cuda')
    if gpu:
        parts += ['### The CUDA path (bench/cuda.py)', '',
                  gpu.get('skipped') or cuda.report(gpu), '']
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
