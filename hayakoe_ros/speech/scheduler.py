# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speech scheduling: queue, streaming synthesis, pacing, interrupt and cancel (no ROS).

Two threads per scheduler:

* the **synthesis thread** takes utterances in order, synthesises them segment by segment
  (sentence, or clause of a long sentence), predicts each boundary's pause from the pair of
  adjacent segments, applies the voice's gain and limiter, and hands each segment's PCM on;
* the **publisher thread** cuts the PCM into fixed-size chunks and releases them at
  playback rate, at most ``max_lead_s`` ahead of the playback clock.

So segment k+1 is synthesised while segment k is being published, time to first audio is
one segment's synthesis whatever the text length, and a cancel withholds everything not
yet released. A cancel is effective when :meth:`SpeechScheduler.cancel` returns: no chunk
of that utterance is handed to the sink afterwards; the engine is freed at the next
segment boundary.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import itertools
import logging
import queue
import threading
import time
from typing import Callable, Optional

import numpy as np

from ..engines.base import Engine, NothingToSpeakError, VoiceParams
from .audio import (Chunker, apply_gain_and_limit, to_int16, trailing_silence_s,
                    trim_for_break)
from .pacing import Pacer
from .pipeline import prepare
from .text import Boundary, InputError, Segment

_LOG = logging.getLogger(__name__)

#: Shortest pause at a sentence boundary (s): hayakoe's ``_MIN_PAUSE_SEC``.
SENTENCE_PAUSE_FLOOR_S = 0.08


class QueuePolicy(str, enum.Enum):
    """What a new utterance does when another is speaking."""

    ENQUEUE = 'enqueue'
    INTERRUPT = 'interrupt'


class CancelReason(str, enum.Enum):
    """Why an utterance was canceled (the value is the human text)."""

    CLIENT = 'canceled by the client'
    STOP = 'stopped: the queue was flushed by a stop request'
    INTERRUPTED = 'interrupted by a new utterance (queue_policy=interrupt)'
    DEACTIVATED = 'the node was deactivated (lifecycle transition)'
    SHUTDOWN = 'the node is shutting down'


QUEUE_POLICIES = tuple(p.value for p in QueuePolicy)


class QueueFullError(RuntimeError):
    """The queue already holds ``max_queue`` waiting utterances; nothing was dropped."""


class SchedulerClosedError(RuntimeError):
    """The scheduler has been shut down."""


class Outcome(str, enum.Enum):
    """How an utterance ended."""

    SUCCEEDED = 'succeeded'
    CANCELED = 'canceled'
    ABORTED = 'aborted'


@dataclasses.dataclass(frozen=True)
class SchedulerConfig:
    """Live-tunable settings; replaced atomically by :meth:`SpeechScheduler.configure`.

    Attributes:
        chunk_frames: Frames (samples, mono) per published chunk.
        max_lead_s: How far ahead of playback a chunk may be published (s).
        pacing: False publishes as fast as synthesis allows (benchmarks).
        max_queue: Waiting utterances (not counting the one speaking) before rejecting.
        queue_policy: ``enqueue`` (FIFO) or ``interrupt`` (a new utterance cancels the one
            speaking and is spoken next; waiting ones stay queued).
        max_segment_chars: Longest synthesis segment in characters.
        max_chars: Longest accepted utterance in characters.
        volume: Linear gain of the voice (1.0 = the model's own level).
    """

    chunk_frames: int = 2048
    max_lead_s: float = 0.3
    pacing: bool = True
    max_queue: int = 16
    queue_policy: str = 'enqueue'
    max_segment_chars: int = 60
    max_chars: int = 2000
    volume: float = 1.0


@dataclasses.dataclass(frozen=True)
class AudioChunk:
    """One published chunk.

    Attributes:
        samples: int16 ``(frames,)`` mono PCM, always ``chunk_frames`` long.
        valid_frames: Frames of real audio; the rest is zero padding (last chunk only).
        sample_rate: Hz.
        play_time: Monotonic time (s) at which the first sample is meant to play.
        index: Chunk number within the utterance, from 0.
        first_sample: Index of the chunk's first sample within the utterance.
    """

    samples: np.ndarray
    valid_frames: int
    sample_rate: int
    play_time: float
    index: int
    first_sample: int = 0


