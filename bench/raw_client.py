# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The benchmark's side of a raw hayakoe worker: start ``bench/raw_worker.py``, ask, read.

The worker answers one JSON line per request (protocol: ``bench/raw_worker.py``); this
class adds the CPU time the worker used per request and its peak RSS.
"""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys

from bench.node_driver import read_cpu_s, read_vm_kib

REPO = Path(__file__).resolve().parents[1]


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
