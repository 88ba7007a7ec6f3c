# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A voice on another machine, as the relay sees it, and when it is tried (no ROS).

The ROS layer (:mod:`hayakoe_ros.node.offboard`) implements :class:`RemoteVoice` and
:class:`RemoteCall` on a host's ``say`` action; :mod:`.relay` consumes the events
(:class:`RemoteAudio`, :class:`RemoteMark`, :class:`RemoteEnd`). :class:`HostHealth` is
the one place that decides when the host is tried again after failures.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Callable, Optional, Protocol

import numpy as np

#: After this many failures in a row the host is tried again only after a wait:
#: one failure (a lost goal, a host restarting) costs one try; the wait doubles
#: from :data:`BACKOFF_BASE_S` with each further failure, up to :data:`BACKOFF_MAX_S`,
#: so a host that is gone costs a robot one timeout per that wait, not one per utterance.
BACKOFF_AFTER = 2
#: First wait (s) once :data:`BACKOFF_AFTER` failures came in a row.
BACKOFF_BASE_S = 2.0
#: Longest wait (s) before the host is tried again: a host back from a restart is used
#: again within this.
BACKOFF_MAX_S = 16.0


class RemoteUnavailable(RuntimeError):
    """The remote voice cannot take an utterance now; the message says why."""


@dataclasses.dataclass(frozen=True)
class RemoteAudio:
    """Audio from the remote voice: ``pcm`` float32 ``(samples,)`` in [-1, 1], at Hz."""

    pcm: np.ndarray
    sample_rate: int


@dataclasses.dataclass(frozen=True)
class RemoteMark:
    """A speech mark of the remote voice, timed from its first sample.

    Attributes:
        kind: ``sentence``, ``word``, ``phoneme``, ``viseme`` or ``ssml``.
        time_s: From the remote audio's first sample to the mark's (s).
        duration_s: How long it lasts (s; 0 for the untimed kinds).
        start, end: Character offsets into the text sent (-1 where none).
        value: The word, phoneme, viseme or mark name.
        continues: A word whose reading goes on in later word marks (a long number read
            in groups): heard only with its last group.
    """

    kind: str
    time_s: float
    duration_s: float = 0.0
    start: int = -1
    end: int = -1
    value: str = ''
    continues: bool = False


@dataclasses.dataclass(frozen=True)
class RemoteEnd:
    """The remote goal ended: ``succeeded``, else ``error`` says why (rejected, aborted).

    ``audio_s``: the remote audio's whole length (s) when the end says it (a host's
    ``end`` mark: its ``time``, whole ms from the first sample to the end of the last),
    else None (the goal's status says only that it ended).
    """

    succeeded: bool
    error: str = ''
    audio_s: Optional[float] = None


class RemoteCall(Protocol):
    """One utterance sent to the remote voice (the ROS layer implements it)."""

    def get(self, timeout: float) -> Optional[object]:
        """The next event (:class:`RemoteAudio`, :class:`RemoteMark`, :class:`RemoteEnd`).

        None when none came within ``timeout`` seconds.
        """

    def cancel(self) -> None:
        """Give the call up: the remote goal is canceled; no more events are needed."""

    def close(self) -> None:
        """The relay is done with the call (after its end, or :meth:`cancel`)."""


class RemoteVoice(Protocol):
    """A voice on another machine (the ROS layer implements it).

    ``name``: what logs and diagnostics call it (the host's action name).
    ``call(text, rate)``: send ``text`` (the caller's text, as sent) to be spoken at
    ``rate`` (a speaking-rate multiplier); raises :class:`RemoteUnavailable`.
    """

    name: str

    def call(self, text: str, rate: float) -> RemoteCall:
        """Send one utterance; see the class docstring."""


class HostHealth:
    """Whether the remote voice is tried for the next utterance, and what it did last.

    Written by the scheduler's synthesis thread, read by diagnostics (under a lock).

    Args:
        clock: Monotonic seconds.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.failures = 0          # failures in a row
        self.retry_at = 0.0        # clock time before which the host is not tried
        self.last_reason = ''      # why it failed last
        self.last_voice = ''       # Utterance.spoken_by of the last utterance
        self.switches = 0          # utterances the engine finished for the host

    def due(self) -> bool:
        """True when the host may be tried now (no backoff wait running)."""
        with self._lock:
            return self._clock() >= self.retry_at

    def succeeded(self) -> None:
        """The host spoke an utterance whole: try it every time again."""
        with self._lock:
            self.failures, self.retry_at = 0, 0.0

    def failed(self, reason: str) -> float:
        """Count one failure; returns the wait (s) before the host is tried again."""
        with self._lock:
            self.failures += 1
            self.last_reason = reason
            wait = 0.0
            if self.failures >= BACKOFF_AFTER:
                wait = min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** (self.failures - BACKOFF_AFTER))
            self.retry_at = self._clock() + wait
            return wait

    def spoke(self, spoken_by: str, switched: bool) -> None:
        """Record which voice spoke the last utterance (and whether the engine took over)."""
        with self._lock:
            self.last_voice = spoken_by
            self.switches += int(switched)

    def values(self) -> dict:
        """Diagnostics key/values (strings)."""
        with self._lock:
            wait = max(0.0, self.retry_at - self._clock())
            return {'offboard_failures_in_a_row': str(self.failures),
                    'offboard_retry_in_s': f'{wait:.1f}',
                    'offboard_last_failure': self.last_reason,
                    'offboard_fallbacks': str(self.switches),
                    'last_voice': self.last_voice}
