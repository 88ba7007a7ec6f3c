# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Each test or benchmark run holds a DDS domain of its own (tools/dds_domain.py)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]
_CLAIM = ('import sys; sys.path.insert(0, sys.argv[1]); from tools import dds_domain; '
          'print(dds_domain.claim(int(sys.argv[2])), flush=True); sys.stdin.read()')


def _holder(start):
    proc = subprocess.Popen([sys.executable, '-c', _CLAIM, str(REPO), str(start)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return proc, int(proc.stdout.readline())


def test_runs_that_would_collide_get_different_domains_and_a_dead_run_frees_its_own(
        ros_test_domain):
    start = ros_test_domain + 37  # pids that agree modulo 100 asked for the same id before
    first, a = _holder(start)
    second, b = _holder(start)
    try:
        assert a != b and ros_test_domain not in (a, b)
        first.kill()  # however a run ends, the kernel drops its lock
        first.wait(10)
        third, c = _holder(start)
        third.stdin.close()
        third.wait(10)
        assert c == a
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.stdin.close()
                proc.wait(10)
