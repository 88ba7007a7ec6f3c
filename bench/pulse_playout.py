# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Underruns heard through player_node on a real PulseAudio sink over a run of utterances.

``tts_node`` (Open JTalk, 48 kHz, its default pacing and gapless starts) speaks N
utterances of the repository's texts, one ``say`` goal after another, and ``player_node``
plays them into a PulseAudio null sink (a sound card that plays in real time). The
player's ``/diagnostics`` count what a listener would hear as a glitch: ``underruns``
(a chunk arrived after the sound before it had played) and ``xruns`` (the device
callback came too late). Needs ``pulseaudio``, ``parec`` and PortAudio
(:func:`tools.pulse.missing` says what is absent); skipped otherwise.

Run alone: ``.venv/bin/python bench/pulse_playout.py [N]``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: Utterances per run (the target: none of them underruns on a 2-core machine).
UTTERANCES = 20


def _player_values(node, prefix: str, chunks: int, timeout: float = 15.0) -> dict:
    """The player's latest diagnostics values once they count ``chunks`` (or the last)."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray

    seen: dict = {}

    def on_diag(msg) -> None:
        for status in msg.status:
            if status.name.startswith(prefix):
                seen.update({kv.key: kv.value for kv in status.values})

    sub = node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, 10)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and seen.get('chunks') != str(chunks):
            rclpy.spin_once(node, timeout_sec=0.2)
    finally:
        node.destroy_subscription(sub)
    return seen


def measure(n: int = UTTERANCES) -> dict:
    """Speak ``n`` utterances through player_node into PulseAudio; count the glitches.

    Returns:
        ``{'utterances', 'goals_ok', 'chunks_published', 'chunks' (played),
        'min_headroom_s', 'underruns', 'xruns'}``, or
        ``{'skipped': reason}`` when PulseAudio or PortAudio is missing. Needs
        ``rclpy.init()`` done.
    """
    import rclpy
    from action_msgs.msg import GoalStatus
    from audio_common_msgs.action import TTS
    from rclpy.action import ActionClient

    from tools.node_process import NodeProcess
    from tools.pulse import PulseServer, missing
    from tools.texts import utterances

    why = missing()
    if why:
        return {'skipped': why}
    texts = [t for t in utterances() if len(t) < 120]
    texts = (texts * (n // len(texts) + 1))[:n]
    with tempfile.TemporaryDirectory(prefix='hayakoe_pulse_') as tmp:
        pulse = PulseServer(Path(tmp), rate=48000)
        tts = player = None
        node = rclpy.create_node('pulse_playout_bench')
        try:
            tts = NodeProcess({'engine': 'openjtalk'}, log_dir=Path(tmp))
            player = NodeProcess({}, name='player_node', namespace=tts.namespace,
                                 command=(sys.executable, '-m', 'hayakoe_ros.player_node'),
                                 env=pulse.client_env(), log_dir=Path(tmp))
            player.wait_for_log(f'{tts.namespace}/audio: 1 publisher(s) matched', 30)
            client: ActionClient = ActionClient(node, TTS, tts.topic('say'))
            assert client.wait_for_server(timeout_sec=30), 'no say action server'
            ok, chunks = 0, 0
            for text in texts:
                got: list = []
                sent = client.send_goal_async(TTS.Goal(text=text),
                                              feedback_callback=got.append)
                rclpy.spin_until_future_complete(node, sent, timeout_sec=30)
                handle = sent.result()
                assert handle is not None and handle.accepted, f'goal not accepted: {text}'
                done = handle.get_result_async()
                rclpy.spin_until_future_complete(node, done, timeout_sec=120)
                result = done.result()
                ok += result is not None and result.status == GoalStatus.STATUS_SUCCEEDED
                chunks += len(got)  # one feedback message per chunk published
            values = _player_values(node, player.topic(player.name), chunks)
            return {'utterances': n, 'goals_ok': ok, 'chunks_published': chunks,
                    'chunks': int(values.get('chunks', 0)),
                    'min_headroom_s': float(values.get('min_headroom_s', 'nan')),
                    'underruns': int(values.get('underruns', -1)),
                    'xruns': int(values.get('xruns', -1))}
        finally:
            node.destroy_node()
            for proc in (player, tts):
                if proc is not None:
                    proc.stop()
            pulse.stop()


def markdown(r: dict) -> str:
    """The result as a short paragraph for BENCHMARKS.md."""
    if 'skipped' in r:
        return f"Not measured: {r['skipped']}."
    return (f"{r['utterances']} utterances (Open JTalk, one `say` goal after another, "
            f"{r['goals_ok']} succeeded) through `player_node` into a PulseAudio null sink: "
            f"{r['chunks']} of {r['chunks_published']} chunks played, "
            f"**{r['underruns']} underruns**, {r['xruns']} xruns, smallest headroom "
            f"{r['min_headroom_s'] * 1000:.0f} ms (target: 0 underruns).")


def main(argv=None) -> int:
    """Measure and print (rclpy initialised here)."""
    import rclpy

    import os

    from tools import dds_domain

    argv = sys.argv[1:] if argv is None else argv
    os.environ['ROS_DOMAIN_ID'] = str(dds_domain.claim())
    rclpy.init()
    try:
        r = measure(int(argv[0]) if argv else UTTERANCES)
    finally:
        rclpy.shutdown()
    print(r)
    print(markdown(r))
    return 0


if __name__ == '__main__':
    sys.exit(main())