class Utterance:
    """One request to speak, from submission to its outcome.

    Attributes:
        id: Sequence number within the scheduler.
        text: The cleaned text (control characters removed).
        segments: The :class:`Segment` list it was cut into.
        voice: Voice settings; ``volume``: per-utterance gain.
        outcome: :class:`Outcome` once done, else None; ``error``: reason text.
        pauses: Pause targets (s) used at each boundary (len = segments - 1 when done).
        submitted_at / first_audio_at / finished_at: monotonic seconds (or None).
        audio_samples: Samples of real audio published (padding excluded).
        synth_seconds: Compute time spent on synthesis and pause prediction.
    """

    def __init__(self, uid: int, text: str, segments: list, voice: VoiceParams,
                 volume: float, on_done: Optional[Callable]) -> None:
        self.id = uid
        self.text = text
        self.segments = segments
        self.voice = voice
        self.volume = volume
        self.cancel_reason: Optional[CancelReason] = None
        self.outcome: Optional[Outcome] = None
        self.error = ''
        self.pauses: list = []
        self.submitted_at = time.monotonic()
        self.first_audio_at: Optional[float] = None
        self.finished_at: Optional[float] = None
        self.audio_samples = 0
        self.sample_rate = 0
        self.synth_seconds = 0.0
        self._on_done = on_done
        self._on_chunk: Optional[Callable] = None
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._attempt = 0

    @property
    def done(self) -> bool:
        """True once the utterance has an outcome."""
        return self._done.is_set()

    @property
    def canceled(self) -> bool:
        """True once a cancel was requested."""
        return self._cancel.is_set()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until done; return False on timeout."""
        return self._done.wait(timeout)

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


@dataclasses.dataclass
class _SegmentPCM:
    utt: Utterance
    attempt: int
    pcm: np.ndarray
    last: bool


@dataclasses.dataclass
class _End:
    utt: Utterance
    attempt: int
    error: str = ''


_CLOSE = object()


class SpeechScheduler:
    """Queue of utterances spoken one after another through ``engine`` into ``sink``.

    Args:
        engine: A loaded :class:`~hayakoe_ros.engines.base.Engine`.
        sink: ``sink(utterance, chunk)``, called from the publisher thread for every
            chunk, in order. It must not block for long.
        config: Initial :class:`SchedulerConfig`.
        on_speaking: ``on_speaking(bool)``: True when an utterance's first chunk is
            published, False when its last chunk has played (or it was canceled).
        clock: Monotonic clock (s), injectable for tests.
    """

    def __init__(self, engine: Engine, sink: Callable[[Utterance, AudioChunk], None],
                 config: SchedulerConfig = SchedulerConfig(),
                 on_speaking: Optional[Callable[[bool], None]] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._engine = engine
        self._sink = sink
        self._on_speaking = on_speaking or (lambda speaking: None)
        self._clock = clock
        self.config = self._validated(config)
        self._ids = itertools.count(1)
        self._cv = threading.Condition()
        self._waiting: collections.deque = collections.deque()
        self._in_flight: list = []  # synthesised or synthesising, not yet finished
        self._pub_lock = threading.RLock()
        self._finish_lock = threading.Lock()
        self._play_q: queue.Queue = queue.Queue(maxsize=3)
        self._closing = False
        self.spoken = 0
        self.failed = 0
        self.last: Optional[Utterance] = None
        self.failure: Optional[str] = None
        self._synth_thread = threading.Thread(target=self._synth_loop, daemon=True,
                                              name='tts-synthesis')
        self._pub_thread = threading.Thread(target=self._publish_loop, daemon=True,
                                            name='tts-publisher')
        self._synth_thread.start()
        self._pub_thread.start()

    # ------------------------------------------------------------------ public API
    @staticmethod
    def _validated(config: SchedulerConfig) -> SchedulerConfig:
        if config.queue_policy not in QUEUE_POLICIES:
            raise ValueError(f"queue_policy must be one of {QUEUE_POLICIES}, "
                             f"got '{config.queue_policy}'")
        if config.chunk_frames < 1 or config.max_segment_chars < 1 or config.max_chars < 1:
            raise ValueError('chunk_frames, max_segment_chars and max_chars must be >= 1')
        if config.max_queue < 0 or config.max_lead_s < 0 or config.volume < 0:
            raise ValueError('max_queue, max_lead_s and volume must be >= 0')
        return config

    def configure(self, **changes) -> SchedulerConfig:
        """Replace settings (validated); they apply from the next utterance or segment."""
        self.config = self._validated(dataclasses.replace(self.config, **changes))
        return self.config

    @property
    def engine(self) -> Engine:
        """The engine in use."""
        return self._engine

    @property
    def queue_depth(self) -> int:
        """Utterances waiting, not counting the one being synthesised or spoken."""
        with self._cv:
            return len(self._waiting)

    @property
    def busy(self) -> bool:
        """True while anything is waiting, being synthesised or being spoken."""
        with self._cv:
            return bool(self._waiting or self._in_flight)

    def submit(self, text: str, voice: VoiceParams, *, volume: float = 1.0,
               on_done: Optional[Callable[[Utterance], None]] = None,
               on_chunk: Optional[Callable] = None) -> Utterance:
        """Check and queue one utterance.

        Args:
            text: Raw text (control characters are stripped).
            voice: Voice settings; the style must exist in the engine.
            volume: Per-utterance linear gain, multiplied with the configured volume.
            tag: Opaque caller data, kept on the utterance.
            on_done: Called once with the utterance when it has an outcome.
            on_chunk: Called as ``on_chunk(utterance, chunk)`` after the sink, per chunk.

        Returns:
            The queued :class:`Utterance`.

        Raises:
            InputError: empty, too long, or nothing speakable.
            UnknownStyleError: style or speaker id not in the voice.
            QueueFullError: ``max_queue`` utterances already wait.
            SchedulerClosedError: after :meth:`shutdown`.
        """
        cfg = self.config
        # Front end (SSML, numbers, URLs, user dictionary...) then segmenting: pipeline.py.
        cleaned, segments = prepare(text, cfg.max_chars, cfg.max_segment_chars)
        if not segments:
            raise InputError('nothing_speakable', f'nothing speakable in {cleaned!r}')
        self._engine.check_voice(voice)
        utt = Utterance(next(self._ids), cleaned, segments, voice, float(volume), on_done)
        utt._on_chunk = on_chunk
        utt.submitted_at = self._clock()
        victim = None
        with self._cv:
            if self._closing:
                raise SchedulerClosedError('the speech scheduler is shut down')
            busy = bool(self._waiting) or any(not u.done for u in self._in_flight)
            if cfg.queue_policy == 'interrupt':
                # The new utterance takes the place of the one it cancels.
                full = len(self._waiting) > cfg.max_queue
            else:
                full = busy and len(self._waiting) >= cfg.max_queue
            if full:
                raise QueueFullError(
                    f'queue full: {len(self._waiting)} utterances waiting '
                    f'(max_queue={cfg.max_queue}); nothing was dropped, try again later')
            if cfg.queue_policy == 'interrupt':
                victim = self._interrupt_locked()
                self._waiting.appendleft(utt)
            else:
                self._waiting.append(utt)
            self._cv.notify_all()
        if victim is not None:
            self.cancel(victim, CancelReason.INTERRUPTED)
        return utt

    def cancel(self, utt: Utterance, reason: CancelReason = CancelReason.CLIENT) -> bool:
        """Cancel one utterance. When this returns, none of its chunks reach the sink.

        Returns:
            False if it had already finished.
        """
        with self._pub_lock:
            if utt.done:
                return False
            utt.cancel_reason = reason
            utt._cancel.set()
        with self._cv:
            if utt in self._waiting:
                self._waiting.remove(utt)
        self._finish(utt, Outcome.CANCELED, reason.value)
        return True

    def stop(self, reason: CancelReason = CancelReason.STOP) -> int:
        """Silence the node: cancel what is speaking and flush the whole queue.

        Args:
            reason: Error text given to every canceled utterance.

        Returns:
            Number of utterances canceled.
        """
        with self._cv:
            victims = list(self._waiting) + list(self._in_flight)
            self._waiting.clear()
        count = 0
        for utt in victims:
            count += self.cancel(utt, reason)
        return count

    def shutdown(self, timeout: float = 5.0) -> None:
        """Cancel everything, stop both threads and wait for them (up to ``timeout`` s)."""
        with self._cv:
            if self._closing:
                return
        self.stop(CancelReason.SHUTDOWN)
        with self._cv:
            self._closing = True
            self._cv.notify_all()
        try:
            self._play_q.put(_CLOSE, timeout=timeout)
        except queue.Full:
            pass
        self._synth_thread.join(timeout)
        self._pub_thread.join(timeout)

    # ------------------------------------------------------------------ internals
    def _interrupt_locked(self) -> Optional[Utterance]:
        """Pick the current utterance to cancel; put later in-flight ones back in line.

        Utterances synthesised ahead but not yet spoken lose that work and wait behind the
        new one. Returns the utterance to cancel (outside the lock), or None.
        """
        active = [u for u in self._in_flight if not u.done]
        if not active:
            return None
        current, later = active[0], active[1:]
        current._cancel.set()  # the synthesis thread drops it at the next boundary
        for utt in reversed(later):
            utt._attempt += 1  # drop what was synthesised for it; synthesise it again
            utt.pauses = []
            utt.synth_seconds = 0.0
            self._in_flight.remove(utt)
            self._waiting.appendleft(utt)
        return current

    def _finish(self, utt: Utterance, outcome: Outcome, error: str = '') -> None:
        with self._finish_lock:
            if utt.done:
                return
            utt.outcome = outcome
            utt.error = error
            utt.finished_at = self._clock()
            with self._cv:
                if utt in self._in_flight:
                    self._in_flight.remove(utt)
            if outcome is Outcome.SUCCEEDED:
                self.spoken += 1
            elif outcome is Outcome.ABORTED:
                self.failed += 1
            self.last = utt
            utt._done.set()
        if utt.first_audio_at is not None:
            try:
                self._on_speaking(False)
            except Exception:  # e.g. the ROS context is gone: still finish the utterance
                _LOG.exception('on_speaking callback failed')
        if utt._on_done is not None:
            try:
                utt._on_done(utt)
            except Exception:  # a caller's callback must not kill the scheduler
                _LOG.exception('on_done callback failed')

    def _put(self, item, utt: Utterance, attempt: int) -> bool:
        while True:
            if utt.canceled or utt._attempt != attempt or self._closing:
                return False
            try:
                self._play_q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue

    def _synth_loop(self) -> None:
        while True:
            with self._cv:
                while not self._waiting and not self._closing:
                    self._cv.wait()
                if self._closing:
                    return
                utt = self._waiting.popleft()
                attempt = utt._attempt
                self._in_flight.append(utt)
            try:
                self._synthesize(utt, attempt)
            except Exception as exc:  # engine failure: abort this utterance, keep serving
                _LOG.exception('synthesis failed')
                self._put(_End(utt, attempt, f'synthesis failed: {type(exc).__name__}: '
                                             f'{exc}'), utt, attempt)

    def _synthesize(self, utt: Utterance, attempt: int) -> None:
        engine = self._engine
        sr = engine.sample_rate
        utt.sample_rate = sr
        segments: list = utt.segments
        gain = self.config.volume * utt.volume  # one gain for the whole utterance
        produced = 0
        for k, seg in enumerate(segments):
            if utt.canceled or utt._attempt != attempt:
                return
            last = k + 1 == len(segments)
            t0 = time.perf_counter()
            # SSML <prosody rate>: the segment's rate divides the voice's length_scale.
            voice = utt.voice if seg.rate == 1.0 else dataclasses.replace(
                utt.voice, length_scale=utt.voice.length_scale / seg.rate)
            try:
                audio = engine.synthesize(seg.text, voice)
            except NothingToSpeakError as exc:
                _LOG.warning('skipping segment %r: %s', seg.text, exc)
                audio = np.zeros(0, dtype=np.float32)
            if audio.size:  # SSML <break>: the silence at the break is exactly pause_s
                audio = trim_for_break(audio, sr, k > 0 and segments[k - 1].pause_s is not None,
                                       None if last else seg.pause_s)
            pcm = to_int16(apply_gain_and_limit(audio, gain, sr))
            utt.synth_seconds += time.perf_counter() - t0
            if audio.size:
                produced += 1
            if last and not produced:
                self._put(_End(utt, attempt, 'nothing_speakable: no segment of the text '
                                             'produced any phoneme'), utt, attempt)
                return
            # Hand the segment over first: it plays while the pause is being predicted.
            if not self._put(_SegmentPCM(utt, attempt, pcm, last), utt, attempt):
                return
            if not last and audio.size:
                t1 = time.perf_counter()
                target = self._pause_target(seg, segments[k + 1], voice)
                utt.pauses.append(target)
                gap = max(0.0, target - trailing_silence_s(audio, sr))
                silence = np.zeros(int(round(gap * sr)), np.int16)
                utt.synth_seconds += time.perf_counter() - t1
                if not self._put(_SegmentPCM(utt, attempt, silence, False), utt, attempt):
                    return

    def _pause_target(self, seg: Segment, following: Segment, voice: VoiceParams) -> float:
        if seg.pause_s is not None:  # SSML <break>: exactly this long, nothing predicted
            return seg.pause_s
        pause = self._engine.predict_pause(seg.text, following.text, voice)
        if seg.boundary == Boundary.SENTENCE:
            pause = max(pause, SENTENCE_PAUSE_FLOOR_S)
        return pause

    def _publish_loop(self) -> None:
        current = None
        chunker = pacer = None
        position = index = 0
        while True:
            item = self._play_q.get()
            if item is _CLOSE:
                return
            utt = item.utt
            if utt.done or item.attempt != utt._attempt:
                continue
            if (utt, item.attempt) != current:
                current = (utt, item.attempt)
                cfg = self.config
                chunker = Chunker(cfg.chunk_frames)
                pacer = Pacer(utt.sample_rate, cfg.max_lead_s, cfg.pacing, self._clock)
                position = index = 0
            if isinstance(item, _End):
                self._finish(utt, Outcome.ABORTED, item.error)
                continue
            ok = True
            for samples in chunker.add(item.pcm):
                ok = self._emit(utt, pacer, samples, len(samples), position, index)
                if not ok:
                    break
                position += len(samples)
                index += 1
            if ok and item.last:
                tail = chunker.flush()
                if tail is not None:
                    ok = self._emit(utt, pacer, tail[0], tail[1], position, index)
                    position += tail[1]
                if ok and pacer.wait_until(position, utt._cancel):
                    self._finish(utt, Outcome.SUCCEEDED)

    def _emit(self, utt: Utterance, pacer: Pacer, samples: np.ndarray, valid: int,
              position: int, index: int) -> bool:
        play = pacer.release(position, utt._cancel)
        if play is None:
            return False
        with self._pub_lock:
            if utt.canceled or utt.done:
                return False
            first = utt.first_audio_at is None
            if first:
                utt.first_audio_at = self._clock()
            chunk = AudioChunk(samples=samples, valid_frames=valid,
                               sample_rate=utt.sample_rate, play_time=play, index=index,
                               first_sample=position)
            utt.audio_samples += valid
            try:
                if first:
                    self._on_speaking(True)
                self._sink(utt, chunk)
                if utt._on_chunk is not None:
                    utt._on_chunk(utt, chunk)
            except Exception:
                _LOG.exception('audio sink failed')
        return True
