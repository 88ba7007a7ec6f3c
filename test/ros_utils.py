# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Helpers for tests that run ``tts_node`` as a real process and talk to it over the rmw."""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from typing import Optional
import uuid

import numpy as np
import rclpy
from audio_common_msgs.action import TTS
from audio_common_msgs.msg import AudioStamped
from action_msgs.msg import GoalStatus
from action_msgs.srv import CancelGoal
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.action import ActionClient
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription
from std_msgs.msg import String

from hayakoe_ros.say_client import FEEDBACK_DEPTH
from tools.node_process import FLEET_COMMAND, NodeProcess, new_namespace

__all__ = ['CHUNK', 'AudioRecorder', 'Client', 'MarkRecorder', 'NodeProcess', 'change_state',
           'init_rclpy', 'new_namespace', 'send_goal', 'tiny_params', 'wait_future']

#: Frames per audio message in the tests' node parameters.
CHUNK = 1024


def tiny_params(root, **extra) -> dict:
    """Parameters that run the tiny hayakoe model (tree ``root``) deterministically."""
    params = dict(engine='hayakoe', fallback_engine='none', speaker='tiny-jp',
                  speaker_source=f'file://{root}', bert_source=f'file://{root}',
                  noise=0.0, noise_w=0.0, sdp_ratio=0.0, chunk=CHUNK, frame_id='robot_mouth',
                  max_lead_s=0.3, num_threads=1)
    params.update(extra)
    return params


#: Longest wait for a ``tts_fleet`` process to be ready (s): the model loads once.
FLEET_READY_S = 120.0


def start_fleet(params: dict, wait: bool = True, namespace: str = '') -> NodeProcess:
    """A ``tts_fleet`` process in a namespace of its own (waits for ``fleet ready:``)."""
    node = NodeProcess(params, namespace=namespace, name='tts_fleet', command=FLEET_COMMAND,
                       wait_ready=False)
    if wait:
        node.wait_for_log('fleet ready:', FLEET_READY_S)
    return node


