# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A robot's scheduler speaking through a host's voice, and taking over when the host fails.

The host here is a real speech scheduler with its own engine (the tiny hayakoe model at
44.1 kHz); the robot's is Open JTalk at 48 kHz (relay_rig.py). What crosses between them
is what the ROS layer carries: the host's chunks and speech marks, then the goal's end. A
link cut is the host's events no longer reaching the robot. No ROS.
"""

import time

import numpy as np
import pytest

from hayakoe_ros.engines.base import VoiceParams
from hayakoe_ros.speech import CancelReason, Outcome
from hayakoe_ros.speech.remote import (BACKOFF_BASE_S, BACKOFF_MAX_S, HostHealth)
from hayakoe_ros.text.pipeline import prepare
from relay_rig import SHORT, TEXT, Host, Robot, host_marks, pairs, sentence_starts
from speech_fakes import REAL_TIMEOUT_S, VirtualClock

pytestmark = pytest.mark.unit


@pytest.fixture
def pair(tiny_engine, openjtalk_engine):
    yield from pairs(tiny_engine, openjtalk_engine)


def test_the_host_speaks_and_the_robot_relays_its_audio_and_marks_at_its_own_rate(pair):
    host, robot = pair()
    utt = robot.say()
    assert utt.outcome is Outcome.SUCCEEDED, utt.error
    assert utt.spoken_by == f'host {Host.name}'
    hosted = host.calls[0].utt
    assert hosted.outcome is Outcome.SUCCEEDED
    # The host's first piece (one 44.1 kHz chunk, less the held tail and the resampler's
    # delay) is shorter than one robot chunk: it goes out at once as a whole chunk,
    # padded in front with silence, rather than waiting for the host's next piece.
    first = robot.chunks[0]
    assert first.valid_frames == first.samples.size == 2048
    lead = int(np.argmax(first.samples != 0))
    assert 0 < lead < 2048 and not first.samples[:lead].any()
    # Then the host's audio, resampled 44.1 -> 48 kHz: the same length in seconds.
    assert utt.sample_rate == 48000
    relayed_s = utt.audio_s - lead / 48000
    assert abs(relayed_s - hosted.audio_s) < 0.002, (relayed_s, hosted.audio_s)
    # Every sentence and word of the host, at the host's offsets, once, none in the lead.
    assert min(m.position for m in robot.marks if m.kind == 'word') >= lead
    words = [(m.start, m.end) for m in robot.marks if m.kind == 'word']
    assert words and words == sorted(words)
    assert sentence_starts(robot.marks) == [0, TEXT.index('今日'), TEXT.index('明日')]
    assert robot.marks[0].kind == 'start'
    assert utt.heard == TEXT
    assert robot.sched.host_health.values()['last_voice'] == utt.spoken_by


def test_an_end_that_gives_the_length_ends_the_relay_once_that_much_has_come(
        tiny_engine, openjtalk_engine):
    """No wait after the host's end once its announced audio has all come.

    The robot's clock never moves here, so a relay that waited ``END_GRACE_S`` after
    the end for stray audio would never finish; the one that ends on the length does,
    with all of the host's audio.
    """
    host = Host(tiny_engine, end_length=True)
    _relayed_whole(host, Robot(openjtalk_engine, host, clock=VirtualClock()))


def _relayed_whole(host: Host, robot: Robot, text: str = TEXT) -> None:
    """The robot says ``text``, all of it with all of the host's audio (then both close)."""
    try:
        utt = robot.say(text)
        assert utt.outcome is Outcome.SUCCEEDED, utt.error
        assert utt.spoken_by == f'host {Host.name}'
        assert host.calls[0].utt.wait(REAL_TIMEOUT_S)  # all of its audio is out
        lead = int(np.argmax(robot.chunks[0].samples != 0))
        assert abs(utt.audio_s - lead / 48000 - host.calls[0].utt.audio_s) < 0.002
        assert utt.heard == text
    finally:
        robot.close()
        host.sched.shutdown()


