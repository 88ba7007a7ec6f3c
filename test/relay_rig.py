# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The relay tests' rig: a host voice (a real scheduler on the tiny hayakoe model) and a robot.

The host's chunks and speech marks become the robot's remote events as the ROS layer
carries them (:class:`~hayakoe_ros.speech.remote.RemoteAudio`,
:class:`~hayakoe_ros.speech.remote.RemoteMark`, then the goal's end); a link cut is the
host's events no longer reaching the robot. Used by test_relay.py and
test_relay_numbers.py. No ROS.
"""

import queue
import threading
import time
from typing import Any

import numpy as np

from hayakoe_ros.engines.base import VoiceParams
from hayakoe_ros.speech import CancelReason, Outcome, SchedulerConfig, SpeechScheduler
from hayakoe_ros.speech.remote import RemoteAudio, RemoteEnd, RemoteMark, RemoteUnavailable
from hayakoe_ros.text.pipeline import prepare
from speech_fakes import REAL_TIMEOUT_S

TEXT = 'おはようございます。今日は晴れです。明日は雨が降るでしょう。'
SHORT = 'はい、わかりました。'


class HostCall:
    """One utterance on the host, as the robot sees it: a queue of events."""

    def __init__(self, host: 'Host') -> None:
        self.host = host
        self.events: queue.Queue = queue.Queue()
        self.canceled = threading.Event()
        self.chunks = 0
        self.utt: Any = None
        self.closed = False

    def get(self, timeout: float):
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        self.closed = True

    def cancel(self) -> None:
        self.canceled.set()
        if self.utt is not None:
            self.host.sched.cancel(self.utt, CancelReason.CLIENT)


class Host:
    """A host voice: a scheduler whose chunks and marks become the robot's events.

    ``cut_after``: chunks after which nothing more reaches the robot (a link cut);
    ``refuse``: why every call is refused (the action is not there); ``mute``: the goal
    is accepted and nothing ever comes back; ``lose_end``: every chunk and mark comes,
    the goal's end never does (its status lagging on a loaded host); ``end_length``: the
    end gives the audio's length in whole ms, as the host's ``end`` mark does;
    ``late_last_s``: the host's last chunk (the one padded) reaches the robot that much
    later than the others (jitter on the way).
    """

    name = '/fleet/r1/say'

    def __init__(self, engine, cut_after=None, refuse='', mute=False,
                 lose_end=False, end_length=False, late_last_s=0.0) -> None:
        self.cut_after, self.refuse, self.mute = cut_after, refuse, mute
        self.lose_end, self.end_length = lose_end, end_length
        self.late_last_s = late_last_s
        self.marks: list = []  # every mark the host published, reaching the robot or not
        self.calls: list = []
        self.rate = engine.sample_rate
        self.sched = SpeechScheduler(engine, self._chunk, SchedulerConfig(pacing=False),
                                     on_mark=self._mark)

    def _reaches(self, call: HostCall) -> bool:
        return not self.mute and (self.cut_after is None or call.chunks < self.cut_after)

    def _chunk(self, utt, chunk) -> None:
        call = self.calls[-1]
        if self.late_last_s and chunk.valid_frames < chunk.samples.size:
            time.sleep(self.late_last_s)  # the scenario, not a wait: a chunk held up
        if self._reaches(call):
            call.events.put(RemoteAudio(chunk.samples[:chunk.valid_frames] / 32768.0,
                                        chunk.sample_rate))
        call.chunks += 1

    def _mark(self, utt, mark, play_time) -> None:
        self.marks.append(mark)
        call = self.calls[-1]
        if self._reaches(call):
            call.events.put(RemoteMark(mark.kind, mark.position / self.rate,
                                       mark.duration / self.rate, mark.start, mark.end,
                                       mark.value, mark.continues))

    def _done(self, utt) -> None:
        call = self.calls[-1]
        if self._reaches(call) and not self.lose_end:
            length = round(utt.audio_s * 1000) / 1000 if self.end_length else None
            call.events.put(RemoteEnd(utt.outcome is Outcome.SUCCEEDED, utt.error, length))

    def call(self, text: str, rate: float) -> HostCall:
        if self.refuse:
            raise RemoteUnavailable(self.refuse)
        call = HostCall(self)
        self.calls.append(call)
        _, segments = prepare(text, 2000, 60)
        call.utt = self.sched.submit(segments, VoiceParams(noise=0.0, noise_w=0.0),
                                     source=text, on_done=self._done)
        return call


class Robot:
    """The robot's scheduler (Open JTalk), every chunk and mark it publishes recorded."""

    def __init__(self, engine, host, clock=time.monotonic, **config) -> None:
        self.chunks: list = []
        self.marks: list = []
        settings: dict = dict(pacing=False, offboard_timeout_s=2.0, offboard_stall_s=1.5)
        settings.update(config)
        self.sched = SpeechScheduler(engine, lambda u, c: self.chunks.append(c),
                                     SchedulerConfig(**settings), clock=clock,
                                     on_mark=lambda u, m, t: self.marks.append(m),
                                     remote=host)

    def say(self, text: str = TEXT):
        _, segments = prepare(text, 2000, 60)
        utt = self.sched.submit(segments, VoiceParams(), source=text)
        assert utt.wait(REAL_TIMEOUT_S * 3), 'the robot never finished'
        return utt

    def audio(self) -> np.ndarray:
        return np.concatenate([c.samples[:c.valid_frames] for c in self.chunks])

    def close(self) -> None:
        self.sched.shutdown()


def sentence_starts(marks) -> list:
    return [m.start for m in marks if m.kind == 'sentence']


def pairs(tiny_engine, openjtalk_engine):
    """A test's ``pair`` fixture: ``build(**host_kwargs) -> (host, robot)``, all closed after."""
    made = []

    def build(**host_kwargs):
        host = Host(tiny_engine, **host_kwargs)
        robot = Robot(openjtalk_engine, host)
        made.append((host, robot))
        return host, robot
    yield build
    for host, robot in made:
        robot.close()
        host.sched.shutdown()


def host_marks(tiny_engine, text: str = TEXT) -> list:
    """The host's marks for ``text`` spoken alone (its voice is deterministic)."""
    host = Host(tiny_engine)
    try:
        call = host.call(text, 1.0)
        assert call.utt.wait(REAL_TIMEOUT_S * 3)
    finally:
        host.sched.shutdown()
    return host.marks
