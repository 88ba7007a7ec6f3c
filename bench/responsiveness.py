# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``make bench`` figures of responsiveness: interruptions, first segment and the phrase cache.

* **Cancel -> next first audio.** A ``say`` goal on the 10-sentence text is canceled while
  its next segment is being synthesised, and the next goal (the 1-sentence text) is sent
  at once. Its first audio (goal sent -> first feedback chunk) is compared with the same
  goal on an idle node, measured in alternation: target next <= idle + 50 ms.
  Before the ONNX runs became terminable the next goal waited for the canceled segment's
  synthesis (452 ms vs 82 ms on the tiny model when the target was set).
* **First segment.** Node TTFA over the raw ``generate()`` time of the first sentence alone
  (paired by repetition, from the main comparison): target <= 0.5.
* **Long first sentences** (``bench/first_segment.py``, no ROS): the node's pipeline TTFA
  over raw ``generate()`` of the first sentence alone, for first sentences of 21-270
  characters with only 、 inside, ``first_segment_morae`` 0 (off) and the node's default.
* **Gapless starts** (``bench/gapless.py``, no ROS): underruns per utterance and TTFA with
  ``gapless`` off and on, 1 ONNX thread, on the real clock and on a clock 4x faster (a
  board 4x slower, like a Raspberry Pi 4B).
* **Phrase cache.** A node with ``phrase_cache_mb`` and ``preload_phrases`` holding the
  1-sentence text: text published -> first chunk received for that text (hits) and for a
  sentence it has not seen (miss). Target: hit TTFA <= 20 ms.
"""

from __future__ import annotations

import json
from pathlib import Path
import re
import subprocess
import sys

from bench import report, windowed_report

#: Next utterance's first audio after a cancel, at most idle TTFA + this (s).
CANCEL_NEXT_MARGIN_S = 0.050
#: Node TTFA / raw generate() of the first sentence alone, at most.
FIRST_SEGMENT_RATIO = 0.5
#: Node TTFA / raw generate() of a one-sentence text over ROS, the first segment decoded
#: in windows (the first window alone before the first audio).
FIRST_AUDIO_RATIO = windowed_report.TTFA_RATIO
#: Phrase-cache hit TTFA, at most (s).
CACHE_HIT_TTFA_S = 0.020
#: Underruns per utterance with ``gapless`` on, at most.
GAPLESS_UNDERRUNS = 0
#: ``first_segment_morae`` values compared by bench/first_segment.py (0 = off).
MORAE_COMPARED = (0, 8)
#: Repetitions of the no-ROS speech scripts (each runs alternating off/on pairs).
SCRIPT_REPS = 2
#: Clock speed-ups of bench/gapless.py: the real clock, and a board 4x slower.
GAPLESS_SLOWDOWNS = (1.0, 4.0)
#: Phrase cache of the cache node, MiB.
CACHE_MB = 64
#: The TTFA in the node's per-utterance INFO line (hayakoe_ros/node/diagnostics.py).
_TTFA_LOG = re.compile(r'TTFA ([0-9.]+) s')


def measure_cancel_next(client, texts: dict, trials: int) -> dict:
    """Alternate idle ``say`` goals and cancel-then-say pairs on one node (pacing on).

    Args:
        client: A :class:`bench.node_driver.BenchClient` of a warmed-up node.
        texts: Benchmark texts by sentence count (1 and 10 are used).
        trials: Pairs of (idle goal, canceled goal + next goal).

    Returns:
        ``{'idle': [...], 'after_cancel': [...]}``: the dicts of ``say_first_audio`` and
        ``cancel_then_say``; the cancel lands after 0.8-1.8 s of audio, spread over trials.
    """
    idle, after = [], []
    for k in range(trials):
        idle.append(client.say_first_audio(texts[1]))
        after.append(client.cancel_then_say(texts[10], texts[1],
                                            after_audio_s=0.8 + 1.0 * k / max(1, trials - 1)))
    return {'idle': idle, 'after_cancel': after}


def measure_cache(client, hit_text: str, miss_texts: list, reps: int) -> dict:
    """TTFA of phrase-cache hits (``hit_text``, preloaded) and misses (``miss_texts``).

    Each text is published on the node's ``text`` topic (one hop, as in the main TTFA
    table). Returns ``{'hit': [...], 'miss': [...]}`` of ``speak_topic`` dicts; the misses
    are sentences the node has not spoken before (each spoken once).
    Each dict also gets ``node_ttfa_s``: the TTFA the node itself logged for that utterance
    (text received -> first chunk published), without the rmw hops.
    """
    hits, misses = [], []
    for k in range(reps):
        hits.append(_with_node_ttfa(client, client.speak_topic(hit_text)))
        if k < len(miss_texts):
            misses.append(_with_node_ttfa(client, client.speak_topic(miss_texts[k])))
    return {'hit': hits, 'miss': misses}


def _with_node_ttfa(client, run: dict) -> dict:
    """Add the TTFA of the node's last per-utterance log line to ``run`` (None if absent)."""
    found = _TTFA_LOG.findall(client.target.log())
    return dict(run, node_ttfa_s=float(found[-1]) if found else None)


