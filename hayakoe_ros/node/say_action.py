# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``say`` action server (``audio_common_msgs/action/TTS``).

Goals are accepted at once (a rejection cannot carry a reason; an aborted goal can) and
queued in the speech scheduler like topic text. Execute callbacks are coroutines: a goal
waiting in the queue or speaking holds no executor thread; it awaits an rclpy
future that the scheduler completes (``on_done``) and the executor is woken to resume it.

Threads: ``accept``/``cancel`` callbacks and the execute coroutine run on executor threads
(reentrant group); ``on_done`` and ``on_chunk`` come from the scheduler's threads (see
:mod:`hayakoe_ros.speech.scheduler`). ``self._lock`` guards the goal table; it is never
held while a text is prepared or while calling into the scheduler's cancel path. A
cancel that comes while its goal's text is prepared is accepted at once and applied as
soon as the utterance exists.

At teardown, :meth:`SayActionServer.destroy` answers the goal, cancel and result requests
already received before the server goes away (a client's cancel sent just before a
shutdown gets its response), then withdraws the server from the executor before
destroying it.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import threading
import time
from typing import Callable, Optional

from audio_common_msgs.action import TTS
from rclpy.action import CancelResponse, GoalResponse
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.task import Future

from ..speech import CancelReason, Outcome, Utterance
from .action_drain import DrainableActionServer
from .executor_wait import caught_up
from .turns import Turns
from .parameters import MAX_QUEUE_LIMIT, RATE_RANGE, VOLUME_RANGE

#: Language codes accepted on goals: Japanese, plus empty and the action's default "en"
#: (clients often leave the field; hayakoe reads English words in katakana).
ACCEPTED_LANGUAGES = frozenset({'', 'ja', 'ja-jp', 'ja_jp', 'jp', 'jpn', 'en'})

#: Goal results are kept this long after a goal ends (s), the rcl default (15 min).
RESULT_TIMEOUT_S = 900

#: Depth of the goal/cancel/result service queues and of the ``text`` subscription: a
#: burst of goals or texts must reach the scheduler's queue bound and get an answer (or
#: a logged refusal), not vanish in a depth-10 queue.
BURST_DEPTH = MAX_QUEUE_LIMIT + 16

#: How long a canceled goal waits for the server to mark it CANCELING (s); the server
#: does that right after the cancel callback returns.
CANCEL_STATE_TIMEOUT_S = 2.0
#: How often it looks (s): the transition is microseconds away, so one look usually ends it.
CANCEL_STATE_POLL_S = 0.002

#: Default longest wait for each step of :meth:`SayActionServer.destroy` (s).
DESTROY_STEP_TIMEOUT_S = 2.0


def language_error(code: str) -> Optional[str]:
    """Return why a goal's language code is unsupported, or None if it is accepted."""
    if code.strip().lower() in ACCEPTED_LANGUAGES:
        return None
    return (f"unsupported language '{code}': this node speaks Japanese; use 'ja' "
            "(or leave the field empty / at its default)")


def goal_error(goal: TTS.Goal) -> Optional[str]:
    """Return why a goal's fields are invalid (language, rate, volume), or None."""
    err = language_error(goal.language)
    if err:
        return err
    for field, (low, high) in (('rate', RATE_RANGE), ('volume', VOLUME_RANGE)):
        value = getattr(goal, field)
        if not (math.isfinite(value) and low <= value <= high):
            return f'{field} {value} is out of range [{low}, {high}]'
    return None



@dataclasses.dataclass
class _Goal:
    handle: object
    done: Future
    turn: Future  # its turn to be handed to the scheduler (:class:`.turns.Turns`)
    utterance: Optional[Utterance] = None
    cancel_requested: bool = False


