# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``tts_node`` as a child process, for the tests (test/ros_utils.py) and the benchmarks.

One class, :class:`NodeProcess`: starts the node in its own namespace with ROS parameters
given as a dict, captures its log in a file, waits for its ``ready:`` line, and stops it
with SIGINT (the status the node exits with is what a launch file sees).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
import signal
import subprocess
import sys
import tempfile
import time
from typing import Optional, Sequence

REPO = Path(__file__).resolve().parents[1]

#: How the node is started unless ``command`` says otherwise: the package's module in
#: this interpreter (the console script ``tts_node`` runs the same ``main()``).
DEFAULT_COMMAND = (sys.executable, '-m', 'hayakoe_ros.tts_node')

#: ``tts_fleet`` (one engine, a node per robot) as :class:`NodeProcess` runs it: give
#: ``name='tts_fleet'`` and wait for its ``fleet ready:`` line (each robot logs
#: ``ready:`` first).
FLEET_COMMAND = (sys.executable, '-m', 'hayakoe_ros.tts_fleet')

_NAMESPACES = itertools.count(1)


def new_namespace() -> str:
    """Return a namespace that no other node of this process has been given."""
    return f'/t{os.getpid()}_{next(_NAMESPACES)}'


class NodeProcessError(RuntimeError):
    """The node exited, or did not log what was awaited in time; the message has its log."""


def read_vm_kib(pid: int, field: str = 'VmHWM') -> int:
    """Return ``field`` (VmHWM: peak RSS, VmRSS: current) of ``pid`` in KiB, from /proc.

    Raises ``KeyError`` if /proc/<pid>/status has no such field.
    """
    with open(f'/proc/{pid}/status', encoding='ascii') as status:
        for line in status:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    raise KeyError(f'{field} not in /proc/{pid}/status')


def pin_threads(pid: int, cpus) -> None:
    """Put every thread of process ``pid`` on ``cpus`` (``os.sched_setaffinity``)."""
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (ProcessLookupError, FileNotFoundError):
            continue


def ros_args(params: dict) -> list:
    """Return ``-p name:=value`` arguments for ``params``.

    Bools are written true/false, lists as YAML flow sequences (``[r1, r2]``).
    """
    args: list = []
    for key, value in params.items():
        if isinstance(value, bool):
            value = str(value).lower()
        elif isinstance(value, (list, tuple)):
            value = '[' + ', '.join(map(str, value)) + ']'
        args += ['-p', f'{key}:={value}']
    return args


class NodeProcess:
    """``tts_node`` as a child process in namespace ``namespace``, its log in a file.

    Args:
        params: ROS parameters (``-p name:=value``).
        namespace: Namespace of the node (``__ns``); default :func:`new_namespace`, so
            that nodes of one session never see each other's topics.
        name: Node name (``__node``).
        extra_args: More arguments after the ``-p`` ones (e.g. ``['--log-level', ...]``).
        wait_ready: Wait in the constructor for the ``ready:`` log line (engine loaded
            and warm; :meth:`wait_until_ready`).
        timeout: Seconds that wait may take.
        log_dir: Directory of the log file; default ``$PYTEST_TMP`` or the temp dir.
        command: The executable and its leading arguments; default
            :data:`DEFAULT_COMMAND`. ``--ros-args`` and the rest follow it.
        env: Extra environment variables for the child.

    Raises:
        NodeProcessError: the node exited or was not ready within ``timeout`` (it is
            then stopped).
    """

    def __init__(self, params: dict, namespace: str = '', name: str = 'tts_node',
                 extra_args: Sequence[str] = (), wait_ready: bool = True,
                 timeout: float = 120.0, log_dir: Optional[Path] = None,
                 command: Sequence[str] = DEFAULT_COMMAND,
                 env: Optional[dict] = None) -> None:
        self.namespace = namespace or new_namespace()
        self.name = name
        args = [*command, '--ros-args', '-r', f'__ns:={self.namespace}',
                '-r', f'__node:={name}']
        args += ros_args(params) + list(extra_args)
        log_dir = Path(log_dir or os.environ.get('PYTEST_TMP') or tempfile.gettempdir())
        self.log_path = log_dir / f'{name}{self.namespace.replace("/", "_")}.log'
        self._log = open(self.log_path, 'w', encoding='utf-8')
        child_env = dict(os.environ, PYTHONUNBUFFERED='1', RCUTILS_COLORIZED_OUTPUT='0',
                         PYTHONFAULTHANDLER='1')  # stacks on SIGABRT: wait_exit
        child_env.update(env or {})
        self._t0 = time.perf_counter()
        #: Seconds from start to the ``ready:`` line (set by :meth:`wait_until_ready`).
        self.start_s = 0.0
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT,
                                     cwd=REPO, env=child_env)
        if wait_ready:
            self.wait_until_ready(timeout)

    @property
    def pid(self) -> int:
        """Process id (the interpreter re-executes itself in place, keeping it)."""
        return self.proc.pid

    def log(self) -> str:
        """Everything the node printed so far."""
        return self.log_path.read_text(encoding='utf-8', errors='replace')

    def log_mark(self) -> int:
        """Length of the log so far: a ``wait_for_log(after=...)`` mark."""
        return len(self.log())

    def wait_for_log(self, needle: str, timeout: float, after: int = 0) -> None:
        """Wait until ``needle`` appears in the log (past character ``after``).

        Raises ``NodeProcessError`` (with the log) if the node exits first or ``timeout``
        seconds pass; on a timeout the node is stopped.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.log()[after:]:
                return
            if self.proc.poll() is not None:
                raise NodeProcessError(f'{self.name} exited ({self.proc.returncode}):\n'
                                       f'{self.log()}')
            time.sleep(0.1)
        self.stop()
        raise NodeProcessError(f'{needle!r} not logged within {timeout} s:\n{self.log()}')

    def wait_until_ready(self, timeout: float = 300.0) -> 'NodeProcess':
        """Wait for the ``ready:`` log line, record :attr:`start_s`; return self."""
        self.wait_for_log('ready:', timeout)
        self.start_s = time.perf_counter() - self._t0
        return self

    def topic(self, name: str) -> str:
        """Fully qualified name of a node-relative topic, service or action."""
        return f'{self.namespace}/{name}'

    def pin(self, cpus) -> None:
        """Run every thread of the node on ``cpus`` (a set of CPU numbers) from now on.

        Threads started later inherit it from the thread that starts them. A thread
        that ends meanwhile is skipped.
        """
        pin_threads(self.pid, cpus)

    def peak_rss_kib(self) -> int:
        """Peak resident set size of the node process so far (VmHWM), KiB."""
        return read_vm_kib(self.pid)

    def wait_exit(self, timeout: float) -> int:
        """Wait for the process to exit on its own; return its status.

        Raises ``NodeProcessError`` with the log if it is still running after ``timeout``
        seconds. The process is then ended with SIGABRT, on which Python's faulthandler
        (enabled in every child) writes each thread's stack into the log first: where a
        hang hangs.
        """
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)
            self.stop(5.0)
            raise NodeProcessError(f'{self.name} still running after {timeout} s:\n'
                                   f'{self.log()}') from None

    def stop(self, timeout: float = 20.0) -> Optional[int]:
        """SIGINT, wait (kill after ``timeout`` s); return the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self._log.closed:
            self._log.close()
        return self.proc.returncode
