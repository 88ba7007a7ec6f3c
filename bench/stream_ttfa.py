# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""First audio of a streamed reply: how soon after its first sentence is complete.

An LLM's reply arrives on ``text_stream`` as fragments (2 characters each, 30 per second
here). The node should speak the first sentence as soon as its end has arrived, never
waiting for the rest: the target is first audio <= the moment the first sentence is
complete + that sentence's idle TTFA (the same sentence sent whole on ``text`` to an idle
node) + 50 ms. Both are measured over the rmw, on ``tts_node`` with the Open JTalk voice
(each run waits for the utterance's end mark before the next), alternating.

Run alone: ``.venv/bin/python bench/stream_ttfa.py [reps]``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: The reply: its first sentence, then more.
FIRST = '本日はご来場いただき、誠にありがとうございます。'
REPLY = FIRST + '展示会場は二階にございます。どうぞごゆっくりお楽しみください。'
#: Fragment size (characters) and rate (fragments per second): an LLM's tokens.
FRAGMENT_CHARS = 2
FRAGMENTS_PER_S = 30.0
#: Allowed on top of the idle TTFA (s).
MARGIN_S = 0.050
REPS = 5


def measure(reps: int = REPS) -> dict:
    """Idle TTFA of the first sentence and the stream's first audio after it was complete.

    Returns:
        ``{'reps', 'idle_ttfa_s': [...], 'after_complete_s': [...], 'median_idle_s',
        'median_after_s', 'met'}``. Needs ``rclpy.init()`` done.
    """
    import rclpy
    from audio_common_msgs.msg import AudioStamped
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    from tools.node_process import NodeProcess

    with tempfile.TemporaryDirectory(prefix='hayakoe_stream_') as tmp:
        tts = NodeProcess({'engine': 'openjtalk'}, log_dir=Path(tmp))
        node = rclpy.create_node('stream_ttfa_bench')
        first_audio: list = []
        ends: list = []
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        node.create_subscription(AudioStamped, tts.topic('audio'),
                                 lambda m: first_audio.append(time.monotonic()), qos)
        node.create_subscription(String, tts.topic('marks'),
                                 lambda m: ends.append(json.loads(m.data))
                                 if '"type": "end"' in m.data else None, qos)
        text = node.create_publisher(String, tts.topic('text'), 100)
        stream = node.create_publisher(String, tts.topic('text_stream'), 1000)
        try:
            tts.wait_for_log(f"{tts.topic('audio')}: a subscriber matched", 30)
            deadline = time.monotonic() + 30
            while (text.get_subscription_count() < 1 or stream.get_subscription_count() < 1
                   ) and time.monotonic() < deadline:
                rclpy.spin_once(node, timeout_sec=0.05)

            def wait_end(count: int) -> None:
                limit = time.monotonic() + 120
                while len(ends) < count and time.monotonic() < limit:
                    rclpy.spin_once(node, timeout_sec=0.05)
                if len(ends) < count:
                    raise RuntimeError('no end mark: ' + tts.log()[-2000:])

            idle: list = []
            after: list = []
            for rep in range(reps + 1):  # the first of each kind warms up
                first_audio.clear()
                t_sent = time.monotonic()
                text.publish(String(data=FIRST))
                wait_end(len(ends) + 1)
                if rep:
                    idle.append(first_audio[0] - t_sent)
                first_audio.clear()
                complete = None
                start = time.monotonic()
                for i in range(0, len(REPLY), FRAGMENT_CHARS):
                    due = start + (i // FRAGMENT_CHARS) / FRAGMENTS_PER_S
                    while time.monotonic() < due:
                        rclpy.spin_once(node, timeout_sec=max(0.0, due - time.monotonic()))
                    stream.publish(String(data=REPLY[i:i + FRAGMENT_CHARS]))
                    if complete is None and i + FRAGMENT_CHARS >= len(FIRST):
                        complete = time.monotonic()
                stream.publish(String(data=''))
                wait_end(len(ends) + 1)
                if rep and complete is not None:
                    after.append(first_audio[0] - complete)
        finally:
            node.destroy_node()
            tts.stop()
    mi, ma = statistics.median(idle), statistics.median(after)
    return {'reps': reps, 'idle_ttfa_s': idle, 'after_complete_s': after,
            'median_idle_s': mi, 'median_after_s': ma, 'met': ma <= mi + MARGIN_S}


def markdown(r: dict) -> str:
    """The result as a short paragraph for BENCHMARKS.md."""
    return (f"Streamed reply ({FRAGMENT_CHARS}-character fragments at {FRAGMENTS_PER_S:g}/s "
            f"on `text_stream`, Open JTalk, {r['reps']} runs): first audio "
            f"{r['median_after_s'] * 1000:.0f} ms after the first sentence was complete "
            f"(max {max(r['after_complete_s']) * 1000:.0f} ms); that sentence's idle TTFA "
            f"(sent whole on `text`) {r['median_idle_s'] * 1000:.0f} ms. Target: <= idle "
            f"TTFA + {MARGIN_S * 1000:.0f} ms: **{'met' if r['met'] else 'missed'}**.")


def main(argv=None) -> int:
    """Measure and print (rclpy initialised here)."""
    import os

    import rclpy

    from tools import dds_domain

    argv = sys.argv[1:] if argv is None else argv
    os.environ['ROS_DOMAIN_ID'] = str(dds_domain.claim())
    rclpy.init()
    try:
        r = measure(int(argv[0]) if argv else REPS)
    finally:
        rclpy.shutdown()
    print(json.dumps(r, indent=1))
    print(markdown(r))
    return 0 if r['met'] else 1


if __name__ == '__main__':
    sys.exit(main())
