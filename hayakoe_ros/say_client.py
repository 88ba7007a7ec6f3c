# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ROS side of ``say``: send one ``say`` goal, record the audio, write a WAV file.

:mod:`hayakoe_ros.say` parses the command line and imports this module only when a node is
to be asked (``--print-reading`` needs no ROS). Prints the audio duration, the time to
first audio (goal sent to first feedback chunk) and the real-time factor (the node's
synthesis compute time over audio duration, from a /diagnostics report already received
that counts the utterance; else wall time over audio duration). It returns once the
result and the goal's last chunk are in (0.1 s with no chunk after the result), names
the TTS action servers it sees when its own is not among them, and on SIGINT cancels its
goal and exits 130 without a traceback. With ``--marks`` it also subscribes to the
node's ``marks`` topic and prints the goal's speech marks as they come
(:mod:`hayakoe_ros.say_marks`), waiting a little after the result for the ``end`` mark.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Optional
import uuid
import wave

import numpy as np
import rclpy
from action_msgs.msg import GoalStatus
from audio_common_msgs.action import TTS
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.action import ActionClient, get_action_names_and_types
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from std_msgs.msg import String
from unique_identifier_msgs.msg import UUID

from .say_marks import Timeline
from .early_signals import catch_signals

#: Depth of the client's feedback queue: the node's audio depth (qos_depth, 100): the WAV
#: is written from feedback, and rclpy's default depth 10 lost chunks when the client
#: stalled for 0.3 s.
FEEDBACK_DEPTH = 100

#: How long ``say`` goes on taking its goal's feedback after the result, until none comes
#: for this long (s). The node publishes every chunk before it sends the result, but on
#: another DDS writer, so a client behind the stream (a slow disk, a loaded machine) can
#: still hold chunks in its queue then; taking them costs about 0.5 ms a chunk here. A
#: chunk still in flight longer than this (resent over a lossy link) is not waited for.
FEEDBACK_SETTLE_S = 0.1

#: How long ``say`` looks for its action server before naming the TTS action servers it
#: sees instead (s): discovery takes well under a second where multicast works, and up to
#: one participant announcement period (3 s, Fast DDS) where the first announcements are
#: lost.
LOOK_AROUND_S = 5.0

#: How long a canceled goal's cancel request gets to reach the node at SIGINT (s).
CANCEL_WAIT_S = 2.0

#: How long ``say --marks`` waits for the ``marks`` publisher before sending its goal, and
#: for the ``end`` mark after the result (s): the node publishes that mark before the
#: result, on another topic, so it is normally in already.
MARKS_WAIT_S = 3.0

#: Depth of the ``marks`` subscription: an utterance has several marks per chunk
#: (phonemes, visemes), all released at once before the chunk.
MARKS_DEPTH = 1000


