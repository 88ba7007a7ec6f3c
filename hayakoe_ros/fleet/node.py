# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``tts_fleet`` lifecycle node: one model, loaded once, and a ``tts_node`` per robot.

The fleet node (``<namespace>/tts_fleet``) declares the parameters a process takes once
(:data:`~hayakoe_ros.node.parameters.FLEET_PARAMETERS`: engine, voice files, device,
threads, output rate, phrase cache, user dictionary, autostart) and ``robots``. Its
configure loads and warms the engine once, wraps it in a
:class:`~hayakoe_ros.engines.shared.SharedEngine` and makes one
:class:`~hayakoe_ros.tts_node.TTSNode` per robot at ``<namespace>/<robot>``, with an
:class:`~hayakoe_ros.node.engine_loader.EngineSource` so that its configure takes a view
of the shared engine; each robot keeps its own interfaces, queue, live parameters and
lifecycle (a robot can be deactivated alone through its own services). The fleet's
transitions drive every robot's: activate, deactivate, cleanup (robots destroyed, the
engine freed), shutdown. ``robots`` applies at the next configure: deactivate, clean up,
set it, configure and activate again to add or remove robots.
"""

from __future__ import annotations

import threading
from typing import Optional

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.exceptions import ParameterUninitializedException
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.parameter import Parameter

from ..node.teardown import TeardownNode
from ..engines import VoiceParams
from ..engines.shared import SharedEngine
from ..node import log_bridge
from ..node.engine_loader import EngineLoader, EngineSource
from ..node.executor_wait import caught_up
from ..node.param_spec import Apply, before_set, next_configure_error
from ..node.parameters import (FLEET_PARAMETERS, OFFBOARD_PARAMETERS, ROBOT_PARAMETERS,
                               declare_all, voice_params)
from ..node.status import publish_status
from ..text import userdict
from ..text.pipeline import warmup as warmup_front_end
from .robots import ROBOTS, check_robots, robot_namespace, robot_ros_args, robots_descriptor

__all__ = ['FleetNode']

#: Period of the fleet's own ``/diagnostics`` status (s).
DIAGNOSTICS_PERIOD_S = 1.0

#: Longest wait for the executor to let go of removed robot nodes before they are
#: destroyed (s); it takes one or two of its 0.1 s spins.
NODE_RELEASE_TIMEOUT_S = 2.0


class FleetNode(TeardownNode):
    """Lifecycle node serving several robots' speech from one engine.

    Args:
        argv: The process's command line (its ``--ros-args`` are given to each robot's
            node, less the namespace and name remaps); None: no arguments.
        kwargs: For :class:`rclpy.lifecycle.LifecycleNode`.
    """

    def __init__(self, argv: Optional[list] = None, **kwargs) -> None:
        super().__init__('tts_fleet', **kwargs)
        self._robot_args = robot_ros_args(argv or [])
        self._active = False
        self._state_label = 'unconfigured'
        self._declared = False
        self._loader = EngineLoader(self.get_logger())
        self._shared: Optional[SharedEngine] = None
        self._robots: dict = {}  # robot name -> TTSNode, in the order of ``robots``
        self._lock = threading.Lock()
        self.add_pre_set_parameters_callback(self._before_set_parameters)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        # The robots' own parameters, and a robot's relay settings that the shared
        # tts.yaml sets for tts_node (the fleet's robots relay to nobody), are no typo.
        self._config_errors = declare_all(self, FLEET_PARAMETERS, tuple(ROBOT_PARAMETERS)
                                          + OFFBOARD_PARAMETERS + (ROBOTS,))
        try:
            self.declare_parameter(ROBOTS, Parameter.Type.STRING_ARRAY, robots_descriptor())
        except Exception as exc:  # a start-up value of the wrong type, e.g. robots:=r1
            given = self._parameter_overrides.get(ROBOTS)
            self._config_errors.append(
                check_robots(given.value if given is not None else None) or str(exc))
            self.declare_parameter(ROBOTS, Parameter.Type.STRING_ARRAY, robots_descriptor(),
                                   ignore_override=True)
        self._declared = True
        self._log_handler = log_bridge.attach(self.get_logger())
        self.finalized = threading.Event()
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._diag_timer = self.create_timer(
            DIAGNOSTICS_PERIOD_S, lambda: publish_status(self, self._diag_pub,
                                                         self.diagnostic_status),
            callback_group=MutuallyExclusiveCallbackGroup())

    # ------------------------------------------------------------------ parameters
    def _p(self, name: str):
        return self.get_parameter(name).value

    def robot_names(self) -> list:
        """The ``robots`` parameter's value (empty when it was never given)."""
        try:
            return list(self._p(ROBOTS) or [])
        except ParameterUninitializedException:
            return []

    def _before_set_parameters(self, params) -> list:
        warn = self.get_logger().warning if self._declared else None  # start-up: configure
        # An empty list has no element type to tell: rclpy sends it as a byte or bool
        # array and the descriptor's type check would refuse it naming types; as an
        # empty string array the robots check says what is wrong ("is empty").
        params = [Parameter(ROBOTS, Parameter.Type.STRING_ARRAY, [])
                  if p.name == ROBOTS and p.type_ != Parameter.Type.STRING_ARRAY
                  and isinstance(p.value, (list, tuple, bytes)) and not len(p.value) else p
                  for p in params]
        robot = robot_namespace(self.get_namespace(), '<robot>')
        return before_set(params, FLEET_PARAMETERS, warn, (ROBOTS,), owner=lambda name: (
            f"'{name}' is each robot's parameter: set it on {robot}/tts_node"
            if name in ROBOT_PARAMETERS else ''))

    def _on_set_parameters(self, params) -> SetParametersResult:
        for param in params:
            spec = FLEET_PARAMETERS.get(param.name)
            if not param.name:  # rclpy lets it through (it declares it); logged pre-set
                return SetParametersResult(successful=False, reason='a parameter needs a name')
            if spec is not None:
                error = spec.check(param.value)
                if error:  # logged by the pre-set callback
                    return SetParametersResult(successful=False, reason=error)
            elif param.name == ROBOTS:
                # Start-up values (and the unset one, None) are checked by on_configure,
                # which names every problem; a change later is refused here.
                error = (check_robots(param.value, self.get_namespace()) or None
                         if self._declared else None)
            else:
                continue
            if error is None and (param.name == ROBOTS
                                  or spec is not None and spec.apply is Apply.RELOAD):
                error = next_configure_error(self, param.name, param.value, self._active,
                                             'fleet') or None
            if error:
                if self._declared:
                    self.get_logger().warning(f'parameter change rejected: {error}')
                return SetParametersResult(successful=False, reason=error)
        return SetParametersResult(successful=True)

    def _engine_params(self) -> dict:
        """What :meth:`EngineLoader.load` reads: the fleet's values, robots' defaults.

        ``preload_phrases`` are cut with the default segmenting (``max_chars``,
        ``max_segment_chars``, ``first_segment_morae``): a robot with other values
        caches its own cuts as it speaks them.
        """
        params = {name: spec.default for name, spec in ROBOT_PARAMETERS.items()}
        params.update({name: self._p(name) for name in FLEET_PARAMETERS})
        return params

    def _preload_voice(self) -> VoiceParams:
        """The default voice of a robot, in a style the loaded voice offers."""
        voice = voice_params({name: ROBOT_PARAMETERS[name].default for name in (
            'style', 'style_weight', 'speaker_id', 'rate', 'pitch_scale',
            'intonation_scale', 'sdp_ratio', 'noise', 'noise_w')})
        return self._loader.adapt_voice(voice) if self._loader.fallback_reason else voice

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Check ``robots``, load the engine once, make and configure each robot's node."""
        robots = self.robot_names()
        errors = list(self._config_errors) or [
            e for e in (check_robots(robots, self.get_namespace()),) if e]
        if errors:
            for error in errors:
                self.get_logger().error(f'invalid configuration: {error}')
            return TransitionCallbackReturn.FAILURE
        self._state_label = 'configuring'
        try:
            path = self._p('user_dictionary')  # process-wide: applied once, for all
            userdict.apply(userdict.UserDictionary.load(path) if path else None)
            warmup_front_end()
            if not self._load_shared():
                self._teardown()
                self._state_label = 'unconfigured'
                return TransitionCallbackReturn.FAILURE
            for robot in robots:
                if not self._add_robot(robot):
                    self._teardown()
                    self._state_label = 'unconfigured'
                    return TransitionCallbackReturn.FAILURE
        except Exception as exc:  # never lose a configure error: log it, free what exists
            self.get_logger().error(f'configure failed: {type(exc).__name__}: {exc}')
            self._teardown()
            self._state_label = 'unconfigured'
            return TransitionCallbackReturn.FAILURE
        self._state_label = 'inactive'
        return TransitionCallbackReturn.SUCCESS

    def _load_shared(self) -> bool:
        """Load and warm the engine once, share it; the phrase cache goes on top.

        The cache wraps the shared engine's turns, not the engine: a hit is served at once
        to any robot, only a miss waits for its turn.
        """
        params = self._engine_params()
        engine = self._loader.load(dict(params, phrase_cache_mb=0, preload_phrases=''),
                                   self._preload_voice)
        if engine is None:
            return False
        voice = self._preload_voice()  # while the loader still knows the voice loaded
        self._loader.detach()  # the shared engine owns it from here
        self._shared = SharedEngine(engine)
        if params['phrase_cache_mb']:
            cached = self._loader.add_cache(self._shared.gated, params, voice)
            if cached is None:
                return False
            self._loader.detach()
            self._shared.serve(cached)
        return True

    def _add_robot(self, robot: str) -> bool:
        """Make robot ``robot``'s node, add it to the executor and configure it."""
        from ..tts_node import TTSNode  # the fleet imports the node, never the reverse

        shared = self._shared
        assert shared is not None
        source = EngineSource(open=shared.view, fallback_reason=self._loader.fallback_reason,
                              parameters=tuple(FLEET_PARAMETERS) + OFFBOARD_PARAMETERS
                              + (ROBOTS,))
        node = TTSNode(engine_source=source, use_global_arguments=False,
                       cli_args=self._robot_args,
                       namespace=robot_namespace(self.get_namespace(), robot))
        with self._lock:
            self._robots[robot] = node
        if self.executor is not None:
            self.executor.add_node(node)
        if node.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            self.get_logger().error(f'robot {robot!r}: configure failed (see its error '
                                    'above): the fleet is not configured')
            return False
        return True

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Activate every robot's node (one cleaned up alone is configured again first).

        A robot's own lifecycle is its own: one deactivated or cleaned up through its own
        services comes back with the fleet; one shut down through them stays down (a
        WARN names it) until the fleet is configured again, and the others speak.
        """
        for robot, node in self._robot_items():
            label = node.lifecycle_label
            if label == 'finalized':
                self.get_logger().warning(f'robot {robot!r} was shut down on its own: it '
                                          'stays down until the fleet is configured again')
                continue
            if label == 'unconfigured' and \
                    node.trigger_configure() != TransitionCallbackReturn.SUCCESS:
                self.get_logger().error(f'robot {robot!r}: configure failed (see its error '
                                        'above)')
                return TransitionCallbackReturn.FAILURE
            if label != 'active' and \
                    node.trigger_activate() != TransitionCallbackReturn.SUCCESS:
                self.get_logger().error(f'robot {robot!r}: activate failed')
                return TransitionCallbackReturn.FAILURE
        self._active = True
        self._state_label = 'active'
        names = ', '.join(robot_namespace(self.get_namespace(), r) for r in self._robots)
        self.get_logger().info(f'fleet ready: {len(self._robots)} robot(s) ({names}) '
                               f'speaking with one engine')
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Deactivate every active robot (each stops speaking, its goals end)."""
        self._active = False
        self._state_label = 'inactive'
        for _robot, node in self._robot_items():
            if node.lifecycle_label == 'active':
                node.trigger_deactivate()
        return super().on_deactivate(state)

    def _robot_items(self) -> list:
        with self._lock:
            return list(self._robots.items())

    def _teardown(self) -> None:
        """Bring every robot to unconfigured, destroy its node, free the shared engine."""
        with self._lock:
            robots, self._robots = list(self._robots.values()), {}
        executor = self.executor
        for node in robots:
            if node.lifecycle_label == 'active':
                node.trigger_deactivate()
            if node.lifecycle_label == 'inactive':
                node.trigger_cleanup()
            if executor is not None:
                executor.remove_node(node)
        if robots and executor is not None:
            # The spinning thread may be building a wait set from the removed nodes'
            # entities: destroying them under it raises there (InvalidHandle) and ends
            # the process. Once two marker tasks have run, every wait set it builds is
            # without them. From the thread that spins (the runner's shutdown), spin here.
            if not caught_up(executor, NODE_RELEASE_TIMEOUT_S,
                             spin=threading.current_thread() is threading.main_thread()):
                self.get_logger().warning('the executor did not cycle in time; destroying '
                                          'the robot nodes anyway')
        for node in robots:
            node.destroy_node()
        if self._shared is not None:
            self._shared.close()
            self._shared = None

    # ------------------------------------------------------------------ runner hooks
    @property
    def lifecycle_label(self) -> str:
        """Lifecycle state as a word: unconfigured, inactive, active or finalized."""
        return self._state_label

    def goals_running(self) -> int:
        """``say`` goals running on every robot together."""
        return sum(node.goals_running() for _r, node in self._robot_items())

    def last_goal_end(self) -> Optional[float]:
        """``time.monotonic()`` of the newest ``say`` goal's end on any robot, or None."""
        ends = [e for _r, node in self._robot_items() if (e := node.last_goal_end()) is not None]
        return max(ends, default=None)

    def mark_clean_exit(self) -> None:
        """Every robot's ``mark_clean_exit`` (the process ends without a teardown)."""
        for _robot, node in self._robot_items():
            node.mark_clean_exit()

    def prepare_shutdown(self) -> None:
        """Every robot stops accepting speech and cancels what speaks and waits."""
        self._active = False
        for _robot, node in self._robot_items():
            node.prepare_shutdown()

    # ------------------------------------------------------------------ diagnostics
    def diagnostic_status(self) -> DiagnosticStatus:
        """The fleet's own status: state, robots, engine, and the shared engine's turns."""
        shared, robots = self._shared, [r for r, _n in self._robot_items()]
        values = {'lifecycle_state': self._state_label, 'robots': ' '.join(robots)}
        level, message = DiagnosticStatus.OK, f'{self._state_label}, {len(robots)} robot(s)'
        if shared is not None:
            engine, stats = shared.engine, shared.arbiter.stats
            values.update({'engine': f'{engine.name}/{engine.voice}', 'device': engine.device,
                           'engine_calls': str(stats.calls),
                           'calls_waiting': str(shared.arbiter.waiting),
                           'max_wait_s': f'{stats.max_wait_s:.3f}',
                           'busy_s': f'{stats.hold_s:.1f}'})
        if self._loader.fallback_reason:
            level, message = DiagnosticStatus.WARN, message + ': fallback voice in use'
        return DiagnosticStatus(
            level=level, name=f'{self.get_fully_qualified_name()}: speech fleet',
            message=message, hardware_id=values.get('device', ''),
            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])

    def destroy_node(self) -> None:
        """Destroy every robot's node, detach the log bridge, destroy the fleet node."""
        self._teardown()
        log_bridge.detach(self._log_handler)
        super().destroy_node()