class SayActionServer:
    """Serves ``say`` goals by speaking them through the node's speech scheduler.

    Args:
        node: The node that owns the server.
        speak: ``speak(goal, on_done, on_chunk, key) -> Utterance``: validate and queue a
            goal; ``key`` is the goal's UUID as 32 lowercase hex digits.
            Raises ``ValueError``/``RuntimeError`` subclasses with the reason to abort with.
        cancel: ``cancel(utterance, reason) -> bool``: cancel an utterance (synchronous: no
            chunk of it is published after it returns); False when it had already
            finished (its outcome stands, and the cancel request is rejected).
        feedback: ``feedback(utterance, chunk) -> AudioStamped``: the message of a chunk.
        feedback_depth: Depth of the feedback publisher (the ``audio`` topic's depth).
        callback_group: Group for every callback (reentrant: cancels are served while
            goals wait).
        name: Action name.
        refused: ``refused(key, text, error)``: told of a goal aborted before it was
            queued (its fields, its text, a full queue; ``key`` as for ``speak``), to
            publish its ``end`` mark as a refused topic text gets one; or None.
        cancel_batch: ``cancel_batch()``: a context that the ``cancel`` calls of one
            cancel request run in, so that they take effect as one (the scheduler's
            ``publishing_held``); or None.
    """

    def __init__(self, node, speak: Callable, cancel: Callable, feedback: Callable,
                 feedback_depth: int, callback_group, name: str = 'say',
                 refused: Optional[Callable] = None,
                 cancel_batch: Optional[Callable] = None) -> None:
        self._node = node
        self._speak = speak
        self._refused = refused
        self._cancel = cancel
        self._feedback = feedback
        self._group = callback_group
        self._lock = threading.Condition()  # notified when a goal leaves the table
        # Goals are handed to the scheduler one at a time, in arrival order, each when
        # its turn comes. Not under _lock: a long text's preparation (seconds for 100,000
        # characters) held back every cancel, and the speaking goal went on meanwhile.
        self._turns = Turns(self._wake)
        self._arrivals: dict = {}  # goal UUID -> arrival number, until it is accepted
        self._arrived = itertools.count()
        self._goals: dict = {}
        self._last_end: Optional[float] = None  # monotonic s of the newest goal's end
        self._closed = False  # close(): goal requests are rejected
        burst = QoSProfile(depth=BURST_DEPTH, reliability=ReliabilityPolicy.RELIABLE)
        self._server = DrainableActionServer(
            node, TTS, name, on_goal=self._on_arrival, cancel_batch=cancel_batch,
            execute_callback=self._execute,
            goal_callback=self._on_goal,
            handle_accepted_callback=self._on_accepted, cancel_callback=self._on_cancel,
            callback_group=callback_group, goal_service_qos_profile=burst,
            result_service_qos_profile=burst, cancel_service_qos_profile=burst,
            feedback_pub_qos_profile=QoSProfile(depth=feedback_depth,
                                                reliability=ReliabilityPolicy.RELIABLE),
            result_timeout=RESULT_TIMEOUT_S)

    @property
    def goals_running(self) -> int:
        """Goals accepted whose execute callback has not returned."""
        with self._lock:
            return len(self._goals)

    @property
    def last_goal_end(self) -> Optional[float]:
        """``time.monotonic()`` when the newest goal ended (its result on its way), or None."""
        with self._lock:
            return self._last_end

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no execute callback runs (s); False if some still do at the timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._goals, timeout)

    def close(self) -> None:
        """Reject every goal request from now on (the node is going away).

        A goal accepted then would be answered by an action server about to be
        destroyed: its client could wait for a result that never comes. Goals already
        accepted run to their end as before.
        """
        self._closed = True

    def destroy(self, timeout: float = DESTROY_STEP_TIMEOUT_S, spin: bool = False) -> bool:
        """Answer the requests received so far, then destroy the action server.

        Call once no goal is running (a running goal's result is lost). Requests a client
        sent before the teardown (a cancel, a result request) may still wait in the
        server's queues: they are taken and answered first, and the results of goals that
        ended are sent (:func:`.executor_wait.caught_up`). Then the server is withdrawn
        from the node and destroyed only once the thread that spins has built a wait set
        without it: destroying it while that thread adds it to one raises there (rclpy
        passes over a server it cannot enter, then adds it anyway) and ends the process.

        Args:
            timeout: Longest wait for each of these steps (s).
            spin: True when called from the thread that spins the node's executor
                (outside any callback): it is spun here. False while other threads spin it.

        Returns:
            False when a step timed out (a response may not have gone out).
        """
        self.close()
        executor = self._node.executor
        if executor is None or self._node not in executor.get_nodes():
            # Nothing serves it (or the executor was shut down): nothing builds wait sets
            # from it either.
            self._server.destroy()
            return True
        done = self._server.wait_drained(executor, timeout, spin)
        done = caught_up(executor, timeout, spin=spin) and done
        self._node.remove_waitable(self._server)
        done = caught_up(executor, timeout, spin=spin) and done
        try:
            self._server.destroy()
        except ValueError:  # its last step, removing it from the node, was done above
            pass
        return done

    # -------------------------------------------------------------- callbacks
    def _on_goal(self, _request) -> GoalResponse:
        return GoalResponse.REJECT if self._closed else GoalResponse.ACCEPT

    def _on_arrival(self, key: bytes) -> None:  # the spinning thread, in arrival order
        with self._lock:
            self._arrivals[key] = next(self._arrived)
            while len(self._arrivals) > BURST_DEPTH:  # requests never accepted (a reused id)
                del self._arrivals[next(iter(self._arrivals))]

    def _on_accepted(self, goal_handle) -> None:
        key = bytes(goal_handle.goal_id.uuid)
        with self._lock:
            arrival = self._arrivals.pop(key, None)
            if arrival is None:
                arrival = next(self._arrived)
            self._goals[key] = _Goal(goal_handle, Future(), self._turns.join(arrival))
        goal_handle.execute()

    def _on_cancel(self, goal_handle) -> CancelResponse:
        # Accept only what can still end CANCELED: a goal whose utterance already has an
        # outcome (it finished while the request travelled) keeps that outcome, and the
        # client is told so (ERROR_REJECTED) instead of seeing CANCELING, then SUCCEEDED.
        with self._lock:
            record = self._goals.get(bytes(goal_handle.goal_id.uuid))
            if record is None:  # already finished: nothing to cancel
                return CancelResponse.REJECT
            utt = record.utterance
            if utt is not None and utt.done:
                return CancelResponse.REJECT
            record.cancel_requested = True
        if utt is None:  # waiting for its turn, or being prepared
            self._turns.withdraw(record.turn)
        if utt is not None and not self._cancel(utt, CancelReason.CLIENT):
            with self._lock:  # it finished between the check and the cancel
                record.cancel_requested = False
            return CancelResponse.REJECT
        return CancelResponse.ACCEPT

    def _after(self, seconds: float) -> Future:
        """A future completed by a one-shot timer ``seconds`` from now (node clock)."""
        done: Future = Future()
        timers: list = []

        def fire() -> None:
            for timer in timers:
                timer.cancel()
                self._node.destroy_timer(timer)
            if not done.done():
                done.set_result(None)

        timers.append(self._node.create_timer(seconds, fire, callback_group=self._group))
        return done

    def _wake(self) -> None:
        executor = self._node.executor
        if executor is not None:
            executor.wake()

    def _completer(self, record: _Goal) -> Callable[[Utterance], None]:
        def on_done(utt: Utterance) -> None:  # scheduler thread or canceler's thread
            if not record.done.done():
                record.done.set_result(utt)
            self._wake()
        return on_done

    def _on_chunk(self, goal_handle) -> Callable:
        def on_chunk(utt: Utterance, chunk) -> None:  # scheduler's publisher thread
            goal_handle.publish_feedback(TTS.Feedback(audio=self._feedback(utt, chunk)))
        return on_chunk

    async def _execute(self, goal_handle) -> TTS.Result:
        key = bytes(goal_handle.goal_id.uuid)
        with self._lock:
            record = self._goals[key]
        try:
            return await self._run(goal_handle, record)
        finally:
            # rclpy keeps the goal handle, request included, until the result expires
            # (RESULT_TIMEOUT_S): the request's text is not needed once the goal has
            # ended, so a burst of long rejected texts does not stay in memory 15 min.
            goal_handle.request.text = ''
            with self._lock:
                self._goals.pop(key, None)
                self._last_end = time.monotonic()
                self._lock.notify_all()

    async def _run(self, goal_handle, record: _Goal) -> TTS.Result:
        error = goal_error(goal_handle.request)
        try:
            if error is None:
                await record.turn  # no executor thread is held meanwhile
            error = self._hand_over(goal_handle, record, error)
        finally:
            self._turns.leave(record.turn)
        if error is not None:
            self._node.get_logger().warning(f'say goal aborted: {error}')
            if self._refused is not None:
                self._refused(bytes(goal_handle.goal_id.uuid).hex(), goal_handle.request.text,
                              error)
            goal_handle.abort()
            return TTS.Result(text=f'error: {error}')
        if record.utterance is None:  # canceled before it was queued
            return await self._end_canceled(goal_handle)
        utt = await record.done
        assert utt is not None
        if utt.outcome is Outcome.SUCCEEDED:
            goal_handle.succeed()
            return TTS.Result(text=utt.text)
        if utt.cancel_reason is CancelReason.CLIENT:
            # What the person heard before the barge-in: the words whose audio was out.
            return await self._end_canceled(goal_handle, utt.heard)
        goal_handle.abort()
        return TTS.Result(text=f'error: {utt.error}')

    def _hand_over(self, goal_handle, record: _Goal, error: Optional[str]) -> Optional[str]:
        """Queue the goal's utterance in its turn (``record.utterance``); why it is refused."""
        with self._lock:
            if record.cancel_requested:
                return None
        if error is not None:
            return error
        utt = None
        try:
            utt = self._speak(goal_handle.request, self._completer(record),
                              self._on_chunk(goal_handle), bytes(goal_handle.goal_id.uuid).hex())
        except (ValueError, RuntimeError) as exc:
            error = str(exc)
        except Exception as exc:  # an unforeseen input must not take the node down
            error = f'internal error: {type(exc).__name__}: {exc}'
        with self._lock:
            record.utterance = utt
            canceled = record.cancel_requested
        if canceled:  # the cancel came while the text was prepared: it wins
            if utt is not None:
                self._cancel(utt, CancelReason.CLIENT)
            return None
        return error

    async def _end_canceled(self, goal_handle, heard: str = '') -> TTS.Result:
        # The server moves the goal to CANCELING right after the cancel callback returns,
        # in the cancel request's task; this coroutine may resume a moment before that.
        # rclpy has no event for the transition: look again every CANCEL_STATE_POLL_S on
        # a one-shot timer, holding no executor thread in between.
        deadline = time.monotonic() + CANCEL_STATE_TIMEOUT_S
        while not goal_handle.is_cancel_requested and time.monotonic() < deadline:
            await self._after(CANCEL_STATE_POLL_S)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return TTS.Result(text=heard)
