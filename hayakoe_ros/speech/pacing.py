# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Real-time pacing of published audio (no ROS imports).

Chunks are released at playback rate, at most ``max_lead_s`` ahead of the playback clock.
What has not been released can still be withheld, which is what makes an interrupt
audible at once: after a cancel, at most ``max_lead_s`` of audio is already downstream.

The lead is also bounded to :data:`MAX_LEAD_CHUNKS` chunks. A subscriber that takes one
chunk at a time at playback rate (a blocking audio write per message, as mgonzs13's
``audio_player_node`` does) holds the lead in its queue; with SensorDataQoS (best effort,
keep-last 5), a lead of 0.3 s (7 chunks of 2048 frames at 44.1 kHz) overflowed it and
lost chunks 1 and 2 of every utterance. Three chunks ahead plus the one being written
leaves a margin of one message in a depth-5 queue.

Time comes from two injectable functions so that tests run on a virtual clock:

* ``clock() -> float``: monotonic seconds;
* ``waiter(event, timeout) -> bool``: wait up to ``timeout`` seconds (always finite) for
  ``event``; True if it is set. The default is :func:`event_wait` (``event.wait``).
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

#: Most chunks released ahead of the one playing (see the module docstring).
MAX_LEAD_CHUNKS = 3

#: ``waiter(event, timeout_s) -> bool``: a bounded wait for an event (True if it is set).
Waiter = Callable[[threading.Event, float], bool]


def event_wait(event: threading.Event, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds (>= 0) for ``event`` in real time; True if set."""
    return event.wait(max(0.0, timeout))


class Pacer:
    """Playback clock of one utterance.

    Sample ``n`` of the utterance plays at ``t0 + n / sample_rate`` (monotonic seconds),
    where ``t0`` is the time the first chunk was released, or :attr:`not_before` (the end
    of the audio released before it) if that is later. When synthesis falls behind
    (an underrun), the clock is moved forward so that the late chunk plays when released,
    and the stamps stay truthful.

    The lead is ``min(max_lead_s, MAX_LEAD_CHUNKS * chunk / sample_rate)``, where the chunk
    size (frames) is the stride between the first two :meth:`release` calls (the
    scheduler releases fixed-size chunks); the first chunk is released at once anyway.

    Args:
        sample_rate: Hz.
        max_lead_s: How far ahead of its playback time a chunk may be released (s).
        enabled: False releases every chunk at once (benchmarks, offline rendering);
            stamps then assume gapless playback from the first release.
        clock: Monotonic clock in seconds (injectable for tests).
        waiter: Bounded event wait (injectable for tests); see the module docstring.
    """

    def __init__(self, sample_rate: int, max_lead_s: float, enabled: bool = True,
                 clock: Callable[[], float] = time.monotonic,
                 waiter: Optional[Waiter] = None) -> None:
        self.sample_rate = int(sample_rate)
        self.max_lead_s = float(max_lead_s)
        self.enabled = bool(enabled)
        self._clock = clock
        self._wait = waiter or event_wait
        self._t0: Optional[float] = None
        #: Clock time before which the first sample may not play: where the audio
        #: released before this utterance ends (set by the scheduler; None: no bound).
        self.not_before: Optional[float] = None
        self._first_index = 0
        self._chunk_frames = 0
        self.underruns = 0

    @property
    def lead_s(self) -> float:
        """Effective lead (s): ``max_lead_s``, capped at :data:`MAX_LEAD_CHUNKS` chunks."""
        if not self._chunk_frames:
            return self.max_lead_s
        return min(self.max_lead_s, MAX_LEAD_CHUNKS * self._chunk_frames / self.sample_rate)

    def play_time(self, sample_index: int) -> float:
        """Monotonic playback time (s) of ``sample_index``; the clock must have started."""
        assert self._t0 is not None
        return self._t0 + sample_index / self.sample_rate

    def release(self, sample_index: int, stop: threading.Event) -> Optional[float]:
        """Block until the chunk starting at ``sample_index`` may be released.

        The wait is bounded by the chunk's own playback time minus ``max_lead_s``.

        Returns:
            Its playback time (monotonic s), or None if ``stop`` was set while waiting.
        """
        now = self._clock()
        if self._t0 is None:
            # Released at once, but it plays after what was released before it: with
            # pacing off, the utterances before are released ahead of their playback,
            # and their stamps and this one's overlapped (seconds apart in a queue).
            start = now if self.not_before is None else max(now, self.not_before)
            self._t0 = start - sample_index / self.sample_rate
            self._first_index = sample_index
            return self.play_time(sample_index)
        if not self._chunk_frames and sample_index > self._first_index:
            self._chunk_frames = sample_index - self._first_index
        if not self.enabled:
            return self.play_time(sample_index)
        play = self.play_time(sample_index)
        if play < now:  # underrun: the listener has run dry; resume at release time
            self._t0 += now - play
            self.underruns += 1
            return self.play_time(sample_index)
        wait = play - self.lead_s - now
        if wait > 0 and self._wait(stop, wait):
            return None
        return play

    def wait_until(self, sample_index: int, stop: threading.Event) -> bool:
        """Block until ``sample_index`` has played (e.g. the end of the utterance).

        Returns False if ``stop`` was set first; True at once when pacing is disabled.
        """
        if not self.enabled or self._t0 is None:
            return True
        wait = self.play_time(sample_index) - self._clock()
        return not (wait > 0 and self._wait(stop, wait))
