# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A host's ``say`` action as a robot's remote voice (:mod:`hayakoe_ros.speech.relay`).

``tts_node`` with ``offboard_action`` (e.g. ``/fleet/r1/say``, a robot's node in
``tts_fleet``) sends each whole utterance there as an ``audio_common_msgs/action/TTS``
goal, with the caller's text as sent, the speaking rate of the utterance and volume 1
(the robot applies its own). What comes back becomes the relay's events:

* the goal's feedback (one ``AudioStamped`` per chunk of the host) -> audio;
* the host's speech marks, JSON on the ``marks`` topic beside the action (``/fleet/r1/marks``),
  those whose ``utterance`` is the goal's id (the host names a goal's marks by its UUID in
  32 hex digits) -> marks, timed by their ``time`` (ms from the host's first sample);
* the goal's end, from its status (the action's status topic), the host's ``end`` mark
  of a goal that succeeded (whichever comes first), or its rejection -> the end; for a
  goal that failed, its result's text says why. The result is requested only once the
  relay is done with the goal: rclpy's action client forgets a goal's feedback callback
  when the result arrives, and result and feedback travel separately, so a chunk still
  on its way would be lost (seen under load); requesting it at the end also frees that
  callback.

Threads: :meth:`OffboardVoice.call` and :meth:`RemoteCall.cancel` run on the scheduler's
synthesis thread; the goal response, feedback, result and marks callbacks on the node's
executor threads. Each call's events go through its own queue; a call given up is
forgotten, and what still comes for it is dropped.
"""

from __future__ import annotations

import dataclasses
import json
import queue
import threading
import time
import uuid
from typing import Any, Optional

from action_msgs.msg import GoalStatus
from audio_common_msgs.action import TTS
from rclpy.action import ActionClient
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from unique_identifier_msgs.msg import UUID

from .decode import decode
from ..speech.remote import RemoteAudio, RemoteEnd, RemoteUnavailable
from .parameters import RATE_RANGE
from .remote_marks import remote_mark

#: When a cancel of a host goal not yet taken is sent again (s): first this long after
#: the cancel, then at doubling intervals up to :data:`CANCEL_RETRY_MAX_S`. A request sent
#: while the link is cut for longer than DDS's lease (Fast DDS: 20 s) never arrives, and
#: the host then spoke the abandoned goal to its end (90 s of audio, measured), busy for
#: the robot's next utterances long after the link came back. Requests sent while the
#: host was stalled for a few seconds (SIGSTOP, 2-8 s) were not taken when it went on
#: either: only the first one sent after it (loopback, Fast DDS), so a host back from a
#: stall spoke up to one interval of the goal the robot had given up.
CANCEL_RETRY_S = 0.25
#: Longest interval between two sends of one cancel (s).
CANCEL_RETRY_MAX_S = 2.0
#: Shortest interval between two sends of one cancel (s): the host's audio for a goal
#: given up sends it again at once (the host is back), at most this often.
CANCEL_RESEND_MIN_S = 0.1
#: How long a cancel is sent again (s): a host that never answers is left alone.
CANCEL_GIVE_UP_S = 600.0
_ENDED = (GoalStatus.STATUS_SUCCEEDED, GoalStatus.STATUS_ABORTED, GoalStatus.STATUS_CANCELED,
          GoalStatus.STATUS_CANCELING)

#: Goal states by name, for the reason a host goal failed.
_STATUS = {GoalStatus.STATUS_ABORTED: 'aborted', GoalStatus.STATUS_CANCELED: 'canceled',
           GoalStatus.STATUS_UNKNOWN: 'unknown'}


def marks_topic(action: str) -> str:
    """The host's marks topic beside its action: ``/fleet/r1/say`` -> ``/fleet/r1/marks``."""
    head, _, _ = action.rpartition('/')
    return f'{head}/marks' if head or action.startswith('/') else 'marks'


