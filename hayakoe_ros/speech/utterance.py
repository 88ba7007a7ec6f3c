# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The scheduler's vocabulary (no ROS imports).

Outcomes, cancel reasons, errors, published chunks and the :class:`Utterance` record; the
queue policies and settings are in :mod:`.config` (re-exported here).
"""

from __future__ import annotations

import dataclasses
import enum
import threading
from typing import Callable, Optional

import numpy as np

from ..engines.base import CancelToken, VoiceParams
from .config import QueuePolicy, SchedulerConfig

__all__ = ['Attempt', 'AudioChunk', 'CancelReason', 'Outcome', 'QueueFullError', 'QueuePolicy',
           'SchedulerClosedError', 'SchedulerConfig', 'SchedulerFailedError', 'Utterance',
           'resume_index']


class Outcome(str, enum.Enum):
    """How an utterance ended."""

    SUCCEEDED = 'succeeded'
    CANCELED = 'canceled'
    ABORTED = 'aborted'


class CancelReason(str, enum.Enum):
    """Why an utterance was canceled; the value is the human text (``Utterance.error``)."""

    CLIENT = 'canceled by the client'
    STOP = 'stopped: the queue was flushed by a stop request'
    INTERRUPTED = 'interrupted by a new utterance (queue_policy=interrupt)'
    REPLACED = 'replaced by a newer utterance (queue_policy=replace)'
    URGENT = 'interrupted by an urgent text (text_urgent, resume_interrupted is false)'
    DEACTIVATED = 'the node was deactivated (lifecycle transition)'
    SHUTDOWN = 'the node is shutting down'


class QueueFullError(RuntimeError):
    """The queue already holds ``max_queue`` waiting utterances; nothing was dropped."""


class SchedulerClosedError(RuntimeError):
    """The scheduler has been shut down, or has failed (the message says which)."""


class SchedulerFailedError(SchedulerClosedError):
    """An internal thread of the scheduler died; the message names the failure."""


@dataclasses.dataclass(frozen=True)
class AudioChunk:
    """One published chunk.

    Attributes:
        samples: int16 ``(frames,)`` mono PCM, always ``chunk_frames`` long.
        valid_frames: Frames of real audio; the rest is zero padding (last chunk only).
        sample_rate: Hz.
        play_time: Monotonic time (s, the scheduler's clock) at which the first sample is
            meant to play.
        index: Chunk number within the utterance, from 0.
    """

    samples: np.ndarray
    valid_frames: int
    sample_rate: int
    play_time: float
    index: int


class Attempt:
    """One try at speaking an utterance, and what that try measured.

    An utterance already synthesised ahead is tried again when an interrupting one goes
    before it: the scheduler gives it a new attempt (:meth:`Utterance.restart`) and the
    old one is halted. Each thread writes only the attempt it was handed, never "the
    utterance's current one", so a dropped attempt's late writes (a pause predicted just
    before the restart, a segment joined) cannot reach the attempt that replaced it.

    Who writes what: the synthesis thread, while it synthesises the attempt, writes
    ``segments`` (:func:`~.growth.grow_segment` joins pieces), ``pauses``,
    ``synth_seconds``, ``start_at`` and the planned ``start_delay_s``; the publisher
    thread, while it publishes the attempt, ``underruns`` and the ``start_delay_s`` that
    took effect; the scheduler creates and halts attempts. Others read them once the
    utterance is done (through its properties).

    Attributes:
        number: 0 for the first try, then 1, 2...
        token: Cancels the attempt's engine call in flight (:meth:`halt`).
        segments: The attempt's own copy of the utterance's segments.
        pauses: Pause targets (s) used at each boundary (len = segments - 1 when done).
        synth_seconds: Scheduler-clock seconds spent in the engine (synthesis, pauses).
        start_at: Scheduler-clock time before which its first chunk is not released
            (``gapless``; 0 until its first segment is ready).
        start_delay_s: The gapless start delay (s; 0 without ``gapless``).
        underruns: Times its playback ran dry before the next chunk (pacing on).
    """

    def __init__(self, number: int, segments: list) -> None:
        self.number = number
        self.token = CancelToken()
        self.segments = list(segments)
        self.pauses: list = []
        self.synth_seconds = 0.0
        self.start_at = 0.0
        self.start_delay_s = 0.0
        self.underruns = 0

    def halt(self) -> None:
        """Stop the attempt: its engine call in flight is aborted where the engine can."""
        self.token.cancel()


def resume_index(segments: list, heard_end: int) -> int:
    """The segment that starts the sentence cut when what was heard ends at ``heard_end``.

    That is the sentence holding the first word not heard (``heard_end``: an offset into
    the caller's text), so the listener hears it again from its beginning;
    ``len(segments)`` when every word was heard (a streamed reply goes on with its next
    piece, anything else just ends). Segments without words (no front-end analysis)
    resume from the start while nothing was heard.
    """
    index = next((i for i, seg in enumerate(segments)
                  if any(w.end > heard_end for w in seg.words)), None)
    if index is None:
        return 0 if not heard_end else len(segments)
    while index > 0 and segments[index].sentence is None:
        index -= 1
    return index


class Utterance:
    """One request to speak, from submission to its outcome.

    Created by :meth:`SpeechScheduler.submit`; read-only for callers. What one try at it
    measured lives in its :class:`Attempt` (:attr:`attempt`, the current one); the
    figures below are that attempt's.

    Attributes:
        id: Sequence number within the scheduler.
        text: The cleaned text (control characters removed).
        segments: The :class:`~hayakoe_ros.text.segment.Segment` list it was cut into.
        voice: Voice settings; ``volume``: per-utterance linear gain.
        outcome: :class:`Outcome` once done, else None.
        error: Human-readable reason when not SUCCEEDED ('' otherwise); for a cancel it
            is ``cancel_reason.value``.
        cancel_reason: The :class:`CancelReason` when canceled, else None.
        submitted_at / first_audio_at / finished_at: scheduler-clock seconds (or None).
        audio_samples: Samples of real audio published (padding excluded).
        sample_rate: Hz of the published audio (0 until synthesis starts).
        attempt: The current :class:`Attempt` (replaced by :meth:`restart`).
        key: The caller's name for it (a goal's UUID, a topic text's id: marks, logs).
        source: The text exactly as the caller sent it: the words' and the marks'
            character offsets refer to it.
        heard_end: Offset into ``source`` where what was heard ends: the end of the last
            word all of whose audio was published (``len(source)`` once it succeeded).
        end_play_time: Scheduler-clock time at which the sample after the last one
            published plays (its cut's fade included); None while nothing was published.
        spoken_by: Which voice spoke it and, when it switched, why ('' until decided;
            the synthesis thread writes it: :mod:`.relay`).
    """

    def __init__(self, uid: int, text: str, segments: list, voice: VoiceParams,
                 volume: float, submitted_at: float,
                 on_done: Optional[Callable[['Utterance'], None]] = None,
                 on_chunk: Optional[Callable[['Utterance', AudioChunk], None]] = None,
                 key: str = '', source: str = '') -> None:
        self.id = uid
        self.key = key or str(uid)
        self.source = source or text
        self.heard_end = 0
        self.end_play_time: Optional[float] = None
        self.spoken_by = ''
        self.text = text
        self._segments = list(segments)  # as submitted: every attempt starts from these
        self.voice = voice
        self.volume = volume
        self.outcome: Optional[Outcome] = None
        self.error = ''
        self.cancel_reason: Optional[CancelReason] = None
        self.submitted_at = submitted_at
        self.first_audio_at: Optional[float] = None
        self.finished_at: Optional[float] = None
        self.audio_samples = 0
        self.sample_rate = 0
        self._on_done = on_done
        self._on_chunk = on_chunk
        self._halt = threading.Event()  # set on cancel or abort: publish nothing more
        self._done = threading.Event()
        self._grown = threading.Condition()  # segments added to a streamed utterance
        self._streaming = False
        self.attempt = Attempt(0, self._segments)

    @property
    def streaming(self) -> bool:
        """True while more segments may still be added (:meth:`extend`)."""
        return self._streaming

    def open_stream(self) -> None:
        """Let segments be added after submission (a streamed reply).

        Until :meth:`close_stream`.
        """
        with self._grown:
            self._streaming = True

    def extend(self, segments: list, source: str) -> None:
        """Add segments at the end (a streamed reply's next piece) and its grown source text.

        Args:
            segments: The new :class:`~hayakoe_ros.text.segment.Segment` objects, their
                word offsets already into ``source``.
            source: The reply's whole text so far (what was heard is a prefix of it).

        Raises:
            RuntimeError: the stream was closed.
        """
        with self._grown:
            if not self._streaming:
                raise RuntimeError(f'utterance {self.id} takes no more segments')
            self._segments.extend(segments)
            self.attempt.segments.extend(segments)
            self.source = source
            self.text = source
            self._grown.notify_all()

    def close_stream(self) -> None:
        """No more segments: the utterance ends after those it has."""
        with self._grown:
            self._streaming = False
            self._grown.notify_all()

    def wait_segments(self, attempt: 'Attempt', count: int, timeout: float) -> bool:
        """Wait up to ``timeout`` s until ``attempt`` has more than ``count`` segments.

        Returns:
            True when it has; False when the stream is closed without them, the utterance
            was halted, or the time ran out (the caller looks again).
        """
        with self._grown:
            self._grown.wait_for(lambda: len(attempt.segments) > count
                                 or not self._streaming or self.halted, timeout)
            return len(attempt.segments) > count

    def restart(self, from_segment: int = 0) -> Attempt:
        """Drop the current attempt (halted) and begin a new one from the segments.

        The scheduler's transition for an utterance synthesised ahead that an interrupt
        puts back in line, or one an urgent text suspends (it goes on from
        ``from_segment``: :meth:`resume_point`), under the line's lock. Returns the new
        attempt.
        """
        old = self.attempt
        old.halt()
        with self._grown:  # a streamed piece added meanwhile goes to the new attempt too
            self.attempt = Attempt(old.number + 1, self._segments[from_segment:])
        return self.attempt

    def resume_point(self) -> int:
        """Where a cut utterance goes on: :func:`resume_index` at :attr:`heard_end`."""
        with self._grown:
            segments = list(self._segments)
        return resume_index(segments, self.heard_end)

    def halt(self) -> None:
        """Publish nothing more of it and abort its engine call (a cancel or an abort)."""
        self._halt.set()
        self.attempt.halt()
        with self._grown:  # a synthesis thread waiting for a streamed piece stops waiting
            self._grown.notify_all()

    # What the current attempt measured (see :class:`Attempt`).
    @property
    def segments(self) -> list:
        """The segments spoken: the current attempt's (joined pieces included)."""
        return self.attempt.segments

    @property
    def pauses(self) -> list:
        """Pause targets (s) used at each boundary (len = segments - 1 when done)."""
        return self.attempt.pauses

    @property
    def synth_seconds(self) -> float:
        """Scheduler-clock seconds spent in the engine (synthesis and pauses)."""
        return self.attempt.synth_seconds

    @property
    def start_at(self) -> float:
        """Scheduler-clock time before which its first chunk is not released (gapless)."""
        return self.attempt.start_at

    @property
    def start_delay_s(self) -> float:
        """The gapless start delay (s; 0 without ``gapless``)."""
        return self.attempt.start_delay_s

    @property
    def underruns(self) -> int:
        """Times its playback ran dry before the next chunk (pacing on)."""
        return self.attempt.underruns

    @property
    def done(self) -> bool:
        """True once the utterance has an outcome."""
        return self._done.is_set()

    @property
    def halted(self) -> bool:
        """True once it was canceled or aborted: nothing more of it is published.

        Not the outcome: an aborted utterance is halted too (see :attr:`outcome`).
        """
        return self._halt.is_set()

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds (real time) until done; False on timeout."""
        return self._done.wait(timeout)

    @property
    def heard(self) -> str:
        """What was heard: ``source`` up to :attr:`heard_end` (cut at a word end)."""
        return self.source[:self.heard_end]

    @property
    def ttfa_s(self) -> Optional[float]:
        """Time to first audio: submission to first chunk published (s)."""
        if self.first_audio_at is None:
            return None
        return self.first_audio_at - self.submitted_at

    @property
    def audio_s(self) -> float:
        """Seconds of audio published."""
        return self.audio_samples / self.sample_rate if self.sample_rate else 0.0

    @property
    def rtf(self) -> Optional[float]:
        """Real-time factor: synthesis compute seconds / audio seconds (< 1 is faster)."""
        return self.synth_seconds / self.audio_s if self.audio_s else None
