# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speech scheduling: queue, streaming synthesis, pacing, interrupt and cancel (no ROS).

Two threads per scheduler:

* the **synthesis thread** (``tts-synthesis``) takes utterances in order, synthesises them
  segment by segment (sentence, or clause of a long sentence), predicts each boundary's
  pause from the pair of adjacent segments, applies the voice's gain and limiter, and
  hands each segment's PCM on (:mod:`.synthesis`; with ``gapless`` it also plans when
  the utterance may start, :mod:`.gapless`);
* the **publisher thread** (``tts-publisher``) cuts the PCM into fixed-size chunks and
  releases them at playback rate, at most ``max_lead_s`` ahead of the playback clock
  (:class:`.track.Track`).

So segment k+1 is synthesised while segment k is being published, time to first audio is
one segment's synthesis whatever the text length, and a cancel withholds everything not
yet released. A cancel is effective when :meth:`SpeechScheduler.cancel` returns: no chunk
of that utterance is handed to the sink afterwards.

Which thread calls each callback:

* ``sink(utt, chunk)`` and ``on_chunk(utt, chunk)``: the publisher thread, in chunk order.
  An exception aborts that utterance (``audio sink failed: <Type>: <message>``, logged
  once) and the scheduler keeps serving.
* ``on_mark(utt, mark, play_time)``: the publisher thread, just before the chunk that
  holds the mark's first sample (the ``start`` mark before the first chunk), with the
  clock time at which that sample plays. An exception aborts the utterance like a sink's.
* A cut (a cancel, ``stop``, an interrupt, an abort after audio went out) publishes, in
  the canceling thread and before the cancel returns, one short fade-out
  (``track.FADE_S``) made from the samples that would have followed the last chunk
  released, so the audio downstream ends without a click.
* ``on_done(utt)``: the publisher thread (succeeded, aborted by the engine or the sink),
  the thread that called :meth:`~SpeechScheduler.cancel`/``stop``/``shutdown``/``submit``
  (canceled, interrupted), or a dying internal thread (aborted with the failure).
* ``on_speaking(bool)``: the publisher thread (True at an utterance's first chunk; False
  when its last chunk has played and nothing else waits or is in flight, also when it was
  released ahead of its playback: pacing off) or the
  canceling thread (False when the last utterance is canceled). Calls are serialised.

Callbacks must return quickly; ``on_speaking`` must not call back into the scheduler.

Lock order (a thread holding one may only take those after it):
``_pub_lock`` -> ``_finish_lock`` -> ``_speaking_lock`` -> the line's lock
(:class:`.lineup.Lineup`, which owns the waiting and in-flight utterances) and ``_state``.
``sink``, ``on_chunk`` and ``on_speaking(True)`` run under ``_pub_lock`` (so a cancel waits
for a chunk being delivered); ``on_speaking`` runs under ``_speaking_lock``; ``on_done`` runs
with no lock.

Every wait is bounded: idle threads poll their queue every :data:`IDLE_POLL_S`; pacing
waits end at a chunk's release time or at a cancel. If an internal thread dies of an
unexpected exception, every utterance held or waiting is aborted with the failure,
:attr:`SpeechScheduler.failure` names it and :meth:`~SpeechScheduler.submit` raises
:class:`SchedulerFailedError`.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import queue
import threading
import time
from typing import Callable, Optional, Sequence


from ..engines.base import Engine, VoiceParams
from .pacing import Waiter, event_wait
from .gapless import RateEstimator
from .lineup import IDLE_POLL_S, Lineup
from .relay import speak_attempt
from .remote import HostHealth, RemoteVoice
from .synthesis import Pacing
from ..text.segment import InputError, Segment
from .marks import Mark
from .guard import ThreadGuard
from .publishing import CLOSE, Publishing
from .utterance import (Attempt, AudioChunk, CancelReason, Outcome, QueueFullError, QueuePolicy,
                        SchedulerClosedError, SchedulerConfig, SchedulerFailedError,
                        Utterance)

__all__ = ['IDLE_POLL_S', 'AudioChunk', 'CancelReason', 'Outcome', 'QueueFullError',
           'QueuePolicy', 'SchedulerClosedError', 'SchedulerConfig', 'SchedulerFailedError',
           'SpeechScheduler', 'Utterance']

_LOG = logging.getLogger(__name__)

#: Poll period of a hand-over to a full playback queue (s, real time).
_PUT_POLL_S = 0.05
#: Hand-overs (segments, pauses) the synthesis thread may be ahead of the publisher: enough
#: for it to go on synthesising through a gapless start delay.
PLAY_QUEUE_ITEMS = 64