def run_scripts(recipe: str, root: Path, log_dir: Path, log) -> dict:
    """Run bench/first_segment.py and bench/gapless.py on the benchmark model; their JSON.

    Each runs in a process of its own (no ROS), one after the other, with stderr in
    ``log_dir``. Returns ``{'first_segment': {...}, 'gapless': {slowdown: {...}}}``;
    raises ``RuntimeError`` (with the script's log) if one fails.
    """
    bench = Path(__file__).resolve().parent
    out: dict = {'gapless': {}}
    jobs: list[tuple[str, list[str], float | None]] = [
        ('first_segment', ['first_segment.py', '--threads', '2', '--morae',
                           *map(str, MORAE_COMPARED)], None)]
    jobs += [(f'gapless_x{s:g}', ['gapless.py', '--threads', '1', '--slowdown', str(s)], s)
             for s in GAPLESS_SLOWDOWNS]
    # The decoder in windows: 2 threads (with exactness) and a Pi-like single thread.
    jobs += [('windowed_2', ['windowed.py', '--threads', '2'], None),
             ('windowed_1', ['windowed.py', '--threads', '1', '--skip-exactness',
                             '--windows', '0.1', '0.2'], None)]
    for name, argv, slowdown in jobs:
        log(f'{name}: bench/{argv[0]} (no ROS)')
        result = log_dir / f'{name}.json'
        err = log_dir / f'{name}.log'
        with open(err, 'w', encoding='utf-8') as stderr:
            rc = subprocess.call([sys.executable, str(bench / argv[0]), *argv[1:],
                                  '--recipe', recipe, '--model-root', str(root),
                                  '--reps', str(SCRIPT_REPS), '--json', str(result)],
                                 stdout=subprocess.DEVNULL, stderr=stderr,
                                 cwd=bench.parent)
        if rc != 0:
            raise RuntimeError(f'bench/{argv[0]} failed ({rc}):\n'
                               f'{err.read_text(errors="replace")[-3000:]}')
        data = json.loads(result.read_text(encoding='utf-8'))
        if name.startswith('windowed_'):
            out.setdefault('windowed', {})[name.split('_')[1]] = data
        elif slowdown is None:
            out['first_segment'] = data
        else:
            out['gapless'][str(slowdown)] = data
    return out


