# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Two machines on one: a pair of Linux network namespaces joined by a veth link.

``with netns.pair() as link:`` makes namespaces ``hkh-<pid>-<n>`` (the host) and
``hkr-<pid>-<n>`` (a robot), each with ``lo`` up, joined by a veth pair addressed
``10.213.<x>.1/24`` (host) and ``.2`` (robot). Nothing is added to the root namespace:
the addresses exist only inside the pair, so pairs of concurrent runs cannot collide even
on one subnet; ``x`` is derived from the pid and a counter all the same, so that captures
and logs of two runs are told apart.
:meth:`Link.popen` runs a command inside one namespace (``ip netns exec``) with the
test's environment (ROS_DOMAIN_ID...); :meth:`Link.cut` / :meth:`Link.restore` take the
link down and up; :meth:`Link.shape` puts a token bucket (``tbf``) on it.

What makes the namespaces two machines rather than two interfaces of one:

* **Multicast can be blocked** (``multicast=False``, the default), as on Wi-Fi where it is
  unreliable: every IPv4 packet to 224.0.0.0/4 leaving either end is dropped (an ``htb``
  root whose multicast class holds a ``pfifo`` of length 0; this kernel has neither
  ``netem`` nor tc actions). Discovery then works only by the unicast profile under test.
* **Each namespace has its own /etc/machine-id** (``ip netns exec`` binds
  ``/etc/netns/<name>/*`` over ``/etc``): Fast DDS takes participants with one machine id
  for one host and moves their traffic to shared memory, which would bypass the link,
  its shaping and its cuts.

The namespaces are always removed on leaving the ``with`` (an exception included): every
process in them is ended (SIGTERM, SIGKILL after a grace), then the namespaces and their
``/etc/netns`` entries are deleted. Pairs left by a run that was killed (its pid gone) are
removed when the next pair is made. :func:`pair` skips the test (``pytest.skip``) when
namespaces cannot be made here (no ``ip``, not root, no CAP_NET_ADMIN).
"""

from __future__ import annotations

import contextlib
import itertools
import os
from pathlib import Path
import re
import shutil
import signal
import subprocess
import time
from typing import Iterator, Optional, Sequence
import uuid

_PAIRS = itertools.count(1)
_NAME = re.compile(r'^hk[hr]-(\d+)-\d+$')
ETC_NETNS = Path('/etc/netns')
#: Seconds a process in a namespace is given after SIGTERM before SIGKILL.
GRACE_S = 5.0
#: Seconds ``ip netns exec`` is given to move a new child into its namespace.
ENTER_TIMEOUT_S = 10.0


def ip(*args: str, check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess:
    """Run ``ip ARGS`` (``tc`` when the first argument is ``'tc'``); raise on failure."""
    cmd = list(args) if args[0] == 'tc' else ['ip', *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode:
        raise RuntimeError(f'{" ".join(cmd)}: {proc.stderr.strip() or proc.returncode}')
    return proc


def namespaces() -> list:
    """Names of the network namespaces that ``ip netns`` knows."""
    out = ip('netns', 'list', check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def pids_in(name: str) -> list:
    """Pids of the processes in namespace ``name`` (empty if it is gone)."""
    proc = ip('netns', 'pids', name, check=False)
    return [int(p) for p in proc.stdout.split()] if proc.returncode == 0 else []


def _netns_id(path: str) -> Optional[tuple]:
    """(device, inode) of the network namespace file ``path``; None if it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _wait_entered(proc: subprocess.Popen, name: str,
                  timeout: float = ENTER_TIMEOUT_S) -> None:
    """Wait until ``proc`` is in namespace ``name`` or has ended (bounded)."""
    target = _netns_id(f'/run/netns/{name}')
    deadline = time.monotonic() + timeout
    while proc.poll() is None and _netns_id(f'/proc/{proc.pid}/ns/net') != target:
        if time.monotonic() > deadline:
            raise RuntimeError(f'pid {proc.pid} did not enter namespace {name} '
                               f'within {timeout} s')
        time.sleep(0.005)


def _end_processes(name: str, grace_s: float = GRACE_S) -> None:
    """SIGTERM every process in ``name``, SIGKILL what remains after ``grace_s``."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        pids = pids_in(name)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while pids and time.monotonic() < deadline:
            time.sleep(0.05)
            pids = pids_in(name)
        if not pids:
            return


def remove_namespace(name: str) -> None:
    """End the processes in ``name``, delete it and its ``/etc/netns`` entry."""
    if name in namespaces():
        _end_processes(name)
        ip('netns', 'del', name, check=False)
    shutil.rmtree(ETC_NETNS / name, ignore_errors=True)


def remove_stale() -> list:
    """Remove the pairs of runs whose process is gone (killed before cleaning up)."""
    stale = []
    for name in namespaces():
        match = _NAME.match(name)
        if match and not Path(f'/proc/{match.group(1)}').exists():
            remove_namespace(name)
            stale.append(name)
    return stale


def environ(changes: Optional[dict] = None) -> dict:
    """``os.environ`` (the test's: ROS_DOMAIN_ID...) with ``changes``; None unsets a name."""
    env = dict(os.environ)
    for key, value in (changes or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def unavailable() -> Optional[str]:
    """Why namespaces cannot be made here, or None if they can."""
    if shutil.which('ip') is None or shutil.which('tc') is None:
        return 'iproute2 (ip, tc) is not installed'
    if os.geteuid() != 0:
        return 'network namespaces need root (CAP_NET_ADMIN)'
    return None


class Link:
    """A host namespace and a robot namespace joined by a veth pair (see the module)."""

    def __init__(self, multicast: bool = False) -> None:
        n = next(_PAIRS)
        pid = os.getpid()
        self.host = f'hkh-{pid}-{n}'
        self.robot = f'hkr-{pid}-{n}'
        self.dev = {self.host: f'hkv{pid}-{n}h'[-15:], self.robot: f'hkv{pid}-{n}r'[-15:]}
        x = (pid * 7 + n) % 250 + 2
        self.addr = {self.host: f'10.213.{x}.1', self.robot: f'10.213.{x}.2'}
        self.multicast = multicast
        #: Processes started by :meth:`popen`, reaped on :meth:`close`.
        self.procs: list = []

    @property
    def host_ip(self) -> str:
        """The host end's address."""
        return self.addr[self.host]

    @property
    def robot_ip(self) -> str:
        """The robot end's address."""
        return self.addr[self.robot]

    def open(self) -> 'Link':
        """Make the namespaces, the veth pair, the addresses and the qdiscs."""
        for name in (self.host, self.robot):
            (ETC_NETNS / name).mkdir(parents=True, exist_ok=True)
            (ETC_NETNS / name / 'machine-id').write_text(uuid.uuid4().hex + '\n')
            ip('netns', 'add', name)
            ip('-n', name, 'link', 'set', 'lo', 'up')
        ip('link', 'add', self.dev[self.host], 'netns', self.host, 'type', 'veth',
           'peer', 'name', self.dev[self.robot], 'netns', self.robot)
        for name in (self.host, self.robot):
            ip('-n', name, 'addr', 'add', f'{self.addr[name]}/24', 'dev', self.dev[name])
            ip('-n', name, 'link', 'set', self.dev[name], 'up')
            self._root_qdisc(name)
        self._wait_up()
        return self

    def _wait_up(self, timeout: float = 10.0) -> None:
        """Wait until both ends are operationally up.

        The kernel reports a veth's carrier a moment after ``link set up`` (its link
        watcher runs up to a second later); a DDS participant started before that sees
        only ``lo`` and never uses the link.
        """
        deadline = time.monotonic() + timeout
        while True:
            states = [ip('-n', name, '-o', 'link', 'show', self.dev[name]).stdout
                      for name in (self.host, self.robot)]
            if all('state UP' in s for s in states):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f'the veth link did not come up: {states}')
            time.sleep(0.02)

    def _root_qdisc(self, name: str) -> None:
        """``htb``: class 1:10 (default) carries everything, 1:20 drops multicast."""
        dev = ['dev', self.dev[name]]
        ip('tc', '-n', name, 'qdisc', 'add', *dev, 'root', 'handle', '1:', 'htb',
           'default', '10')
        ip('tc', '-n', name, 'class', 'add', *dev, 'parent', '1:', 'classid', '1:10', 'htb',
           'rate', '10gbit', 'quantum', '60000')
        if self.multicast:
            return
        ip('tc', '-n', name, 'class', 'add', *dev, 'parent', '1:', 'classid', '1:20', 'htb',
           'rate', '8kbit', 'quantum', '1500')
        ip('tc', '-n', name, 'qdisc', 'add', *dev, 'parent', '1:20', 'handle', '20:',
           'pfifo', 'limit', '0')
        ip('tc', '-n', name, 'filter', 'add', *dev, 'parent', '1:', 'protocol', 'ip',
           'prio', '1', 'u32', 'match', 'ip', 'dst', '224.0.0.0/4', 'flowid', '1:20')

    def prefix(self, name: str) -> list:
        """The command prefix that runs a program in namespace ``name``."""
        return ['ip', 'netns', 'exec', name]

    def popen(self, name: str, args: Sequence[str], env: Optional[dict] = None,
              **kwargs) -> subprocess.Popen:
        """Start ``args`` in namespace ``name`` with :func:`environ` of ``env``.

        ``ip netns exec`` execs the command in place: the child's pid is the program's.
        Returns once the child is inside the namespace (it enters it after the fork, so
        until then :func:`pids_in` and the clean-up on exit would not see it).

        Raises:
            RuntimeError: the child neither entered nor ended within ``ENTER_TIMEOUT_S``.
        """
        proc = subprocess.Popen([*self.prefix(name), *args], env=environ(env), **kwargs)
        self.procs.append(proc)
        _wait_entered(proc, name)
        return proc

    def run(self, name: str, args: Sequence[str], timeout: float = 30.0,
            env: Optional[dict] = None) -> subprocess.CompletedProcess:
        """Run ``args`` in namespace ``name`` to completion; return the result."""
        return subprocess.run([*self.prefix(name), *args], capture_output=True, text=True,
                              timeout=timeout, env=environ(env))

    def cut(self) -> None:
        """Take the link down (both ends): nothing crosses until :meth:`restore`."""
        for name in (self.host, self.robot):
            ip('-n', name, 'link', 'set', self.dev[name], 'down')

    def restore(self) -> None:
        """Bring the link up again (the addresses stay)."""
        for name in (self.host, self.robot):
            ip('-n', name, 'link', 'set', self.dev[name], 'up')
        self._wait_up()

    def shape(self, rate: str = '1mbit', burst: str = '32kbit',
              latency: str = '400ms') -> None:
        """Limit both directions to a token bucket: ``tbf rate RATE burst BURST latency``.

        ``latency`` bounds a packet's wait in the queue: a packet that would wait longer
        is dropped (and DDS resends it, reliable QoS, much later).
        """
        for name in (self.host, self.robot):
            ip('tc', '-n', name, 'qdisc', 'replace', 'dev', self.dev[name], 'parent', '1:10',
               'handle', '10:', 'tbf', 'rate', rate, 'burst', burst, 'latency', latency)

    def stats(self, name: str) -> dict:
        """The veth end's counters in namespace ``name``: ``tx_bytes``, ``rx_bytes``...

        Also ``mcast_dropped``: multicast packets the block dropped there.
        """
        keys = ('tx_bytes', 'rx_bytes', 'tx_packets', 'rx_packets')
        proc = self.run(name, ['cat', *(f'/sys/class/net/{self.dev[name]}/statistics/{key}'
                                       for key in keys)])
        out = dict(zip(keys, map(int, proc.stdout.split())))
        out['mcast_dropped'] = 0
        if not self.multicast:
            text = ip('tc', '-n', name, '-s', 'class', 'show', 'dev', self.dev[name],
                      'classid', '1:20').stdout
            match = re.search(r'dropped (\d+)', text)
            out['mcast_dropped'] = int(match.group(1)) if match else 0
        return out

    def wait_quiet(self, name: str, below_bps: float, for_s: float = 1.0,
                   timeout: float = 60.0) -> float:
        """Wait until ``name``'s end has sent under ``below_bps`` bit/s for ``for_s`` s.

        E.g. until discovery has finished crossing a narrow link. Returns the seconds
        waited; RuntimeError after ``timeout``.
        """
        t0 = time.monotonic()
        start, last = t0, self.stats(name)['tx_bytes']
        while time.monotonic() - t0 < timeout:
            time.sleep(0.1)
            now, sent = time.monotonic(), self.stats(name)['tx_bytes']
            if (sent - last) * 8 > below_bps * (now - start):
                start, last = now, sent  # busy: start over from here
            elif now - start >= for_s:
                return now - t0
        raise RuntimeError(f'{name} did not go quiet (< {below_bps} bit/s) in {timeout} s')

    def tbf_stats(self, name: str) -> str:
        """The token bucket's counters at namespace ``name``'s end (``tc -s``), one line."""
        text = ip('tc', '-n', name, '-s', 'qdisc', 'show', 'dev', self.dev[name],
                  'parent', '1:10').stdout
        return ' '.join(text.split())

    def close(self) -> None:
        """End every process in the namespaces, delete them (safe to call twice)."""
        for name in (self.host, self.robot):
            remove_namespace(name)
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(GRACE_S)

    def leftovers(self) -> list:
        """What :meth:`close` should have removed and is still there (empty when clean)."""
        left = [n for n in namespaces() if n in (self.host, self.robot)]
        left += [str(ETC_NETNS / n) for n in (self.host, self.robot)
                 if (ETC_NETNS / n).exists()]
        left += [f'pid {p.pid}' for p in self.procs if p.poll() is None]
        return left


@contextlib.contextmanager
def pair(multicast: bool = False) -> Iterator[Link]:
    """A :class:`Link`, removed on exit whatever happens; skips where impossible.

    Args:
        multicast: Let multicast cross the link (default: blocked, as on Wi-Fi).
    """
    import pytest

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    remove_stale()
    link = Link(multicast)
    try:
        try:
            link.open()
        except RuntimeError as exc:
            if 'Operation not permitted' in str(exc):
                pytest.skip(f'cannot make network namespaces here: {exc}')
            raise
        yield link
    finally:
        link.close()
