# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``marks`` JSON as a host writes it and a relaying robot reads it back."""

import json

import pytest

from hayakoe_ros.node.marks_out import mark_fields, mark_object
from hayakoe_ros.node.offboard import remote_mark
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
    for bad in ({'type': 'word', 'time': 'soon'}, {'type': 'word', 'start': [1]}):
        with pytest.raises((ValueError, TypeError)):
            remote_mark(bad)
    # Only a JSON true means it goes on.
    assert remote_mark({'type': 'word', 'continues': 'yes'}).continues is False
