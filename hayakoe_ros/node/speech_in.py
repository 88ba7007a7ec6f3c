# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speech into ``tts_node``: the text topics and goals, to the front end and the scheduler.

Every way in goes the same way: the text front end (``prepare``: text to segments, errors
to the caller) and then the scheduler (segments to audio) as one utterance with an id
(a goal's UUID, else a fresh one) that marks and logs name:

* ``text`` (``std_msgs/String``): one utterance per message, queued by ``queue_policy``;
* ``text_stream``: fragments of one reply (:mod:`.stream_in`);
* ``text_urgent``: spoken next, ahead of the line, whatever ``queue_policy``; the one
  speaking stops within a chunk and goes on after it from the start of the sentence that
  was cut (``resume_interrupted``), else ends ``interrupted``. Its subscription exists
  from configure on, so an urgent text while the node is inactive gets an error in the
  log and an end mark instead of vanishing;
* ``say`` goals (:mod:`.say_action` calls :meth:`SpeechIn.speak_goal`).

A refused text (bad input, a full queue, an inactive node) is logged as WARN and gets an
``end`` mark ``aborted`` with the error; the node keeps serving and nothing queued is lost.
"""

from __future__ import annotations

import threading
import uuid
from typing import Callable, Optional

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.subscription import Subscription
from rclpy.timer import Timer
from std_msgs.msg import String

from ..engines import UnknownStyleError
from ..speech import QueueFullError, SchedulerClosedError, Utterance
from ..text import InputError
from ..text.pipeline import prepare
from .marks_out import MarksOut
from .say_action import BURST_DEPTH
from .stream_in import StreamIn

#: Period of the check that ends a text_stream reply after stream_timeout_s (s). The
#: timer runs only while a reply is open: ticking at 20 Hz with none open cost an idle
#: node 2.5 % of a core (each tick wakes the executor, which rebuilds its wait set).
STREAM_TICK_S = 0.05

#: What a text refused before it is queued raises (logged as WARN, not ERROR).
REFUSALS = (InputError, UnknownStyleError, QueueFullError, SchedulerClosedError)


def _not_active(node) -> SchedulerClosedError:
    """Why ``node`` takes no speech now, as the error its callers are given."""
    label = node.lifecycle_label
    if label == 'active':
        # Speech stops before the state machine leaves active (a shutdown, a failed
        # transition): "active, not active" would read as a contradiction.
        return SchedulerClosedError('the node is stopping: not accepting speech')
    return SchedulerClosedError(f'the node is {label}, not active: not accepting speech')


class SpeechIn:
    """The node's text subscriptions and the one path from a text to the scheduler.

    Args:
        node: The ``TTSNode`` (its ``scheduler``, ``active``, ``lifecycle_label``,
            ``voice(goal_rate)``, ``stats``, ``record(utt, kind)`` and parameters).
        marks: The node's :class:`~.marks_out.MarksOut` (end marks of refused texts).
        group: The callback group of the stream timer.

    Each text subscription has a mutually exclusive group of its own: in the node's
    reentrant group the executor ran two messages of one topic at once on two threads,
    which queued topic texts out of order and put a reply's fragments together in the
    wrong order. The topics stay apart, so an urgent text never waits behind a flood of
    fragments.
    """

    def __init__(self, node, marks: MarksOut, group) -> None:
        self._node = node
        self._marks = marks
        self._group = group
        self._in_order = {topic: MutuallyExclusiveCallbackGroup()
                          for topic in ('text', 'text_stream', 'text_urgent')}
        self._subs: list = []
        self._urgent_sub: Optional[Subscription] = None
        self._stream: Optional[StreamIn] = None
        self._timer: Optional[Timer] = None
        # Orders "a reply opened: arm the timer" against "no reply open: disarm it", which
        # run on two executor threads; without it a disarm could follow the arming.
        self._timer_lock = threading.Lock()

    # -------------------------------------------------------------- subscriptions
    def open_urgent(self) -> None:
        """Subscribe ``text_urgent`` (at configure: it answers while inactive too)."""
        self._urgent_sub = self._node.create_subscription(
            String, 'text_urgent', self._on_urgent, BURST_DEPTH,
            callback_group=self._in_order['text_urgent'])

    def activate(self) -> None:
        """Subscribe ``text`` and ``text_stream`` and start the stream's timeout check."""
        node = self._node
        self._stream = StreamIn(self._queue_stream, self.prepare, self._marks.refused,
                                node.get_logger(),
                                lambda: node.get_parameter('max_segment_chars').value,
                                reply_limit=lambda: node.get_parameter('max_chars').value)
        self._subs = [
            node.create_subscription(String, 'text', self._on_text, BURST_DEPTH,
                                     callback_group=self._in_order['text']),
            node.create_subscription(String, 'text_stream', self._on_fragment, BURST_DEPTH,
                                     callback_group=self._in_order['text_stream'])]
        self._timer = node.create_timer(STREAM_TICK_S, self._stream_tick,
                                        callback_group=self._group, autostart=False)

    def deactivate(self) -> None:
        """Stop taking ``text`` and ``text_stream``; a reply being received ends."""
        for sub in self._subs:
            self._node.destroy_subscription(sub)
        self._subs = []
        with self._timer_lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            self._node.destroy_timer(timer)
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()

    def close(self) -> None:
        """Everything off (cleanup): :meth:`deactivate` and ``text_urgent``."""
        self.deactivate()
        if self._urgent_sub is not None:
            self._node.destroy_subscription(self._urgent_sub)
            self._urgent_sub = None

    # -------------------------------------------------------------- the one path
    def prepare(self, text: str, plain: bool = False) -> tuple:
        """The front end of one text: ``(cleaned, segments)`` (``plain``: never SSML).

        Raises:
            InputError: what :func:`~hayakoe_ros.text.pipeline.prepare` raises.
            SchedulerClosedError: the node has no scheduler (not configured).
        """
        scheduler = self._node.scheduler
        if scheduler is None:
            raise SchedulerClosedError(f'the node is {self._node.lifecycle_label}: not '
                                       'accepting speech')
        cfg = scheduler.config
        return prepare(text, cfg.max_chars, cfg.max_segment_chars, cfg.first_segment_morae,
                       plain)

    def queue(self, segments: list, cleaned: str, text: str, kind: str, key: str,
              goal_rate: float = 1.0, volume: float = 1.0,
              on_done: Optional[Callable] = None, on_chunk: Optional[Callable] = None,
              **how) -> Utterance:
        """Hand segments to the scheduler as one utterance.

        Args:
            segments: From :meth:`prepare` (offsets into ``text``).
            cleaned: The cleaned text (a goal's result).
            text: The text as the caller sent it.
            kind: ``topic``, ``goal``, ``stream`` or ``urgent`` (logs).
            key: The utterance's id (marks, logs).
            goal_rate: A goal's speaking-rate multiplier.
            volume: A goal's linear gain.
            on_done: Called with the utterance once it has its outcome, after its end mark.
            on_chunk: Called per chunk (a goal's feedback).
            how: ``streaming``, ``urgent``, ``resume`` for
                :meth:`~hayakoe_ros.speech.SpeechScheduler.submit`.

        Raises:
            SchedulerClosedError: the node is not active. What ``submit`` raises.
        """
        node = self._node
        scheduler = node.scheduler
        if not node.active or scheduler is None:
            raise _not_active(node)

        def done(utt: Utterance) -> None:
            self._marks.end(utt)  # before the goal's result: the caller may act on both
            node.record(utt, kind)
            if on_done is not None:
                on_done(utt)
        return scheduler.submit(segments, node.voice(goal_rate=goal_rate), text=cleaned,
                                volume=volume, on_done=done, on_chunk=on_chunk, key=key,
                                source=text, **how)

    def submit(self, text: str, kind: str, key: str, goal_rate: float = 1.0,
               volume: float = 1.0, on_done=None, on_chunk=None, **how) -> Utterance:
        """:meth:`prepare` then :meth:`queue` (raises what they raise)."""
        if not self._node.active:
            raise _not_active(self._node)
        cleaned, segments = self.prepare(text)
        return self.queue(segments, cleaned, text, kind, key, goal_rate, volume, on_done,
                          on_chunk, **how)

    def speak_goal(self, goal, on_done, on_chunk, key: str) -> Utterance:
        """Queue a ``say`` goal (its UUID as ``key``); errors are the goal's abort reason."""
        try:
            return self.submit(goal.text, 'goal', key, goal.rate, goal.volume, on_done,
                               on_chunk)
        except REFUSALS as exc:
            self._node.stats.last_error = str(exc)
            raise

    # -------------------------------------------------------------- callbacks
    def _queue_stream(self, segments: list, text: str, key: str) -> Utterance:
        return self.queue(segments, text, text, 'stream', key, streaming=True)

    def _on_fragment(self, msg: String) -> None:
        stream, timer = self._stream, self._timer
        if stream is None or timer is None:
            return  # deactivated meanwhile
        stream.fragment(msg.data)
        with self._timer_lock:
            if self._timer is timer and stream.open and timer.is_canceled():
                timer.reset()

    def _stream_tick(self) -> None:
        stream, timer = self._stream, self._timer
        if stream is None or timer is None:
            return
        if stream.open:
            stream.check_timeout(self._node.get_parameter('stream_timeout_s').value)
        with self._timer_lock:
            if self._timer is timer and not stream.open:
                timer.cancel()

    def _on_text(self, msg: String) -> None:
        self._take(msg.data, 'topic')

    def _on_urgent(self, msg: String) -> None:
        self._take(msg.data, 'urgent', urgent=True,
                   resume=bool(self._node.get_parameter('resume_interrupted').value))

    def _take(self, text: str, kind: str, **how) -> None:
        """Speak a topic's text; a refusal is logged and gets an end mark."""
        # Topic texts get an id like a goal's (32 hex digits): marks and logs name it.
        key = uuid.uuid4().hex
        log = self._node.get_logger()
        try:
            self.submit(text, kind, key, **how)
        except REFUSALS as exc:
            error = str(exc)
            log.warning(f'{self._topic(kind)}: not speaking {text[:40]!r} [{key}]: {error}')
        except Exception as exc:  # an unforeseen input must not take the node down
            error = f'{type(exc).__name__}: {exc}'
            log.error(f'{self._topic(kind)}: failed on {text[:40]!r} [{key}]: {error}')
        else:
            return
        self._node.stats.last_error = error
        self._marks.refused(key, text, error)

    @staticmethod
    def _topic(kind: str) -> str:
        return 'text urgent topic' if kind == 'urgent' else 'text topic'


__all__ = ['REFUSALS', 'STREAM_TICK_S', 'SpeechIn']
