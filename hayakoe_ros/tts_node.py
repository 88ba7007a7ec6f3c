# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``tts_node`` lifecycle node: Japanese text in, streamed audio chunks out.

Wiring only; each concern has its own module in :mod:`hayakoe_ros.node`: parameters
(:mod:`~hayakoe_ros.node.parameters`), the ``say`` action server
(:mod:`~hayakoe_ros.node.say_action`), the audio outputs and message conversion
(:mod:`~hayakoe_ros.node.audio_out`, :mod:`~hayakoe_ros.node.messages`), diagnostics
(:mod:`~hayakoe_ros.node.diagnostics`), the engine life cycle
(:mod:`~hayakoe_ros.node.engine_loader`). The speech pipeline (:mod:`hayakoe_ros.speech`)
and the engines (:mod:`hayakoe_ros.engines`) know no ROS.

Interfaces (node-relative names, remappable): subscribes ``text``, ``text_stream`` and
``text_urgent`` (``std_msgs/String``; :mod:`~hayakoe_ros.node.speech_in`), serves ``say``
(``audio_common_msgs/action/TTS``), publishes ``audio``
(``audio_common_msgs/AudioStamped``), ``marks`` (``std_msgs/String``, JSON speech marks:
:mod:`~hayakoe_ros.node.marks_out`), ``speaking`` (``std_msgs/Bool``, transient local),
``/diagnostics``; service ``stop`` (``std_srvs/Trigger``).

