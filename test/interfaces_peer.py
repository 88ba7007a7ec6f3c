# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Second process for test_interfaces.py: speaks audio_common_msgs over the real rmw.

Usage: ``python test/interfaces_peer.py publisher TOPIC`` publishes a known
``AudioStamped`` on TOPIC every 100 ms; ``python test/interfaces_peer.py action_server NAME``
serves the ``TTS`` action NAME: each goal gets ``FEEDBACK_COUNT`` feedback messages
(``AudioStamped`` chunks made from the goal text) and a result whose text echoes every goal
field, so the test can see what crossed the wire.  Either mode exits by itself after
``--lifetime`` seconds (default 60), so an orphaned peer never outlives a test run.
"""

import argparse
import signal
import sys
import threading
import time

from audio_common_msgs.action import TTS
from audio_common_msgs.msg import AudioStamped
import rclpy
from rclpy.action import ActionServer
from rclpy.executors import MultiThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions

FEEDBACK_COUNT = 3
FRAME_ID = 'hayakoe_ros_test'
SAMPLE_RATE = 44100
CHUNK = 4


def make_audio(seq, base=0):
    """Return the ``AudioStamped`` number ``seq``: int16 mono samples ``base + seq*10 + i``."""
    msg = AudioStamped()
    msg.header.frame_id = FRAME_ID
    msg.header.stamp.sec = 1000 + seq
    msg.header.stamp.nanosec = 500
    msg.audio.info.format = 8  # pyaudio paInt16, as audio_common uses it
    msg.audio.info.channels = 1
    msg.audio.info.rate = SAMPLE_RATE
    msg.audio.info.chunk = CHUNK
    msg.audio.audio_data.int16_data = [base + seq * 10 + i for i in range(CHUNK)]
    return msg


def goal_echo(goal):
    """Return the result text for ``goal``: every goal field, ``|``-separated."""
    return f'{goal.text}|{goal.language}|{goal.volume!r}|{goal.rate!r}'


def run_publisher(node, topic):
    """Publish ``make_audio(seq)`` on ``topic`` every 100 ms, seq = 0, 1, 2, ..."""
    pub = node.create_publisher(
        AudioStamped, topic, QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    seq = [0]

    def tick():
        """Publish the next message."""
        pub.publish(make_audio(seq[0]))
        seq[0] += 1

    node.create_timer(0.1, tick)


def run_action_server(node, name):
    """Serve the TTS action ``name`` (see the module docstring)."""
    feedback_topic = f'{name}/_action/feedback'

    def execute(goal_handle):
        """Send FEEDBACK_COUNT feedback chunks once the client listens, then the result."""
        goal = goal_handle.request
        # Feedback is a topic: wait (bounded) until the client's subscription is matched,
        # or the first chunks could be published before anyone receives them.
        deadline = time.monotonic() + 20.0
        while node.count_subscribers(feedback_topic) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        for seq in range(FEEDBACK_COUNT):
            feedback = TTS.Feedback()
            feedback.audio = make_audio(seq, base=len(goal.text))
            goal_handle.publish_feedback(feedback)
            time.sleep(0.05)
        goal_handle.succeed()
        return TTS.Result(text=goal_echo(goal))

    # Keep a reference: the server lives as long as the node.
    node.tts_server = ActionServer(node, TTS, name, execute)


def main(argv=None):
    """Parse the command line, start the chosen peer and spin until lifetime runs out."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('mode', choices=('publisher', 'action_server'))
    parser.add_argument('name', help='topic or action name')
    parser.add_argument('--lifetime', type=float, default=60.0)
    args = parser.parse_args(argv)

    # Own signal handling and a polling spin: with rclpy's handlers, SIGTERM now and then
    # failed to wake MultiThreadedExecutor.spin() (seen with rclpy 9.1.2), and the peer hung.
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_args: stop.set())
    node = rclpy.create_node('hayakoe_ros_interfaces_peer')
    if args.mode == 'publisher':
        run_publisher(node, args.name)
    else:
        run_action_server(node, args.name)
    # Multi-threaded: execute() sleeps, and goal/result requests keep being served meanwhile.
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    deadline = time.monotonic() + args.lifetime
    print(f'peer ready: {args.mode} {args.name}', flush=True)
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