class _Call:
    """One utterance sent to the host: its events, its goal handle, whether it was given up."""

    def __init__(self, owner: 'OffboardVoice', key: str) -> None:
        self._owner = owner
        self.key = key
        self._events: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._handle = None
        self._given_up = False
        self._ended = False  # the goal's end was seen (its status)
        self._result_asked = False

    def get(self, timeout: float) -> Optional[object]:
        """The next event, or None after ``timeout`` s (see :class:`.remote.RemoteCall`)."""
        self._check_status()
        try:
            return self._events.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None

    def cancel(self) -> None:
        """Cancel the host's goal (now, or as soon as it is accepted); drop what comes."""
        with self._lock:
            self._given_up = True
            handle = self._handle
        self._owner.forget(self.key)
        if handle is not None:
            self._owner.cancel_goal(self.key, handle)

    def close(self) -> None:
        """The relay is done with this call: route nothing more to it; free the goal."""
        with self._lock:
            self._given_up = True
            handle = self._handle
        self._owner.forget(self.key)
        if handle is not None:
            self._ask_result(handle)

    def _ask_result(self, handle) -> None:
        """Request the goal's result once (its answer frees rclpy's feedback callback)."""
        with self._lock:
            if self._result_asked:
                return
            self._result_asked = True
        handle.get_result_async().add_done_callback(self.on_result)
        self._owner.wake()

    def _check_status(self) -> None:
        """Turn the goal's terminal status, once seen, into the end (synthesis thread)."""
        handle = self._handle
        if handle is None or self._ended:
            return
        status = handle.status
        if status == GoalStatus.STATUS_SUCCEEDED:
            self._ended = True
            self._queue(RemoteEnd(True))
        elif status in (GoalStatus.STATUS_ABORTED, GoalStatus.STATUS_CANCELED):
            self._ended = True
            self._ask_result(handle)  # its text says why

    def _queue(self, event: object) -> None:
        """Queue an event unless the call was given up (the queue is unbounded)."""
        if not self._given_up:
            self._events.put_nowait(event)

    def on_goal_response(self, future) -> None:
        """The host accepted or rejected the goal (executor thread)."""
        exc = future.exception()
        if exc is not None:
            self._queue(RemoteEnd(False, f'the goal request failed: {exc}'))
            return
        handle = future.result()
        if not handle.accepted:
            self._queue(RemoteEnd(False, 'the host rejected the goal'))
            return
        with self._lock:
            self._handle = handle
            given_up = self._given_up
        if given_up:  # the robot gave it up before the host answered
            self._owner.cancel_goal(self.key, handle)
            self._ask_result(handle)

    def on_feedback(self, feedback) -> None:
        """One chunk of the host's audio (executor thread).

        Audio of a goal given up says the host is there and has not taken the cancel:
        it goes out again now.
        """
        if self._given_up:
            self._owner.cancel_again(self.key)
            return
        audio = feedback.feedback.audio
        try:
            pcm = decode(audio)
        except ValueError as exc:
            self._queue(RemoteEnd(False, f'unreadable audio from the host: {exc}'))
            return
        self._queue(RemoteAudio(pcm, int(audio.audio.info.rate)))

    def on_mark(self, obj: dict) -> None:
        """One of the host's speech marks for this goal (executor thread).

        The host's ``end`` mark of a goal that succeeded is its end as well as the
        goal's status: whichever comes first ends the relay's wait for more. The mark
        also gives the audio's length (its ``time``, ms), so the relay can end as soon
        as that much has come.
        """
        try:
            mark = remote_mark(obj)
        except ValueError:
            mark = None  # a malformed mark: the audio and the goal's result still come
        if obj.get('type') == 'end' and obj.get('value') == 'succeeded':
            self._queue(RemoteEnd(True, audio_s=None if mark is None else mark.time_s))
        if mark is not None:
            self._queue(mark)

    def on_result(self, future) -> None:
        """The goal's result (executor thread): why it failed, when it did."""
        response = future.result()
        if response is None:
            self._queue(RemoteEnd(False, 'the result request failed'))
        elif response.status != GoalStatus.STATUS_SUCCEEDED:
            state = _STATUS.get(response.status, str(response.status))
            self._queue(RemoteEnd(False, f'the host goal was {state}: {response.result.text}'))


@dataclasses.dataclass
class _Pending:
    """A cancel of a host goal not yet taken (times: ``time.monotonic()`` s)."""

    handle: Any           # rclpy's ClientGoalHandle
    since: float          # the first send
    next_at: float        # the timer's next send
    interval: float       # the timer's interval now (doubling)
    sent: float           # the last send, the timer's or on the host's audio


