# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``marks`` JSON as a host writes it and a relaying robot reads it back."""

import json

import pytest

from hayakoe_ros.node.marks_out import mark_fields, mark_object
from hayakoe_ros.node.remote_marks import remote_mark
from hayakoe_ros.speech.marks import Mark
from hayakoe_ros.speech.remote import RemoteMark

pytestmark = pytest.mark.unit

RATE = 44100


def _round_trip(mark: Mark) -> tuple:
    first = 1_000_000_000
    stamp = first + int(round(mark.position / RATE * 1e9))
    obj = mark_object('u1', mark.kind, stamp, first, **mark_fields(mark, RATE))
    text = json.dumps(obj, ensure_ascii=False)
    return json.loads(text), remote_mark(json.loads(text))


def test_a_word_that_goes_on_says_so_and_the_robot_reads_it():
    goes_on = Mark('word', 44100, 22050, 3, 63, '1234567890' * 6, continues=True)
    obj, back = _round_trip(goes_on)
    assert obj['continues'] is True and obj['time'] == 1000 and obj['duration'] == 500
    assert back == RemoteMark('word', 1.0, 0.5, 3, 63, '1234567890' * 6, True)
    # Every other mark leaves the field out, and reads back without it.
    for mark in (Mark('word', 0, 4410, 0, 2, '番号'), Mark('phoneme', 10, 441, value='a'),
                 Mark('word', 88200, 4410, 63, 63, '')):
        obj, back = _round_trip(mark)
        assert 'continues' not in obj and back.continues is False
        assert (back.kind, back.start, back.end, back.value) == \
            (mark.kind, mark.start, mark.end, mark.value)


def test_a_malformed_mark_field_is_refused_as_a_value_error():
    """Anyone may publish on a host's marks topic: what the relay cannot use is refused."""
    for bad in ({'type': 'word', 'time': 'soon'}, {'type': 'word', 'start': [1]},
                {'type': 'word', 'time': float('nan')}, {'type': 'word', 'time': float('inf')},
                {'type': 'word', 'duration': float('inf')}, {'type': 'word', 'time': 10 ** 400},
                {'type': 'word', 'start': 1e400}, {'type': 'word', 'end': float('-inf')},
                {'type': 'word', 'time': -5}, {'type': 'word', 'start': 1.5},
                {'type': 'word', 'time': True}):
        with pytest.raises(ValueError):
            remote_mark(bad)
    # Only a JSON true means it goes on.
    assert remote_mark({'type': 'word', 'continues': 'yes'}).continues is False


def test_a_rogue_mark_is_dropped_and_the_relay_goes_on():
    """Malformed messages on the host's marks topic neither raise nor reach the relay.

    The subscription's callback and a call's mark handler, on their own (a raise there
    ended the robot's process, or killed its synthesis thread).
    """
    import threading

    from std_msgs.msg import String

    from hayakoe_ros.node import offboard
    from hayakoe_ros.speech.remote import RemoteEnd

    class Call:
        on_mark = offboard._Call.on_mark

        def __init__(self):
            self.events = []

        def _queue(self, event):
            self.events.append(event)

    call = Call()
    voice = offboard.OffboardVoice.__new__(offboard.OffboardVoice)
    voice._lock, voice._calls = threading.Lock(), {'u1': call}
    for data in ('{"utterance": []}', '{"utterance": {"a": 1}}', '[' * 200_000,
                 '{"utterance": "u1", "type": "word", "time": NaN}',
                 '{"utterance": "u1", "type": "word", "duration": Infinity}',
                 '{"utterance": "u1", "type": "word", "start": 1e400}',
                 '{"utterance": "u1", "type": "end", "value": "succeeded", "time": '
                 + '9' * 400 + '}'):
        voice._on_mark(String(data=data))
    # The malformed end still ends the relay (its length unknown); no mark went through.
    assert [type(e) for e in call.events] == [RemoteEnd]
    assert call.events[0].audio_s is None
    voice._on_mark(String(data='{"utterance": "u1", "type": "word", "time": 20}'))
    assert call.events[-1] == RemoteMark('word', 0.02)
