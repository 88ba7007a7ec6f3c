# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A player like mgonzs13's ``audio_player_node``, in its own process, for the tests.

SensorDataQoS (best effort, keep-last 5) and one blocking write per chunk: a write on a
one-chunk device buffer returns when the previous chunk has played, so chunks are taken at
exactly playback rate. Usage: ``python blocking_player.py TOPIC OUT.npy``; it prints
``ready`` once subscribed, then the number of chunks received so far after each chunk; on
SIGINT it writes every chunk it received (int16, one row per chunk) to OUT.npy and exits.
"""

import signal
import sys
import threading
import time

import numpy as np
import rclpy
from audio_common_msgs.msg import AudioStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import qos_profile_sensor_data
from rclpy.signals import SignalHandlerOptions


def main() -> None:
    """Subscribe, consume at playback rate, save on SIGINT."""
    topic, out = sys.argv[1], sys.argv[2]
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node('blocking_player')
    chunks = []
    playing_until = [0.0]

    def on_msg(msg):
        chunks.append(np.asarray(msg.audio.audio_data.int16_data, np.int16))
        print(len(chunks), flush=True)
        now = time.monotonic()
        starts = max(now, playing_until[0])
        playing_until[0] = starts + msg.audio.info.chunk / msg.audio.info.rate
        time.sleep(starts - now)  # Pa_WriteStream blocks until there is room

    node.create_subscription(AudioStamped, topic, on_msg, qos_profile_sensor_data)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    deadline = time.monotonic() + 30  # discovery: the publisher must be matched first
    while node.count_publishers(topic) < 1 and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    deadline = time.monotonic() + 1.0  # let the match settle on both sides
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    print('ready', flush=True)
    while not stop.is_set():
        executor.spin_once(timeout_sec=0.05)
    np.save(out, np.array(chunks).reshape(len(chunks), -1))
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    main()
