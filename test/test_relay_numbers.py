# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A robot relaying a host through a number read in groups across segments. No ROS."""

import pytest

from hayakoe_ros.speech import Outcome
from relay_rig import host_marks, pairs, sentence_starts

pytestmark = pytest.mark.unit


@pytest.fixture
def pair(tiny_engine, openjtalk_engine):
    yield from pairs(tiny_engine, openjtalk_engine)


def test_a_link_cut_inside_a_long_number_says_its_sentence_again(pair, tiny_engine):
    """The host fails inside a long number: the robot says the number's sentence again.

    A number of 60 digits is read in groups across three segments; the link goes down
    after the first. That segment's word mark spans the whole number but goes on
    (``continues``): the number was not heard, and the robot's own voice says its
    sentence again, not only the sentence after it (it skipped the number's rest).
    """
    number = '1234567890' * 6
    text = f'番号は{number}。次です。'
    marks = host_marks(tiny_engine, text)
    words = [m for m in marks if m.kind == 'word']
    first = next(m for m in words if m.value == number)
    later = [m for m in words if m.position > first.position and m.start == first.end]
    assert first.continues and len(later) == 2
    assert later[0].continues and not later[1].continues
    assert later[0].position - first.position > 3 * 2048  # the first group goes out
    host, robot = pair(cut_after=later[0].position // 2048)
    utt = robot.say(text)
    assert utt.outcome is Outcome.SUCCEEDED, utt.error
    assert 'then onboard' in utt.spoken_by
    # Sentence 1 again from its start (it held the number), then sentence 2.
    assert sentence_starts(robot.marks) == [0, 0, text.index('次')]
    assert utt.heard == text
