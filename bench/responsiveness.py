# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``make bench`` figures of issue 13: interruptions, first segment and the phrase cache.

* **Cancel -> next first audio.** A ``say`` goal on the 10-sentence text is canceled while
  its next segment is being synthesised, and the next goal (the 1-sentence text) is sent
  at once. Its first audio (goal sent -> first feedback chunk) is compared with the same
  goal on an idle node, measured in alternation: target next <= idle + 50 ms (issue 13).
  Before the ONNX runs became terminable the next goal waited for the canceled segment's
  synthesis (452 ms vs 82 ms on the tiny model in issue 13).
* **First segment.** Node TTFA over the raw ``generate()`` time of the first sentence alone
  (paired by repetition, from the main comparison): target <= 0.5.
* **Phrase cache.** A node with ``phrase_cache_mb`` and ``preload_phrases`` holding the
  1-sentence text: text published -> first chunk received for that text (hits) and for a
  sentence it has not seen (miss). Target: hit TTFA <= 20 ms.
"""

from __future__ import annotations

import re

from bench import report

#: Next utterance's first audio after a cancel, at most idle TTFA + this (s).
CANCEL_NEXT_MARGIN_S = 0.050
#: Node TTFA / raw generate() of the first sentence alone, at most.
FIRST_SEGMENT_RATIO = 0.5
#: Phrase-cache hit TTFA, at most (s).
CACHE_HIT_TTFA_S = 0.020
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


def analyse(h: dict) -> dict:
    """Summaries of the measurements in ``h`` (the hayakoe part of the results)."""
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
    return out


def claims(a: dict) -> list:
    """Claim rows (claim, measured, target, status) of issue 13."""
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
    rows.append(['node TTFA / raw generate() of the first sentence alone (1 sentence)',
                 report.fmt(r), f'≤ {FIRST_SEGMENT_RATIO}',
                 report.status(r['median'], FIRST_SEGMENT_RATIO, False)])
    c = a.get('cache', {}).get('hit')
    if c:
        rows.append(['phrase-cache hit TTFA (text published → first chunk received)',
                     report.fmt(c, ' ms', 1000, 1), f'≤ {CACHE_HIT_TTFA_S * 1000:.0f} ms',
                     report.status(c['median'], CACHE_HIT_TTFA_S, False)])
    return rows


def markdown(a: dict) -> list:
    """Lines of the "Interruptions, first segment, phrase cache" section."""
    fmt = report.fmt
    lines = ['### Interruptions, first segment and phrase cache (issue 13)', '']
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
    return lines
