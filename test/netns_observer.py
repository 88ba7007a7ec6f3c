# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A robot (or host) side ROS 2 process for the network-namespace tests; JSON lines out.

The test process sits in the root network namespace and cannot reach the DDS graph of
the namespaces it made (test/netns.py), so what a robot sees is observed by this script,
started *inside* a namespace, and reported on stdout, one JSON object per line, each
with ``ev`` (the event) and ``t`` (``time.monotonic()``: one clock for every namespace,
so times from both sides of the link compare directly)::

    python test/netns_observer.py [--listen /fleet/r1/audio] [--action /fleet/r1/say]
        [--strings T] [--talk T] [--lifetime 120]   (each option may be repeated)

* ``{"ev": "up"}`` once every subscription exists;
* ``--listen TOPIC`` (``AudioStamped``, reliable, as ``player_node`` subscribes):
  ``{"ev": "audio", "topic", "t", "src", "rcv", "stamp", "n", "rate", "crc"}`` per
  message: ``src`` and ``rcv`` are the DDS source and reception timestamps, ``stamp`` the
  header stamp (the chunk's playback time on the node clock), all wall-clock ns (one
  clock on one machine, free of this process's own delays); ``n`` the samples, ``crc`` a
  CRC-32 of them;
* ``--strings TOPIC`` (``std_msgs/String``): ``{"ev": "string", "topic", "data"}``;
  ``--talk TOPIC`` publishes ``std_msgs/String`` ``"<n>"`` every 0.2 s (discovery checks);
* ``--action ACTION``: a ``TTS`` action client made at start, so that its endpoints are
  discovered with the rest (``{"ev": "server", "action"}`` once the server is found),
  and a subscription to its feedback topic: ``{"ev": "feedback", "action", "goal", "n",
  "crc", "stamp"}`` per chunk of any goal;
* commands on stdin, one JSON object a line: ``{"say": ACTION, "text": ...}`` sends a
  goal through ACTION's client (``sent`` just before it goes out, with ``wall`` in ns,
  ``accepted`` with ``goal``, ``result`` with ``status`` and ``text``);
  ``{"quit": true}`` exits.

The process exits by itself after ``--lifetime`` seconds, so an orphan never outlives a
run. :class:`Observer` is the test's side: it starts the script (in a namespace, through
``ip netns exec``) and collects its lines.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Optional, Sequence
import zlib

SCRIPT = Path(__file__).resolve()
REPO = SCRIPT.parents[1]


class Observer:
    """The script as a child process; its events in :attr:`events`.

    Args:
        start: ``start(command, **popen_kwargs) -> Popen``, e.g.
            ``functools.partial(link.popen, link.robot, env=...)`` (test/netns.py) to run
            it in a network namespace.
        args: The script's arguments.
    """

    def __init__(self, start: Callable[..., subprocess.Popen], args: Sequence[str]) -> None:
        self.events: list = []
        self.stderr: list = []
        self._lock = threading.Lock()
        self.proc = start([sys.executable, str(SCRIPT), *args], cwd=REPO,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, bufsize=1)
        self._readers = [threading.Thread(target=self._read, args=(s, f), daemon=True)
                         for s, f in ((self.proc.stdout, True), (self.proc.stderr, False))]
        for reader in self._readers:
            reader.start()

    def _read(self, stream, is_json: bool) -> None:
        for line in stream:
            if not is_json:
                self.stderr.append(line)
                continue
            try:
                event = json.loads(line)
            except ValueError:
                self.stderr.append(line)
                continue
            with self._lock:
                self.events.append(event)

    def of(self, ev: str, **match) -> list:
        """Events named ``ev`` whose fields equal ``match``, in arrival order."""
        with self._lock:
            return [e for e in self.events if e['ev'] == ev
                    and all(e.get(k) == v for k, v in match.items())]

    def wait(self, predicate: Callable[['Observer'], object], timeout: float,
             what: str) -> None:
        """Poll ``predicate(self)`` until truthy; AssertionError after ``timeout`` s or exit."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if self.proc.poll() is not None:
                raise AssertionError(f'observer exited ({self.proc.returncode}) waiting for '
                                     f'{what}:\n{self.log()}')
            if time.monotonic() > deadline:
                raise AssertionError(f'no {what} within {timeout} s:\n{self.log()}')
            time.sleep(0.02)

    def send(self, **command) -> None:
        """Write one command line to the script's stdin."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + '\n')
        self.proc.stdin.flush()

    def say(self, action: str, text: str) -> None:
        """Send a ``TTS`` goal (see the module docstring for the events it brings)."""
        self.send(say=action, text=text)

    def log(self) -> str:
        """Its stderr and the last events, for assertion messages."""
        with self._lock:
            tail = self.events[-5:]
        return ''.join(self.stderr[-40:]) + '\n'.join(map(json.dumps, tail))

    def close(self, timeout: float = 10.0) -> Optional[int]:
        """Ask it to quit, then SIGINT, then SIGKILL; return the exit status."""
        if self.proc.poll() is None:
            try:
                self.send(quit=True)
                self.proc.wait(timeout)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout)
        for reader in self._readers:
            reader.join(timeout)
        return self.proc.returncode


