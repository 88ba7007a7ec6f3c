# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speech marks and what was heard, from a real tts_node over the rmw (Open JTalk voice).

Open JTalk speaks real Japanese, so a word's mark can be checked against the sound in
the published PCM; the hayakoe path is checked on the tiny model (the phonemes of a
segment tile its audio) in test_engine_timing.py and, through the scheduler, in
test_speech_marks.py. Streamed replies and urgent texts are in test_node_marks_stream.py;
the ``ojt_node``, ``listen`` and ``mark_listener`` fixtures are conftest.py's.
"""

import time

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from std_msgs.msg import String

from ros_utils import send_goal, wait_future

pytestmark = pytest.mark.ros

RATE = 48000  # Open JTalk


TEXT = '10:30に出発します。今日は、いい天気ですね。'


def ns(stamp):
    return stamp['sec'] * 1_000_000_000 + stamp['nanosec']


def header_ns(msg):
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def onset_ms(pcm, from_ms, level_dbfs=-50.0):
    """First time (ms) at or after ``from_ms`` where |PCM| rises above ``level_dbfs``."""
    start = int(from_ms * RATE / 1000)
    loud = np.flatnonzero(np.abs(pcm[start:].astype(np.float64)) / 32768
                          > 10 ** (level_dbfs / 20))
    return (start + loud[0]) * 1000 / RATE


def test_marks_of_a_topic_text_follow_its_audio(ojt_node, ros_client, listen):
    rec, marks = listen
    pub = ros_client.matched_publisher(ojt_node.topic('text'))
    pub.publish(String(data=TEXT))
    end = marks.wait_end()
    utt = end['utterance']
    assert len(utt) == 32 and int(utt, 16) >= 0
    rec.wait_quiet(quiet_s=0.5)
    msgs = [m for _, m in rec.msgs]
    pcm = rec.samples()
    (start,) = marks.of(utt, 'start')
    # The start mark carries the first chunk's stamp exactly.
    first_ns = header_ns(msgs[0])
    assert ns(start['stamp']) == first_ns and start['time'] == 0
    assert (start['start'], start['end']) == (0, len(TEXT))
    words = marks.of(utt, 'word')
    # Offsets into the text as sent: 10:30 is one word, read ジュージサンジュップン.
    assert words[0]['value'] == '10:30' and (words[0]['start'], words[0]['end']) == (0, 5)
    for w in words:
        assert TEXT[w['start']:w['end']] == w['value']
        assert abs(ns(w['stamp']) - first_ns - w['time'] * 1_000_000) <= 1_000_000
        assert w['duration'] > 0
    assert [w['start'] for w in words] == sorted(w['start'] for w in words)
    # Every word after a pause (a sentence end, a comma) starts where its sound does.
    after_pause = [w for prev, w in zip(words, words[1:])
                   if w['time'] - (prev['time'] + prev['duration']) >= 50]
    assert [w['value'] for w in after_pause] == ['今日', 'いい']
    for prev, w in zip(words, words[1:]):
        if w in after_pause:
            onset = onset_ms(pcm, max(prev['time'] + prev['duration'], w['time'] - 150))
            assert abs(onset - w['time']) <= 40, (w['value'], onset, w['time'])
    sentences = marks.of(utt, 'sentence')
    assert [(s['start'], s['end']) for s in sentences] == [(0, 12), (12, len(TEXT))]
    phonemes = marks.of(utt, 'phoneme')
    visemes = marks.of(utt, 'viseme')
    assert {v['value'] for v in visemes} <= {'a', 'i', 'u', 'e', 'o', 'N', 'closed', 'sil'}
    assert phonemes and all(p['duration'] >= 0 for p in phonemes)
    # Nothing is marked after the audio's end; the end mark says it all was heard.
    audio_ms = len(pcm) * 1000 / RATE
    assert max(m['time'] for m in marks.of(utt) if m['type'] != 'end') <= audio_ms
    assert end['value'] == 'succeeded' and end['heard'] == TEXT
    assert end['heard_end'] == len(TEXT) and 'error' not in end
    ros_client.node.destroy_publisher(pub)


def test_a_canceled_goal_returns_what_was_heard(ojt_node, ros_client, listen):
    rec, marks = listen
    action = ros_client.action_client(ojt_node.topic('say'))
    text = 'はい、承知しました。これから受付までご案内しますので、私の後についてきてください。'
    handle, feedback = send_goal(ros_client, action, text)
    key = bytes(handle.goal_id.uuid).hex()
    # Cancel once a few words have been published.
    deadline = time.monotonic() + 30
    while len(marks.of(key, 'word')) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    wait_future(handle.cancel_goal_async(), 10)
    result = wait_future(handle.get_result_async(), 30)
    assert result.status == GoalStatus.STATUS_CANCELED
    end = marks.wait_end(key)
    assert end['value'] == 'canceled' and end['error'] == 'canceled by the client'
    heard = result.result.text
    assert heard == end['heard'] and heard == text[:end['heard_end']]
    assert 0 < len(heard) < len(text)
    # Exactly the words all of whose audio was published before the cut.
    published_ms = sum(f.audio.audio.info.chunk for _, f in feedback) * 1000 / RATE
    words = marks.of(key, 'word')
    whole = [w for w in words if w['time'] + w['duration'] <= end['time']]
    assert whole and whole[-1]['end'] == end['heard_end']
    assert end['time'] <= published_ms + 1
    # The cut audio ends at the end mark's stamp, on the audio's own clock.
    last = feedback[-1][1].audio
    last_end = header_ns(last) + last.audio.info.chunk * 1e9 / RATE
    assert ns(end['stamp']) <= last_end + 1e6


def test_a_refused_text_gets_an_end_mark_with_the_error(ojt_node, ros_client, mark_listener):
    marks = mark_listener
    pub = ros_client.matched_publisher(ojt_node.topic('text'))
    pub.publish(String(data='<speak>はい<mark/>です</speak>'))
    end = marks.wait_end()
    assert end['value'] == 'aborted' and end['heard'] == ''
    assert 'mark' in end['error'] and 'name' in end['error']
    ros_client.node.destroy_publisher(pub)
    # A refused say goal too (it got no end mark), under the goal's id: for its text, and
    # for its fields.
    action = ros_client.action_client(ojt_node.topic('say'))
    for text, rate in (('😀', 1.0), ('はい', 9.0)):
        handle, _ = send_goal(ros_client, action, text, rate=rate)
        result = wait_future(handle.get_result_async(), 30)
        assert result.status == GoalStatus.STATUS_ABORTED
        end = marks.wait_end(bytes(handle.goal_id.uuid).hex(), timeout=10)
        assert end['value'] == 'aborted' and end['heard'] == ''
        assert end['error'] in result.result.text


def test_mark_types_choose_what_goes_out_live(ojt_node, ros_client, mark_listener):
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    marks = mark_listener
    params = AsyncParameterClient(ros_client.node, ojt_node.topic(ojt_node.name))
    assert params.wait_for_services(timeout_sec=10)

    def set_types(value):
        return wait_future(params.set_parameters(
            [Parameter('mark_types', value=value)]), 10).results[0]

    # A misspelt kind is refused, naming it, and the value stays as it was.
    bad = set_types('word,visme')
    assert not bad.successful and "'visme'" in bad.reason and 'viseme' in bad.reason
    got = wait_future(params.get_parameters(['mark_types']), 10).values[0].string_value
    assert got == 'sentence,word,phoneme,viseme,ssml'
    action = ros_client.action_client(ojt_node.topic('say'))
    try:
        assert set_types('word, viseme').successful
        handle, _ = send_goal(ros_client, action, '<speak>はい<mark name="m"/>、どうぞ。</speak>')
        key = bytes(handle.goal_id.uuid).hex()
        assert wait_future(handle.get_result_async(), 30).status == \
            GoalStatus.STATUS_SUCCEEDED
        end = marks.wait_end(key)
        assert end['value'] == 'succeeded' and end['heard_end'] > 0
        kinds = {m['type'] for m in marks.of(key)}
        assert kinds == {'start', 'word', 'viseme', 'end'}
        assert [w['value'] for w in marks.of(key, 'word')] == ['はい', 'どうぞ']
    finally:
        assert set_types('sentence,word,phoneme,viseme,ssml').successful
    # Back to every kind from the next utterance on.
    handle, _ = send_goal(ros_client, action, '<speak>はい<mark name="m"/>。</speak>')
    key = bytes(handle.goal_id.uuid).hex()
    wait_future(handle.get_result_async(), 30)
    marks.wait_end(key)
    assert {m['type'] for m in marks.of(key)} == {'start', 'sentence', 'word', 'phoneme',
                                                 'viseme', 'ssml', 'end'}