def analyse(h: dict, extras: dict) -> dict:
    """Summaries of the measurements in ``h`` (the hayakoe part of the results).

    ``extras``: what :func:`run_scripts` returned (may be empty).
    """
    out: dict = {}
    cn = h.get('cancel_next')
    if cn:
        idle = [r['ttfa_s'] for r in cn['idle']]
        nxt = [r['next_ttfa_s'] for r in cn['after_cancel']]
        out['cancel_next'] = {'idle': report.summary(idle), 'next': report.summary(nxt),
                              'excess': report.summary([a - b for a, b in zip(nxt, idle)]),
                              'ack': report.summary([r['ack_s']
                                                     for r in cn['after_cancel']])}
    node_first = [r['ttfa_s'] for r in h['node'][1]]
    raw_first = [r['compute_s'] for r in h['generate'][1]]
    out['first_segment'] = {n: report.ratios([r['ttfa_s'] for r in h['node'][n]], raw_first)
                            for n in h['node']}
    out['first_segment_abs'] = {'node': report.summary(node_first),
                                'raw': report.summary(raw_first)}
    cache = h.get('cache')
    if cache:
        out['cache'] = {k: report.summary([r['ttfa_s'] for r in cache[k]])
                        for k in ('hit', 'miss') if cache[k]}
        for k in ('hit', 'miss'):
            logged = [r['node_ttfa_s'] for r in cache[k] if r.get('node_ttfa_s') is not None]
            if logged:
                out['cache'][f'{k}_node'] = report.summary(logged)
    fs = extras.get('first_segment')
    if fs:
        default = str(MORAE_COMPARED[-1])
        out['first_sentences'] = {
            name: {'chars': row['chars'], 'raw_s': report.summary(row['raw_s']),
                   'morae': {m: {'off': report.summary(c['off']), 'on': report.summary(c['on']),
                                 'ratio_off': c['ratio_off'], 'ratio_on': c['ratio_on'],
                                 'delay': report.summary(c['delay']),
                                 'first_segment': c['first_segment']}
                             for m, c in row['node'].items()}}
            for name, row in fs['sentences'].items()}
        long_rows = [r for r in out['first_sentences'].values() if r['chars'] >= 60]
        if long_rows:
            out['first_long_ratio'] = max(max(r['morae'][default]['ratio_off'],
                                              r['morae'][default]['ratio_on'])
                                          for r in long_rows)
            out['first_long_chars'] = (min(r['chars'] for r in long_rows),
                                       max(r['chars'] for r in long_rows))
    if extras.get('windowed'):
        out['windowed'] = extras['windowed']
    gl = extras.get('gapless')
    if gl:
        out['gapless'] = {}
        for slowdown, data in gl.items():
            rows = {}
            for text, settings in data['runs'].items():
                rows[text] = {setting: {k: report.summary([r[k] for r in runs])
                                        for k in ('underruns', 'late_s', 'ttfa_s',
                                                  'start_delay_s', 'rtf')}
                              for setting, runs in settings.items()}
            out['gapless'][slowdown] = rows
    return out


def claims(a: dict) -> list:
    """Claim rows (claim, measured, target, status) of these figures."""
    rows = []
    cn = a.get('cancel_next')
    if cn:
        limit = cn['idle']['median'] + CANCEL_NEXT_MARGIN_S
        rows.append(['next utterance first audio after a cancel (idle TTFA '
                     f"{cn['idle']['median'] * 1000:.0f} ms + "
                     f'{CANCEL_NEXT_MARGIN_S * 1000:.0f} ms)',
                     report.fmt(cn['next'], ' ms', 1000, 0), f'≤ {limit * 1000:.0f} ms',
                     report.status(cn['next']['median'], limit, False)])
    r = a['first_segment'][1]
    rows.append(['node TTFA / raw generate() of the first sentence alone (1 sentence; '
                 f"absolute {a['first_segment_abs']['node']['median'] * 1000:.0f} ms)",
                 report.fmt(r), f'≤ {FIRST_AUDIO_RATIO}',
                 report.status(r['median'], FIRST_AUDIO_RATIO, False)])
    if a.get('windowed'):
        rows += windowed_report.claims(a['windowed'])
    if 'first_long_ratio' in a:
        lo, hi = a['first_long_chars']
        r = a['first_long_ratio']
        rows.append([f'node TTFA / raw generate() of the first sentence alone, first '
                     f'sentences of {lo}–{hi} characters (first_segment_morae '
                     f'{MORAE_COMPARED[-1]}, no ROS; worst sentence, gapless off or on)',
                     f'{r:.2f}', f'≤ {FIRST_SEGMENT_RATIO}',
                     report.status(r, FIRST_SEGMENT_RATIO, False)])
    for slowdown, rows_g in a.get('gapless', {}).items():
        on = max(s['on']['underruns']['max'] for s in rows_g.values() if 'on' in s)
        off = max(s['off']['underruns']['max'] for s in rows_g.values() if 'off' in s)
        clock = 'real clock' if float(slowdown) == 1 else f'{float(slowdown):g}x slower board'
        rows.append([f'underruns per utterance, gapless on, 1 ONNX thread ({clock}; 3 and '
                     '10 sentences, no ROS)', f'{on:.0f} (gapless off: up to {off:.0f})',
                     f'≤ {GAPLESS_UNDERRUNS}', report.status(on, GAPLESS_UNDERRUNS, False)])
    c = a.get('cache', {}).get('hit')
    if c:
        rows.append(['phrase-cache hit TTFA (text published → first chunk received)',
                     report.fmt(c, ' ms', 1000, 1), f'≤ {CACHE_HIT_TTFA_S * 1000:.0f} ms',
                     report.status(c['median'], CACHE_HIT_TTFA_S, False)])
    return rows


