# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A real PulseAudio server for tests and benches: a null sink, its monitor recorded.

The server runs with no system configuration (``-n``: no default.pa, ``-F /dev/null``),
its own runtime directory under the test's tmp, ``--exit-idle-time=-1``, a native-protocol
socket with anonymous auth, and ``module-null-sink`` (a sound card that plays in real
time into nothing; its ``.monitor`` source is what it "played"). PulseAudio refuses
nothing as root in user mode (it only warns), so CI, which runs as root, needs no
``--system``. Players reach it through ALSA's pulse plugin, configured by an ``.asoundrc``
in the HOME handed to the player process.
"""

from __future__ import annotations

import ctypes.util
import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

#: What the tests need from Debian (CI installs them: see .ci/run).
APT_PACKAGES = 'pulseaudio pulseaudio-utils libasound2-plugins libportaudio2'

_ALSA_PULSE = ('/usr/lib/x86_64-linux-gnu/alsa-lib/libasound_module_pcm_pulse.so',
               '/usr/lib/aarch64-linux-gnu/alsa-lib/libasound_module_pcm_pulse.so')


def missing() -> str:
    """Why a PulseAudio test cannot run here ('' when it can)."""
    if shutil.which('pulseaudio') is None or shutil.which('parec') is None:
        return f'pulseaudio/parec not installed (apt install {APT_PACKAGES})'
    if not any(os.path.exists(p) for p in _ALSA_PULSE):
        return f'ALSA pulse plugin not installed (apt install {APT_PACKAGES})'
    if ctypes.util.find_library('portaudio') is None:
        return f'PortAudio not installed (apt install {APT_PACKAGES})'
    return ''


class PulseServer:
    """``pulseaudio`` with one mono null sink named ``sink`` at ``rate`` Hz.

    Args:
        root: An empty directory for the runtime dir, socket, HOME and logs.
        rate: The null sink's sample rate (Hz).
    """

    def __init__(self, root: Path, rate: int = 48000, sink: str = 'robot_speaker') -> None:
        self.root = Path(root)
        self.rate = rate
        self.sink = sink
        self.runtime = self.root / 'runtime'
        self.home = self.root / 'home'
        self.runtime.mkdir(mode=0o700)
        self.home.mkdir()
        self.socket = self.runtime / 'native'
        self.server = f'unix:{self.socket}'
        (self.home / '.asoundrc').write_text(
            f'pcm.!default {{ type pulse server "{self.server}" }}\n'
            f'ctl.!default {{ type pulse server "{self.server}" }}\n')
        env = dict(os.environ, XDG_RUNTIME_DIR=str(self.runtime), HOME=str(self.home))
        self.env = env
        self.log_path = self.root / 'pulseaudio.log'
        self._log = open(self.log_path, 'w')
        self.proc = subprocess.Popen(
            ['pulseaudio', '-n', '--daemonize=no', '--exit-idle-time=-1',
             '--use-pid-file=no', '-F', '/dev/null',
             '-L', f'module-native-protocol-unix socket={self.socket} auth-anonymous=1',
             '-L', f'module-null-sink sink_name={sink} rate={rate} channels=1'],
            stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            ok = subprocess.run(['pactl', '--server', self.server, 'list', 'short', 'sinks'],
                                capture_output=True, text=True, env=env, timeout=5)
            if ok.returncode == 0 and sink in ok.stdout:
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.stop()
        raise AssertionError(f'pulseaudio did not start:\n{self.log_path.read_text()}')

    def client_env(self) -> dict:
        """Environment variables for a PortAudio/ALSA client of this server."""
        return {'HOME': str(self.home), 'PULSE_SERVER': self.server,
                'XDG_RUNTIME_DIR': str(self.runtime)}

    def record(self) -> 'Recording':
        """Start recording the null sink's monitor."""
        return Recording(self)

    def stop(self) -> None:
        """Terminate the server (bounded wait)."""
        if self.proc.poll() is None:
            _terminate(self.proc)
        self._log.close()


class Recording:
    """``parec`` of the sink's monitor: mono int16 at the sink's rate, into a file.

    ``t0`` is the monotonic time of the recording's sample 0, estimated when the first
    bytes arrive (record latency 10 ms): good to about 20 ms.
    """

    def __init__(self, server: PulseServer) -> None:
        self.rate = server.rate
        self.path = server.root / f'rec{time.monotonic_ns()}.raw'
        self._file = open(self.path, 'wb')
        self.proc = subprocess.Popen(
            ['parec', '--server', server.server, '-d', f'{server.sink}.monitor', '--raw',
             '--format=s16le', f'--rate={server.rate}', '--channels=1',
             '--latency-msec=10'], stdout=self._file, env=server.env)
        deadline = time.monotonic() + 10
        while self.path.stat().st_size < 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        size = self.path.stat().st_size
        assert size >= 2, 'parec recorded nothing'
        self.t0 = time.monotonic() - 0.010 - size / 2 / self.rate

    def stop(self) -> np.ndarray:
        """Stop; return the recording (float64, +-1.0 full scale)."""
        _terminate(self.proc)
        self._file.close()
        return np.fromfile(self.path, dtype='<i2').astype(np.float64) / 32768.0


def _terminate(proc: subprocess.Popen) -> None:
    """SIGTERM ``proc``; SIGKILL it if it has not exited within 10 s."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