#: How far ahead of its end an utterance that succeeded may be and ``speaking`` still go
#: false at once (s): a paced one ends when its last sample plays, up to a clock's rounding.
_QUIET_SLACK_S = 0.001


class SpeechScheduler(Publishing, ThreadGuard):
    """Queue of utterances spoken one after another through ``engine`` into ``sink``.

    Args:
        engine: A loaded :class:`~hayakoe_ros.engines.base.Engine`.
        sink: ``sink(utterance, chunk)``: every chunk, in order (publisher thread). It
            must not block for long.
        config: Initial :class:`SchedulerConfig` (validated; default settings if None).
        on_speaking: ``on_speaking(bool)``; see the module docstring.
        clock: Monotonic clock (s) for pacing, stamps and timings (injectable for tests).
        waiter: Bounded event wait used for pacing (see :mod:`.pacing`; injectable).
        on_mark: ``on_mark(utt, mark, play_time)``: each speech mark (:class:`.marks.Mark`)
            with the clock time its first sample plays; see the module docstring.
        remote: A voice on another machine that speaks each whole utterance first, the
            engine taking over when it fails (:mod:`.relay`); None: the engine speaks.

    Raises:
        ValueError: invalid ``config``.
    """

    def __init__(self, engine: Engine, sink: Callable[[Utterance, AudioChunk], None],
                 config: Optional[SchedulerConfig] = None,
                 on_speaking: Optional[Callable[[bool], None]] = None,
                 clock: Callable[[], float] = time.monotonic,
                 waiter: Optional[Waiter] = None,
                 on_mark: Optional[Callable[[Utterance, Mark, float], None]] = None,
                 remote: Optional[RemoteVoice] = None) -> None:
        self._engine = engine
        self._remote = remote
        #: The remote voice's record: backoff, the last voice that spoke (:mod:`.relay`).
        self.host_health = HostHealth(clock)
        self._sink = sink
        self._on_mark = on_mark
        self._track = None  # the track released from last (under _pub_lock)
        self._on_speaking = on_speaking or (lambda speaking: None)
        self._clock = clock
        self._waiter = waiter or event_wait
        self.config = (config or SchedulerConfig()).validated()
        self._ids = itertools.count(1)
        self._line = Lineup()
        self._state = threading.Lock()  # guards _alive and _after_stop
        self._pub_lock = threading.RLock()
        self._finish_lock = threading.Lock()
        self._speaking_lock = threading.Lock()
        self._speaking = False
        # When the audio released ahead of its playback (pacing off) ends: the publisher
        # thread, the only one to set it, reports silence then (Publishing._publish_loop).
        self._quiet_at: Optional[float] = None
        self._play_q: queue.Queue = queue.Queue(maxsize=PLAY_QUEUE_ITEMS)
        #: Real-time factor estimates per engine and voice (:mod:`.gapless`).
        self.rates = RateEstimator()
        #: Why the scheduler stopped working (an internal thread died); None while healthy.
        self.failure: Optional[str] = None
        self._alive = 2  # internal threads still running
        self._after_stop: list = []  # callables run once both have ended
        self._threads = [
            threading.Thread(target=self._guarded, args=(self._synth_loop, 'synthesis'),
                             daemon=True, name='tts-synthesis'),
            threading.Thread(target=self._guarded, args=(self._publish_loop, 'publisher'),
                             daemon=True, name='tts-publisher')]
        for thread in self._threads:
            thread.start()

    # ------------------------------------------------------------------ public API
    def configure(self, **changes) -> SchedulerConfig:
        """Replace settings (validated); they apply from the next utterance or segment.

        Raises:
            ValueError: an invalid value (nothing is changed).
        """
        self.config = dataclasses.replace(self.config, **changes).validated()
        return self.config

    @property
    def queue_depth(self) -> int:
        """Utterances waiting behind the one speaking (or next to speak).

        Counts those not yet started and those already synthesised ahead but not yet
        spoken: the synthesis thread runs ahead of playback, so an utterance leaves the
        waiting line long before it is heard.
        """
        return self._line.pending()

    def submit(self, segments: Sequence[Segment], voice: VoiceParams, *, text: str = '',
               volume: float = 1.0,
               on_done: Optional[Callable[[Utterance], None]] = None,
               on_chunk: Optional[Callable[[Utterance, AudioChunk], None]] = None,
               key: str = '', source: str = '', streaming: bool = False,
               urgent: bool = False, resume: bool = True) -> Utterance:
        """Queue one utterance, already cut into segments by the text front end.

        Args:
            segments: The utterance's :class:`~hayakoe_ros.text.segment.Segment` objects,
                in order, the last with boundary ``END`` (what
                :func:`hayakoe_ros.text.pipeline.prepare` returns): scheduling sees
                segments only, never the client's text.
            voice: Voice settings; the style must exist in the engine.
            text: The cleaned text they came from (the result of a ``say`` goal; logs);
                '' = the segments' texts joined.
            volume: Per-utterance linear gain, multiplied with the configured volume.
            on_done: Called once with the utterance when it has an outcome.
            on_chunk: Called as ``on_chunk(utterance, chunk)`` after the sink, per chunk.
            key: The caller's name for the utterance (marks, logs); '' = its number.
            source: The text as the caller sent it, to which the segments' word offsets
                refer (what was heard is a prefix of it); '' = ``text``.
            streaming: More segments will come (a streamed reply: ``Utterance.extend``,
                from any thread): the utterance ends only after ``Utterance.close_stream``.
            urgent: Speak it next, ahead of the line, whatever ``queue_policy``: the one
                speaking stops within a chunk and, with ``resume``, goes on after it from
                the start of the sentence that was cut (else it is canceled,
                :attr:`CancelReason.URGENT`).
            resume: See ``urgent``.

        Returns:
            The queued :class:`Utterance`.

        Raises:
            InputError: no segment (``nothing_speakable``).
            UnknownStyleError: style or speaker id not in the voice.
            QueueFullError: ``max_queue`` utterances already wait (``urgent``: urgent
                ones; the routine line never keeps an urgent one out).
            SchedulerFailedError: an internal thread died (the message names why).
            SchedulerClosedError: after :meth:`shutdown`.
        """
        cfg = self.config
        segments = list(segments)
        cleaned = text or ''.join(s.text for s in segments)
        if not segments:
            raise InputError('nothing_speakable', f'nothing speakable in {cleaned!r}')
        self._engine.check_voice(voice)
        utt = Utterance(next(self._ids), cleaned, segments, voice, float(volume),
                        self._clock(), on_done, on_chunk, key=key, source=source)
        if streaming:
            utt.open_stream()
        if urgent:
            self._admit_urgent(utt, cfg.max_queue, resume)
            return utt
        victims = self._line.admit(utt, cfg.queue_policy, cfg.max_queue, self._refusal)
        reason = (CancelReason.REPLACED if cfg.queue_policy is QueuePolicy.REPLACE
                  else CancelReason.INTERRUPTED)
        self.cancel_all(victims, reason)
        return utt

    def _admit_urgent(self, utt: Utterance, max_queue: int, resume: bool) -> None:
        # Under the publishing lock: the one speaking publishes nothing more between its
        # suspension and its fade-out, and its heard text (the resume point) is final.
        with self._pub_lock:
            victims, suspended = self._line.admit_urgent(
                utt, max_queue, self._refusal,
                (lambda u: self._heard_now(u).resume_point()) if resume else (lambda u: None))
            if suspended is not None:
                self._fade_out(*suspended)
        self.cancel_all(victims, CancelReason.URGENT)

    def _heard_now(self, utt: Utterance) -> Utterance:
        """Count as heard only the words ``utt`` has played by now (under ``_pub_lock``).

        For an urgent text's suspension: the urgent one is stamped from its release, and
        players drop what they hold of the suspended one from there, so a word released
        but not yet played is not heard (its sentence is said again on resuming).
        """
        track = self._track
        if track is not None and track.utt is utt and track.attempt is utt.attempt:
            utt.heard_end = track.heard_by(self._clock())
        return utt

    def cancel(self, utt: Utterance, reason: CancelReason) -> bool:
        """Cancel one utterance. When this returns, none of its chunks reach the sink.

        Args:
            utt: An utterance of this scheduler.
            reason: Why; becomes ``utt.cancel_reason`` and its value ``utt.error``.

        Returns:
            False if it had already finished (its outcome is unchanged).

        Raises:
            ValueError: ``reason`` is not a :class:`CancelReason` (or one's value).
        """
        return self.cancel_all([utt], reason) == 1

    def cancel_all(self, utts: list, reason: CancelReason) -> int:
        """Cancel several utterances at once; none of their chunks reach the sink after.

        Every one is halted under the publishing lock before any is finished: one at a
        time, the publisher, free once the one speaking had ended, started the next one
        still queued (a start mark and about 0.2 s of its audio after a ``stop``).

        Returns:
            How many were canceled (those already finished keep their outcome).

        Raises:
            ValueError: ``reason`` is not a :class:`CancelReason` (or one's value).
        """
        reason = CancelReason(reason)
        if not utts:  # the publishing lock, held while a chunk goes out, is not needed
            return 0
        with self._pub_lock:
            live = [utt for utt in utts if not utt.done]
            for utt in live:
                utt.halt()  # nothing more goes out; its engine call in flight is aborted
                self._fade_out(utt)
        for utt in live:
            self._line.remove(utt)
        return sum(self._finish(utt, Outcome.CANCELED, reason.value, reason) for utt in live)

    def stop(self, reason: CancelReason = CancelReason.STOP) -> int:
        """Silence the node: cancel what is speaking and flush the whole queue.

        Args:
            reason: Given to every canceled utterance.

        Returns:
            Number of utterances canceled.
        """
        return self.cancel_all(self._line.drain(), reason)

    def shutdown(self, timeout: float = 5.0) -> bool:
        """Refuse new utterances, cancel every one, stop both threads (up to ``timeout`` s).

        Every utterance submitted before this call gets an outcome (CANCELED with
        :attr:`CancelReason.SHUTDOWN`, unless it had already finished). Idempotent.

        Returns:
            True when both threads have ended; False when one still runs at the deadline
            (an engine call that cannot be aborted: Open JTalk, a CUDA kernel, g2p). Free
            the engine through :meth:`when_stopped` then, never under that call.
        """
        # Closing first: nothing submitted from here on can be missed.
        self.cancel_all(self._line.close('shut down'), CancelReason.SHUTDOWN)
        try:
            self._play_q.put_nowait(CLOSE)
        except queue.Full:
            pass  # the publisher also sees the closed line at its next poll
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads
                       if t is not threading.current_thread())

    # ------------------------------------------------------------------ internals
    def _refusal(self) -> Optional[Exception]:
        """Why a submit is refused now (called under the line's lock), or None."""
        if self.failure is not None:
            return SchedulerFailedError(f'the speech scheduler failed: {self.failure}')
        return None

    def _finish(self, utt: Utterance, outcome: Outcome, error: str = '',
                reason: Optional[CancelReason] = None) -> bool:
        """Give ``utt`` its outcome (once); False if it already had one."""
        with self._finish_lock:
            if utt.done:
                return False
            if outcome is not Outcome.SUCCEEDED:
                utt.halt()
            else:
                utt.heard_end = len(utt.source)
            utt.outcome = outcome
            utt.error = error
            utt.cancel_reason = reason
            utt.finished_at = self._clock()
            self._line.finished(utt)
            utt._done.set()
        if outcome is Outcome.SUCCEEDED and utt.end_play_time is not None \
                and utt.end_play_time > self._clock() + _QUIET_SLACK_S:
            # Released ahead of its playback (pacing off; only the publisher thread
            # finishes an utterance that succeeded): silence is reported once it played.
            self._quiet_at = max(self._quiet_at or 0.0, utt.end_play_time)
        else:
            self._set_speaking(False)
        if utt._on_done is not None:
            try:
                utt._on_done(utt)
            except Exception:  # a caller's callback must not kill the scheduler
                _LOG.exception('on_done callback failed for utterance %d', utt.id)
        return True

    def _set_speaking(self, speaking: bool) -> None:
        """Report a change of ``speaking``; False only when nothing waits or is in flight."""
        with self._speaking_lock:
            if speaking == self._speaking:
                return
            if not speaking and self._line.busy():
                return
            self._speaking = speaking
            try:
                self._on_speaking(speaking)
            except Exception:  # e.g. the ROS context is gone: keep serving
                _LOG.exception('on_speaking callback failed')

    def _put(self, item, utt: Utterance, attempt: Attempt) -> bool:
        """Hand ``item`` to the publisher; False if the utterance was dropped meanwhile."""
        while True:
            if utt.halted or utt.attempt is not attempt or self._line.closed:
                return False
            try:
                self._play_q.put(item, timeout=_PUT_POLL_S)
                return True
            except queue.Full:
                continue

    # ------------------------------------------------------------------ synthesis thread
    def _synth_loop(self) -> None:
        while True:
            taken = self._line.take()
            if taken is None:
                return
            # The attempt is this thread's to write until it is done with it; an
            # interrupt that restarts the utterance gives the line a new one to hand out.
            utt, attempt = taken
            cfg = self.config
            speak_attempt(self._engine, self._remote, self.host_health, utt, attempt,
                          cfg.volume * utt.volume, self._put, self._clock,
                          Pacing(self.rates, cfg.gapless and cfg.pacing, cfg.pacing,
                                 cfg.max_segment_chars, cfg.chunk_frames),
                          cfg.offboard_timeout_s, cfg.offboard_stall_s)
