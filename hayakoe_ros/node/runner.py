# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Process entry point shared by the package's lifecycle nodes.

``run(factory)`` starts rclpy, builds the node, drives it to active when its
``autostart`` parameter is true (in a thread of its own while the executor spins, so the
lifecycle and parameter services and ``/diagnostics`` answer during a long load, and
SIGINT ends the process at once even then), spins a multi-threaded executor, and ends the
process cleanly: on SIGINT/SIGTERM the node stops its work and running goals get their results
while the ROS context is still alive, then the shutdown transition runs (rclpy's own
signal handlers would shut the context down first, leaving clients without results).
The lifecycle shutdown transition, requested as a service call, ends the process too.

The node must offer: ``finalized`` (a :class:`threading.Event` set by ``on_shutdown``),
``prepare_shutdown()`` (stop working, answer every running goal), ``goals_running()``,
``wait_released(timeout) -> bool`` (work its transitions left running, e.g. a player's
play-out, has ended) and ``lifecycle_label``.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
from typing import Callable, Optional

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.signals import SignalHandlerOptions

from ..early_signals import catch_signals
from .executor_wait import caught_up, queue_task, spin_once
from .lifecycle_state import transition_running
from .task_executor import SingleTaskExecutor, TaskExecutor

#: Longest wait for goal results and service responses to go out before an action server
#: or the process goes away (s); the wait ends as soon as they have
#: (:func:`.executor_wait.caught_up`).
RESULT_FLUSH_TIMEOUT_S = 2.0

#: Time given to the shutdown service's own response, and to goal results clients still
#: ask for, to go out before the process ends (s). Reliable DDS delivers a response after
#: it has been sent, with no event to wait on; 0.5 s lost one in 1 of about 3 full test
#: runs on this loaded 2-core machine, so the process spins 2 s (a clean exit, not a
#: latency anyone waits on; launch escalates to SIGTERM only after 5 s).
SERVICE_RESPONSE_S = 2.0

#: Longest wait for running goals to end at shutdown (s).
GOALS_END_TIMEOUT_S = 3.0

#: Longest wait at exit for a lifecycle transition a ``change_state`` call started
#: (deactivate, cleanup, shutdown: they end speech and answer goals, a few seconds at most)
#: before the node is shut down (s). Such a transition runs on an executor thread, and
#: meanwhile the node can be neither shut down (rclpy refuses a transition from a
#: transitional state) nor its executor's threads joined. A configure is not waited for.
TRANSITION_END_TIMEOUT_S = 10.0

#: Longest wait for a node's released resources at exit (s): a player's play-out is
#: bounded by its own 10 s drain limit.
RELEASE_TIMEOUT_S = 12.0

#: Longest the main loop waits on the executor before it looks at its exit conditions
#: again (s). Each wait rebuilds the executor's wait set from every entity (1-3 ms of
#: Python, 4x that in a 4-robot fleet): polled every 0.1 s, an idle tts_node took 1.1 %
#: of a core and a 4-robot fleet 3.7 %. Every exit condition wakes the wait at once
#: instead (:class:`_Wakers`), so this is only a safety net.
EXIT_CHECK_S = 1.0


#: Longest the process takes to end once its run is over (s): a failed start, a signal or
#: the shutdown transition. The bounded waits above add up to about 21 s (goals 3, results
#: 2, responses 2, released resources 12, executor threads 2); past this deadline, the
#: process writes every thread's stack to stderr and ends with its status anyway. A call
#: into the middleware that never returns (Fast DDS has had lock-order hangs in entity
#: creation and deletion, e.g. ros2/rclcpp#2147) or a callback that never ends (the
#: executor's threads are joined without a timeout) would otherwise keep a node that
#: failed to start running for ever, and a launch that ends on its exit with it.
EXIT_DEADLINE_S = 30.0

#: Longest ``rclpy.init`` and building the node may take (s): no model is loaded then (that
#: is the configure transition's), only entities made, well under a second here. Past it
#: faulthandler writes every thread's stack and ends the process with status 1, a crash to
#: a launch file, which starts the node again: a middleware deadlock in entity creation
#: (above) would otherwise leave a node that never starts and never exits.
START_DEADLINE_S = 60.0

