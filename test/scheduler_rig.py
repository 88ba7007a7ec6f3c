# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The scheduler tests' rig: a recording sink, bounded waits and the shared texts.

Not a test module: test_scheduler*.py import it, and the ``rig`` fixture (conftest.py)
builds each scheduler on :class:`ToneEngine` and :class:`VirtualClock` with a
:class:`Recorder` for its sink.
"""

import threading

import numpy as np

from hayakoe_ros.engines import VoiceParams
from speech_fakes import REAL_TIMEOUT_S, ToneEngine

SR = ToneEngine.RATE
VOICE = VoiceParams()
THREE = 'こんにちは。散歩に行きましょう！今日はいい天気ですね？'
T = REAL_TIMEOUT_S
FIRST_LEN = ToneEngine.samples_for('こんにちは。')


class Recorder:
    """Sink that keeps every chunk, and can fail on demand."""

    def __init__(self):
        self.items = []
        self.lock = threading.Lock()
        self.fail_with = None
        self.got = threading.Event()

    def __call__(self, utt, chunk):
        if self.fail_with is not None:
            raise self.fail_with
        with self.lock:
            self.items.append((utt.id, chunk))
        self.got.set()

    def chunks(self, utt):
        with self.lock:
            return [c for uid, c in self.items if uid == utt.id]

    def audio(self, utt):
        chunks = self.chunks(utt)
        pcm = np.concatenate([c.samples for c in chunks]) if chunks else np.zeros(0, np.int16)
        return pcm[:utt.audio_samples]


def wait_published(rec, utt, samples):
    """Block (bounded) until ``samples`` of ``utt`` have reached the sink."""
    while sum(c.valid_frames for c in rec.chunks(utt)) < samples:
        assert rec.got.wait(T)
        rec.got.clear()


def wait_for(condition, timeout=T):
    """Block (bounded) until ``condition()`` is true."""
    done = threading.Event()
    deadline = threading.Timer(timeout, done.set)
    deadline.start()
    try:
        while not condition():
            assert not done.wait(0.005), 'condition not met in time'
    finally:
        deadline.cancel()
