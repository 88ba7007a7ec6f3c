# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Text front end: time per 100 characters, start-up and memory, now and at a baseline.

``python bench/frontend_speed.py [--reps 200] [--baseline REV] [--json FILE]``

Each side runs in a fresh process of its own (no ROS, no model): this working tree, and the
front end of git revision ``--baseline`` (default :data:`BASELINE`, the code before the
symbol, range, idiom, rare-character and correction readings), exported with ``git
archive`` into a temporary folder. Per side:

* ``normalize_ms_per_100``: :func:`hayakoe_ros.text.frontend.normalize` (every reading
  rule, the correction table, the unreadable-character check) on :data:`MIXED` (mixed
  robot text: numbers, times, units, a URL, English, symbols, ranges, misread words,
  plain Japanese), median ms per call divided by its length in hundreds of characters;
* ``prepare_ms_per_100``: the whole :func:`~hayakoe_ros.text.pipeline.prepare` (checks,
  front end, segmenting with Open JTalk's word boundaries) on the same text;
* ``import_s`` and ``warmup_s``: importing ``hayakoe_ros.text`` and
  :func:`~hayakoe_ros.text.pipeline.warmup` (what configure runs for the front end: Open
  JTalk's dictionary, e2k's model, and here the correction table);
* ``rss_mb``: resident memory after warm-up and one pass over every text of the readings
  table (caches filled), and ``rss_import_mb`` right after the import.

Printed: a Markdown table of both sides and the difference.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import statistics
import subprocess
import sys
import tempfile

REPO = Path(__file__).resolve().parents[1]

#: The revision before the round of readings this module measures.
BASELINE = 'b6195da8b261fe5ce7e1f4e7d159577bf7e205a2'

#: Mixed robot text (782 characters): what a service robot's replies hold, old kinds and new.
MIXED = ('本日の最高気温は25℃、降水確率は30%です。'
         '9時〜18時の間、3階の会議室で点検を行っております。'
         'お問い合わせは03-1234-5678、またはhttps://example.com/helpまで。'
         'ROSのノードver.2.1.3を起動しました、IPアドレスは192.168.1.10です。'
         '残りは約1/3、あと10分ほどお待ちください。2+3=5、10×2=20です。'
         '担当の方はNo.2の窓口へお越しください。Ⅱ期工事は5〜6日に行います。'
         '〇〇ホテルまで1.5km、徒歩で約20分です。明後日の予定は、月〜金の10:30からです。'
         'Battery残量は80%、充電ステーションに戻ります。そういう風にお願いします。'
         'ご来店ありがとうございます！お探しの商品は、こちらの青い箱でよろしいでしょうか？'
         '次の打ち合わせはA会議室で、午後3時からです。1,234,567台の出荷を確認しました。') * 2

_CHILD = r"""
import json, os, statistics, sys, time
sys.path.insert(0, sys.argv[1])

def rss_mb():
    with open('/proc/self/status', encoding='utf-8') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return 0.0

t0 = time.perf_counter()
import hayakoe_ros.text  # noqa
from hayakoe_ros.text import frontend, pipeline
import_s = time.perf_counter() - t0
rss_import = rss_mb()
t0 = time.perf_counter()
pipeline.warmup()
warmup_s = time.perf_counter() - t0
text, reps, table = sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
for row in table:
    try:
        pipeline.prepare(row, 10 ** 6, 60)
    except Exception:
        pass
out = {'import_s': import_s, 'warmup_s': warmup_s, 'rss_import_mb': rss_import,
       'chars': len(text)}
for name, fn in (('normalize', lambda: frontend.normalize(text)),
                 ('prepare', lambda: pipeline.prepare(text, 10 ** 6, 60))):
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    out[name + '_ms_per_100'] = statistics.median(times) * 1e3 / (len(text) / 100)
out['rss_mb'] = rss_mb()
try:  # the correction table's own load: parsing its rows, compiling its pattern
    import re
    from hayakoe_ros.text import corrections
    t = time.perf_counter()
    rows = corrections.parse(corrections.TABLE)
    re.compile('|'.join(re.escape(w) for w in sorted(rows, key=len, reverse=True)))
    out['corrections_load_ms'] = (time.perf_counter() - t) * 1e3
    out['correction_rows'] = len(corrections.ROWS)
except ImportError:
    pass
print(json.dumps(out))
"""


def _table_texts() -> list:
    import yaml

    with open(REPO / 'test' / 'data' / 'readings.yaml', encoding='utf-8') as fh:
        table = yaml.safe_load(fh)
    return [text for rows in table.values() for text, _ in rows]


def _side(root: Path, reps: int, runs: int) -> dict:
    """Medians over ``runs`` fresh processes (start-up times vary with the machine's load)."""
    env = dict(os.environ, PYTHONPATH=str(root), HF_HUB_OFFLINE='1')
    results = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, '-c', _CHILD, str(root), MIXED, str(reps),
                               json.dumps(_table_texts(), ensure_ascii=False)],
                              capture_output=True, text=True, env=env, timeout=600, cwd=root)
        if proc.returncode != 0:
            raise RuntimeError(f'front-end bench in {root} failed: {proc.stderr[-2000:]}')
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(r[key] for r in results) for key in results[0]}


