# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Memory figures of ``make bench``: peak (VmHWM) and steady (idle VmRSS), node vs raw.

Peak = ``VmHWM``: the most the process ever had resident, from its start through load,
warm-up and every synthesis. Steady = ``VmRSS`` after the processes have sat idle for
``IDLE_S`` seconds once the last synthesis is done: what the process keeps while it waits
for the next utterance. Both from ``/proc/<pid>/status``, in KiB; reported in MB (10**6 bytes).
"""

from __future__ import annotations

import time

from bench import report
from bench.node_driver import read_vm_kib

#: Node peak RSS / raw hayakoe peak RSS, at most (the memory target).
PEAK_RATIO_TARGET = 0.75
#: Idle time before reading the steady RSS, seconds.
IDLE_S = 3.0


def collect(procs: dict, idle_s: float = IDLE_S) -> dict:
    """Peak and steady RSS of each process, after ``idle_s`` seconds of idleness.

    Args:
        procs: role (``raw``, ``node``, ``raw_1thread``, ``node_1thread``) -> an object
            with a ``pid`` attribute or a ``proc.pid``.
        idle_s: Seconds to wait before reading (the processes are idle meanwhile).

    Returns:
        ``{'<role>_kib': VmHWM, '<role>_steady_kib': VmRSS}`` for every role (KiB).
    """
    time.sleep(idle_s)
    out = {}
    for role, p in procs.items():
        pid = getattr(p, 'pid', None) or p.proc.pid
        out[f'{role}_kib'] = read_vm_kib(pid, 'VmHWM')
        out[f'{role}_steady_kib'] = read_vm_kib(pid, 'VmRSS')
    return out


def analyse(rss: dict) -> dict:
    """MB figures and node/raw ratios (peak and steady, where measured)."""
    m = {k.replace('_kib', ''): v * 1024 / 1e6 for k, v in rss.items()}
    for suffix in ('', '_1thread'):
        for kind in ('', '_steady'):
            node, raw = m.get(f'node{suffix}{kind}'), m.get(f'raw{suffix}{kind}')
            if node is not None and raw:
                m[f'ratio{suffix}{kind}'] = node / raw
    return m


def claims(m: dict) -> list:
    """Claim rows: node peak / raw peak at both thread counts."""
    rows = []
    for suffix, label in (('', '1, 3 and 10 sentences, 2 threads'),
                          ('_1thread', '3 sentences only, 1 thread')):
        if f'ratio{suffix}' not in m:
            continue
        r = m[f'ratio{suffix}']
        rows.append([f'peak RSS node / raw hayakoe, same texts ({label})',
                     f"{r:.2f} ({m[f'node{suffix}']:.0f} vs {m[f'raw{suffix}']:.0f} MB)",
                     f'≤ {PEAK_RATIO_TARGET}', report.status(r, PEAK_RATIO_TARGET, False)])
    return rows


def markdown(m: dict, t_lo: int, t_hi: int) -> list:
    """Lines of the "Memory" section: peak and steady RSS side by side, with ratios."""
    def cell(key: str) -> str:
        return f'{m[key]:.0f} MB' if key in m else '–'

    def ratio(key: str) -> str:
        return f'{m[key]:.2f}' if key in m else '–'

    rows = [['process', f'peak, {t_hi} threads', f'steady, {t_hi} threads',
             f'peak, {t_lo} thread', f'steady, {t_lo} thread']]
    rows.append(['raw hayakoe generate()', cell('raw'), cell('raw_steady'),
                 cell('raw_1thread'), cell('raw_1thread_steady')])
    rows.append(['tts_node', cell('node'), cell('node_steady'), cell('node_1thread'),
                 cell('node_1thread_steady')])
    rows.append(['node / raw', ratio('ratio'), ratio('ratio_steady'),
                 ratio('ratio_1thread'), ratio('ratio_1thread_steady')])
    lines = ['### Memory: peak and steady RSS', '',
             f'Peak = VmHWM from process start through load, warm-up and, at {t_hi} threads, '
             f'every repetition of the 1-, 3- and 10-sentence texts (at {t_lo} thread: the '
             f'3-sentence runs only). Steady = VmRSS after {IDLE_S:.0f} s idle once the last '
             'synthesis is done. The node sets its own allocator settings and trims after '
             'loading (`hayakoe_ros/engines/memory.py`); raw hayakoe runs with glibc '
             'defaults, as an application would.', '',
             report.table(rows), '']
    if 'node_after_cancel' in m:
        lines += [f"tts_node peak after the cancel trials too: "
                  f"{m['node_after_cancel']:.0f} MB.", '']
    return lines