#: Seconds after :data:`EXIT_DEADLINE_S` at which faulthandler's own thread, which needs
#: no GIL, ends the process (status 1) if the deadline's Python thread could not run: a
#: C call that holds the GIL and never returns.
EXIT_BACKSTOP_S = 5.0


def _arm_exit_deadline(code: int, seconds: float) -> None:
    """End the process with ``code`` if it is still running ``seconds`` from now.

    For the process's entry point only: the deadline stays armed while the interpreter
    ends (threads joined, ``atexit`` handlers), which is where a stuck thread would hold
    it, and is never disarmed. First each thread's stack goes to stderr (the node's log),
    so that the hang can be told apart from a slow exit.
    """
    ended = threading.Event()  # never set: the process ends first, or this thread ends it

    def watch() -> None:
        ended.wait(seconds)
        print(f'[runner] the process has not ended {seconds:.0f} s after its run was over; '
              f'ending it with status {code}. Every thread:', file=sys.stderr, flush=True)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
        os._exit(code)

    threading.Thread(target=watch, name='exit-deadline', daemon=True).start()
    faulthandler.dump_traceback_later(seconds + EXIT_BACKSTOP_S, exit=True)


#: Slice of an event thread's wait (s): it looks at whether the run is over this often.
_EVENT_SLICE_S = 5.0


def _nothing() -> None:
    """The task that ends the main loop's wait (:meth:`_Wakers._on_event`)."""


class _Wakers:
    """End the executor's wait in the main thread when a reason to exit comes.

    ``stop`` (a signal, or a failed autostart) and ``finalized`` (the node's, set by the
    shutdown transition on an executor thread) each have a thread waiting on them that
    queues a task when they are set (:func:`.executor_wait.queue_task`). A signal: Python
    runs its handler in the main thread only once the executor's wait (in C) returns, so
    the signal is also written to a pipe (``signal.set_wakeup_fd``, from the C-level
    handler) whose reader thread sets ``stop``. Threads blocked on a pipe or an event
    cost nothing while idle.
    """

    def __init__(self, executor, stop: threading.Event,
                 finalized: threading.Event) -> None:
        self._executor = executor
        self._stop = stop
        self._closed = False
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # the C handler must never block
        self._old_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        threading.Thread(target=self._on_signals, name='signal-wake', daemon=True).start()
        for event in (stop, finalized):
            threading.Thread(target=self._on_event, args=(event,), name='exit-wake',
                             daemon=True).start()

    def _on_signals(self) -> None:
        while True:
            try:
                data = os.read(self._read, 64)
            except OSError:
                return
            if not data:  # write end closed: the run is over
                return
            if {signal.SIGINT, signal.SIGTERM} & set(data):
                self._stop.set()  # the handler sets it too, once the main thread runs

    def _on_event(self, event: threading.Event) -> None:
        while not self._closed:
            # In slices only so that the thread ends with the run (a lock's timed wait,
            # no executor wake-up).
            if event.wait(_EVENT_SLICE_S):
                try:
                    queue_task(self._executor, _nothing)
                except Exception:  # noqa: BLE001 - the executor is going away: nothing to end
                    pass
                return

    def close(self) -> None:
        """Restore the previous wakeup fd; the reader and event threads end."""
        self._closed = True
        signal.set_wakeup_fd(self._old_fd)
        os.close(self._write)


def _spin_for(executor, seconds: float) -> None:
    """Spin ``executor`` from this thread for ``seconds`` (monotonic) or until rclpy ends."""
    until = time.monotonic() + seconds
    while rclpy.ok() and time.monotonic() < until:
        spin_once(executor, 0.05)


def _exit_now(node, doing: str, code: int) -> None:
    """End the process at once, without a teardown, while ``doing`` (a label) runs.

    A configure cannot be cut short (a model load in C) and the node must not be torn
    down under it; nothing is speaking or queued yet. The exit still counts as clean for
    the restart count (``mark_clean_exit``).
    """
    node.get_logger().info(f'interrupted while {doing}: exiting')
    getattr(node, 'mark_clean_exit', lambda: None)()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _await_transition(node, executor, code: int) -> None:
    """Let a transition that a ``change_state`` request started end, spinning meanwhile.

    At most :data:`TRANSITION_END_TIMEOUT_S`; a configure is not waited for. If one still
    runs then, the process ends at once (:func:`_exit_now`).
    """
    running = transition_running(node)
    until = time.monotonic() + TRANSITION_END_TIMEOUT_S
    while running not in (None, 'configuring') and time.monotonic() < until:
        spin_once(executor, 0.05)
        running = transition_running(node)
    if running is not None:
        _exit_now(node, running, code)


