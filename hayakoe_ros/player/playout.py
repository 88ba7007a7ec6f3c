# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Timeline of a sound device's output: stamped chunks in, rendered buffers out (no ROS).

A :class:`Playout` places each received chunk on the device's frame timeline and renders
what the device asks for, from the device's callback:

* A chunk whose stamp continues the previous chunk's (``stamp == previous stamp +
  previous frames / rate``, within :data:`CONTIGUOUS_TOL_SAMPLES`) is played right after it,
  gaplessly. If the device had already played everything before it arrived, it is
  *late*: it plays at once and counts as an underrun.
* Any other chunk (the first of an utterance, or one after a pause the publisher put in
  its stamps) starts a run when the device is idle: it plays at its stamp, or, when the
  stamp has passed, rendered the jitter buffer (``buffer_s``) after it arrived (the first
  chunk of an utterance is stamped with its publish time, so this is the usual case).
  While audio still plays, it follows the previous chunk after exactly the pause between
  their stamps. Never over audio already queued (nothing is dropped, nothing overlaps).
* A chunk at another rate than the device's is resampled (libsoxr, one stream per run of
  contiguous chunks, so there are no seams between chunks: :mod:`.run_resampler`). The
  resampler holds back a run's last ``~10 ms`` until the run is ended; it is ended just
  before the device would render past what it has (:meth:`Playout.flush_tail`), so the
  tail plays right after the run, and a chunk that comes later than that would have been
  late anyway.

The first two rules compare stamps in the publisher's own clock, never through the
device's clock: stamps are exact there (``tts_node``'s are exactly ``chunk / rate``
apart), while a stamp converted to this process's monotonic clock carries the jitter of
reading two clocks (up to 0.5 ms measured on a busy 2-core machine, against a contiguity
tolerance of 10 us at 48 kHz), and the device's reported DAC time is only an estimate
(off by the whole output latency before the first callback). Placing chunks by those
mid-utterance put gaps of a few samples to 0.1 s into the sound. Only the start of a run
on an idle device is placed through the clocks (``clock_offset``,
:meth:`Playout.frame_at`).