Threads: every ROS callback runs on the multi-threaded executor (reentrant group for
text, goals, cancels and ``stop``; the diagnostics timer in its own group); the audio
outputs (:mod:`~hayakoe_ros.node.audio_out`), ``on_chunk`` and ``on_done`` are called by
the scheduler's threads.
"""

from __future__ import annotations

from contextlib import nullcontext
import dataclasses
import sys
import threading
from typing import Optional

from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.service import Service
from std_srvs.srv import Trigger


from .node.teardown import TeardownNode
from .engines import UnknownStyleError
from .node import log_bridge
from .node.audio_out import AudioOut
from .node.marks_out import MarksOut
from .node.param_spec import before_set, next_configure_error, split_names
from .node.speech_in import SpeechIn
from .node.diagnostics import (Snapshot, SpeechStats, build_status, rate_values,
                               twin_count)
from .node.engine_loader import EngineLoader, EngineSource
from .node.restarts import RunRecord
from .node.status import publish_status
from .node.runner import GOALS_END_TIMEOUT_S, RESULT_FLUSH_TIMEOUT_S, run
from .node.parameters import (PARAMETERS, SCHEDULER_PARAMETERS, VOICE_PARAMETERS, Apply,
                              declare_all, not_a_robots, parameter_table, scheduler_config,
                              voice_params)
from .node.say_action import SayActionServer
from .node.offboard import OFFBOARD_LIVE, OffboardVoice, offboard_values, offboard_voice
from .speech import (CancelReason, Outcome, SpeechScheduler, Utterance)
from .text import userdict
from .text.pipeline import warmup as warmup_front_end

__all__ = ['PARAMETERS', 'TTSNode', 'main', 'parameter_table']

#: Executor threads: goals are coroutines and hold none while they wait, so a few serve
#: every callback (text, goals, cancels, stop, lifecycle, diagnostics) at once.
EXECUTOR_THREADS = 4


class TTSNode(TeardownNode):
    """Lifecycle node speaking Japanese text as streamed ``AudioStamped`` chunks.

    Args:
        node_name: The node's name.
        engine_source: A shared engine (``tts_fleet``'s robots): configure takes a view of
            it instead of loading one (cleanup closes the view only), the parameters it
            decided are not declared here, and the process's log bridge is its owner's.
        kwargs: For :class:`rclpy.lifecycle.LifecycleNode`.
    """

    def __init__(self, node_name: str = 'tts_node',
                 engine_source: Optional[EngineSource] = None, **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        self._engine_source = engine_source
        owned = engine_source.parameters if engine_source else ()
        self._active = False
        self._state_label = 'unconfigured'
        self._loading = ''  # what configure is loading, for /diagnostics ('' otherwise)
        self._loader = EngineLoader(self.get_logger())
        self._stats = SpeechStats()
        self._scheduler: Optional[SpeechScheduler] = None
        self._declared = False
        self._specs = {n: s for n, s in PARAMETERS.items() if n not in owned}
        self.add_pre_set_parameters_callback(self._before_set_parameters)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._config_errors: list = declare_all(self, self._specs, owned)
        self._declared = True
        self._log_handler = (None if engine_source else log_bridge.attach(self.get_logger()))
        self._twins = 0  # other nodes of this name on the domain, as last seen
        self._run_record = RunRecord.for_node(self)
        self._group = ReentrantCallbackGroup()
        self._say: Optional[SayActionServer] = None
        self._offboard: Optional[OffboardVoice] = None
        self._stop_srv: Optional[Service] = None
        self._out = AudioOut(self, lambda: self._p('frame_id'))
        self._marks = MarksOut(self, self._out.stamp_ns,
                               lambda: self.get_clock().now().nanoseconds)
        self._speech_in = SpeechIn(self, self._marks, self._group)
        self.finalized = threading.Event()
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._diag_group = MutuallyExclusiveCallbackGroup()
        self._diag_timer = self.create_timer(self._p('diagnostics_period_s'),
                                             self._publish_diagnostics,
                                             callback_group=self._diag_group)

    # ------------------------------------------------------------------ parameters
    def _p(self, name: str):
        return self.get_parameter(name).value

    def _values(self, names, changes: Optional[dict] = None) -> dict:
        values = {name: self._p(name) for name in names}
        values.update({k: v for k, v in (changes or {}).items() if k in values})
        return values

    def _voice(self, changes: Optional[dict] = None, goal_rate: float = 1.0):
        return self._loader.adapt_voice(
            voice_params(self._values(VOICE_PARAMETERS, changes), goal_rate))

    def _before_set_parameters(self, params) -> list:
        # Start-up values are reported by on_configure, not here.
        fleet = self.get_namespace().rsplit('/', 1)[0]  # a robot's: names not in _specs
        return before_set(params, self._specs, self.get_logger().warning if self._declared
                          else None, owner=lambda name: not_a_robots(name, fleet))

    def _on_set_parameters(self, params) -> SetParametersResult:
        changes = {p.name: p.value for p in params}
        try:
            for name, value in changes.items():
                spec = PARAMETERS.get(name)
                if spec is None:
                    if not name:  # rclpy lets an empty name through (it declares it)
                        return SetParametersResult(successful=False,
                                                   reason='a parameter needs a name')
                    continue
                error = spec.check(value)
                if error:  # logged by before_set
                    return SetParametersResult(successful=False, reason=error)
                error = (next_configure_error(self, name, value, self._active)
                         if spec.apply is Apply.RELOAD else '')
                if error:
                    raise ValueError(error)
            if self._loader.engine is not None and {'style', 'speaker_id'} & set(changes):
                self._loader.engine.check_voice(self._voice(changes))
            scheduler = self._scheduler
            if scheduler is not None and set(changes) & set(SCHEDULER_PARAMETERS):
                scheduler.configure(**vars(scheduler_config(
                    self._values(SCHEDULER_PARAMETERS, changes))))
            if scheduler is not None and set(changes) & set(OFFBOARD_LIVE):
                scheduler.configure(**{k: v for k, v in changes.items() if k in OFFBOARD_LIVE})
            if 'mark_types' in changes and self._declared:  # else set at configure
                self._marks.set_kinds(split_names(changes['mark_types']))
        except (ValueError, UnknownStyleError) as exc:
            if self._declared:  # start-up values are reported by on_configure
                self.get_logger().warning(f'parameter change rejected: {exc}')
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Load and warm up the engine; create the audio publisher, ``say`` and ``stop``."""
        self._stats = SpeechStats()
        self._state_label = 'configuring'  # /diagnostics answer during the load
        if self._config_errors:
            for error in self._config_errors:
                self.get_logger().error(f'invalid configuration: {error}')
            self._state_label = 'unconfigured'
            return TransitionCallbackReturn.FAILURE
        try:
            engine = self._load_engine()
            self._loading = ''
            if engine is None:
                self._state_label = 'unconfigured'
                return TransitionCallbackReturn.FAILURE
            config = scheduler_config(self._values(SCHEDULER_PARAMETERS))
            if self._engine_source is None:  # a robot, which may use a host
                config = dataclasses.replace(config, **self._values(OFFBOARD_LIVE))
                self._offboard = offboard_voice(self, self._group)
            self._scheduler = SpeechScheduler(
                engine, self._out.publish, config, on_speaking=self._out.set_speaking,
                on_mark=self._marks.publish if self._p('marks') else None,
                remote=self._offboard)
            self._out.open(self._p('qos_depth'))
            if self._p('marks'):  # else no publisher: nothing goes out on 'marks'
                self._marks.open(self._p('qos_depth'))
            self._marks.set_kinds(split_names(self._p('mark_types')))
            self._speech_in.open_urgent()
            self._say = SayActionServer(self, self._speech_in.speak_goal, self._cancel,
                                        self._out.message, self._p('qos_depth'), self._group,
                                        refused=self._marks.refused,
                                        cancel_batch=self._cancel_batch)
            self._stop_srv = self.create_service(Trigger, 'stop', self._on_stop,
                                                 callback_group=self._group)
            self._reset_diagnostics_timer()
        except Exception as exc:  # never lose a configure error: log it, free what exists
            self._loader.engine_error = f'{type(exc).__name__}: {exc}'
            self.get_logger().error(f'configure failed: {self._loader.engine_error}')
            self._teardown()
            self._loading, self._state_label = '', 'unconfigured'
            return TransitionCallbackReturn.FAILURE
        self._state_label = 'inactive'
        return TransitionCallbackReturn.SUCCESS

    def _load_engine(self):
        """The engine: a view of the shared one, or loaded, checked and warmed up here."""
        if self._engine_source is not None:  # loaded once by the fleet, dictionary applied
            return self._loader.adopt(self._engine_source, self.get_namespace(), self._voice)
        # Read and apply the user dictionary (both voices; a bad line fails configure
        # with an error naming it). Process-wide, like Open JTalk's own.
        path = self._p('user_dictionary')
        userdict.apply(userdict.UserDictionary.load(path) if path else None)
        warmup_front_end()
        self._loading = (f"engine {self._p('engine')} (speaker {self._p('speaker')}, "
                         f"{self._p('device')})")
        return self._loader.load({name: self._p(name) for name in PARAMETERS}, self._voice)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start serving the text topic and ``say`` goals."""
        self._speech_in.activate()
        self._active = True
        self._state_label = 'active'
        self.get_logger().info(f'ready: speaking with {self._loader.describe()}')
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop speaking, cancel queued and running utterances, stop serving text."""
        self._active = False
        self._state_label = 'inactive'
        self._speech_in.deactivate()
        n = self._scheduler.stop(CancelReason.DEACTIVATED) if self._scheduler else 0
        if n:
            self.get_logger().info(f'deactivated: canceled {n} utterance(s)')
        return super().on_deactivate(state)

    @property
    def lifecycle_label(self) -> str:
        """Lifecycle state as a word: unconfigured, inactive, active or finalized."""
        return self._state_label

    def goals_running(self) -> int:
        """Number of ``say`` goals whose execute callback has not returned yet."""
        return self._say.goals_running if self._say is not None else 0

    def last_goal_end(self) -> Optional[float]:
        """``time.monotonic()`` of the newest ``say`` goal's end, or None (runner)."""
        return self._say.last_goal_end if self._say is not None else None

    def prepare_shutdown(self) -> None:
        """Stop accepting speech, reject new goals; cancel what speaks and waits."""
        self._active = False
        if self._say is not None:
            self._say.close()
        if self._scheduler is not None:
            self._scheduler.stop(CancelReason.SHUTDOWN)

    def _teardown(self) -> None:
        self._speech_in.close()
        if self._scheduler is not None:
            # Every utterance ends; goals get their results. A synthesis call that cannot
            # be aborted (Open JTalk, CUDA, g2p) may outlive the wait: the engine is then
            # closed by the scheduler's last thread as it ends, never under that call.
            if not self._scheduler.shutdown():
                engine = self._loader.detach()
                if engine is not None:
                    self.get_logger().warning('a synthesis call is still running; the '
                                              'engine is freed when it returns')
                    self._scheduler.when_stopped(engine.close)
            self._scheduler = None
        if self._offboard is not None:
            self._offboard.destroy()
            self._offboard = None
        if self._say is not None:
            # Goals end as their coroutines resume on executor threads; their results are
            # sent by executor tasks queued when each coroutine returns, and requests sent
            # before the teardown (cancels, result requests) may still be queued: destroy()
            # answers them all first, new goals rejected. On the main thread (the runner's
            # shutdown after a signal) nothing else spins the executor: spin it here.
            spin = threading.current_thread() is threading.main_thread()
            self._say.close()
            if not self._say.wait_idle(GOALS_END_TIMEOUT_S):
                self.get_logger().warning('a say goal did not end in time; its result may '
                                          'be lost')
            if not self._say.destroy(RESULT_FLUSH_TIMEOUT_S, spin=spin):
                self.get_logger().warning('say requests or goal results may not all have '
                                          'been answered')
            self._say = None
        for srv in (self._stop_srv,):
            if srv is not None:
                self.destroy_service(srv)
        self._stop_srv = None
        self._out.close()
        self._marks.close()
        self._loader.close()
        self._out.set_speaking(False)

    # ------------------------------------------------------------------ speech in
    @property
    def scheduler(self) -> Optional[SpeechScheduler]:
        """The speech scheduler while configured (None otherwise)."""
        return self._scheduler

    @property
    def active(self) -> bool:
        """True while the node is active (accepting speech)."""
        return self._active

    @property
    def stats(self) -> SpeechStats:
        """Counters and the last error, for /diagnostics (reset at every configure)."""
        return self._stats

    def voice(self, changes: Optional[dict] = None, goal_rate: float = 1.0):
        """The voice settings now (live parameters), for a goal's ``rate``."""
        return self._voice(changes, goal_rate)

    def _cancel_batch(self):  # one cancel request's cancels as one: publishing held
        return nullcontext() if (sched := self._scheduler) is None else sched.publishing_held()

    def _cancel(self, utt: Utterance, reason: CancelReason) -> bool:
        """Cancel ``utt``; False when it had already finished (or nothing serves it)."""
        scheduler = self._scheduler
        return scheduler.cancel(utt, reason) if scheduler is not None else False

    def record(self, utt: Utterance, source: str) -> None:
        """Count an utterance's outcome and log its one line (scheduler thread)."""
        line = self._stats.record(utt, source)
        if utt.outcome is Outcome.ABORTED:
            self.get_logger().error(line)
        else:
            self.get_logger().info(line)

    # ------------------------------------------------------------------ stop service
    def _on_stop(self, request, response):
        scheduler = self._scheduler
        if scheduler is None:
            response.success, response.message = False, 'not configured: nothing to stop'
            return response
        n = scheduler.stop(CancelReason.STOP)
        response.success, response.message = True, f'stopped: {n} utterance(s) canceled'
        self.get_logger().info(response.message)
        return response

    # ------------------------------------------------------------------ diagnostics
    def _reset_diagnostics_timer(self) -> None:
        period_ns = int(self._p('diagnostics_period_s') * 1e9)
        if self._diag_timer.timer_period_ns != period_ns:
            self.destroy_timer(self._diag_timer)
            self._diag_timer = self.create_timer(period_ns / 1e9, self._publish_diagnostics,
                                                 callback_group=self._diag_group)

    def diagnostic_status(self):
        """Build the node's ``DiagnosticStatus`` (engine, voice, state, queue, RTF...)."""
        loader, sched = self._loader, self._scheduler
        engine = loader.engine
        twins = twin_count(self)
        if twins != self._twins:  # said once as it appears (and once as it goes)
            self._twins = twins
            name = self.get_fully_qualified_name()
            if twins:
                self.get_logger().error(
                    f'{twins + 1} nodes named {name} run on ROS domain '
                    f'{self.context.get_domain_id()}: each serves the say action and the '
                    'text topics, so every text is spoken by each; give one another '
                    'namespace (-r __ns:=/other) or name')
            else:
                self.get_logger().info(f'no other node named {name} any more')
        snap = Snapshot(
            name=f'{self.get_fully_qualified_name()}: speech synthesis',
            hardware_id=engine.device if engine else (
                self._p('device') if self.has_parameter('device') else ''),
            lifecycle_state=self._state_label,
            engine=engine.name if engine else '', voice=loader.voice_name,
            device=engine.device if engine else '',
            sample_rate=engine.sample_rate if engine else 0, speaking=self._out.speaking,
            queue_depth=sched.queue_depth if sched else 0, stats=self._stats,
            fallback_reason=loader.fallback_reason, engine_error=loader.engine_error,
            pipeline_failure=(sched.failure or '') if sched else '',
            restarts=self._run_record.restarts, twins=twins,
            extra={**loader.diagnostics(), **self._run_record.values(),
                   'loading': self._loading, **offboard_values(self._offboard, sched),
                   **rate_values(sched.rates if sched else None, engine)})
        return build_status(snap)

    def _publish_diagnostics(self) -> None:
        publish_status(self, self._diag_pub, self.diagnostic_status)

    def mark_clean_exit(self) -> None:
        """The process ends cleanly, even without a teardown: the next start is no restart."""
        self._run_record.end()

    def destroy_node(self) -> None:
        """Detach the log bridge, end the run's record (a clean exit), destroy the node."""
        if self._log_handler is not None:
            log_bridge.detach(self._log_handler)
        self.mark_clean_exit()
        super().destroy_node()


def main(args=None, stop: Optional[threading.Event] = None) -> int:
    """Run ``tts_node`` (``ros2 run`` enters through :mod:`hayakoe_ros.entry`).

    0 after SIGINT/SIGTERM or the lifecycle shutdown transition; 78 when the autostart
    configure fails (see :func:`hayakoe_ros.node.runner.run`, which takes ``stop``).
    """
    return run(TTSNode, args, EXECUTOR_THREADS, stop=stop)


if __name__ == '__main__':
    sys.exit(main())