# --- the script --------------------------------------------------------------------------

def _emit(lock: threading.Lock, ev: str, **fields) -> None:
    line = json.dumps(dict(ev=ev, t=time.monotonic(), **fields))
    with lock:
        sys.stdout.write(line + '\n')
        sys.stdout.flush()


def _samples(audio_msg) -> tuple:
    """``(sample count, CRC-32)`` of an ``AudioStamped``'s int16 samples."""
    import numpy as np

    data = np.asarray(audio_msg.audio.audio_data.int16_data, np.int16)
    return int(data.size), zlib.crc32(data.tobytes())


def _stamp_ns(audio_msg) -> int:
    stamp = audio_msg.header.stamp
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the observer (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--listen', action='append', default=[], help='AudioStamped topic')
    parser.add_argument('--strings', action='append', default=[], help='String topic')
    parser.add_argument('--talk', action='append', default=[], help='String topic to publish')
    parser.add_argument('--action', action='append', default=[], help='TTS action client')
    parser.add_argument('--lifetime', type=float, default=120.0)
    args = parser.parse_args(argv)

    from audio_common_msgs.action import TTS
    from audio_common_msgs.msg import AudioStamped
    import rclpy
    from rclpy.action import ActionClient
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from rclpy.signals import SignalHandlerOptions
    from std_msgs.msg import String

    # Own signal handling and a polling spin (as test/interfaces_peer.py: rclpy's handlers
    # did not always wake a spinning MultiThreadedExecutor).
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_args: stop.set())
    out = threading.Lock()
    node = rclpy.create_node(f'netns_observer_{os.getpid()}')
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)

    def on_audio(topic: str):
        def callback(msg, info) -> None:
            n, crc = _samples(msg)
            _emit(out, 'audio', topic=topic, src=info['source_timestamp'],
                  rcv=info['received_timestamp'], n=n, crc=crc, stamp=_stamp_ns(msg),
                  rate=msg.audio.info.rate)
        return callback

    for topic in args.listen:
        node.create_subscription(AudioStamped, topic, on_audio(topic), qos)
    for topic in args.strings:
        node.create_subscription(
            String, topic, lambda m, topic=topic: _emit(out, 'string', topic=topic,
                                                        data=m.data), qos)
    count = [0]
    for topic in args.talk:
        pub = node.create_publisher(String, topic, qos)

        def talk(pub=pub) -> None:
            count[0] += 1
            pub.publish(String(data=str(count[0])))
        node.create_timer(0.2, talk)

    def on_feedback(action: str):
        def callback(msg) -> None:
            n, crc = _samples(msg.feedback.audio)
            _emit(out, 'feedback', action=action, goal=bytes(msg.goal_id.uuid).hex(), n=n,
                  crc=crc, stamp=_stamp_ns(msg.feedback.audio))
        return callback

    clients: dict = {}
    for action in args.action:
        clients[action] = ActionClient(node, TTS, action)
        # The feedback is heard on the action's feedback topic itself, not through the
        # client's callback: rclpy's client forgets a goal's feedback callback when its
        # result arrives, and the feedback it takes after that (this process lagging
        # behind the stream) is dropped: the last chunks went missing now and then.
        node.create_subscription(TTS.Impl.FeedbackMessage, f'{action}/_action/feedback',
                                 on_feedback(action), qos)

    def find_servers() -> None:
        for action, client in clients.items():
            if client.wait_for_server(timeout_sec=60.0):
                _emit(out, 'server', action=action)
            else:
                _emit(out, 'error', action=action, what='no action server')

    def say(action: str, text: str) -> None:
        client = clients.get(action)
        if client is None:
            _emit(out, 'error', action=action, what='not an --action of this observer')
            return

        def on_result(future) -> None:
            result = future.result()
            _emit(out, 'result', action=action, status=result.status,
                  text=result.result.text)

        def on_response(future) -> None:
            handle = future.result()
            _emit(out, 'accepted', action=action, accepted=bool(handle.accepted),
                  goal=bytes(handle.goal_id.uuid).hex())
            if handle.accepted:
                handle.get_result_async().add_done_callback(on_result)

        _emit(out, 'sent', action=action, wall=time.time_ns())
        client.send_goal_async(TTS.Goal(text=text)).add_done_callback(on_response)

    def commands() -> None:
        for line in sys.stdin:
            command = json.loads(line)
            if command.get('quit'):
                break
            if 'say' in command:
                say(command['say'], command['text'])
        stop.set()

    threading.Thread(target=commands, daemon=True).start()
    threading.Thread(target=find_servers, daemon=True).start()
    # One thread: rclpy's MultiThreadedExecutor (9.1) re-yields a callback still waiting
    # in its pool, so a spin_once loop spins while holding the GIL (ros2/rclpy#1452, as
    # hayakoe_ros/node/runner.py says). With 3 threads this process took a whole core
    # while audio and feedback came in and handled chunks up to 5.9 s after their DDS
    # reception (3 runs of 6 of test_offboard_network.py); with one, 0.03 of a core
    # and at most 7 ms (6 of 6). Every callback here is short.
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    _emit(out, 'up', pid=os.getpid())
    deadline = time.monotonic() + args.lifetime
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