Times are monotonic seconds (stamps: the publisher's clock, see :meth:`Playout.push`);
device frames count from the stream's start.
"""

from __future__ import annotations

import collections
import math
import threading
from typing import Optional

import numpy as np

from .cut import Utterances, drop_cut
from .run_resampler import RESAMPLE_QUALITY, RunResampler  # noqa: F401 - found here too
from .stats import PlayoutStats

#: Two chunks whose stamps differ from exact continuation by at most this many samples
#: are contiguous (tts_node's stamps are exact to the nanosecond within an utterance; any
#: larger step is a pause the publisher put there, e.g. after its own underrun, and is
#: reproduced). Stamps of about 1.8e9 s (ROS time) as doubles are exact to 0.24 us, a
#: fraction of this tolerance up to 192 kHz.
CONTIGUOUS_TOL_SAMPLES = 0.5

#: How long before the device would render past a resampled run's end its held tail is
#: queued (s), beyond one device block: room for the late wake-up of whoever calls
#: :meth:`Playout.flush_tail` (a ROS timer on a busy 2-core machine wakes a few ms
#: late). A chunk continuing the run that arrives inside this margin starts a new
#: resampler stream (a seam, no gap) instead of an underrun.
TAIL_MARGIN_S = 0.03


class Playout:
    """Frame timeline of one open output stream (thread-safe: pushes vs. renders).

    Args:
        device_rate: The stream's sample rate (Hz).
        volume: Linear gain applied when rendering (live; output is clipped to +-1.0).
        buffer_s: Jitter buffer (s): a chunk that starts a run on an idle device is
            rendered no sooner than this after it arrives (and heard the output latency
            after that), so the chunks after it may arrive up to this much later than
            their turn without an underrun. It adds to the text-to-sound latency. It
            counts from the device's render position in time, not in frames: a stream
            that has just opened renders its whole output latency at once, which would
            otherwise swallow the buffer (seen: 18 ms left of 100).
        max_ahead_s: How far from its arrival a stamp is believed (s). A chunk that starts
            a run while the device is idle, stamped more than this after its arrival (a
            publisher's clock ahead) or before it (a zero stamp, a clock behind, a stale
            message), plays as if stamped on arrival; one that follows audio still
            playing with a stamp more than this before that audio's end, or that would put
            it more than this (plus the jitter buffer) ahead of the sound, plays right
            after that audio (as a smaller step back does: an interrupting utterance's). Each is
            counted in ``stats.stamps_out_of_range`` and named in
            :attr:`last_stamp_issue`. Pacing publishers (``tts_node``) stay well inside
            0.5 s; SSML breaks arrive as late as they are stamped.
        utterances: The utterances announced by start marks and those cut
            (:class:`~.cut.Utterances`); a new record when None.
    """

    def __init__(self, device_rate: int, volume: float = 1.0, buffer_s: float = 0.0,
                 max_ahead_s: float = 2.0, utterances: Optional[Utterances] = None) -> None:
        self.device_rate = int(device_rate)
        self.volume = float(volume)
        self.buffer_s = float(buffer_s)
        self.max_ahead_s = float(max_ahead_s)
        self.stats = PlayoutStats()
        self._lock = threading.Lock()      # the timeline: producer vs. device callback
        self._producer = threading.Lock()  # contiguity and the resampler: producers only
        # [start_frame, float32 samples, tag, stamp]: tag is the start stamp of the
        # utterance the chunk belongs to (see .cut), None when unknown; stamp the chunk's
        # (None for a resampler's tail and a fade).
        self._blocks: collections.deque = collections.deque()
        # Producers only, under _producer; a Player shares one across its streams.
        self._utterances = utterances if utterances is not None else Utterances()
        self._run_tag: Optional[float] = None  # utterance of the last chunk pushed
        self._fade_end = 0                 # end frame of the last cut's fade
        self._frame = 0                    # next frame the device will render
        self._ref: Optional[tuple] = None  # (frame, monotonic DAC time) of the last render
        self._block = 0                    # frames of the last render (the device block)
        self._end_frame = 0                # end of the last queued block
        self._prev_stamp_end: Optional[float] = None  # publisher's clock (s)
        self._run_open = False             # the next chunk may continue the previous one
        self._prev_rate = 0
        self._resampler = RunResampler(self.device_rate)
        self._last_push = 0.0
        # Set while no block is queued: what a drain waits on. Set and cleared under _lock;
        # the device callback only sets it (Event.set takes an uncontended lock briefly).
        self._empty = threading.Event()
        self._empty.set()
        #: Monotonic time (s) at which the last audio rendered so far will have been heard.
        self.audible_until = 0.0
        #: Headroom of the last chunk pushed (s): from its arrival to the device's render
        #: of its first frame, estimated in frames queued before it; negative if late.
        self.last_headroom_s = 0.0
        #: Why the last chunk's stamp was not believed ('' when it was; see max_ahead_s).
        self.last_stamp_issue = ''
        #: Whether the last chunk started a run on an idle device (an utterance's start).
        self.last_started_idle = False

    # ------------------------------------------------------------------ producer side
    def frame_at(self, t: float, now: float) -> float:
        """Device frame heard at monotonic time ``t`` (needs no lock: a snapshot).

        From the last render's DAC time; before the first render, the next frame is taken
        to be heard at ``now``: a starting stream renders its output latency ahead at once
        (PortAudio prefills its buffer), so this errs towards more headroom.
        """
        if self._ref is None:
            frame, when = self._frame, now
        else:
            frame, when = self._ref
        return frame + (t - when) * self.device_rate

    def push(self, stamp: float, samples: np.ndarray, rate: int, now: float,
             latency_s: float = 0.0, clock_offset: float = 0.0) -> bool:
        """Queue one chunk.

        Args:
            stamp: Intended playback time of its first sample (s), in the publisher's
                clock (e.g. ROS time); contiguity and pauses are judged on it alone.
            samples: Mono float32 PCM ``(frames,)``, +-1.0 full scale, at ``rate``.
            rate: Its sample rate (Hz).
            now: Current monotonic time (s).
            latency_s: Output latency (s): from rendering a frame to hearing it (the
                device's measured DAC time minus callback time, else the stream's).
            clock_offset: Monotonic minus publisher clock (s): ``stamp + clock_offset``
                is the stamp as a monotonic time. Used only to place the start of a run
                on an idle device, so its reading jitter never moves a chunk within a
                run. 0 when stamps are monotonic already.

        Returns:
            True if it was late (an underrun), else False.
        """
        samples = np.asarray(samples, dtype=np.float32)
        # The producer's own state and the resampling (DSP) under the producer's lock;
        # the lock the device callback needs is held only to place the result, so the
        # real-time callback never waits on libsoxr.
        with self._producer:
            tag = self._utterances.tag(stamp, samples.size / rate, rate)
            if self._utterances.is_cut(tag, stamp):  # arrived after its utterance's cut
                self.stats.dropped_chunks += 1
                return False
            gap_s = (stamp - self._prev_stamp_end if self._prev_stamp_end is not None
                     else 0.0)  # step from exact continuation, publisher's clock
            contiguous = (self._run_open and rate == self._prev_rate
                          and abs(gap_s) * rate <= CONTIGUOUS_TOL_SAMPLES)
            tail = None if contiguous else self._resampler.finish()
            tail_tag, self._run_tag = self._run_tag, tag
            self._prev_stamp_end = stamp + samples.size / rate
            self._run_open = True
            self._prev_rate = rate
            self._last_push = now
            resampled = rate != self.device_rate
            if resampled:
                samples = self._resampler.resample(samples, rate)
            with self._lock:
                self._append_tail(tail, tail_tag)
                return self._place(samples, tag, stamp, gap_s, contiguous, resampled,
                                   now, latency_s, clock_offset)

    def _place(self, samples: np.ndarray, tag: Optional[float], stamp: float, gap_s: float,
               contiguous: bool, resampled: bool, now: float, latency_s: float,
               clock_offset: float) -> bool:
        """Put a chunk (at the device rate) on the timeline; True if late (``_lock`` held)."""
        self.stats.chunks += 1
        self.stats.resampled += int(resampled)
        earliest = self._frame
        late = False
        issue = ''
        idle = False
        if contiguous:
            start = self._end_frame
            headroom = (start - earliest) / self.device_rate
            self.stats.min_headroom_s = min(self.stats.min_headroom_s, headroom)
            if start < earliest:
                late = True
                self.stats.underruns += 1
                self.stats.late_s += -headroom
                start = earliest
        elif self._end_frame > earliest:  # still playing: the stamped pause, exactly
            start = self._end_frame + max(0, int(round(gap_s * self.device_rate)))
            if gap_s < -self.max_ahead_s:  # a small step back: an interrupt's start
                issue = f'stamp went back {-gap_s:.3f} s within a run'
            elif (start - earliest) / self.device_rate > self.max_ahead_s + self.buffer_s:
                issue = f'stamp {gap_s:.3f} s after the end of the audio before it'
                start = self._end_frame
        else:  # idle: a new run, at its stamp or rendered after the jitter buffer
            idle = True
            target = self.frame_at(stamp + clock_offset, now)
            ready = self.frame_at(now + self.buffer_s + latency_s, now)
            skew = stamp + clock_offset - now
            if skew > self.max_ahead_s or skew < -self.max_ahead_s:
                issue = (f'stamp {abs(skew):.3f} s '
                         f"{'after' if skew > 0 else 'before'} its arrival")
                target = ready
            # Never over the fade that ended a cut utterance (at most FADE_S).
            start = max(int(round(target)), math.ceil(ready), earliest, self._fade_end)
        if issue:
            self.stats.stamps_out_of_range += 1
        self.last_stamp_issue = issue
        self.last_started_idle = idle
        if not contiguous:
            headroom = (start - earliest) / self.device_rate
        self.last_headroom_s = headroom
        self._append(start, samples, tag, stamp)
        return late

    def _append_tail(self, tail: Optional[np.ndarray], tag: Optional[float]) -> None:
        """Queue a resampled run's held-back tail right after the run (``_lock`` held)."""
        if tail is not None:
            self._append(max(self._end_frame, self._frame), tail, tag, None)

    def _append(self, start: int, samples: np.ndarray, tag: Optional[float],
                stamp: Optional[float]) -> None:
        if samples.size:
            self._blocks.append([start, samples, tag, stamp])
            self._end_frame = start + samples.size
            self._empty.clear()

    # ------------------------------------------------------------------ marks
    def begin(self, stamp: float) -> None:
        """An utterance starts: its first chunk is stamped ``stamp`` (publisher's clock, s)."""
        with self._producer:
            self._utterances.begin(stamp)

    def cut(self, start: Optional[float], end: float, approx_start: float = 0.0) -> float:
        """Cut an utterance short: drop what the device has not rendered of it.

        The first :data:`~.cut.FADE_S` of those samples are kept, faded to zero (a raised
        cosine, made here under the timeline's lock, never in the device callback), so
        the sound ends without a click where the device is; its later chunks are
        dropped; the next chunk starts a new run, at its stamp.

        Args:
            start: Its start mark's stamp (s, publisher's clock), or None without one.
            end: Its end mark's stamp (s): right after its last published sample.
            approx_start: With ``start`` None, chunks stamped from here to ``end`` are
                its own (unless a later start mark claims them).

        Returns:
            Seconds of its audio dropped (device rate), the fade excluded.
        """
        with self._producer:
            self._utterances.cut(start, end, approx_start)
            if self._utterances.is_cut(self._run_tag, self._prev_stamp_end):
                self._run_open = False  # its own later chunks are dropped, not continued
                self._resampler.drop()  # holds only its samples: never flushed
            with self._lock:
                dropped = self._drop_locked()
            self.stats.cuts += 1
            self.stats.dropped_s += dropped
            return dropped

    def _drop_locked(self) -> float:
        """Drop the cut utterances' unrendered blocks, queue the fade (both locks held)."""
        kept, fade_end, dropped = drop_cut(self._blocks, self._frame, self.device_rate,
                                           self._utterances)
        self._blocks = kept
        self._end_frame = max((b[0] + b[1].size for b in kept if b[2] is not None
                               or b[3] is not None), default=self._frame)
        self._fade_end = max(self._fade_end, fade_end)
        if kept:
            self._empty.clear()
        else:
            self._empty.set()
        return dropped / self.device_rate

    @property
    def holds_tail(self) -> bool:
        """True while a resampled run's tail is held back (:meth:`flush_tail` emits it)."""
        with self._producer:
            return self._resampler.pending

    def flush_tail(self, now: float, force: bool = False) -> Optional[float]:
        """Queue a resampled run's held-back tail once it is due.

        It is due :data:`TAIL_MARGIN_S` plus one device block before the device would
        render the run's last queued frame (from the last render's DAC time, its block
        size and the output latency; before the first render, from the last chunk's
        arrival). Until then a
        chunk continuing the run may still come and keep it seamless.

        Args:
            now: Current monotonic time (s).
            force: Queue the tail now, due or not (a drain before closing).

        Returns:
            None when no tail is held (after this call), else the seconds until it is due:
            when to call again.
        """
        with self._producer:
            if not self._resampler.pending:
                return None
            if not force:
                due_in = self._tail_due(now) - now
                if due_in > 0:
                    return due_in
            tail = self._resampler.finish()
            self._run_open = False
            with self._lock:
                self._append_tail(tail, self._run_tag)
            return None

    def _tail_due(self, now: float) -> float:
        """Monotonic time (s) by which a held tail must be queued (``_producer`` held)."""
        with self._lock:
            end, block, ref = self._end_frame, self._block, self._ref
            latency = self.stats.output_latency_s
        if ref is None:  # nothing rendered yet: the next frame renders about when the
            # last chunk came (fixed, so a device that never calls back still gets it once)
            frame, when = self._frame, self._last_push + latency
        else:
            frame, when = ref
        # The callback renders frame f about `latency` before f is heard, a block at a time.
        return when + (end - block - frame) / self.device_rate - latency - TAIL_MARGIN_S

    # ------------------------------------------------------------------ device side
    def render(self, out: np.ndarray, dac_time: float, now: float) -> None:
        """Fill ``out`` (float32 ``(frames,)`` or ``(frames, channels)``) for the device.

        Args:
            out: The device buffer; every channel gets the same (mono) signal.
            dac_time: Monotonic time (s) at which its first frame will be heard.
            now: Monotonic time of the callback (s); ``dac_time - now`` is the latency.
        """
        n = out.shape[0]
        mono = np.zeros(n, np.float32)
        with self._lock:
            frame = self._frame
            self._ref = (frame, dac_time)
            self._block = n
            self.stats.output_latency_s = max(0.0, dac_time - now)
            end = frame + n
            while self._blocks:
                start, data = self._blocks[0][:2]
                if start >= end:
                    break
                lo, hi = max(start, frame), min(start + data.size, end)
                if hi > lo:
                    mono[lo - frame:hi - frame] = data[lo - start:hi - start]
                    self.stats.frames_played += hi - lo
                    self.audible_until = dac_time + (hi - frame) / self.device_rate
                if start + data.size <= end:
                    self._blocks.popleft()
                else:
                    break
            if not self._blocks:
                self._empty.set()
            self._frame = end
            volume = self.volume
        if volume != 1.0:
            np.clip(mono * np.float32(volume), -1.0, 1.0, out=mono)
        if out.ndim == 2:
            out[:] = mono[:, None]
        else:
            out[:] = mono

    # ------------------------------------------------------------------ state
    @property
    def queued_s(self) -> float:
        """Audio queued and not yet rendered, up to the end of the last chunk (s)."""
        with self._lock:
            pending = self._resampler.pending
            return max(0.0, (self._end_frame - self._frame) / self.device_rate) + (
                0.02 if pending else 0.0)

    def wait_rendered(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until no queued block is left to render.

        Woken by the device callback as it takes the last block; call :meth:`flush_tail`
        (forced) first so the resampler's tail is queued. Returns False at the timeout.
        """
        return self._empty.wait(max(0.0, timeout))

    def silent(self, now: float) -> bool:
        """True when nothing is queued and everything rendered has been heard by ``now``."""
        return self.drained and now >= self.audible_until

    @property
    def drained(self) -> bool:
        """True when everything received has been rendered (resampler tail included)."""
        with self._lock:
            return not self._blocks and not self._resampler.pending