def _shut_down(node, executor, code: int) -> None:
    """The shutdown transition from this thread, unless a request's came first.

    A lifecycle manager may ask for the shutdown (or another transition) while this
    process is already ending after a signal; rclpy refuses a shutdown from a
    transitional state or once finalized (``RCLError``). Then the request's transition is
    let end, and if it was the shutdown, its response is let out.
    """
    for _ in range(3):  # a request can slip in between the check and the trigger: rare
        _await_transition(node, executor, code)
        if node.finalized.is_set():
            _spin_for(executor, SERVICE_RESPONSE_S)
            return
        try:
            node.trigger_shutdown()
            return
        except _rclpy.RCLError:
            continue
    node.get_logger().warning('the shutdown transition could not be made: exiting')


def _bring_up(node, failed: threading.Event, stop: threading.Event) -> None:
    """Configure, then activate ``node`` (the ``autostart`` thread); a failure ends the run."""
    for name, trigger in (('configure', node.trigger_configure),
                          ('activate', node.trigger_activate)):
        if trigger() != TransitionCallbackReturn.SUCCESS:
            node.get_logger().fatal(f'{name} failed; exiting (see the error above)')
            failed.set()
            stop.set()
            return


#: Exit status of a node that could not start: rcl refused its arguments, the node could
#: not be built, or its autostart configure or activate failed (an invalid parameter, a
#: model that does not load). ``EX_CONFIG`` of sysexits.h: starting it again would fail the
#: same way, so the launch files end the launch on it instead of respawning the node.
EXIT_NOT_STARTED = 78


def run(factory: Callable, args=None, num_threads: int = 4,
        exit_deadline_s: Optional[float] = EXIT_DEADLINE_S,
        start_deadline_s: Optional[float] = START_DEADLINE_S,
        stop: Optional[threading.Event] = None) -> int:
    """Run one lifecycle node in this process until a signal or its shutdown transition.

    Args:
        factory: Builds the node (called after ``rclpy.init``).
        args: Command-line arguments for ``rclpy.init`` (None: ``sys.argv``).
        num_threads: Executor threads (a :class:`~.task_executor.TaskExecutor`); 1 runs
            every callback in this thread (:class:`~.task_executor.SingleTaskExecutor`). rclpy's
            ``MultiThreadedExecutor`` (9.1, Kilted)
            re-yields a callback that waits in its thread pool, so its spinning thread
            loops while holding the GIL (ros2/rclpy#1452, fixed upstream in #1547): up to
            0.58 s at a time measured in player_node, starving every other Python thread.
        exit_deadline_s: Once the run is over, the process ends within this many seconds
            whatever hangs (:data:`EXIT_DEADLINE_S`); None: no deadline (not a process's
            entry point, e.g. a test calling ``run`` in its own process).
        start_deadline_s: Longest ``rclpy.init`` and ``factory()`` may take before the
            process ends with status 1 (:data:`START_DEADLINE_S`); None: no deadline.
        stop: Set by SIGINT/SIGTERM handlers the caller installed before its imports
            (:mod:`hayakoe_ros.entry`); a signal already caught ends the run before rclpy
            starts. None: ``run`` installs them.

    Returns:
        The exit status: 0, or :data:`EXIT_NOT_STARTED` when the autostart configure or
        activate failed, or rcl could not start (e.g. its log directory cannot be created,
        an invalid ``--log-level``) or the node not be built (an invalid remap): stderr
        says why.
    """
    try:
        return _run(factory, args, num_threads, exit_deadline_s, start_deadline_s, stop)
    finally:
        if exit_deadline_s is not None:
            ignore_signals()


def ignore_signals() -> None:
    """SIGINT and SIGTERM ignored from now on: the process is ending with its status.

    Python puts its own handlers back to the default action as it shuts down, and a
    second signal in the next 0.2 s (launch's SIGTERM after its SIGINT, a second Ctrl-C)
    then killed the process: status -2 or -15 instead of 0 or 78. An ignored signal stays
    ignored through the interpreter's shutdown.
    """
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)


