# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""tts_node on inputs that used to kill or stall it, and its count of restarts after a death.

The Open JTalk voice speaks (real Japanese, offline), so the audio is that of the text.
"""

import signal
import time

from action_msgs.msg import GoalStatus
from diagnostic_msgs.msg import DiagnosticStatus
import pytest
from hayakoe_ros.node.runner import EXIT_NOT_STARTED

from ros_utils import CHUNK, NodeProcess, send_goal, wait_future

pytestmark = pytest.mark.ros

OJT = dict(engine='openjtalk', chunk=CHUNK)


def _values(status):
    return {kv.key: kv.value for kv in status.values}


@pytest.mark.long  # about 10 s here; the guard stays quick (test_openjtalk_fuzz.py's harness,
# test_say_command.py's reading of such a text), bad input with a queue test_node_speech.py
def test_texts_that_crashed_open_jtalk_are_spoken_and_nothing_queued_is_lost(ros_client):
    """One goal of え x 600 killed the node (SIGSEGV) with every queued goal; no more."""
    node = NodeProcess(OJT)
    try:
        action = ros_client.action_client(node.topic('say'))
        texts = ['こんにちは。', 'え' * 600, 'ア' * 1000, 'ぁ' * 500, '最後の文です。']
        goals = [send_goal(ros_client, action, text) for text in texts]
        results = [wait_future(h.get_result_async(), 120) for h, _ in goals]
        assert [r.status for r in results] == [GoalStatus.STATUS_SUCCEEDED] * len(texts), \
            node.log()
        assert node.proc.poll() is None
        # Shortened to 100 of each, spoken: several seconds of audio, not nothing.
        samples = [sum(fb.audio.audio.info.chunk for _, fb in feedback)
                   for _, feedback in goals]
        assert all(n > 48000 for n in samples[1:4]), samples
        log = node.log()
        assert "shortened 600 x 'え' to 100 each" in log
        assert "shortened 1000 x 'ア' to 100 each" in log
    finally:
        assert node.stop() == 0, node.log()


@pytest.mark.long  # about 9 s here; the restart after a crash stays quick
def test_diagnostics_count_the_restarts_after_the_process_died(ros_client, tmp_path):
    first = NodeProcess(OJT)
    ns = first.namespace
    assert _values(ros_client.diagnostics(first))['restarts'] == '0'
    first.proc.send_signal(signal.SIGSEGV)  # as Open JTalk's crashes did
    first.proc.wait(20)
    assert first.proc.returncode == -signal.SIGSEGV
    again = NodeProcess(OJT, namespace=ns, log_dir=tmp_path)
    try:
        again.wait_for_log('started again after its process died (1 time(s)', 10)
        deadline = time.monotonic() + 10
        while True:
            status = ros_client.diagnostics(again)
            values = _values(status)
            if values['lifecycle_state'] == 'active' or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert values['restarts'] == '1' and values['last_crashed_run_started'], values
        assert status.level == DiagnosticStatus.WARN
        assert 'started again after its process died' in status.message
    finally:
        assert again.stop() == 0, again.log()
    # A clean exit ends the count: the next start is a first start.
    (tmp_path / 'clean').mkdir()
    clean = NodeProcess(OJT, namespace=ns, log_dir=tmp_path / 'clean')
    try:
        values = _values(ros_client.diagnostics(clean))
        assert values['restarts'] == '0', values
    finally:
        assert clean.stop() == 0, clean.log()


def test_a_second_node_of_the_same_name_is_an_error_in_the_log_and_diagnostics(ros_client,
                                                                                 tmp_path):
    """ROS 2 lets two nodes share a name; then both speak every goal, so both say so."""
    first = NodeProcess(OJT)
    second = None
    try:
        assert _values(ros_client.diagnostics(first))['nodes_of_this_name'] == '1'
        second = NodeProcess(OJT, namespace=first.namespace, log_dir=tmp_path)
        name = first.topic('tts_node')
        for node in (first, second):
            node.wait_for_log(f'2 nodes named {name} run on ROS domain', 15)
        status = ros_client.diagnostics(first)
        assert status.level == DiagnosticStatus.ERROR, status
        assert _values(status)['nodes_of_this_name'] == '2'
        assert 'each speaks every goal and text' in status.message
        assert second.stop() == 0, second.log()
        second = None
        first.wait_for_log(f'no other node named {name} any more', 15)
    finally:
        if second is not None:
            second.stop()
        assert first.stop() == 0, first.log()


def test_a_read_only_home_is_a_clear_error_and_ros_log_dir_fixes_it(read_only_view, tmp_path):
    import os
    import subprocess
    import sys

    home = tmp_path / 'home'
    home.mkdir()
    env = dict(os.environ, HOME=str(read_only_view(home)))
    env.pop('ROS_LOG_DIR', None)
    env.pop('ROS_HOME', None)
    cmd = [sys.executable, '-m', 'hayakoe_ros.tts_node', '--ros-args', '-p',
           'engine:=openjtalk', '-p', 'autostart:=false']
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == EXIT_NOT_STARTED
    assert 'cannot start: failed to initialize logging' in proc.stderr
    assert 'set ROS_LOG_DIR to a writable directory' in proc.stderr
    assert 'Traceback' not in proc.stderr
    env['ROS_LOG_DIR'] = str(tmp_path / 'log')
    node = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / 'log').is_dir() and time.monotonic() < deadline:
            assert node.poll() is None, node.stdout.read()
            time.sleep(0.05)
        assert (tmp_path / 'log').is_dir()
    finally:
        node.send_signal(signal.SIGINT)
        assert node.wait(30) == 0


def test_services_and_diagnostics_answer_during_the_load_and_sigint_ends_it(
        ros_client, tiny_model_root):
    """The model loads while the node serves; SIGINT during the load exits 0 at once."""
    from lifecycle_msgs.srv import GetState

    from ros_utils import tiny_params

    # Thirty phrases to preload make the load last seconds longer than discovery takes.
    phrases = '|'.join(f'{i}番目の文です。' for i in range(30))
    node = NodeProcess(tiny_params(tiny_model_root, phrase_cache_mb=8,
                                   preload_phrases=phrases), wait_ready=False)
    try:
        get_state = ros_client.node.create_client(GetState, node.topic('tts_node/get_state'))
        assert get_state.wait_for_service(timeout_sec=30), node.log()
        state = None
        deadline = time.monotonic() + 30
        while state is None and time.monotonic() < deadline:
            # A request sent just as the service is discovered can go unanswered (its
            # reply reader not matched yet): ask again, as a client would.
            future = get_state.call_async(GetState.Request())
            until = time.monotonic() + 2.0
            while not future.done() and time.monotonic() < until:
                time.sleep(0.02)
            if future.done():
                state = future.result().current_state.label
        assert state == 'configuring', (state, node.log())  # answered during the load
        status = ros_client.diagnostics(node)
        values = _values(status)
        assert values['lifecycle_state'] == 'configuring', values
        assert 'loading engine hayakoe (speaker tiny-jp, cpu)' in status.message
        node.proc.send_signal(signal.SIGINT)
        assert node.wait_exit(20) == 0, node.log()
        log = node.log()
        assert 'Traceback' not in log
        # The tiny model takes seconds to load and warm up: the signal came before that.
        assert 'interrupted while configuring: exiting' in log and 'ready:' not in log, log
    finally:
        node.stop()
    # Ctrl-C is a clean exit: the next start of this node is no restart after a crash.
    again = NodeProcess(OJT, namespace=node.namespace)
    try:
        assert 'started again' not in again.log(), again.log()
        assert _values(ros_client.diagnostics(again))['restarts'] == '0'
    finally:
        assert again.stop() == 0, again.log()


def test_a_node_that_cannot_be_built_is_a_start_failure(ros_test_domain):
    """The runner's start failure, not a traceback and exit 1 (which launch would respawn)."""
    import subprocess
    import sys

    code = ('import sys\n'
            'from hayakoe_ros.node.runner import run\n'
            'def factory():\n'
            '    raise ValueError("no such node")\n'
            'sys.exit(run(factory, args=["node"]))\n')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == EXIT_NOT_STARTED, out.stderr
    assert 'cannot start: ValueError: no such node' in out.stderr, out.stderr
    assert 'Traceback' not in out.stderr, out.stderr
