# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The speech-marks tests' rig: a scheduler on the timed tone engine and a virtual clock.

Used by test_speech_marks.py and test_speech_marks_cuts.py; :data:`TEXT` and
:data:`SEGMENTS` are their two-sentence reply.
"""

import threading

import numpy as np

from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler
from hayakoe_ros.text.segment import Boundary, Segment, SsmlMark
from speech_fakes import REAL_TIMEOUT_S, TimedToneEngine, ToneEngine, VirtualClock, words_of

SR = ToneEngine.RATE


class Rig:
    """A scheduler on the timed engine and a virtual clock, recording chunks and marks."""

    def __init__(self, **config):
        self.clock = VirtualClock()
        self.engine = TimedToneEngine(self.clock)
        self.events = []  # ('chunk', chunk) and ('mark', mark, play_time), in order
        self.threads = []  # the thread that delivered each chunk
        self.lock = threading.Lock()
        self.got = threading.Event()
        self.sched = SpeechScheduler(self.engine, self._chunk,
                                     SchedulerConfig(**{'chunk_frames': 256, **config}),
                                     clock=self.clock, waiter=self.clock.wait,
                                     on_mark=self._mark)

    def _chunk(self, utt, chunk):
        with self.lock:
            self.events.append(('chunk', chunk, utt.id))
            self.threads.append(threading.current_thread().name)
        self.got.set()

    def _mark(self, utt, mark, play_time):
        with self.lock:
            self.events.append(('mark', mark, play_time))

    def chunks(self):
        with self.lock:
            return [e[1] for e in self.events if e[0] == 'chunk']

    def marks(self, kind=None):
        with self.lock:
            return [e[1] for e in self.events if e[0] == 'mark'
                    and (kind is None or e[1].kind == kind)]

    def pcm(self, utt):
        pcm = np.concatenate([c.samples[:c.valid_frames] for c in self.chunks()])
        assert pcm.size == utt.audio_samples
        return pcm

    def wait_published(self, samples):
        while sum(c.valid_frames for c in self.chunks()) < samples:
            assert self.got.wait(REAL_TIMEOUT_S)
            self.got.clear()


def rigs():
    """A ``rig`` fixture's body: yields ``make(**config) -> Rig``; shuts each down after."""
    made = []

    def make(**config):
        made.append(Rig(**config))
        return made[-1]
    yield make
    for r in made:
        r.engine.release()
        r.sched.shutdown()


TEXT = 'かきさ、たなま。あい、うえお。'


SEGMENTS = [Segment('かきさ、たなま。', Boundary.SENTENCE, words=words_of('かきさ、たなま。'),
                    sentence=(0, 8), marks=(SsmlMark('m1', 0, 0, 3),)),
            Segment('あい、うえお。', Boundary.END, words=words_of('あい、うえお。', 8),
                    sentence=(8, 15))]