class Client:
    """An rclpy node in the test process, spun by a background executor."""

    def __init__(self, name: str = 'test_client') -> None:
        self.node = Node(name)
        self._action_clients: dict = {}
        self._match_marks: dict = {}  # topic -> (node process, its log length)
        # One thread, as the benchmark's client and the network tests' observer: the
        # callbacks only record what arrives, and rclpy's MultiThreadedExecutor spins a
        # core while a callback waits for a free worker (ros2/rclpy#1452), which on a
        # 2-core machine takes that core from the node under test.
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        #: Exceptions a callback raised (spinning goes on: one late message must not leave
        #: every later test of the session without a working client).
        self.errors: list = []
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        import traceback

        while rclpy.ok():
            try:
                self.executor.spin()
                return  # shut down
            except Exception as exc:  # a callback's: note it, keep serving the others
                self.errors.append(exc)
                traceback.print_exc()  # shown with the test that is running
                with open(os.path.join(tempfile.gettempdir(), 'hayakoe_ros-client-errors.log'),
                          'a', encoding='utf-8') as f:
                    f.write(traceback.format_exc())

    def close(self) -> None:
        """Stop spinning and destroy the node."""
        self.executor.shutdown()
        self.node.destroy_node()

    def audio_recorder(self, topic: str, reliability=ReliabilityPolicy.RELIABLE,
                       node: Optional[NodeProcess] = None):
        """Subscribe to ``topic`` and return the :class:`AudioRecorder`.

        With ``node`` (the ``tts_node`` that publishes it), :meth:`wait_for_subscribers`
        waits for that node to log that its publisher matched this subscription: what it
        publishes from then on arrives.
        """
        rec = AudioRecorder()
        if node is not None:
            self._match_marks[topic] = (node, node.log_mark())
        qos = QoSProfile(depth=1000, reliability=reliability)
        rec.sub = self.node.create_subscription(AudioStamped, topic, rec.on_msg, qos)
        return rec

    def action_client(self, name: str) -> ActionClient:
        """An action client of the ``TTS`` action ``name`` (waits for the server)."""
        if name in self._action_clients:
            return self._action_clients[name]
        # The say tool's feedback depth: rclpy's default (10) lost chunks whenever this
        # process's executor fell behind a burst (8 of 54 on a loaded CI machine).
        client: ActionClient = ActionClient(
            self.node, TTS, name, feedback_sub_qos_profile=QoSProfile(
                depth=FEEDBACK_DEPTH, reliability=ReliabilityPolicy.RELIABLE))
        assert client.wait_for_server(timeout_sec=30), f'no action server {name}'
        # The server answering this participant: a goal's first feedback follows its
        # acceptance, and the acceptance needs the server to have discovered this
        # client's reply reader (Fast DDS drops a response to a reader not matched
        # within 100 ms: a first goal to a fresh node then went unanswered).
        request = CancelGoal.Request()  # one goal id that is nobody's: no goal is touched
        request.goal_info.goal_id.uuid = list(uuid.uuid4().bytes)
        answered(self, CancelGoal, f'{name}/_action/cancel_goal', request)
        self._action_clients[name] = client
        return client

    def diagnostics(self, node: NodeProcess, timeout: float = 10.0):
        """The latest ``DiagnosticStatus`` that ``node`` published on /diagnostics."""
        from diagnostic_msgs.msg import DiagnosticArray

        seen: list = []
        sub = self.node.create_subscription(DiagnosticArray, '/diagnostics',
                                            lambda m: seen.extend(m.status), 10)
        prefix = node.topic(node.name)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                mine = [s for s in list(seen) if s.name.startswith(prefix)]
                if mine:
                    return mine[-1]
                time.sleep(0.1)
        finally:
            self.node.destroy_subscription(sub)
        raise AssertionError(f'no diagnostics from {prefix}')

    def matched_publisher(self, topic: str, msg_type=String, depth: int = 10,
                          timeout: float = 10.0):
        """A ``msg_type`` publisher on ``topic`` once it has matched a subscriber.

        The writer's own match count, not discovery seen from this node: a reliable,
        volatile writer drops what it publishes before it has matched the reader
        (a text sent at once was lost on a loaded CI machine: 0 chunks in 60 s).

        Raises:
            AssertionError: nothing subscribed to ``topic`` within ``timeout`` seconds.
        """
        pub = self.node.create_publisher(msg_type, topic, depth)
        deadline = time.monotonic() + timeout
        while pub.get_subscription_count() < 1:
            if time.monotonic() > deadline:
                self.node.destroy_publisher(pub)
                raise AssertionError(f'no subscriber matched the publisher on {topic}')
            time.sleep(0.02)
        return pub

    def wait_for_subscribers(self, topic: str, publisher_count: int = 1,
                             timeout: float = 10.0) -> None:
        """Wait until what is published on ``topic`` reaches this client's recorder.

        For a recorder made with ``node``: until the node logs that its publisher matched
        it (the writer's side, which decides what is sent). Otherwise until
        ``publisher_count`` publishers are discovered.
        """
        marked = self._match_marks.pop(topic, None)
        if marked is not None:
            node, mark = marked
            node.wait_for_log(f'{topic}: a subscriber matched', timeout, after=mark)
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.node.count_publishers(topic) >= publisher_count:
                return
            time.sleep(0.05)
        raise AssertionError(f'no publisher on {topic}')