def write_wav(path: str, samples: np.ndarray, sample_rate: int) -> None:
    """Write mono int16 PCM ``samples`` (shape ``(n,)``) to a WAV file at ``sample_rate`` Hz.

    Uses the standard library's :mod:`wave` writer, on a file opened first (a path that
    cannot be opened raises :class:`OSError` alone: ``wave.open(path)`` then also printed
    an exception of its own ``__del__``).
    """
    with open(path, 'wb') as out, wave.open(out, 'wb') as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(int(sample_rate))
        wav.writeframes(np.asarray(samples, dtype='<i2').tobytes())


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived while ``say`` waited (its goal, if any, was canceled)."""


class SayClient(Node):
    """Action client that collects the feedback audio of one ``say`` goal.

    Args:
        action_name: The ``say`` action's name (relative names resolve in the node's
            namespace).
        stop: Set by a signal handler: every wait ends, the goal is canceled.
        marks_topic: Subscribe to this ``marks`` topic and print the goal's marks
            through ``timeline`` (None: no marks).
        timeline: Prints the marks (default: every type, to stdout).
    """

    def __init__(self, action_name: str = 'say',
                 stop: Optional[threading.Event] = None,
                 marks_topic: Optional[str] = None,
                 timeline: Optional[Timeline] = None) -> None:
        super().__init__('say_client')
        self._client: ActionClient = ActionClient(self, TTS, action_name)
        # The goal's chunks come from the action's feedback topic itself, not through the
        # client's feedback callback: rclpy's action client drops a goal's feedback that
        # it takes after the goal's result, and the WAV is written from the feedback.
        self._goal_id: Optional[bytes] = None
        self._feedback_sub = self.create_subscription(
            TTS.Impl.FeedbackMessage, f'{action_name}/_action/feedback', self._on_feedback,
            QoSProfile(depth=FEEDBACK_DEPTH, reliability=ReliabilityPolicy.RELIABLE))
        self._name = action_name
        self._stop = stop or threading.Event()
        #: Whether a goal went out (a signal after that cancels it).
        self.goal_sent = False
        self.chunks: list = []
        self.sample_rate = 0
        self.first_audio_at: Optional[float] = None
        self.last_rtf: Optional[float] = None
        self.spoken: Optional[int] = None  # the node's utterances_spoken, from /diagnostics
        self._baseline: Optional[int] = None
        self._diag = self.create_subscription(DiagnosticArray, '/diagnostics',
                                              self._on_diag, 10)
        self._lock = threading.Lock()
        self.timeline: Optional[Timeline] = None
        self._marks_sub = None
        if marks_topic is not None:
            self.timeline = timeline or Timeline()
            self._marks_sub = self.create_subscription(
                String, marks_topic, lambda msg: self.timeline.on_message(msg.data),
                QoSProfile(depth=MARKS_DEPTH, reliability=ReliabilityPolicy.RELIABLE))

    def _on_diag(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            if 'utterances_spoken' not in values:
                continue
            self.spoken = int(values['utterances_spoken'])
            # Only a report that counts our utterance carries its RTF.
            if self._baseline is not None and self.spoken > self._baseline and \
                    values.get('last_rtf'):
                self.last_rtf = float(values['last_rtf'])

    def _on_feedback(self, feedback_msg) -> None:
        """One chunk of some goal of the action (``TTS.Impl.FeedbackMessage``): keep ours."""
        if bytes(feedback_msg.goal_id.uuid) != self._goal_id:
            return  # another client's goal, or one before ours
        audio = feedback_msg.feedback.audio.audio
        with self._lock:
            if self.first_audio_at is None:
                self.first_audio_at = time.monotonic()
            self.sample_rate = audio.info.rate
            self.chunks.append(np.asarray(audio.audio_data.int16_data, dtype=np.int16))

    def _spin_until(self, done, timeout: float) -> bool:
        """Spin until ``done()`` (True), the timeout or a signal (False)."""
        deadline = time.monotonic() + timeout
        while not done():
            if self._stop.is_set() or time.monotonic() >= deadline:
                return False
            rclpy.spin_once(self, timeout_sec=0.05)
        return True

    def tts_servers(self) -> list:
        """Names of the ``audio_common_msgs/action/TTS`` action servers seen on the graph."""
        return sorted(name for name, types in get_action_names_and_types(self)
                      if 'audio_common_msgs/action/TTS' in types)

    def wait_for_server(self, timeout: float) -> None:
        """Wait for the action server; name the TTS servers seen if it is not among them.

        Raises:
            TimeoutError: the server is not there: at once after :data:`LOOK_AROUND_S`
                when other TTS action servers are seen (a wrong name or namespace), else
                after ``timeout``.
            Interrupted: a signal came.
        """
        name = self._name
        deadline = time.monotonic() + timeout
        look_at = time.monotonic() + min(LOOK_AROUND_S, timeout)
        said_waiting = False
        while not self._client.server_is_ready():
            if self._stop.is_set():
                raise Interrupted()
            now = time.monotonic()
            if now >= look_at and not said_waiting:
                others = [n for n in self.tts_servers() if n != self.resolve_name(name)]
                if others:
                    raise TimeoutError(
                        f"no '{name}' action server; TTS action servers seen: "
                        f"{', '.join(others)} (use --action NAME)")
                print(f"say: waiting for the '{name}' action server (no TTS action server "
                      'seen yet: is tts_node running and active?)', file=sys.stderr)
                said_waiting = True
            if now >= deadline:
                raise TimeoutError(f"no '{name}' action server within {timeout:g} s "
                                   '(is tts_node running and active?)')
            rclpy.spin_once(self, timeout_sec=0.05)

    def resolve_name(self, name: str) -> str:
        """``name`` as the graph shows it (relative names in this node's namespace)."""
        if name.startswith('/'):
            return name
        ns = self.get_namespace().rstrip('/')
        return f'{ns}/{name}'

    def say(self, text: str, language: str, rate: float, volume: float,
            timeout: float) -> tuple:
        """Send the goal and wait; return ``(status, result_text, sent_at, done_at)``.

        Returns once the result is in and the goal's chunks still queued are taken
        (:data:`FEEDBACK_SETTLE_S` with none after the result), every chunk in
        :attr:`chunks`; ``done_at`` is when the result came. A signal cancels the goal
        (the node stops speaking) before :class:`Interrupted` is raised, and so does a
        timeout before its :class:`TimeoutError` (a goal left speaking would hold every
        later utterance behind it).

        Raises:
            TimeoutError: no action server, or no answer or result within ``timeout`` s.
            RuntimeError: the goal was rejected or ended without a result.
            Interrupted: SIGINT or SIGTERM.
        """
        self.wait_for_server(timeout)
        self._wait_marks_publisher()
        self._baseline = self.spoken  # utterances the node had spoken, if it has said yet
        goal = TTS.Goal(text=text, language=language, rate=rate, volume=volume)
        sent_at = time.monotonic()
        goal_id = uuid.uuid4().bytes
        self._goal_id = goal_id
        future = self._client.send_goal_async(goal, goal_uuid=UUID(uuid=list(goal_id)))
        self.goal_sent = True
        if not self._spin_until(future.done, timeout):
            self._cancel(future)
            if self._stop.is_set():
                raise Interrupted()
            raise TimeoutError(f'the node did not answer the goal within {timeout:g} s '
                               '(canceled if it was accepted)')
        handle = future.result()
        if handle is None or not handle.accepted:
            raise RuntimeError('goal rejected by the node')
        if self.timeline is not None:
            self.timeline.set_key(bytes(handle.goal_id.uuid).hex())
        result_future = handle.get_result_async()
        if not self._spin_until(result_future.done, timeout):
            self._cancel(future)
            if self._stop.is_set():
                raise Interrupted()
            raise TimeoutError(f'no result within {timeout:g} s; the goal was canceled')
        done_at = time.monotonic()
        self._take_queued_feedback()
        result = result_future.result()
        if result is None:
            raise RuntimeError('the goal ended without a result')
        rclpy.spin_once(self, timeout_sec=0.0)  # a /diagnostics report already in: its RTF
        timeline, sub = self.timeline, self._marks_sub
        if timeline is not None and sub is not None and sub.get_publisher_count() and \
                not self._spin_until(lambda: timeline.ended, MARKS_WAIT_S) and \
                not self._stop.is_set():
            print(f'say: no end mark within {MARKS_WAIT_S:.0f} s of the result',
                  file=sys.stderr)
        return result.status, result.result.text, sent_at, done_at

    def _take_queued_feedback(self) -> None:
        """After the result: spin until :data:`FEEDBACK_SETTLE_S` passes with no chunk.

        A heuristic bound, not an ordering guarantee: the chunks were published before the
        result, so those not yet taken are normally in this client's queue already and
        the executor takes them at once. Ends early on a signal.
        """
        while not self._stop.is_set():
            with self._lock:
                had = len(self.chunks)
            self._spin_until(lambda had=had: len(self.chunks) > had, FEEDBACK_SETTLE_S)
            with self._lock:
                if len(self.chunks) == had:
                    return

    def _wait_marks_publisher(self) -> None:
        """With ``--marks``: wait (bounded) until the ``marks`` publisher is matched.

        Marks are reliable but volatile: a subscription matched late misses the first
        ones. A node with ``marks: false`` has no publisher: say so and go on.
        """
        sub = self._marks_sub
        if sub is None:
            return
        if not self._spin_until(lambda: sub.get_publisher_count() > 0, MARKS_WAIT_S):
            if self._stop.is_set():
                raise Interrupted()
            print(f"say: nothing publishes '{sub.topic_name}' (the node's marks parameter "
                  'false, or use --marks-topic): no timeline', file=sys.stderr)

    def _cancel(self, sent) -> None:
        """Cancel the goal of ``sent`` (its send future) once it is answered.

        Both waits are bounded by :data:`CANCEL_WAIT_S` and end at once when done; with
        ``--marks`` the second also waits for the goal's ``end`` mark (what was heard).
        """
        until = time.monotonic() + CANCEL_WAIT_S
        while not sent.done() and time.monotonic() < until:
            rclpy.spin_once(self, timeout_sec=0.05)
        handle = sent.result() if sent.done() else None
        if handle is not None and handle.accepted:
            canceled = handle.cancel_goal_async()
            timeline = self.timeline  # --marks: its end line says what was heard
            while (not canceled.done() or timeline is not None and not timeline.ended) \
                    and time.monotonic() < until:
                rclpy.spin_once(self, timeout_sec=0.05)


def run(args, text: str, ros_args: list, stop: Optional[threading.Event] = None,
        caught: Optional[list] = None) -> int:
    """Speak ``text`` through the node's ``say`` action with the parsed ``args``.

    Args:
        args: The parsed command line.
        text: The text to speak.
        ros_args: ``--ros-args ...`` for ``rclpy.init``.
        stop: Set by the caller's SIGINT/SIGTERM handler, which appends the signal's
            number to ``caught``; None: this function installs such a handler.
        caught: See ``stop``.

    Returns:
        The exit status: 0 when the goal succeeded, 1 on an error or another outcome,
        130 after SIGINT (143 after SIGTERM), its goal canceled.
    """
    if stop is None or caught is None:
        stop, caught = catch_signals()
    try:
        rclpy.init(args=['say'] + ros_args, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as exc:  # e.g. UnknownROSArgsError: say what, no traceback
        print(f'say: cannot start ROS: {exc}', file=sys.stderr)
        return 1
    try:
        node = SayClient(args.action, stop, args.marks_topic if args.marks else None,
                         Timeline(args.mark_types) if args.marks else None)
    except (ValueError, TypeError) as exc:  # an action or topic name ROS cannot take
        print(f'say: invalid --action {args.action!r} or --marks-topic '
              f'{args.marks_topic!r}: {exc}', file=sys.stderr)
        rclpy.shutdown()
        return 1
    try:
        status, result_text, sent_at, done_at = node.say(
            text, args.language, args.rate, args.volume, args.timeout)
        audio = np.concatenate(node.chunks) if node.chunks else np.zeros(0, np.int16)
        if status != GoalStatus.STATUS_SUCCEEDED:
            name = next((k[len('STATUS_'):] for k, v in vars(GoalStatus).items()
                         if k.startswith('STATUS_') and v == status), 'UNKNOWN')
            print(f'say: goal ended {name} (status {status}): {result_text}',
                  file=sys.stderr)
            return 1
        if not args.no_wav:
            try:
                write_wav(args.output, audio, node.sample_rate or 44100)
            except OSError as exc:  # checked before speaking; the disk may fill since
                print(f'say: cannot write {args.output}: {exc.strerror or exc}',
                      file=sys.stderr)
                return 1
        duration = audio.size / node.sample_rate if node.sample_rate else 0.0
        ttfa = (node.first_audio_at - sent_at) if node.first_audio_at else float('nan')
        if node.last_rtf is not None:
            rtf, how = node.last_rtf, 'synthesis time / audio duration, from the node'
        else:
            rtf, how = (done_at - sent_at) / duration if duration else float('nan'), \
                'wall time / audio duration'
        print(f'spoken: {result_text}')
        what = 'received' if args.no_wav else f'wrote {args.output}:'
        print(f'{what} {duration:.2f} s of audio at {node.sample_rate} Hz, '
              f'{len(node.chunks)} chunks')
        print(f'time to first audio: {ttfa * 1000:.0f} ms')
        print(f'real-time factor: {rtf:.3f} ({how})')
        return 0
    except Interrupted:
        signum = caught[0] if caught else signal.SIGINT
        print('say: interrupted; the goal was canceled' if node.goal_sent
              else 'say: interrupted before a goal was sent', file=sys.stderr)
        return 128 + int(signum)
    except (TimeoutError, RuntimeError) as exc:
        print(f'say: {exc}', file=sys.stderr)
        return 1
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