def markdown(a: dict) -> list:
    """Lines of the "Interruptions, first segment, phrase cache" section."""
    fmt = report.fmt
    lines = ['### Interruptions, first segment and phrase cache', '']
    cn = a.get('cancel_next')
    if cn:
        lines += ['`say` goals, pacing on. Idle: the 1-sentence text on an idle node, goal '
                  'sent → its first feedback chunk. After a cancel: a goal on the '
                  '10-sentence text is canceled after 0.8–1.8 s of its audio (its next '
                  'segment is then being synthesised) and the 1-sentence goal is sent '
                  'right after the cancel request; the two alternate.', '',
                  report.table([
                      ['measure', f"median (min–max), {cn['next']['n']} trials"],
                      ['first audio, idle node', fmt(cn['idle'], ' ms', 1000, 0)],
                      ['first audio, right after a cancel', fmt(cn['next'], ' ms', 1000, 0)],
                      ['after a cancel − idle (paired)', fmt(cn['excess'], ' ms', 1000, 0)],
                      ['cancel sent → cancel response', fmt(cn['ack'], ' ms', 1000, 0)]]),
                  '']
    fa = a['first_segment_abs']
    rows = [['text', 'node TTFA / raw generate() of its first sentence']]
    rows += [[f'{n} sentence{"s" * (int(n) > 1)}', fmt(r)]
             for n, r in sorted(a['first_segment'].items(), key=lambda kv: int(kv[0]))]
    lines += ['Node TTFA (text published → first chunk, pacing off) over the time raw '
              '`generate()` takes for the first sentence alone (medians: node '
              f"{fa['node']['median'] * 1000:.0f} ms, generate() "
              f"{fa['raw']['median'] * 1000:.0f} ms for the 1-sentence text):", '',
              report.table(rows), '']
    if 'first_sentences' in a:
        morae = [str(m) for m in MORAE_COMPARED]
        rows = [['first sentence', 'raw generate()'] + [
            f'node TTFA, first_segment_morae {m}' + (' (off)' if m == '0' else '')
            for m in morae]]
        for name, r in a['first_sentences'].items():
            rows.append([name, f"{r['raw_s']['median']:.2f} s"] + [
                f"{r['morae'][m]['off']['median']:.2f} s = {r['morae'][m]['ratio_off']:.2f}x; "
                f"gapless {r['morae'][m]['on']['median']:.2f} s = "
                f"{r['morae'][m]['ratio_on']:.2f}x" for m in morae])
        lines += ["Long first sentences (`bench/first_segment.py`: the node's speech pipeline "
                  'in one process, no ROS, 2 threads, alternating with raw `generate()` of '
                  'the same sentence alone; ratios are medians of the paired ratios):', '',
                  report.table(rows), '']
    for slowdown, rows_g in a.get('gapless', {}).items():
        clock = ('the real clock' if float(slowdown) == 1 else
                 f'a clock {float(slowdown):g}x faster than real time (every synthesis '
                 f'second counts {float(slowdown):g}x: a board {float(slowdown):g}x slower)')
        rows = [['text', 'gapless', 'underruns per utterance', 'silence they added', 'TTFA',
                 'start delay', 'RTF (synthesis s / audio s)']]
        for text, settings in rows_g.items():
            for setting, m in settings.items():
                rows.append([text, setting, fmt(m['underruns'], digits=0),
                             fmt(m['late_s'], ' s'), fmt(m['ttfa_s'], ' s'),
                             fmt(m['start_delay_s'], ' s'), fmt(m['rtf'])])
        lines += [f'Gapless starts (`bench/gapless.py`: the speech pipeline, no ROS, 1 ONNX '
                  f'thread, pacing on, on {clock}):', '', report.table(rows), '']
    c = a.get('cache')
    if c:
        rows = [['phrase cache', 'text published → first chunk received',
                 'in the node (its log: text received → first chunk published)']]
        rows += [[f"{k} ({c[k]['n']} texts)", fmt(c[k], ' ms', 1000, 1),
                  fmt(c.get(f'{k}_node'), ' ms', 1000, 1)] for k in ('hit', 'miss') if k in c]
        lines += [f'A node with `phrase_cache_mb` {CACHE_MB} whose `preload_phrases` holds '
                  'the 1-sentence text (synthesised at configure): that text published on `text` '
                  '(hits) and sentences it has not spoken (misses), pacing on.', '',
                  report.table(rows), '']
    for threads, out in sorted(a.get('windowed', {}).items()):
        lines += [f'### First audio: the decoder in windows (bench/windowed.py, {threads} '
                  f'thread{"s" if threads != "1" else ""}, no ROS)', '',
                  windowed_report.report(out), '']
    return lines