class AudioRecorder:
    """Keeps every ``AudioStamped`` received, with its arrival time."""

    def __init__(self) -> None:
        self.msgs: list = []
        self.lock = threading.Lock()
        self.sub: Optional[Subscription] = None

    def on_msg(self, msg: AudioStamped) -> None:
        with self.lock:
            self.msgs.append((time.monotonic(), msg))

    def count(self) -> int:
        with self.lock:
            return len(self.msgs)

    def samples(self) -> np.ndarray:
        """All received int16 samples, concatenated."""
        with self.lock:
            return np.concatenate([np.asarray(m.audio.audio_data.int16_data, np.int16)
                                   for _, m in self.msgs]) if self.msgs else np.zeros(0)

    def wait_quiet(self, quiet_s: float = 1.0, timeout: float = 60.0,
                   min_count: int = 1) -> None:
        """Wait until at least ``min_count`` messages arrived and none for ``quiet_s``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                last = self.msgs[-1][0] if self.msgs else None
                n = len(self.msgs)
            if n >= min_count and last is not None and time.monotonic() - last > quiet_s:
                return
            time.sleep(0.05)
        raise AssertionError(f'audio did not finish within {timeout} s ({self.count()} msgs)')


class MarkRecorder:
    """Every JSON mark on a ``marks`` topic, by utterance, in arrival order."""

    def __init__(self, client, topic):
        self.marks: list = []
        self.lock = threading.Lock()
        self.sub = client.node.create_subscription(
            String, topic, self._on, QoSProfile(depth=1000,
                                                reliability=ReliabilityPolicy.RELIABLE))

    def _on(self, msg):
        with self.lock:
            self.marks.append(json.loads(msg.data))

    def of(self, utterance=None, kind=None):
        with self.lock:
            return [m for m in self.marks if (utterance is None or m['utterance'] == utterance)
                    and (kind is None or m['type'] == kind)]

    def wait_end(self, utterance=None, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ends = self.of(utterance, 'end')
            if ends:
                return ends[-1]
            time.sleep(0.02)
        raise AssertionError(f'no end mark for {utterance}')


def wait_future(future, timeout: float = 60.0):
    """Block until an rclpy future (spun elsewhere) is done; return its result."""
    deadline = time.monotonic() + timeout
    while not future.done():
        if time.monotonic() > deadline:
            raise AssertionError('future not done in time')
        time.sleep(0.01)
    return future.result()


def send_goal(client, action, text: str, **fields) -> tuple:
    """Send a ``TTS`` goal through ``action``; return ``(goal_handle, feedback list)``.

    Each feedback entry is ``(time.monotonic() on arrival, feedback message)``.
    """
    feedback: list = []
    goal = TTS.Goal(text=text, **fields)
    future = action.send_goal_async(
        goal, feedback_callback=lambda fb: feedback.append((time.monotonic(), fb.feedback)))
    handle = wait_future(future, 30)
    assert handle.accepted
    return handle, feedback


def ended(handle, timeout: float = 120.0) -> int:
    """Wait until the goal of ``handle`` shows a terminal status; return it.

    The status comes on the action's status topic and leaves the goal's feedback callback
    in place, unlike the result: rclpy's action client drops a goal's feedback taken
    after its result arrived, so a test that counts the feedback waits for this, then
    for its feedback, and only then asks for the result. Raises ``AssertionError`` after
    ``timeout`` s.
    """
    terminal = (GoalStatus.STATUS_SUCCEEDED, GoalStatus.STATUS_ABORTED,
                GoalStatus.STATUS_CANCELED)
    deadline = time.monotonic() + timeout
    while handle.status not in terminal:
        assert time.monotonic() < deadline, f'the goal did not end (status {handle.status})'
        time.sleep(0.01)
    return handle.status


def answered(client, srv_type, name: str, request, timeout: float = 30.0,
             each: float = 1.0) -> None:
    """Call service ``name`` with a request that changes nothing until one is answered.

    A service's first answer to a participant it has not discovered yet can be lost (Fast
    DDS waits 100 ms for the requester's reply reader to match, then drops the reply); a
    harmless call repeated every ``each`` s until one comes back shows that the server
    has discovered this client. Raises ``AssertionError`` after ``timeout`` s.
    """
    srv = client.node.create_client(srv_type, name)
    try:
        assert srv.wait_for_service(timeout_sec=timeout), f'no service {name}'
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            future = srv.call_async(request)
            until = min(deadline, time.monotonic() + each)
            while not future.done() and time.monotonic() < until:
                time.sleep(0.01)
            if future.done():
                return
        raise AssertionError(f'{name} never answered in {timeout} s')
    finally:
        client.node.destroy_client(srv)


def change_state(client, node, transition_id) -> bool:
    """Request lifecycle transition ``transition_id`` of ``node``; return its success."""
    answered(client, GetState, node.topic(f'{node.name}/get_state'), GetState.Request())
    srv = client.node.create_client(ChangeState, node.topic(f'{node.name}/change_state'))
    assert srv.wait_for_service(timeout_sec=10)
    req = ChangeState.Request()
    req.transition.id = transition_id
    ok = wait_future(srv.call_async(req), 120).success
    client.node.destroy_client(srv)
    return ok


def private_context():
    """A ``context`` fixture's body: an rclpy context of the test's own, shut down after.

    For nodes built in the test process (``rclpy.create_node(..., context=ctx)``).
    """
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.try_shutdown(context=ctx)


def init_rclpy() -> None:
    """rclpy.init() once per test process."""
    if not rclpy.ok():
        rclpy.init()


def in_process_node(overrides: dict):
    """A ``TTSNode`` in the test process (rclpy initialised), in a namespace of its own.

    Args:
        overrides: Parameter values by name, as ``-p`` would give them.
    """
    from rclpy.parameter import Parameter

    from hayakoe_ros.tts_node import TTSNode

    return TTSNode(namespace=new_namespace()[1:],
                   parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
