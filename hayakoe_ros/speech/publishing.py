# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The scheduler's publisher thread: chunks, speech marks and a cut's fade-out (no ROS).

:class:`Publishing` is the half of :class:`.scheduler.SpeechScheduler` that runs on its
publisher thread (``tts-publisher``): it takes the synthesis thread's hand-overs in order,
plays each through the attempt's :class:`.track.Track` and releases every chunk at its
playback time, the speech marks that fall in it first. What the canceling thread does
under ``_pub_lock`` to end a cut utterance's audio (:meth:`Publishing._fade_out`) is here
too. Callbacks, threads and lock order: :mod:`.scheduler`'s docstring.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from typing import Callable, Iterator, Optional

import numpy as np

from .lineup import IDLE_POLL_S, Lineup
from .marks import Mark
from .synthesis import EndOfUtterance
from .track import Track
from .utterance import AudioChunk, Outcome, SchedulerConfig, Utterance

_LOG = logging.getLogger(__name__)

#: Put on the play queue by a shutdown: the publisher thread ends.
CLOSE = object()


class Publishing:
    """The publisher thread's part of the speech scheduler (a base class of it).

    The scheduler owns every attribute named below; this class only reads and writes
    them as its docstring says.
    """

    _sink: Callable[[Utterance, AudioChunk], None]
    _on_mark: Optional[Callable[[Utterance, Mark, float], None]]
    _track: Optional[Track]
    _pub_lock: threading.RLock
    _play_q: queue.Queue
    _line: Lineup
    _clock: Callable[[], float]
    _waiter: Callable
    _quiet_at: Optional[float]
    config: SchedulerConfig

    def _finish(self, utt: Utterance, outcome: Outcome, error: str = '',
                reason=None) -> bool:
        raise NotImplementedError

    def _set_speaking(self, speaking: bool) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def publishing_held(self) -> Iterator[None]:
        """Nothing is published while the block runs (in this thread): cancels in it are one.

        The block holds the publishing lock, which the publisher thread takes for every
        chunk and mark: cancels made inside it (the same thread: the lock is reentrant)
        all take effect before the publisher goes on. One at a time, the publisher
        started each next queued utterance between two of them: a client's cancel of
        every goal (one request, handled goal by goal) published the start mark and
        64-107 ms of audio of 4-8 of 9 queued goals. Keep the block short and do not wait
        in it for the scheduler's threads.
        """
        with self._pub_lock:
            yield

    def _publish_loop(self) -> None:
        track: Optional[Track] = None
        while True:
            timeout = IDLE_POLL_S
            if self._quiet_at is not None:  # scheduler-clock seconds, waited in real time
                timeout = min(timeout, max(0.0, self._quiet_at - self._clock()))
            try:
                item = self._play_q.get(timeout=timeout)
            except queue.Empty:
                item = None
            if self._quiet_at is not None and self._clock() >= self._quiet_at:
                self._quiet_at = None  # what was released ahead has played
                self._set_speaking(False)
            if item is CLOSE or self._line.closed:
                return
            if item is None:
                continue
            utt = item.utt
            if utt.done or item.attempt is not utt.attempt:
                continue
            if track is None or track.utt is not utt or track.attempt is not item.attempt:
                track = Track(utt, item.attempt, self.config, self._clock, self._waiter)
                with self._pub_lock:
                    # After the track released from last, if it played to its end. The
                    # rest of a cut one (canceled, stopped, suspended for an urgent text)
                    # is dropped downstream: with pacing off that was seconds of audio
                    # released ahead, and the next utterance was stamped behind it.
                    before = self._track
                    if before is not None and before.attempt is before.utt.attempt \
                            and not before.attempt.token.canceled and not before.utt.halted:
                        track.pacer.not_before = before.end_play_time
            if isinstance(item, EndOfUtterance):
                with self._pub_lock:
                    if not utt.done:
                        utt.halt()
                        self._fade_out(utt)
                self._finish(utt, Outcome.ABORTED, item.error)
            elif track.play(item, self._emit):
                self._finish(utt, Outcome.SUCCEEDED)

    def _emit(self, track: Track, samples: Optional[np.ndarray], valid: int,
              after: np.ndarray, last: bool) -> bool:
        """Release one chunk at its time and hand it to the sink; False if dropped.

        Args:
            track: The attempt's track.
            samples: int16 ``(chunk_frames,)``; None: no audio, only the marks left at
                the utterance's end (``last``).
            valid: Frames of real audio in it.
            after: Up to :data:`.track.FADE_S` of the samples that follow it (a cut's
                fade-out).
            last: It is the utterance's last chunk.
        """
        utt = track.utt
        if samples is None:
            with self._pub_lock:
                if utt.halted or utt.done or track.attempt is not utt.attempt:
                    return False
                error = self._publish_marks(track, track.due_marks(track.position, True))
            return not error
        play = track.pacer.release(track.position, utt._halt)
        if play is None:
            return False
        track.attempt.underruns = track.pacer.underruns
        error = ''
        with self._pub_lock:
            # An attempt replaced meanwhile (an interrupt restarted the utterance) is not
            # played on: its chunks stop here, mid-segment.
            if utt.halted or utt.done or track.attempt is not utt.attempt:
                return False
            self._track = track
            marks = track.due_marks(track.position + (valid if last else len(samples)), last)
            if utt.first_audio_at is None:
                utt.first_audio_at = self._clock()
                self._set_speaking(True)
                marks.insert(0, Mark('start', 0, 0, 0, len(utt.source)))
            chunk = AudioChunk(samples=samples, valid_frames=valid,
                               sample_rate=utt.sample_rate, play_time=play,
                               index=track.index)
            error = self._publish_marks(track, marks) or self._deliver(utt, chunk)
            if not error:
                utt.audio_samples += valid
                track.position += valid
                track.index += 1
                track.following = np.asarray(after, np.int16)
                track.last_sample = int(samples[valid - 1]) if valid else 0
                utt.end_play_time = track.end_play_time = play + valid / utt.sample_rate
                utt.heard_end = track.heard_end(track.position, utt.heard_end)
        if error:
            self._finish(utt, Outcome.ABORTED, error)
            return False
        return True

    def _deliver(self, utt: Utterance, chunk: AudioChunk) -> str:
        """Hand ``chunk`` to the sink and ``on_chunk`` (under ``_pub_lock``); '' or the error."""
        try:
            self._sink(utt, chunk)
            if utt._on_chunk is not None:
                utt._on_chunk(utt, chunk)
        except Exception as exc:
            utt._halt.set()  # nothing more of it goes out
            error = f'audio sink failed: {type(exc).__name__}: {exc}'
            _LOG.error('utterance %d aborted: %s', utt.id, error, exc_info=True)
            return error
        return ''

    def _publish_marks(self, track: Track, marks: list) -> str:
        """Give each mark to ``on_mark`` with its play time (under ``_pub_lock``).

        Returns:
            '' or why it failed (the utterance is then halted).
        """
        if self._on_mark is None:
            return ''
        utt = track.utt
        try:
            for mark in marks:
                self._on_mark(utt, mark, track.pacer.play_time(mark.position))
        except Exception as exc:
            utt._halt.set()
            error = f'speech marks failed: {type(exc).__name__}: {exc}'
            _LOG.error('utterance %d aborted: %s', utt.id, error, exc_info=True)
            return error
        return ''

    def _fade_out(self, utt: Utterance, attempt=None) -> None:
        """End a cut utterance's published audio with a fade-out (under ``_pub_lock``).

        :meth:`.track.Track.fade_out` makes it; nothing when its audio ended silent or
        never started. ``attempt``: the attempt whose audio is cut (default: the
        utterance's current one; an urgent text's suspension passes the one it replaced).
        """
        track = self._track
        attempt = attempt or utt.attempt
        if track is None or track.utt is not utt or track.attempt is not attempt \
                or track.end_play_time is None:
            return
        for samples, valid in track.fade_out():
            chunk = AudioChunk(samples=samples, valid_frames=valid,
                               sample_rate=utt.sample_rate, play_time=track.end_play_time,
                               index=track.index)
            if self._deliver(utt, chunk):
                return
            track.index += 1
            track.position += valid
            utt.audio_samples += valid
            track.end_play_time += valid / utt.sample_rate
            utt.end_play_time = track.end_play_time
