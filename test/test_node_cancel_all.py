# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""One cancel request for every goal (the action protocol's cancel-all), on a real tts_node.

A dialogue stack that is interrupted (the user barges in) sends one ``CancelGoal``
request with a zero goal id and a zero stamp: every goal, speaking or queued, is
canceled, and the robot says nothing more of any of them: no queued goal's audio or start
mark slips out between the speaking goal's cancel and its own.
"""

import time

import pytest
from action_msgs.msg import GoalStatus
from action_msgs.srv import CancelGoal

from ros_utils import ended, send_goal

pytestmark = pytest.mark.ros

# Short enough that the goals behind it are synthesised ahead while it plays: their
# audio then waits in the publisher's queue, where a cancel applied goal by goal let it
# out (4-8 of 9 queued goals published a start mark and 64-107 ms of audio).
FIRST = 'わかりました。少々お待ちください。'


@pytest.mark.parametrize('queued', [1, 9])
def test_cancel_all_ends_every_goal_and_no_queued_goal_is_heard(ojt_node, ros_client, listen,
                                                                 queued):
    rec, marks = listen
    action = ros_client.action_client(ojt_node.topic('say'))
    speaking, feedback = send_goal(ros_client, action, FIRST)
    waiting = [send_goal(ros_client, action, f'{n}番目の待っている文です。')[0]
               for n in range(queued)]
    deadline = time.monotonic() + 30
    while len(feedback) < 35 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(feedback) >= 35, 'the first goal never spoke'
    cancel = ros_client.node.create_client(CancelGoal,
                                           ojt_node.topic('say') + '/_action/cancel_goal')
    try:
        assert cancel.wait_for_service(timeout_sec=10)
        future = cancel.call_async(CancelGoal.Request())  # zero id, zero stamp: every goal
        deadline = time.monotonic() + 10
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        answer = future.result()
    finally:
        ros_client.node.destroy_client(cancel)
    assert answer is not None and answer.return_code == CancelGoal.Response.ERROR_NONE
    assert len(answer.goals_canceling) == queued + 1
    for handle in [speaking] + waiting:
        assert ended(handle, 30) == GoalStatus.STATUS_CANCELED
    rec.wait_quiet(quiet_s=0.5, min_count=0)
    # One utterance was heard, the speaking one.
    starts = marks.of(kind='start')
    assert len(starts) == 1, [m['utterance'] for m in starts]
    utt = starts[0]['utterance']
    # Each queued goal ends with its end mark only: canceled, nothing heard.
    others = [(m['type'], m['value'], m.get('heard')) for m in marks.marks
              if m['utterance'] != utt]
    assert others == [('end', 'canceled', '')] * queued
    # The node serves on.
    after, _ = send_goal(ros_client, action, 'はい。')
    assert ended(after, 30) == GoalStatus.STATUS_SUCCEEDED
