# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Sound output through PortAudio (``sounddevice``), with rate choice (no ROS imports).

PortAudio reaches ALSA, and through ALSA's default device the sound server where one
runs (PipeWire's or PulseAudio's ALSA plugin on Ubuntu 24.04 and Raspberry Pi OS), or the
card itself (``hw:``/``plughw:`` names, a Pi 4B's 3.5 mm jack or a USB speaker) on a
headless robot. :class:`Player` opens one callback stream and renders a
:class:`~.playout.Playout` into it; the stream is reopened at a new rate when the incoming
rate changes while nothing is queued (between utterances), if the device takes that rate.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Callable, Optional, Union

import numpy as np

from .cut import Utterances
from .playout import Playout, PlayoutStats


class DeviceError(RuntimeError):
    """The sound device cannot be found, opened or started (the message says which)."""


def _sounddevice():
    try:
        import sounddevice
    except OSError as exc:  # the module imports, but libportaudio2 is missing
        raise DeviceError(f'PortAudio is not available ({exc}); install libportaudio2 '
                          '(Debian/Ubuntu: apt install libportaudio2)') from exc
    return sounddevice


@dataclasses.dataclass(frozen=True)
class PlayerConfig:
    """Output settings.

    Attributes:
        device: PortAudio output device: '' = the default output, else an index or a
            (sub)string of the name as ``python3 -m sounddevice`` lists them.
        latency_s: Output latency asked of the device (s): larger survives CPU stalls,
            smaller starts the sound sooner.
        device_rate: 0 = open the device at the stream's rate when it takes it (else at
            its default rate); otherwise always this rate (Hz) and resample to it.
        volume: Linear gain (1.0 = as received), clipped at full scale.
        buffer_s: Jitter buffer (s) before the first chunk of an utterance (see
            :class:`~.playout.Playout`).
        max_ahead_s: How far from its arrival a chunk's stamp is believed (s; see
            :class:`~.playout.Playout`).
    """

    device: str = ''
    latency_s: float = 0.1
    device_rate: int = 0
    volume: float = 1.0
    buffer_s: float = 0.1
    max_ahead_s: float = 2.0


class Player:
    """One output stream fed from stamped chunks (thread-safe).

    Args:
        config: :class:`PlayerConfig`.
        clock: Monotonic clock (s).
        backend: The ``sounddevice`` module (injectable for tests of the rate policy).
    """

    def __init__(self, config: PlayerConfig, clock: Callable[[], float] = time.monotonic,
                 backend=None) -> None:
        self.config = config
        self._clock = clock
        self._sd = backend if backend is not None else _sounddevice()
        self._lock = threading.RLock()
        self._stream = None
        self._playout: Optional[Playout] = None
        self._stream_rate = 0
        self.device_name = ''
        self.xruns = 0
        self._base = PlayoutStats()  # counters of the streams already closed
        self._submitted = 0  # chunks submitted, ever: a pending close sees new audio
        self._closer: Optional[threading.Thread] = None
        # Start marks come before the first chunk opens a stream: kept across streams.
        self._utterances = Utterances()
        self._device = self._resolve(config.device)

    # ------------------------------------------------------------------ device choice
    def _resolve(self, device: str) -> Union[int, str, None]:
        """The PortAudio device of ``device`` (index, name or None for the default)."""
        sd = self._sd
        spec: Union[int, str, None] = None
        if device.strip():
            spec = int(device) if device.strip().isdigit() else device.strip()
        try:
            info = sd.query_devices(spec, 'output')
        except (ValueError, sd.PortAudioError) as exc:
            raise DeviceError(f"output device {device or '(default)'!r}: {exc}; "
                              'list the devices with: python3 -m sounddevice') from exc
        self.device_name = str(info['name'])
        self._default_rate = int(info['default_samplerate'])
        return spec

    def takes_rate(self, rate: int) -> bool:
        """True if the device accepts mono float32 at ``rate`` Hz."""
        try:
            self._sd.check_output_settings(device=self._device, channels=1,
                                           dtype='float32', samplerate=rate)
            return True
        except Exception:  # PortAudioError or ValueError: not supported
            return False

    def rate_for(self, rate: int) -> int:
        """Device rate to open for a stream at ``rate`` Hz (see :class:`PlayerConfig`)."""
        if self.config.device_rate:
            return int(self.config.device_rate)
        return rate if self.takes_rate(rate) else self._default_rate

    # ------------------------------------------------------------------ stream
    def _open(self, rate: int) -> None:
        self._close()
        playout = Playout(rate, self.config.volume, self.config.buffer_s,
                          self.config.max_ahead_s, self._utterances)

        def callback(outdata, frames, time_info, status):
            if status.output_underflow:
                self.xruns += 1
            playout.render(outdata, time_info.outputBufferDacTime + offset,
                           time_info.currentTime + offset)

        try:
            stream = self._sd.OutputStream(
                samplerate=rate, channels=1, dtype='float32', device=self._device,
                latency=self.config.latency_s, callback=callback)
            # Map the stream's clock to the monotonic clock (both read here, once).
            offset = self._clock() - stream.time
            stream.start()
        except Exception as exc:
            raise DeviceError(f'cannot open {self.device_name!r} at {rate} Hz: {exc}') from exc
        self._stream, self._playout, self._stream_rate = stream, playout, rate

    def _close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            try:
                stream.abort()
                stream.close()
            except Exception:  # already gone: nothing to release
                pass
        if self._playout is not None:
            self._base = _add(self._base, self._playout.stats)
            self._playout = None

    def submit(self, stamp: float, samples: np.ndarray, rate: int,
               clock_offset: float = 0.0) -> bool:
        """Queue one chunk (see :meth:`Playout.push`); opens or reopens the stream.

        Args:
            stamp: Intended playback time of its first sample (s), in the publisher's
                clock.
            samples: Mono float32 ``(frames,)``, +-1.0 full scale.
            rate: Its sample rate (Hz).
            clock_offset: This player's clock minus the publisher's (s), so that
                ``stamp + clock_offset`` is monotonic; 0 for monotonic stamps.

        Returns:
            True if the chunk was late (an underrun).

        Raises:
            DeviceError: the device cannot be opened.
        """
        with self._lock:
            self._submitted += 1
            playout = self._playout
            if playout is None or (rate != playout.device_rate
                                   and playout.silent(self._clock())
                                   and self.rate_for(rate) != playout.device_rate):
                self._open(self.rate_for(rate))  # between utterances: follow the rate
                playout = self._playout
            assert playout is not None  # _open() set it or raised
            return playout.push(stamp, samples, rate, self._clock(), self.latency_s,
                                clock_offset)

    def begin(self, stamp: float) -> None:
        """An utterance starts at ``stamp`` (its start mark; see :meth:`Playout.begin`)."""
        with self._lock:
            if self._playout is not None:
                self._playout.begin(stamp)
            else:
                self._utterances.begin(stamp)

    def cut(self, start: Optional[float], end: float, approx_start: float = 0.0) -> float:
        """Cut an utterance short (see :meth:`Playout.cut`); seconds of audio dropped."""
        with self._lock:
            if self._playout is None:
                self._utterances.cut(start, end, approx_start)
                return 0.0
            return self._playout.cut(start, end, approx_start)

    def drain(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until everything queued has been played.

        Two waits: for the device callback to render the last block (an event it sets),
        then for the time that block takes to come out of the device's buffer
        (``audible_until``, from the callback's DAC time). Returns False at the timeout.
        """
        deadline = self._clock() + timeout
        with self._lock:
            playout = self._playout
        if playout is None:
            return True
        playout.flush_tail(self._clock(), force=True)
        if not playout.wait_rendered(deadline - self._clock()):
            return False
        left = min(playout.audible_until, deadline) - self._clock()
        if left > 0:
            threading.Event().wait(left)  # a known instant: the last sample is heard
        return playout.silent(self._clock())

    def close_when_played(self, timeout: float) -> None:
        """Close the stream once what is queued has played (at most ``timeout`` s).

        Returns at once: a thread waits (:meth:`drain`) and closes, so the caller's thread
        (a node's only executor thread) goes on serving. A chunk submitted meanwhile (the
        node active again) keeps the stream open. :meth:`wait_closed` joins that thread.
        """
        with self._lock:
            mark = self._submitted

        def close_after() -> None:
            self.drain(timeout)
            with self._lock:
                if self._submitted == mark:
                    self._close()

        self._closer = threading.Thread(target=close_after, name='player-drain', daemon=True)
        self._closer.start()

    def wait_closed(self, timeout: float) -> bool:
        """Join the thread of :meth:`close_when_played` (s); False if it still runs."""
        closer = self._closer
        if closer is None:
            return True
        closer.join(max(0.0, timeout))
        return not closer.is_alive()

    def close(self, drain_timeout: float = 0.0) -> None:
        """Play what is queued (up to ``drain_timeout`` s), then close the stream."""
        if drain_timeout > 0:
            self.drain(drain_timeout)
        with self._lock:
            self._close()

    def tick(self) -> Optional[float]:
        """Upkeep: queue a resampled run's held tail once it is due (:meth:`Playout.flush_tail`).

        Returns:
            None when no tail is held, else the seconds until the next call is due.
        """
        playout = self._playout
        return None if playout is None else playout.flush_tail(self._clock())

    def set_volume(self, volume: float) -> None:
        """Change the gain at once (live)."""
        self.config = dataclasses.replace(self.config, volume=float(volume))
        playout = self._playout
        if playout is not None:
            playout.volume = float(volume)

    # ------------------------------------------------------------------ state
    @property
    def stream_rate(self) -> int:
        """Rate the device is open at (Hz), 0 when closed."""
        return self._stream_rate if self._stream is not None else 0

    @property
    def latency_s(self) -> float:
        """Output latency (s): measured by the callback, else the stream's, else asked."""
        playout, stream = self._playout, self._stream
        if playout is not None and playout.stats.output_latency_s > 0:
            return playout.stats.output_latency_s
        if stream is not None:
            return float(stream.latency)
        return self.config.latency_s

    @property
    def last_headroom_s(self) -> float:
        """Headroom of the last chunk submitted (s; see :attr:`Playout.last_headroom_s`)."""
        playout = self._playout
        return playout.last_headroom_s if playout is not None else 0.0

    @property
    def last_stamp_issue(self) -> tuple:
        """``(issue, started_idle)`` of the last chunk (see :class:`~.playout.Playout`)."""
        playout = self._playout
        return (playout.last_stamp_issue, playout.last_started_idle) if playout else ('', False)

    @property
    def queued_s(self) -> float:
        """Audio waiting to be played (s)."""
        playout = self._playout
        return playout.queued_s if playout is not None else 0.0

    def stats(self) -> PlayoutStats:
        """Counters summed over every stream this player has opened (a copy)."""
        playout = self._playout
        # A new object every time: the caller's copy, never the counters themselves.
        total = _add(self._base, playout.stats if playout is not None else PlayoutStats())
        total.output_latency_s = self.latency_s
        return total


def _add(a: PlayoutStats, b: PlayoutStats) -> PlayoutStats:
    return PlayoutStats(chunks=a.chunks + b.chunks, underruns=a.underruns + b.underruns,
                        late_s=a.late_s + b.late_s,
                        frames_played=a.frames_played + b.frames_played,
                        output_latency_s=b.output_latency_s,
                        resampled=a.resampled + b.resampled,
                        min_headroom_s=min(a.min_headroom_s, b.min_headroom_s),
                        stamps_out_of_range=a.stamps_out_of_range + b.stamps_out_of_range,
                        cuts=a.cuts + b.cuts, dropped_chunks=a.dropped_chunks + b.dropped_chunks,
                        dropped_s=a.dropped_s + b.dropped_s)
