# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A node's process ends in bounded time once its run is over, or its start hangs.

The runner's exit waits are each bounded, but a call into the middleware or a callback
that never returns is not. Each test runs :func:`hayakoe_ros.node.runner.run` in a process
of its own with a small lifecycle node whose ``wait_released`` hangs after a SIGINT, and
a short exit deadline: once with the GIL free (the deadline's own thread ends the
process with the run's status), once holding it (``faulthandler``'s thread ends it).
A node that never finishes being built ends as a crash (status 1).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.ros

#: The deadline the tests give the runner (s); the default is 30 s.
DEADLINE_S = 2.0

#: A lifecycle node with what the runner asks of one, for the scripts below to extend.
_BASE = """
import ctypes, os, signal, sys, threading, time
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from hayakoe_ros.node import runner

class Base(LifecycleNode):
    lifecycle_label = 'active'

    def __init__(self, name, autostart):
        super().__init__(name)
        self.declare_parameter('autostart', autostart)
        self.finalized = threading.Event()

    def prepare_shutdown(self):
        pass

    def goals_running(self):
        return 0

    def wait_released(self, timeout):
        return True

    def on_shutdown(self, state):
        print('shut down from', state.label, flush=True)
        self.finalized.set()
        return TransitionCallbackReturn.SUCCESS
"""

#: It sends itself SIGINT once built; ``{hang}`` is what its ``wait_released`` hangs in.
_SCRIPT = _BASE + """
class Wedged(Base):
    def __init__(self):
        super().__init__('wedged', False)
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()

    def wait_released(self, timeout):
        print('releasing', flush=True)
        {hang}

sys.exit(runner.run(Wedged, args=['wedged'], exit_deadline_s={deadline}))
"""


def _run(hang: str) -> subprocess.CompletedProcess:
    code = _SCRIPT.format(hang=hang, deadline=DEADLINE_S)
    # Far under the hang itself (600 s): without the deadline this times out.
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=60)


def test_a_hang_after_the_run_ends_the_process_with_its_status_and_the_stacks(
        ros_test_domain):
    out = _run('threading.Event().wait(600)')
    assert 'releasing' in out.stdout, out.stderr
    assert out.returncode == 0, out.stderr
    assert 'the process has not ended 2 s after its run was over; ending it with status 0' \
        in out.stderr, out.stderr
    # The stack names where it hung.
    assert 'in wait_released' in out.stderr, out.stderr


def test_a_hang_holding_the_gil_still_ends_the_process(ros_test_domain):
    from hayakoe_ros.node import runner

    # libc's sleep through ctypes.PyDLL keeps the GIL, as a C extension call that never
    # returns would: no Python thread runs again, only faulthandler's.
    out = _run('ctypes.PyDLL(None).sleep(600)')
    assert 'releasing' in out.stdout, out.stderr
    assert out.returncode == 1, out.stderr
    assert 'Timeout (0:00:0' in out.stderr, out.stderr  # faulthandler's header
    assert 'in wait_released' in out.stderr, out.stderr
    assert runner.EXIT_BACKSTOP_S + DEADLINE_S < 60


def test_a_node_that_hangs_while_it_is_built_ends_as_a_crash(ros_test_domain):
    """Status 1 (launch starts it again) with the stacks, not a start that never ends."""
    code = ('import sys, threading\n'
            'from hayakoe_ros.node.runner import run\n'
            'def factory():\n'
            '    threading.Event().wait(600)\n'
            f'sys.exit(run(factory, args=["node"], start_deadline_s={DEADLINE_S}))\n')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1, out.stderr
    assert 'Timeout (0:00:0' in out.stderr and 'in factory' in out.stderr, out.stderr


#: A lifecycle node whose deactivate transition, run on an executor thread as a
#: ``change_state`` request's is, takes a while and gets a SIGINT in its middle.
_TRANSITION_SCRIPT = _BASE + """
class Slow(Base):
    def __init__(self):
        super().__init__('slow', True)
        self._once = None

    def on_activate(self, state):
        # Deactivate from an executor thread once active: a lifecycle manager's request.
        self._once = self.create_timer(0.2, self._deactivate)
        return TransitionCallbackReturn.SUCCESS

    def _deactivate(self):
        self._once.cancel()
        self.trigger_deactivate()

    def on_deactivate(self, state):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1.0)  # the transition's work, the signal already in
        print('deactivated', flush=True)
        return TransitionCallbackReturn.SUCCESS

sys.exit(runner.run(Slow, args=['slow']))
"""


def test_a_signal_during_a_transition_on_an_executor_thread_waits_for_it(ros_test_domain):
    """The runner lets the transition end, then shuts the node down: status 0.

    It used to request the shutdown transition at once, which rclpy refuses from a
    transitional state: a traceback and status 1.
    """
    out = subprocess.run([sys.executable, '-c', _TRANSITION_SCRIPT], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'Traceback' not in out.stderr, out.stderr
    lines = out.stdout.splitlines()
    assert lines == ['deactivated', 'shut down from inactive'], out.stdout + out.stderr


#: A lifecycle node that, once told to stop (after a SIGINT it sends itself), gets the
#: shutdown transition from an executor thread while the runner lets results out: a
#: lifecycle manager's request arriving after the signal.
_REQUEST_AFTER_SIGNAL_SCRIPT = _BASE + """
class Raced(Base):
    def __init__(self):
        super().__init__('raced', True)
        self._goals = 1  # one goal ran: the runner lets results out for a while
        self._request = None

    def on_activate(self, state):
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
        return TransitionCallbackReturn.SUCCESS

    def goals_running(self):
        return self._goals

    def prepare_shutdown(self):
        self._goals = 0
        self._request = self.create_timer(0.3, self._shutdown_request)

    def _shutdown_request(self):
        self._request.cancel()
        self.trigger_shutdown()

sys.exit(runner.run(Raced, args=['raced']))
"""


def test_a_shutdown_request_after_the_signal_is_the_one_shutdown(ros_test_domain):
    """Status 0 and one shutdown; the runner's own used to raise rclpy's RCLError."""
    out = subprocess.run([sys.executable, '-c', _REQUEST_AFTER_SIGNAL_SCRIPT],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'Traceback' not in out.stderr, out.stderr
    assert out.stdout.splitlines() == ['shut down from active'], out.stdout + out.stderr