def test_the_relay_ends_when_every_word_came_and_the_audio_stopped_not_at_the_hosts_end(
        tiny_engine, openjtalk_engine):
    """The relay does not wait for the host's end to hand over its last chunk.

    The host ends its goal when its own audio has played, a pacing lead after its last
    chunk: the robot's last chunk waited for that and came late (an underrun before it
    on every relayed reply, loopback). Here the end never comes and no stall would be
    declared within the test's wait: the relay ends on every word having come and the
    audio having stopped, with all of the host's audio and every mark.
    """
    host = Host(tiny_engine, lose_end=True)
    robot = Robot(openjtalk_engine, host, offboard_stall_s=3600.0)
    _relayed_whole(host, robot, SHORT)
    timed = [(m.kind, m.start, m.value) for m in host.marks if m.kind != 'start']
    assert [(m.kind, m.start, m.value) for m in robot.marks
            if m.kind not in ('start', 'end')] == timed


def test_a_late_last_chunk_after_every_word_is_still_relayed(tiny_engine, openjtalk_engine):
    """Every word has come, the host's last chunk is held up on the way: it is waited for.

    The relay ends without the host's end only when the robot's audio would otherwise run
    out; ending on a quiet spell of a chunk and a half lost the last chunk (23-116 ms of
    the host's audio) of a paced host with 25 ms of jitter.
    """
    host = Host(tiny_engine, lose_end=True, late_last_s=0.3)
    _relayed_whole(host, Robot(openjtalk_engine, host, offboard_stall_s=3600.0), SHORT)


def _host_sentences(tiny_engine) -> list:
    """Sample positions of the host's sentence marks for TEXT."""
    return [m.position for m in host_marks(tiny_engine) if m.kind == 'sentence']


