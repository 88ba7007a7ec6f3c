# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``say`` command against a real node: SSML, a user dictionary, a WAV, speech marks."""

import subprocess
import sys
import wave

import numpy as np
import pytest

from ros_utils import NodeProcess

pytestmark = pytest.mark.ros


def _longest_silence_s(audio: np.ndarray, sr: int, threshold: float = 0.01) -> float:
    """Longest run of 20 ms frames whose RMS is under ``threshold`` of full scale (s)."""
    frame = sr // 50
    n = len(audio) // frame
    rms = np.sqrt(np.mean((audio[:n * frame].astype(np.float64) / 32768.0)
                          .reshape(n, frame) ** 2, axis=1))
    best = run = 0
    for quiet in rms < threshold:
        run = run + 1 if quiet else 0
        best = max(best, run)
    return best * frame / sr


def test_say_speaks_ssml_through_the_node_and_reports_success(ros_test_domain, tmp_path):
    words = tmp_path / 'words.csv'
    words.write_text('早声,ハヤコエ,2\n', encoding='utf-8')
    node = NodeProcess({'engine': 'openjtalk', 'user_dictionary': str(words)})
    try:
        wav = tmp_path / 'out.wav'
        out = subprocess.run(
            [sys.executable, '-m', 'hayakoe_ros.say', '--action', node.topic('say'),
             '-o', str(wav), '--timeout', '60',
             '<speak>早声です<break time="1500ms"/>10:30です</speak>'],
            capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr  # GoalStatus.STATUS_SUCCEEDED
        with wave.open(str(wav)) as w:
            audio = np.frombuffer(w.readframes(w.getnframes()), dtype='<i2')
            sr = w.getframerate()
        assert 1.48 <= _longest_silence_s(audio, sr) <= 1.56
        # A goal the node refuses: its status by name, the node's reason, exit status 1.
        bad = subprocess.run(
            [sys.executable, '-m', 'hayakoe_ros.say', '--action', node.topic('say'),
             '--no-wav', '--timeout', '60', '<speak>早声です<break time="1500ms">'],
            capture_output=True, text=True, timeout=120)
        assert bad.returncode == 1, bad.stderr
        assert 'say: goal ended ABORTED (status 6): ' in bad.stderr, bad.stderr
        assert 'SSML' in bad.stderr, bad.stderr
    finally:
        node.stop()


@pytest.mark.long  # about 11 s here; say_marks stays quick with a node whose marks are off,
# and the marks themselves in test_node_marks.py
def test_say_marks_prints_the_timeline_of_its_goal(ros_test_domain, tmp_path):
    """`say --marks`: the start, each word with its offsets, the end with what was heard."""
    import re

    node = NodeProcess({'engine': 'openjtalk'})
    try:
        wav = tmp_path / 'marks.wav'
        text = '10:30に出発します。'
        out = subprocess.run(
            [sys.executable, '-m', 'hayakoe_ros.say', '--marks', '--action', node.topic('say'),
             '-o', str(wav), '--timeout', '60', text],
            capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert re.fullmatch(rf' +0 ms  start +\[0:{len(text)}\]', lines[0]), out.stdout
        assert [x for x in lines if re.search(r' ms  word +10:30  \[0:5\]  \(\d+ ms\)$', x)]
        assert any(re.search(r' ms  phoneme ', x) for x in lines), out.stdout
        assert any(re.search(r' ms  viseme ', x) for x in lines), out.stdout
        (end,) = [x for x in lines if ' ms  end ' in x]
        heard = f'succeeded  heard [0:{len(text)}] {text!r}'
        assert end.split('ms  end')[1].strip() == heard, end
        # The timeline ends with the end mark; then the usual summary.
        assert lines[lines.index(end) + 1] == f'spoken: {text}', out.stdout
        times = [int(x.split(' ms')[0]) for x in lines[:lines.index(end) + 1]]
        assert times == sorted(times)
        assert wav.exists()  # the WAV is still written
        # Only the types asked for (and the end); no WAV.
        wav.unlink()
        out = subprocess.run(
            [sys.executable, '-m', 'hayakoe_ros.say', '--marks', '--mark-types', 'word',
             '--no-wav', '--action', node.topic('say'), '-o', str(wav), '--timeout', '60',
             text], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        kinds = [x.split()[2] for x in out.stdout.splitlines() if ' ms  ' in x]
        assert set(kinds) == {'word', 'end'} and kinds[-1] == 'end', out.stdout
        assert not wav.exists()
    finally:
        node.stop()


def test_the_timeline_says_which_word_marks_go_on():
    """A long number's first word mark goes on in the next ones (``continues``)."""
    from hayakoe_ros.say_marks import format_mark

    first = {'type': 'word', 'time': 40, 'duration': 900, 'start': 3, 'end': 63,
             'value': '1234567890' * 6, 'continues': True}
    later = {'type': 'word', 'time': 940, 'duration': 800, 'start': 63, 'end': 63,
             'value': ''}
    assert format_mark(first) == f"  40 ms  word      {'1234567890' * 6}  [3:63]  " \
        '(900 ms)  continues'
    assert format_mark(later) == ' 940 ms  word      [63:63]  (800 ms)'


def test_a_node_with_marks_off_publishes_none_and_say_marks_says_so(ros_test_domain):
    """``marks: false``: no ``marks`` publisher; ``say --marks`` speaks, with a note."""
    node = NodeProcess({'engine': 'openjtalk', 'marks': False})
    try:
        out = subprocess.run(
            [sys.executable, '-m', 'hayakoe_ros.say', '--marks', '--no-wav', '--action',
             node.topic('say'), '--timeout', '60', 'こんにちは。'],
            capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert f"nothing publishes '{node.topic('marks')}'" in out.stderr, out.stderr
        assert ' ms  ' not in out.stdout and 'spoken: こんにちは。' in out.stdout
    finally:
        node.stop()


def test_print_reading_of_a_text_that_crashed_open_jtalk():
    """`say --print-reading` on ア x 500 died with SIGSEGV; it prints the (shortened) reading."""
    out = subprocess.run([sys.executable, '-m', 'hayakoe_ros.say', '--print-reading',
                          'ア' * 500 + 'です。'], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == 'ア' * 100 + 'デス。'
    assert "shortened 500 x 'ア' to 100 each" in out.stderr


def test_say_with_a_wrong_action_name_names_the_servers_it_sees(ros_test_domain):
    """A node in a namespace, ``say`` without it: an error naming the real server."""
    node = NodeProcess({'engine': 'openjtalk'})
    try:
        out = subprocess.run(
            [sys.executable, '-m', 'hayakoe_ros.say', '--action', '/nowhere/say',
             '--timeout', '60', 'こんにちは。'], capture_output=True, text=True, timeout=50)
        assert out.returncode == 1, out.stderr
        assert "no '/nowhere/say' action server; TTS action servers seen:" in out.stderr
        assert node.topic('say') in out.stderr, out.stderr
        assert 'Traceback' not in out.stderr
    finally:
        node.stop()


def test_ctrl_c_cancels_the_goal_and_exits_130_without_a_traceback(ros_test_domain,
                                                                    ros_client, tmp_path):
    """SIGINT while the node speaks: the goal is canceled, the node stops, exit 130."""
    import signal
    import time

    node = NodeProcess({'engine': 'openjtalk'})
    rec = ros_client.audio_recorder(node.topic('audio'), node=node)
    try:
        ros_client.wait_for_subscribers(node.topic('audio'))
        say = subprocess.Popen(
            [sys.executable, '-m', 'hayakoe_ros.say', '--action', node.topic('say'),
             '-o', str(tmp_path / 'x.wav'), 'とても長いお知らせです。' * 12],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while rec.count() < 3 and time.monotonic() < deadline:  # it is speaking
            time.sleep(0.05)
        assert rec.count() >= 3, node.log()
        say.send_signal(signal.SIGINT)
        _, err = say.communicate(timeout=30)
        assert say.returncode == 130, err
        assert 'Traceback' not in err and 'interrupted; the goal was canceled' in err, err
        node.wait_for_log(': canceled: canceled by the client', 10)  # the utterance's line
    finally:
        ros_client.node.destroy_subscription(rec.sub)
        node.stop()


#: Runs ``say`` as its console script does, with an import hook that stands for a library
#: swallowing a KeyboardInterrupt while the ROS side is imported (what happened to a
#: Ctrl-C 0.15 s after the start: say went on and waited its whole --timeout).
_SWALLOWING_START = """
import os, signal, sys, time
class Swallow:
    def find_spec(self, name, path=None, target=None):
        if name == 'hayakoe_ros.say_client':
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
            except BaseException:
                pass
        return None
sys.meta_path.insert(0, Swallow())
from hayakoe_ros.say import main
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_while_say_starts_is_never_lost(ros_test_domain):
    """SIGINT while the ROS modules import: say exits 130 at once, no traceback."""
    import time

    started = time.monotonic()
    out = subprocess.run([sys.executable, '-c', _SWALLOWING_START, '--action', '/nowhere/say',
                          '--timeout', '30', 'こんにちは。'],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 130, (out.returncode, out.stderr)
    assert 'interrupted before' in out.stderr and 'Traceback' not in out.stderr, out.stderr
    assert time.monotonic() - started < 15


def test_a_say_client_behind_the_stream_still_gets_every_chunk(ojt_node, ros_client):
    """The goal ends while the client still has chunks queued: the WAV loses none.

    rclpy's action client drops a goal's feedback taken after its result; ``say`` reads
    the action's feedback topic itself and takes the chunks still queued after the result.
    """
    import threading

    from action_msgs.msg import GoalStatus, GoalStatusArray
    from rclpy.qos import QoSDurabilityPolicy, QoSProfile

    from hayakoe_ros.say_client import SayClient

    rec = ros_client.audio_recorder(ojt_node.topic('audio'), node=ojt_node)
    ros_client.wait_for_subscribers(ojt_node.topic('audio'))
    ended: set = set()  # goal ids whose SUCCEEDED status this test's client has seen
    lock = threading.Condition()

    def on_status(msg) -> None:
        with lock:
            ended.update(bytes(s.goal_info.goal_id.uuid) for s in msg.status_list
                         if s.status == GoalStatus.STATUS_SUCCEEDED)
            lock.notify_all()

    status_sub = ros_client.node.create_subscription(
        GoalStatusArray, ojt_node.topic('say/_action/status'), on_status,
        QoSProfile(depth=1, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL))

    class HeldClient(SayClient):
        def _on_feedback(self, feedback_msg) -> None:
            # The scenario, not a wait: the say client's thread is held (a slow disk, a
            # loaded machine) from its first chunk of the goal until the node has ended
            # the goal, so the rest of its chunks and the result wait in its queues.
            goal = bytes(feedback_msg.goal_id.uuid)
            if not self.chunks and goal == self._goal_id:
                with lock:
                    assert lock.wait_for(lambda: goal in ended, 60), 'the goal never ended'
            super()._on_feedback(feedback_msg)

    client = HeldClient(ojt_node.topic('say'))
    try:
        client.wait_for_server(30)
        status, text, _, _ = client.say('こんにちは、聞こえますか。', 'ja', 1.0, 1.0, 60)
        assert status == GoalStatus.STATUS_SUCCEEDED and text == 'こんにちは、聞こえますか。'
        rec.wait_quiet(quiet_s=0.3, timeout=10)
        want = rec.samples()
        got = np.concatenate(client.chunks) if client.chunks else np.zeros(0, np.int16)
        assert len(client.chunks) == rec.count() > 10, (len(client.chunks), rec.count())
        np.testing.assert_array_equal(got, want)
    finally:
        client.destroy_node()
        ros_client.node.destroy_subscription(status_sub)
        ros_client.node.destroy_subscription(rec.sub)


def test_a_timeout_cancels_the_goal_so_the_node_does_not_speak_on(ros_test_domain,
                                                                  ros_client):
    """The say command gives up at --timeout and cancels its goal: nothing speaks on.

    It left the goal speaking (a 14 s text kept every later utterance waiting).
    """
    node = NodeProcess({'engine': 'openjtalk'})
    try:
        out = subprocess.run(
            [sys.executable, '-m', 'hayakoe_ros.say', '--action', node.topic('say'),
             '--no-wav', '--timeout', '8', 'とても長いお知らせです。' * 12],
            capture_output=True, text=True, timeout=60)
        # 8 s: short of the text's 14 s of paced speech, long enough for a fresh say
        # process to find the server (Fast DDS: up to one 3 s announcement period when
        # a first endpoint announcement is lost; 2 s failed there on CI).
        assert out.returncode == 1, out.stderr
        assert 'no result within 8 s; the goal was canceled' in out.stderr, out.stderr
        assert 'Traceback' not in out.stderr, out.stderr
        node.wait_for_log(': canceled: canceled by the client', 10)  # the utterance's line
    finally:
        node.stop()


def test_say_refuses_what_it_could_not_deliver_before_speaking(tmp_path):
    """An unwritable -o, a text that is not UTF-8, a timeout of 0: one line, no node needed.

    Each was a traceback: -o after the whole utterance was spoken (its audio lost).
    """
    cases = [
        (['-o', str(tmp_path / 'no' / 'x.wav'), 'こんにちは'], None, 1,
         'No such file or directory'),
        (['-o', str(tmp_path), 'こんにちは'], None, 1, 'Is a directory'),
        (['-o', str(tmp_path / 'no') + '/', 'こんにちは'], None, 1, 'Is a directory'),
        (['-o', '', 'こんにちは'], None, 1, 'an empty file name'),
        # root may write anywhere by os.access; /proc takes no new file all the same
        (['-o', '/proc/x.wav', 'こんにちは'], None, 1, 'cannot write /proc/x.wav'),
        (['--no-wav'], 'こんにちは'.encode('shift_jis'), 1, 'the text is not UTF-8'),
        (['--timeout', '0', 'こんにちは'], None, 2, 'no positive number of seconds'),
        # A ROS string ends at a NUL: what came after it was dropped unsaid.
        (['--no-wav'], 'はい\0いいえ'.encode(), 1, 'a NUL character (U+0000) at position 2'),
    ]
    for args, stdin, code, words in cases:
        out = subprocess.run([sys.executable, '-m', 'hayakoe_ros.say', '--action',
                              '/nowhere/say'] + args, input=stdin, capture_output=True,
                             timeout=60)
        err = out.stderr.decode()
        assert out.returncode == code and words in err, (args, out.returncode, err)
        assert 'Traceback' not in err and 'waiting for' not in err, err
    assert list(tmp_path.iterdir()) == []  # the check leaves no file behind