def measure(reps: int = 200, baseline: str = BASELINE, runs: int = 3) -> dict:
    """Both sides' numbers (``baseline`` None or not in git: this tree only)."""
    out: dict = {'reps': reps, 'runs': runs, 'chars': len(MIXED),
                 'now': _side(REPO, reps, runs)}
    if not baseline:
        return out
    with tempfile.TemporaryDirectory(prefix='hayakoe_fe_base_') as tmp:
        archive = subprocess.run(['git', 'archive', baseline, 'hayakoe_ros', 'tools'],
                                 capture_output=True, cwd=REPO)
        if archive.returncode != 0:
            out['baseline_error'] = archive.stderr.decode(errors='replace')[-500:]
            return out
        subprocess.run(['tar', '-x', '-C', tmp], input=archive.stdout, check=True)
        out['baseline'] = dict(_side(Path(tmp), reps, runs), rev=baseline)
    return out


def markdown(r: dict) -> str:
    """The measurements as a Markdown table (now, baseline, difference)."""
    keys = (('normalize_ms_per_100', 'normalize(), ms per 100 characters', 3),
            ('prepare_ms_per_100', 'prepare() (checks, front end, segmenting), ms per 100', 3),
            ('import_s', 'import hayakoe_ros.text, s', 3),
            ('warmup_s', 'pipeline.warmup() (configure), s', 3),
            ('rss_import_mb', 'RSS after the import, MB', 1),
            ('rss_mb', 'RSS after warm-up and the readings table, MB', 1))
    base = r.get('baseline')
    lines = ['| measure | now | baseline | difference |', '|---|---|---|---|']
    for key, label, digits in keys:
        now = r['now'][key]
        if base:
            lines.append(f'| {label} | {now:.{digits}f} | {base[key]:.{digits}f} | '
                         f'{now - base[key]:+.{digits}f} |')
        else:
            lines.append(f'| {label} | {now:.{digits}f} | | |')
    lines.append('')
    lines.append(f"Mixed robot text of {r['chars']} characters, median of {r['reps']} calls, "
                 f"each side in {r.get('runs', 1)} fresh processes (medians)"
                 + (f" (baseline: git {base['rev'][:7]})." if base else '.'))
    if 'corrections_load_ms' in r['now']:
        lines.append(f"The correction table ({r['now']['correction_rows']:.0f} rows) loads in "
                     f"{r['now']['corrections_load_ms']:.2f} ms (parsing and its pattern).")
    return '\n'.join(lines)


def main(argv=None) -> int:
    """Measure and print (and write ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--reps', type=int, default=200)
    parser.add_argument('--runs', type=int, default=3, help='fresh processes per side')
    parser.add_argument('--baseline', default=BASELINE,
                        help="git revision to compare with ('' for none)")
    parser.add_argument('--json', type=Path)
    args = parser.parse_args(argv)
    result = measure(args.reps, args.baseline, args.runs)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + '\n', encoding='utf-8')
    print(markdown(result))
    return 0


if __name__ == '__main__':
    sys.exit(main())
