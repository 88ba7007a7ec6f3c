# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Test doubles for the speech layer: deterministic tone engines and a virtual clock.

Not a test module: the scheduler tests import it. No ROS, no model, no wall-clock sleeps.
:class:`TimedToneEngine` also reports its phonemes' timing, as the real engines do (the
speech marks' tests).
"""

import contextlib
import threading
from typing import Optional

import numpy as np

from hayakoe_ros.engines.base import (AudioWindow, Engine, NothingToSpeakError, Phone,
                                     SynthesisCanceledError)
from hayakoe_ros.text.segment import SPEAKABLE_RE, Word

#: Longest a test double blocks for in real time before giving up (s).
REAL_TIMEOUT_S = 10.0


class VirtualClock:
    """Monotonic time that moves only when someone waits or sleeps on it.

    ``clock()`` reads it; ``wait(event, timeout)`` returns at once, after moving time
    forward by ``timeout`` unless ``event`` is already set (the scheduler's ``waiter``);
    ``sleep(dt)`` moves it forward. ``fail_once(thread_name, exc)`` makes the next read
    from that thread raise ``exc`` (fault injection into the scheduler's threads).
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._t = start
        self._lock = threading.Lock()
        self._faults: dict = {}

    def __call__(self) -> float:
        name = threading.current_thread().name
        with self._lock:
            exc = self._faults.pop(name, None)
            if exc is not None:
                raise exc
            return self._t

    def sleep(self, dt: float) -> None:
        with self._lock:
            self._t += max(0.0, dt)

    def wait(self, event: threading.Event, timeout: float) -> bool:
        if event.is_set():
            return True
        self.sleep(timeout)
        return event.is_set()

    def fail_once(self, thread_name: str, exc: BaseException) -> None:
        with self._lock:
            self._faults[thread_name] = exc


class ThreadClock:
    """Virtual time kept per thread: concurrent threads spend it side by side.

    Each thread reads, sleeps and waits on its own timeline (all start at ``start``), as
    the synthesis and publisher threads spend real time at once; the scheduler orders them
    where they meet (a hand-over's ``not_before``). ``sleep(dt)`` and ``wait(event,
    timeout)`` (the scheduler's ``waiter``) move the calling thread's time only.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._start = start
        self._t: dict = {}
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._t.get(threading.get_ident(), self._start)

    def sleep(self, dt: float) -> None:
        with self._lock:
            me = threading.get_ident()
            self._t[me] = self._t.get(me, self._start) + max(0.0, dt)

    def wait(self, event: threading.Event, timeout: float) -> bool:
        if event.is_set():
            return True
        self.sleep(timeout)
        return event.is_set()


class ToneEngine(Engine):
    """A sine tone per segment: 50 ms of a 440 Hz tone per speakable character, at 8 kHz.

    At 440 Hz a segment holds whole cycles, so segments meet without a step; another
    ``frequency`` (e.g. 465 Hz: a quarter cycle over per character) makes them meet
    wherever the tone stops, as two engine calls do.

    Pauses are predictable: ``0.1 + 0.02 * (len(left) % 5)`` s. ``hold(text)`` makes the
    synthesis of a segment containing ``text`` block until :meth:`release` (bounded);
    ``fail(text)`` makes it raise. ``synth_delay_s`` moves ``clock`` forward per call, and
    ``rtf`` by that many seconds per second of the tone made (a slow engine).
    A held call is interruptible: canceling its token (:meth:`cancellable`) ends it with
    :class:`SynthesisCanceledError`; ``aborted`` lists the texts whose call was cut short.
    """

    name = 'tone'
    RATE = 8000
    SECONDS_PER_CHAR = 0.05
    AMPLITUDE = 0.5

    def __init__(self, clock=None, synth_delay_s: float = 0.0, rtf: float = 0.0,
                 frequency: float = 440.0):
        self._clock = clock
        self.frequency = frequency
        self.synth_delay_s = synth_delay_s
        self.rtf = rtf
        self.calls: list = []
        self.pause_calls: list = []
        self._hold: Optional[str] = None
        self._fail: Optional[str] = None
        self.entered = threading.Event()
        self._gate = threading.Event()
        self._token = None
        self.aborted: list = []

    @property
    def sample_rate(self) -> int:
        return self.RATE

    @property
    def styles(self):
        return ['Neutral']

    def hold(self, text: str) -> None:
        self._hold = text
        self.entered.clear()
        self._gate.clear()

    def release(self) -> None:
        self._hold = None
        self._gate.set()

    def fail(self, text: Optional[str]) -> None:
        self._fail = text

    @classmethod
    def samples_for(cls, text: str) -> int:
        return int(round(len(SPEAKABLE_RE.findall(text)) * cls.SECONDS_PER_CHAR * cls.RATE))

    @classmethod
    def tone(cls, n: int, frequency: float = 440.0) -> np.ndarray:
        t = np.arange(n) / cls.RATE
        return (cls.AMPLITUDE * np.sin(2 * np.pi * frequency * t)).astype(np.float32)

    @contextlib.contextmanager
    def cancellable(self, token):
        token.check()
        self._token = token
        try:
            with token.hook(self._gate.set):
                yield
        finally:
            self._token = None
        token.check()

    def synthesize(self, text, voice):
        self.calls.append(text)
        if self._hold is not None and self._hold in text:
            self.entered.set()
            if not self._gate.wait(REAL_TIMEOUT_S):
                raise TimeoutError('ToneEngine.hold was never released')
            if self._token is not None and self._token.canceled:
                self.aborted.append(text)
                # A cancel frees the call it cancels, not the hold: the next call with
                # the held text waits for release() again.
                self._gate.clear()
                raise SynthesisCanceledError('tone synthesis canceled')
        if self._fail is not None and self._fail in text:
            raise RuntimeError(f'tone engine failure on {text!r}')
        n = self.samples_for(text)
        if self._clock is not None:
            self._clock.sleep(self.synth_delay_s + self.rtf * n / self.RATE)
        if n == 0:
            raise NothingToSpeakError(f'no phonemes in {text!r}')
        return self.tone(n, self.frequency)

    @staticmethod
    def pause_for(left: str) -> float:
        return 0.1 + 0.02 * (len(left) % 5)

    def predict_pause(self, left, right, voice):
        self.pause_calls.append((left, right))
        return self.pause_for(left)


ROMAJI = {'か': 'ka', 'き': 'ki', 'さ': 'sa', 'た': 'ta', 'な': 'na', 'ま': 'ma',
          'あ': 'a', 'い': 'i', 'う': 'u', 'え': 'e', 'お': 'o'}
BURST = 400      # samples of tone per kana (50 ms)
EDGE = 400       # samples of the voice's own silence at each end
PAU = 1200       # samples of silence at a clause mark


class TimedToneEngine(ToneEngine):
    """Kana -> a burst of tone timed as one phoneme; 、 -> silence timed as ``pau``."""

    def synthesize_timed(self, text, voice):
        self.calls.append(text)
        if self._hold is not None and self._hold in text:
            self.entered.set()
            assert self._gate.wait(REAL_TIMEOUT_S)
        parts, phones, at = [np.zeros(EDGE, np.float32)], [Phone('sil', 0, EDGE)], EDGE
        for ch in text:
            if ch in ROMAJI:  # a mora: its consonant (if any) and vowel share the burst
                parts.append(self.tone(BURST))
                symbols = phonemes(ch)
                cuts = [at + BURST * i // len(symbols) for i in range(len(symbols) + 1)]
                phones.extend(Phone(symbol, lo, hi)
                              for symbol, lo, hi in zip(symbols, cuts, cuts[1:]))
                at += BURST
            elif ch in '、。':
                parts.append(np.zeros(PAU, np.float32))
                phones.append(Phone('pau', at, at + PAU))
                at += PAU
        parts.append(np.zeros(EDGE, np.float32))
        phones.append(Phone('sil', at, at + EDGE))
        return AudioWindow(np.concatenate(parts), phones=tuple(phones))

    def synthesize(self, text, voice):
        return self.synthesize_timed(text, voice).audio

    #: Where the first window of a segment ends (mid-way through its second kana's
    #: burst); the second comes only once ``window_gate`` is set (a slow decoder).
    SPLIT = EDGE + BURST + BURST // 2 + 37

    def __init__(self, clock=None):
        super().__init__(clock)
        self.window_gate = threading.Event()
        self.window_gate.set()
        self.at_gate = threading.Event()

    def synthesize_windows(self, text, voice, first_audio=True):
        whole = self.synthesize_timed(text, voice)
        rest = whole.audio[self.SPLIT:]
        yield AudioWindow(whole.audio[:self.SPLIT], (rest.size / self.RATE,), whole.phones)
        self.at_gate.set()
        assert self.window_gate.wait(REAL_TIMEOUT_S)
        yield AudioWindow(rest)


def phonemes(kana):
    """The kana's phonemes: ``ka`` -> ``('k', 'a')``."""
    romaji = ROMAJI[kana]
    return (romaji[0], romaji[1]) if len(romaji) == 2 else (romaji,)


def words_of(text, base=0):
    """One word per kana, with its phonemes, offsets from ``base``."""
    return tuple(Word(base + i, base + i + 1, ch, phonemes(ch))
                 for i, ch in enumerate(text) if ch in ROMAJI)


def threaded_scheduler(engine, clock, **config):
    """A speech scheduler on ``clock`` (a :class:`ThreadClock`) that drops its chunks.

    ``config``: :class:`SchedulerConfig` fields over ``gapless=True, chunk_frames=256``.
    """
    from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler

    config = {'gapless': True, 'chunk_frames': 256, **config}
    return SpeechScheduler(engine, lambda utt, chunk: None, SchedulerConfig(**config),
                           clock=clock, waiter=clock.wait)
