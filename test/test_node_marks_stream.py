# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Streamed replies and urgent texts from a real tts_node, by its marks (Open JTalk voice).

A reply streamed on ``text_stream`` is one utterance, its words once and in order (also
with no end, ten thousand one-character fragments, or a burst sent back to back); a text
on ``text_urgent`` goes first and the goal it cut resumes, or is an error while the node
is inactive. The marks of plain texts and goals are in test_node_marks.py; the
``ojt_node``, ``listen`` and ``mark_listener`` fixtures are conftest.py's.
"""

import time

import pytest
from action_msgs.msg import GoalStatus
from lifecycle_msgs.msg import Transition
from std_msgs.msg import String
from std_srvs.srv import Trigger

from ros_utils import MarkRecorder, NodeProcess, change_state, send_goal, wait_future

pytestmark = pytest.mark.ros

RATE = 48000  # Open JTalk


REPLY = ('こんにちは！今日はロボットの展示会へようこそ。受付は、入口を入って右手にあります。'
         'ご質問があれば、いつでも声をかけてください。')


def _publisher(ros_client, ojt_node, topic):
    return ros_client.matched_publisher(ojt_node.topic(topic), depth=1000)


def _publish_patiently(pub, msg, timeout: float = 10.0) -> None:
    """Publish ``msg``, retrying while the writer's reliable history is full.

    Fast DDS refuses a reliable write after a short block when every sample it holds is
    still unacknowledged (``RCLError: cannot publish data``); a burst written in a tight
    loop can get there while the node takes its messages one at a time. The burst is the
    test's input, the refusal this client's own back-pressure: wait for room (bounded).
    """
    from rclpy._rclpy_pybind11 import RCLError  # type: ignore[import-not-found]

    deadline = time.monotonic() + timeout
    while True:
        try:
            pub.publish(msg)
            return
        except RCLError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _stream(pub, text, per_second=30.0, size=2):
    """Publish ``text`` in fragments of ``size`` characters at ``per_second``."""
    period = 1.0 / per_second
    start = time.monotonic()
    for i in range(0, len(text), size):
        pub.publish(String(data=text[i:i + size]))
        # Paced like an LLM's tokens (a rate, not a settle: nothing waits on it).
        time.sleep(max(0.0, start + (i // size + 1) * period - time.monotonic()))


@pytest.mark.long  # about 21 s here (the reply paced, then spoken whole); the order of a
# stream stays quick (test_fragments_and_texts_sent_back_to_back_keep_their_order)
def test_a_streamed_reply_is_spoken_once_in_order_as_one_utterance(ojt_node, ros_client,
                                                                    listen):
    rec, marks = listen
    pub = _publisher(ros_client, ojt_node, 'text_stream')
    _stream(pub, REPLY)
    pub.publish(String(data=''))  # the reply ends
    end = marks.wait_end()
    utt = end['utterance']
    assert end['value'] == 'succeeded' and end['heard'] == REPLY
    (start,) = marks.of(utt, 'start')
    # The reply as received when its first piece was queued: a prefix of the whole.
    assert start['value'] == '' and start['text'] and REPLY.startswith(start['text'])
    words = marks.of(utt, 'word')
    # Every word once, in order, with offsets into the reply as the fragments joined.
    assert [w['start'] for w in words] == sorted(w['start'] for w in words)
    assert all(REPLY[w['start']:w['end']] == w['value'] for w in words)
    spoken = ''.join(w['value'] for w in words)
    assert spoken == ''.join(c for c in REPLY if c not in '！。、')
    assert [w['time'] for w in words] == sorted(w['time'] for w in words)
    rec.wait_quiet(quiet_s=0.5)
    streamed_s = len(rec.samples()) / RATE
    ros_client.node.destroy_publisher(pub)
    # The same text sent whole: about as long (the same words, the same kind of pauses).
    rec.msgs.clear()
    whole = _publisher(ros_client, ojt_node, 'text')
    whole.publish(String(data=REPLY))
    marks.wait_end(timeout=60)
    deadline = time.monotonic() + 60
    while len(marks.of(kind='end')) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    rec.wait_quiet(quiet_s=0.5)
    whole_s = len(rec.samples()) / RATE
    assert abs(streamed_s - whole_s) <= 0.1 * whole_s + 0.3, (streamed_s, whole_s)
    ros_client.node.destroy_publisher(whole)


def test_a_stream_without_an_end_is_spoken_after_its_timeout(ojt_node, ros_client,
                                                             mark_listener):
    marks = mark_listener
    pub = _publisher(ros_client, ojt_node, 'text_stream')
    for fragment in ('はい', '😀', '  ', '、わかり', 'ました'):  # no end, emoji, blanks
        pub.publish(String(data=fragment))
    end = marks.wait_end(timeout=30)  # stream_timeout_s (3 s) then the speech
    assert end['value'] == 'succeeded'
    assert end['heard'] == 'はい😀  、わかりました'
    words = [w['value'] for w in marks.of(end['utterance'], 'word')]
    assert words[0] == 'はい' and 'ました' in ''.join(words)
    # The timeout's check runs only while a reply is open: the next reply without an
    # end times out too.
    before = len(marks.of(kind='end'))
    pub.publish(String(data='つぎです'))
    deadline = time.monotonic() + 30
    while len(marks.of(kind='end')) <= before and time.monotonic() < deadline:
        time.sleep(0.05)
    second = marks.of(kind='end')[-1]
    assert second['utterance'] != end['utterance'], 'the second reply never ended'
    assert second['value'] == 'succeeded' and second['heard'] == 'つぎです'
    ros_client.node.destroy_publisher(pub)


def test_an_urgent_text_goes_first_and_the_goal_it_cut_resumes_and_succeeds(
        ojt_node, ros_client, mark_listener):
    marks = mark_listener
    action = ros_client.action_client(ojt_node.topic('say'))
    text = 'これから館内をご案内します。まず一階の受付です。次に二階の展示室へ参ります。'
    handle, feedback = send_goal(ros_client, action, text)
    key = bytes(handle.goal_id.uuid).hex()
    urgent_pub = _publisher(ros_client, ojt_node, 'text_urgent')
    deadline = time.monotonic() + 30
    while len(marks.of(key, 'word')) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    urgent_pub.publish(String(data='危ないです！'))
    result = wait_future(handle.get_result_async(), 60)
    assert result.status == GoalStatus.STATUS_SUCCEEDED and result.result.text == text
    end = marks.wait_end(key)
    assert end['value'] == 'succeeded' and end['heard'] == text
    with marks.lock:
        order = [(m['utterance'], m['type'], m.get('value')) for m in marks.marks]
    urgent = next(u for u, kind, _ in order if kind == 'start' and u != key)
    # The goal's words, the urgent text's, then the goal's again from its cut sentence.
    owners = [u for u, kind, _ in order if kind == 'word']
    runs = [u for i, u in enumerate(owners) if not i or owners[i - 1] != u]
    assert runs == [key, urgent, key]
    words = [v for u, kind, v in order if kind == 'word']
    resumed = words[owners.index(key, owners.index(urgent)):]
    # From the start of the sentence that was cut, to the end: every word once more.
    rest = ''.join(resumed)
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == '。'][:-1]
    assert any(rest == text[s:].replace('。', '') for s in starts), rest
    urgent_end = marks.wait_end(urgent)
    assert urgent_end['value'] == 'succeeded'
    # Feedback went on after the urgent text: the goal's audio kept coming.
    assert len(feedback) > 10
    ros_client.node.destroy_publisher(urgent_pub)


def test_ten_thousand_one_character_fragments_leave_the_node_serving(ojt_node, ros_client,
                                                                    mark_listener):
    marks = mark_listener
    pub = _publisher(ros_client, ojt_node, 'text_stream')
    for i in range(10_000):
        _publish_patiently(pub, String(data='はい、そうです。'[i % 8]))
    deadline = time.monotonic() + 30
    while len(marks.of(kind='word')) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    (start,) = marks.of(kind='start')
    stop = ros_client.node.create_client(Trigger, ojt_node.topic('stop'))
    assert stop.wait_for_service(timeout_sec=10)
    response = wait_future(stop.call_async(Trigger.Request()), 10)
    assert response.success
    end = marks.wait_end(start['utterance'])
    # What was heard: words of the fragments received (a burst beyond the text topic's
    # depth loses its oldest fragments, as any keep-last subscription does).
    assert end['value'] == 'interrupted' and end['heard']
    assert set(end['heard']) <= set('はい、そうです。')
    pub.publish(String(data=''))  # the reply ends: its later fragments were dropped
    # The node goes on serving.
    action = ros_client.action_client(ojt_node.topic('say'))
    handle, _ = send_goal(ros_client, action, 'まだ話せます。')
    result = wait_future(handle.get_result_async(), 30)
    assert result.status == GoalStatus.STATUS_SUCCEEDED
    ros_client.node.destroy_publisher(pub)
    ros_client.node.destroy_client(stop)


def test_an_urgent_text_while_inactive_is_an_error_with_an_end_mark(ojt_node, ros_client,
                                                                   mark_listener):
    marks = mark_listener
    pub = _publisher(ros_client, ojt_node, 'text_urgent')
    assert change_state(ros_client, ojt_node, Transition.TRANSITION_DEACTIVATE)
    try:
        pub.publish(String(data='緊急です。'))
        end = marks.wait_end(timeout=10)
        assert end['value'] == 'aborted' and end['heard'] == ''
        assert 'not active' in end['error'], end
        ojt_node.wait_for_log('text urgent topic: not speaking', 10)
    finally:
        assert change_state(ros_client, ojt_node, Transition.TRANSITION_ACTIVATE)
    ros_client.node.destroy_publisher(pub)


def test_fragments_and_texts_sent_back_to_back_keep_their_order(ros_client):
    """A burst with no pause between messages: a reply's words and the texts in order.

    The node's executor runs callbacks on several threads; messages of one topic taken
    at once on two of them came in the wrong order (a reply heard as それまたでは). Pacing
    off: the whole reply is synthesised at once, so its heard text comes in soon.
    """
    node = NodeProcess({'engine': 'openjtalk', 'pacing': False})
    try:
        marks = MarkRecorder(ros_client, node.topic('marks'))
        deadline = time.monotonic() + 10
        while marks.sub.get_publisher_count() < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        stream = _publisher(ros_client, node, 'text_stream')
        words = ['今日', 'は', 'いい', '天気', 'です', 'ね', '。', 'それ', 'では', 'また', '、',
                 '明日', 'も', '会い', 'ましょう', '。']
        reply = ''
        for i in range(160):
            stream.publish(String(data=words[i % len(words)]))
            reply += words[i % len(words)]
        stream.publish(String(data=''))
        end = marks.wait_end(timeout=60)
        assert end['value'] == 'succeeded' and end['heard'] == reply
        texts = _publisher(ros_client, node, 'text')
        sent = [f'{i}番です。' for i in range(16)]
        for text in sent:
            texts.publish(String(data=text))
        deadline = time.monotonic() + 60
        while len(marks.of(kind='end')) < 1 + len(sent) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [m['heard'] for m in marks.of(kind='end')[1:]] == sent
    finally:
        assert node.stop() == 0, node.log()


def test_max_segment_chars_set_live_cuts_the_next_streamed_reply(ojt_node, ros_client,
                                                                 mark_listener):
    """A reply with no punctuation is cut at ``max_segment_chars`` as set now (live).

    The stream took the value of the last activate: lowered live, the reply's first piece
    still waited for 60 characters (here: for the reply's end).
    """
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    from hayakoe_ros.node.parameters import PARAMETERS

    marks = mark_listener
    params = AsyncParameterClient(ros_client.node, ojt_node.topic(ojt_node.name))
    assert params.wait_for_services(timeout_sec=10)

    def set_limit(value):
        result = wait_future(params.set_parameters(
            [Parameter('max_segment_chars', value=value)]), 10).results[0]
        assert result.successful, result.reason

    reply = 'きょうはあさはやくおきてこうえんをさんぽしてからえきまえのきっさてんにいきました'
    set_limit(16)
    pub = _publisher(ros_client, ojt_node, 'text_stream')
    try:
        _stream(pub, reply, per_second=20.0)
        pub.publish(String(data=''))
        end = marks.wait_end(timeout=60)
        assert end['value'] == 'succeeded' and end['heard'] == reply
        (start,) = marks.of(end['utterance'], 'start')
        # Queued once 16 characters and a word's margin had come, not at the reply's end.
        assert reply.startswith(start['text']) and len(start['text']) < 34, start['text']
    finally:
        set_limit(PARAMETERS['max_segment_chars'].default)
        ros_client.node.destroy_publisher(pub)