def test_a_link_cut_mid_utterance_hands_the_cut_sentence_to_the_engine(pair, tiny_engine):
    positions = _host_sentences(tiny_engine)
    assert len(positions) == 3
    middle = (positions[1] + positions[2]) // 2  # the link goes down inside sentence 2
    host, robot = pair(cut_after=middle // 2048)
    utt = robot.say()
    assert utt.outcome is Outcome.SUCCEEDED, utt.error
    assert 'then onboard' in utt.spoken_by and 'offboard_stall_s' in utt.spoken_by
    assert host.calls[0].canceled.is_set(), 'the remote goal was not canceled'
    starts = sentence_starts(robot.marks)
    second, third = TEXT.index('今日'), TEXT.index('明日')
    # Sentence 1 was relayed whole and is not repeated; sentence 2 was cut and is heard
    # again from its beginning by the robot's own voice; sentence 3 once.
    assert starts == [0, second, second, third], starts
    assert utt.heard == TEXT
    # The relayed audio and the robot's own are one stream: the robot's voice speaks
    # after the relayed part, and the relayed part is the host's up to the cut.
    audio = robot.audio().astype(np.float32)
    relayed = int(middle // 2048 * 2048 * 48000 / 44100)
    assert audio.size > relayed + 48000
    assert np.abs(audio[relayed:]).max() > 1000


def test_a_host_whose_end_never_comes_after_all_its_words_is_not_a_fallback(pair):
    host, robot = pair(lose_end=True)
    utt = robot.say()
    assert utt.outcome is Outcome.SUCCEEDED, utt.error
    # Every word came whole: the host spoke it all, and the robot says nothing again.
    assert utt.spoken_by == f'host {Host.name}'
    assert sentence_starts(robot.marks) == [0, TEXT.index('今日'), TEXT.index('明日')]
    assert utt.heard == TEXT
    values = robot.sched.host_health.values()
    assert values['offboard_fallbacks'] == '0'
    assert values['offboard_failures_in_a_row'] == '0'
    hosted = host.calls[0].utt
    assert abs(utt.audio_s - hosted.audio_s) < 0.05, (utt.audio_s, hosted.audio_s)


def test_an_utterance_resumed_after_an_urgent_text_names_both_voices(pair):
    """Relayed, suspended by an urgent text, resumed onboard: its log line says so."""
    host, robot = pair()
    _, segments = prepare(TEXT, 2000, 60)
    utt = robot.sched.submit(segments, VoiceParams(), source=TEXT)
    deadline = time.monotonic() + REAL_TIMEOUT_S
    while not robot.chunks:  # the host's audio is being relayed
        assert time.monotonic() < deadline
        time.sleep(0.005)
    _, urgent = prepare('はい。', 2000, 60)
    robot.sched.submit(urgent, VoiceParams(), source='はい。', urgent=True)
    assert utt.wait(REAL_TIMEOUT_S * 3) and utt.outcome is Outcome.SUCCEEDED, utt.error
    assert utt.spoken_by.startswith(f'host {Host.name}'), utt.spoken_by
    assert utt.spoken_by.endswith('then onboard (a streamed reply or a resumed one is spoken '
                                  'onboard)'), utt.spoken_by


def test_a_refused_call_is_spoken_onboard_from_the_start(pair):
    host, robot = pair(refuse='no action server at /fleet/r1/say')
    utt = robot.say()
    assert utt.outcome is Outcome.SUCCEEDED, utt.error
    assert utt.spoken_by.startswith('onboard: no action server at /fleet/r1/say')
    assert sentence_starts(robot.marks) == [0, TEXT.index('今日'), TEXT.index('明日')]


def test_a_host_that_never_answers_is_given_up_after_the_timeout(pair):
    host, robot = pair(mute=True)
    utt = robot.say('こんにちは。')
    assert utt.outcome is Outcome.SUCCEEDED, utt.error
    assert utt.spoken_by.startswith('onboard: no audio from the host within 2 s')
    assert utt.ttfa_s >= 2.0  # offboard_timeout_s: nothing was spoken before it
    assert host.calls[0].canceled.is_set()


def test_canceling_the_robot_cancels_the_host_goal(tiny_engine, openjtalk_engine):
    host = Host(tiny_engine, mute=True)
    robot = Robot(openjtalk_engine, host, offboard_timeout_s=30.0)
    try:
        _, segments = prepare(TEXT, 2000, 60)
        utt = robot.sched.submit(segments, VoiceParams(), source=TEXT)
        deadline = time.monotonic() + REAL_TIMEOUT_S
        while not host.calls and time.monotonic() < deadline:
            time.sleep(0.01)
        assert robot.sched.cancel(utt, CancelReason.CLIENT)
        assert host.calls[0].canceled.wait(REAL_TIMEOUT_S)
        assert not robot.chunks
    finally:
        robot.close()
        host.sched.shutdown()


def test_backoff_grows_after_repeated_failures_and_resets_on_success():
    now = [0.0]
    health = HostHealth(lambda: now[0])
    assert health.due()
    assert health.failed('lost') == 0.0 and health.due()  # one failure: try again at once
    assert health.failed('lost') == BACKOFF_BASE_S and not health.due()
    assert health.failed('lost') == 2 * BACKOFF_BASE_S
    for _ in range(10):
        wait = health.failed('lost')
    assert wait == BACKOFF_MAX_S
    now[0] += BACKOFF_MAX_S
    assert health.due()
    health.succeeded()
    assert health.failures == 0 and health.due()
    assert health.values()['offboard_last_failure'] == 'lost'



def test_audio_held_back_by_pacing_is_no_stall_of_the_host(tiny_engine, openjtalk_engine):
    """The host's audio for an utterance waits while the robot's one before it still plays.

    With pacing, handing a relayed chunk over waits until the robot's audio before it is
    nearly out, and the host's next chunks queue meanwhile: that wait is no stall of the
    host. (A fleet robot that had spoken one utterance onboard gave the host up after the
    first chunk of each utterance queued behind it: "the host audio stopped".)
    """
    host = Host(tiny_engine, refuse='the host is down')
    robot = Robot(openjtalk_engine, host, pacing=True, offboard_stall_s=0.5)
    try:
        onboard_text = '今日はとても長いお話をします。' * 2
        _, segments = prepare(onboard_text, 2000, 60)
        first = robot.sched.submit(segments, VoiceParams(), source=onboard_text)
        deadline = time.monotonic() + REAL_TIMEOUT_S
        while not first.spoken_by and time.monotonic() < deadline:
            time.sleep(0.01)
        assert first.spoken_by.startswith('onboard'), first.spoken_by
        host.refuse = ''  # the host is back for the next utterance
        # More of the host's chunks than the robot's playback queue holds (64).
        _, segments = prepare(TEXT, 2000, 60)
        second = robot.sched.submit(segments, VoiceParams(), source=TEXT)
        assert first.wait(REAL_TIMEOUT_S * 3) and second.wait(REAL_TIMEOUT_S * 3)
        assert first.audio_s > 2.0  # long enough to hold the host's audio back
        assert second.outcome is Outcome.SUCCEEDED, second.error
        assert second.spoken_by == f'host {Host.name}', second.spoken_by
        assert second.heard == TEXT
    finally:
        robot.close()
        host.sched.shutdown()