class OffboardVoice:
    """The host's ``say`` action, for :class:`~hayakoe_ros.speech.SpeechScheduler`'s relay.

    Args:
        node: The robot's node (its executor serves the client and the subscription).
        action: The host's action name (``offboard_action``).
        depth: Depth of the feedback and marks subscriptions (keep-last, reliable): a
            burst of a host's chunks on a slow link must not push earlier ones out.
        callback_group: Group of the client's and the subscription's callbacks.

    Raises:
        rclpy.exceptions.InvalidTopicNameException: ``action`` is not a valid ROS name.
    """

    def __init__(self, node, action: str, depth: int, callback_group) -> None:
        self.name = action
        self._node = node
        qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE)
        self._client: ActionClient = ActionClient(node, TTS, action, callback_group=callback_group,
                                    feedback_sub_qos_profile=qos)
        self._lock = threading.Lock()
        self._calls: dict = {}  # goal id (32 hex digits) -> _Call
        self._sub = node.create_subscription(String, marks_topic(action), self._on_mark,
                                             qos, callback_group=callback_group)
        # Goals given up: key -> _Pending, until the host took one. The timer ticks only
        # while one is pending: an idle robot wakes for nothing.
        self._canceling: dict = {}
        self._cancel_timer = node.create_timer(CANCEL_RETRY_S, self._send_cancels_again,
                                               callback_group=callback_group)
        self._cancel_timer.cancel()

    @property
    def available(self) -> bool:
        """True while the host's action server is discovered."""
        return self._client.server_is_ready()

    def call(self, text: str, rate: float) -> _Call:
        """Send one utterance to the host; see :class:`.remote.RemoteVoice`.

        Raises:
            RemoteUnavailable: no server of the action is discovered (the host is down,
                unreachable, or the name is wrong).
        """
        if not self._client.server_is_ready():
            raise RemoteUnavailable(f'no action server at {self.name}')
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        call = _Call(self, bytes(goal_id.uuid).hex())
        with self._lock:
            self._calls[call.key] = call
        low, high = RATE_RANGE
        goal = TTS.Goal(text=text, language='ja', rate=min(high, max(low, float(rate))),
                        volume=1.0)
        future = self._client.send_goal_async(goal, feedback_callback=call.on_feedback,
                                              goal_uuid=goal_id)
        future.add_done_callback(call.on_goal_response)
        self.wake()
        return call

    def cancel_goal(self, key: str, handle) -> None:
        """Cancel the host's goal, and again until it is taken.

        Sent again :data:`CANCEL_RETRY_S` after, then at doubling intervals up to
        :data:`CANCEL_RETRY_MAX_S`, until the goal's status (the action's status topic)
        says it is canceling or has ended: a request lost on the way (a link cut past
        the DDS lease, a stalled host) is sent again once the host is back, for at most
        :data:`CANCEL_GIVE_UP_S`.
        """
        now = time.monotonic()
        with self._lock:
            if key not in self._canceling:
                self._canceling[key] = _Pending(handle, now, now + CANCEL_RETRY_S,
                                                CANCEL_RETRY_S, now)
            if self._cancel_timer.is_canceled():
                self._cancel_timer.reset()
        handle.cancel_goal_async()
        self.wake()

    def _send_cancels_again(self) -> None:
        """The timer's tick (executor thread): cancels not yet taken and due go out again."""
        now = time.monotonic()
        due = []
        with self._lock:
            for key, p in list(self._canceling.items()):
                if p.handle.status in _ENDED or now - p.since > CANCEL_GIVE_UP_S:
                    del self._canceling[key]
                elif now >= p.next_at:
                    p.interval = min(CANCEL_RETRY_MAX_S, 2.0 * p.interval)
                    p.next_at, p.sent = now + p.interval, now
                    due.append(p.handle)
            if not self._canceling:
                self._cancel_timer.cancel()
        for handle in due:
            handle.cancel_goal_async()

    def cancel_again(self, key: str) -> None:
        """Send a pending cancel again now: the host spoke for its goal.

        Not when one went out in the last :data:`CANCEL_RESEND_MIN_S`, nor for a goal
        whose cancel was taken already.
        """
        now = time.monotonic()
        with self._lock:
            pending = self._canceling.get(key)
            if pending is None or now - pending.sent < CANCEL_RESEND_MIN_S:
                return
            pending.sent = now
        pending.handle.cancel_goal_async()

    def forget(self, key: str) -> None:
        """Stop routing marks to a call given up."""
        with self._lock:
            self._calls.pop(key, None)

    def wake(self) -> None:
        """Wake the executor: a request made from another thread goes out now."""
        executor = self._node.executor
        if executor is not None:
            executor.wake()

    def _on_mark(self, msg: String) -> None:
        try:
            obj = json.loads(msg.data)
            key = obj['utterance']
        except (ValueError, KeyError, TypeError, RecursionError):
            return  # not a mark of ours: the host reports its own bad input
        if not isinstance(key, str):
            return  # (a list or an object: unhashable)
        with self._lock:
            call = self._calls.get(key)
        if call is not None:
            call.on_mark(obj)

    def destroy(self) -> None:
        """Destroy the client and the subscription (calls still open get no more events)."""
        with self._lock:
            self._calls.clear()
            self._canceling.clear()
        self._node.destroy_timer(self._cancel_timer)
        self._node.destroy_subscription(self._sub)
        self._client.destroy()


#: Live parameters of the relay: node parameter = :class:`~hayakoe_ros.speech.SchedulerConfig`
#: field.
OFFBOARD_LIVE = ('offboard_timeout_s', 'offboard_stall_s')


def offboard_voice(node, callback_group) -> Optional[OffboardVoice]:
    """The node's remote voice from ``offboard_action`` (None when it is empty).

    Raises:
        ValueError: the name is not a valid ROS action name (the message names it).
    """
    action = node.get_parameter('offboard_action').value.strip()
    if not action:
        return None
    try:
        voice = OffboardVoice(node, action, node.get_parameter('qos_depth').value,
                              callback_group)
    except Exception as exc:  # rclpy's name errors have no common base
        raise ValueError(f"offboard_action '{action}' is not a valid action name: "
                         f'{exc}') from None
    node.get_logger().info(f'offboard: each utterance goes to {action} first (host '
                           f"{'found' if voice.available else 'not found yet'})")
    return voice


def offboard_values(voice: Optional[OffboardVoice], scheduler) -> dict:
    """Diagnostics key/values of the host: its action, whether it is found, its record."""
    if voice is None:
        return {}
    values = {'offboard_action': voice.name,
              'offboard_host': 'found' if voice.available else 'not found'}
    if scheduler is not None:
        values.update(scheduler.host_health.values())
    return values