def _run(factory: Callable, args, num_threads: int, exit_deadline_s: Optional[float],
         start_deadline_s: Optional[float], stop: Optional[threading.Event]) -> int:
    """:func:`run`, but for what it does once the run is over."""
    if start_deadline_s is not None:
        faulthandler.dump_traceback_later(start_deadline_s, exit=True)
    # Before rcl starts: a SIGINT as soon as its log directory exists (a launch file
    # stopped at once) came between the two and ended the process by KeyboardInterrupt.
    if stop is None:
        stop, _ = catch_signals()
    if stop.is_set():
        print('stopped by a signal before rclpy started', file=sys.stderr)
        faulthandler.cancel_dump_traceback_later()
        return 0
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except _rclpy.RCLError as exc:
        hint = (' (a read-only HOME: set ROS_LOG_DIR to a writable directory)'
                if 'log directory' in str(exc) else '')
        print(f'cannot start: {exc}{hint}', file=sys.stderr)
        faulthandler.cancel_dump_traceback_later()
        return EXIT_NOT_STARTED
    try:
        node = factory()
    except Exception as exc:  # rcl's refusals of names and remaps come as several types
        print(f'cannot start: {type(exc).__name__}: {exc}', file=sys.stderr)
        rclpy.try_shutdown()
        faulthandler.cancel_dump_traceback_later()
        return EXIT_NOT_STARTED
    faulthandler.cancel_dump_traceback_later()  # built: from now on signals end it
    executor = (SingleTaskExecutor() if num_threads == 1
                else TaskExecutor(num_threads=num_threads))
    executor.add_node(node)
    wakers = _Wakers(executor, stop, node.finalized)
    failed = threading.Event()
    bring_up = None
    code = 0
    try:
        if node.get_parameter('autostart').value:
            bring_up = threading.Thread(target=_bring_up, args=(node, failed, stop),
                                        name='autostart', daemon=True)
            bring_up.start()
        while not stop.is_set() and not node.finalized.is_set() and rclpy.ok():
            spin_once(executor, EXIT_CHECK_S)
        code = EXIT_NOT_STARTED if failed.is_set() else 0
        if exit_deadline_s is not None:
            _arm_exit_deadline(code, exit_deadline_s)
        if bring_up is not None and bring_up.is_alive():
            _exit_now(node, transition_running(node) or 'starting', code)  # autostart's
        _await_transition(node, executor, code)
        if rclpy.ok() and not node.finalized.is_set():
            had_goals = node.goals_running() > 0
            node.prepare_shutdown()
            deadline = time.monotonic() + GOALS_END_TIMEOUT_S
            while node.goals_running() and time.monotonic() < deadline:
                spin_once(executor, 0.05)
            # Results go out in executor tasks queued when each execute callback returns.
            caught_up(executor, RESULT_FLUSH_TIMEOUT_S, spin=True)
            last = getattr(node, 'last_goal_end', lambda: None)()
            recent = last is not None and time.monotonic() - last < SERVICE_RESPONSE_S
            if had_goals or recent:
                # A client asks for a goal's result with a request of its own, often only
                # once it sees the goal end; the action server must still be there to
                # answer it, and its reliable answer must be delivered before the writer
                # goes away. Neither has an event to wait on (a full test run lost a
                # result request that arrived after the flush above; another, the result
                # of a goal canceled 20 ms before the signal, when only goals still
                # running kept this wait). So it lasts until SERVICE_RESPONSE_S after the
                # newest goal's end.
                since = 0.0 if had_goals or last is None else time.monotonic() - last
                _spin_for(executor, SERVICE_RESPONSE_S - since)
            _shut_down(node, executor, code)
        else:  # the shutdown transition came as a service call: let its response go out
            # The response is sent after the callback returns, on another executor thread,
            # and nothing signals it: spin a bounded while (SERVICE_RESPONSE_S; a marker
            # task alone lost the response in 1 of ~3 full test runs).
            _spin_for(executor, SERVICE_RESPONSE_S)
        if not node.wait_released(RELEASE_TIMEOUT_S):
            node.get_logger().warning('exiting before released resources were done')
    except ExternalShutdownException:
        pass
    finally:
        wakers.close()
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.try_shutdown()
    return code
