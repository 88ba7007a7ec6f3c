# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``player_node`` lifecycle node: ``audio`` in, sound out of the robot's speaker.

``ros2 run hayakoe_ros player_node`` (or ``play:=true`` in ``tts.launch.py``) subscribes
``audio`` (``audio_common_msgs/AudioStamped``) with the QoS ``tts_node`` publishes it
with (reliable, keep-last ``qos_depth``) and plays each chunk at its ``header.stamp``
through PortAudio (:mod:`hayakoe_ros.player.device`); the timing rules are in
:mod:`hayakoe_ros.player.playout`. Stamps are node-clock (ROS) times: the publisher and
the player must share a clock (same machine, or synchronised clocks).

Interfaces: subscribes ``audio`` (logs each change in its matched publishers: audio sent
before the match is not received) and ``marks`` (``std_msgs/String``, JSON speech marks,
same QoS): an utterance's ``end`` mark with another outcome than ``succeeded`` drops at
once what the player still holds of it, ending in a 5 ms fade
(:mod:`hayakoe_ros.player.cut`); publishes ``/diagnostics`` (underruns, least headroom,
output latency, device, rates); the standard lifecycle services. At DEBUG level it logs
every chunk's arrival against its stamp and its headroom (``--log-level
player_node:=debug``).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Optional

from audio_common_msgs.msg import AudioStamped
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.event_handler import (QoSRequestedIncompatibleQoSInfo, QoSSubscriptionMatchedInfo,
                                 SubscriptionEventCallbacks)
from rclpy.qos import qos_policy_name_from_kind
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription
from std_msgs.msg import String

from .node.param_spec import (QOS_OVERRIDES, Apply, ParameterSpec, before_set,
                              declare_specs, next_configure_error)
from .node.runner import run
from .node.status import publish_status
from .node.decode import decode
from .node.upkeep import TailUpkeep
from .player.device import DeviceError, Player, PlayerConfig
from .player.marks import MarkFollower, parse_mark

__all__ = ['PLAYER_PARAMETERS', 'PlayerNode', 'decode', 'main']

#: Longest wait for queued audio to play out when the node deactivates or stops (s).
DRAIN_TIMEOUT_S = 10.0

_SPECS = (
    ParameterSpec('device', '', "PortAudio output device: '' = the default output (the "
                  'sound server where one runs), else an index or part of a name from '
                  "'python3 -m sounddevice'.", Apply.RELOAD),
    ParameterSpec('latency', 0.1, 'Output latency asked of the device (s): more survives '
                  'CPU stalls, less starts the sound sooner.', Apply.RELOAD,
                  range=(0.005, 2.0)),
    ParameterSpec('buffer', 0.1, 'Jitter buffer (s): the first chunk of an utterance is '
                  'rendered this long after it arrives (and heard the output latency '
                  'later), so later chunks may arrive this much late without an underrun. '
                  'Adds to the text-to-sound latency.', Apply.RELOAD, range=(0.0, 2.0)),
    ParameterSpec('max_ahead_s', 2.0, "How far from its arrival a chunk's stamp is believed "
                  '(s): a chunk stamped further ahead or behind (a clock not in sync, a zero '
                  'stamp) plays as if just stamped, with one WARN per utterance, counted as '
                  'stamps_out_of_range.', Apply.RELOAD, range=(0.1, 60.0)),
    ParameterSpec('device_rate', 0, "Device sample rate (Hz): 0 = the stream's own when the "
                  "device takes it, else the device's default; resampled (libsoxr) when they "
                  'differ.', Apply.RELOAD, range=(0, 192000)),
    ParameterSpec('volume', 1.0, 'Linear gain of the sound (1.0 = as received), clipped at '
                  'full scale.', range=(0.0, 4.0)),
    ParameterSpec('qos_depth', 100, "Depth of the audio subscription (keep-last, reliable): "
                  "tts_node's qos_depth.", Apply.RELOAD, range=(1, 100000)),
    ParameterSpec('diagnostics_period_s', 1.0, 'Period of /diagnostics messages (s).',
                  Apply.RELOAD, range=(0.1, 60.0)),
    ParameterSpec('autostart', True, 'Configure and activate at start-up (no lifecycle '
                  'manager needed).', Apply.RELOAD),
)

#: Every parameter of ``player_node``, by name.
PLAYER_PARAMETERS: dict = {spec.name: spec for spec in _SPECS}


class PlayerNode(LifecycleNode):
    """Lifecycle node playing ``AudioStamped`` chunks at their stamps."""

    def __init__(self, node_name: str = 'player_node', **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        self._active = False
        self._player: Optional[Player] = None
        self._releasing: list = []  # players released, still playing out their queue
        self._declared = False
        self.add_pre_set_parameters_callback(lambda params: before_set(
            params, PLAYER_PARAMETERS, self.get_logger().warning if self._declared else None))
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._errors = declare_specs(self, PLAYER_PARAMETERS)  # reported by on_configure
        self._declared = True
        self._sub: Optional[Subscription] = None
        self._marks_sub: Optional[Subscription] = None
        self._marks = MarkFollower(self._begin, self._cut)
        self._state_label = 'unconfigured'
        self._rejected = 0
        self._last_error = ''
        self._stamp_warned = False
        self._incompatible = 0
        self._incompatible_policy = ''
        self.finalized = threading.Event()
        self._group = MutuallyExclusiveCallbackGroup()
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._timer = self.create_timer(self._p('diagnostics_period_s'), self._on_timer,
                                        callback_group=MutuallyExclusiveCallbackGroup())
        self._upkeep = TailUpkeep(self, self._tick)

    def _tick(self) -> Optional[float]:
        player = self._player
        return player.tick() if player is not None else None

    def _p(self, name: str):
        return self.get_parameter(name).value

    def _on_set_parameters(self, params) -> SetParametersResult:
        for param in params:
            spec = PLAYER_PARAMETERS.get(param.name)
            if not param.name:  # rclpy lets it through (it declares it); logged pre-set
                return SetParametersResult(successful=False, reason='a parameter needs a name')
            if spec is None:
                continue
            error = spec.check(param.value)
            if not error and spec.apply is Apply.RELOAD:
                error = next_configure_error(self, param.name, param.value, self._active)
            if error:
                self.get_logger().warning(f'parameter change rejected: {error}')
                return SetParametersResult(successful=False, reason=error)
        for param in params:
            if param.name == 'volume' and self._player is not None:
                self._player.set_volume(param.value)
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Find the output device (errors name it and how to list devices)."""
        for error in self._errors:
            self.get_logger().error(f'invalid configuration: {error}')
        if self._errors:
            return TransitionCallbackReturn.FAILURE
        config = PlayerConfig(device=self._p('device'), latency_s=self._p('latency'),
                              device_rate=self._p('device_rate'), volume=self._p('volume'),
                              buffer_s=self._p('buffer'), max_ahead_s=self._p('max_ahead_s'))
        # A stream still playing out from before a cleanup ends first (bounded): some
        # devices (ALSA hw) take one stream at a time.
        self.wait_released(DRAIN_TIMEOUT_S)
        try:
            self._player = Player(config)
        except DeviceError as exc:
            self._last_error = str(exc)
            self.get_logger().error(f'configure failed: {exc}')
            return TransitionCallbackReturn.FAILURE
        period = self._p('diagnostics_period_s')
        if abs(self._timer.timer_period_ns - period * 1e9) > 1:
            self.destroy_timer(self._timer)
            self._timer = self.create_timer(period, self._on_timer,
                                            callback_group=MutuallyExclusiveCallbackGroup())
        self._state_label = 'inactive'
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Subscribe ``audio``; the device opens at the first chunk, at its rate."""
        qos = QoSProfile(depth=self._p('qos_depth'), history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
        # Created first: when a start mark and its chunk are both waiting, the executor
        # takes the mark first (the first chunk then belongs to its utterance).
        self._marks_sub = self.create_subscription(String, 'marks', self._on_mark, qos,
                                                   callback_group=self._group)
        self._sub = self.create_subscription(
            AudioStamped, 'audio', self._on_audio, qos, callback_group=self._group,
            qos_overriding_options=QOS_OVERRIDES,
            event_callbacks=SubscriptionEventCallbacks(
                matched=self._on_matched, incompatible_qos=self._on_incompatible_qos))
        self._active = True
        self._state_label = 'active'
        device = self._player.device_name if self._player is not None else '?'
        self.get_logger().info(f'ready: playing {self._sub.topic_name} on {device!r}')
        return super().on_activate(state)

    def _on_matched(self, info: QoSSubscriptionMatchedInfo) -> None:
        sub = self._sub
        topic = sub.topic_name if sub is not None else 'audio'
        self.get_logger().info(f'{topic}: {info.current_count} publisher(s) matched')

    def _on_incompatible_qos(self, info: QoSRequestedIncompatibleQoSInfo) -> None:
        # A publisher whose QoS cannot match (a best-effort audio topic): DDS delivers it
        # nothing, silently. Say so, and how to match it.
        self._incompatible = info.total_count
        self._incompatible_policy = qos_policy_name_from_kind(info.last_policy_kind)
        sub = self._sub
        topic = sub.topic_name if sub is not None else 'audio'
        self.get_logger().warning(
            f'{topic}: a publisher offers a QoS this subscription cannot match '
            f'({self._incompatible_policy}); nothing it publishes is received. Publish '
            'reliable, or subscribe to match it: --ros-args -p '
            f'qos_overrides.{topic}.subscription.reliability:=best_effort')

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop listening; what was received plays out (bounded), then the device closes.

        Returns at once: the play-out runs in the player's own thread, so the node's
        services and diagnostics go on answering (the node has one executor thread).
        """
        self._stop_listening()
        self._state_label = 'inactive'
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release the device (after what it holds has played, as for deactivate)."""
        self._stop_listening()
        self._release_player()
        self._state_label = 'unconfigured'
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Play out what was received (bounded), release the device; the process exits.

        The runner waits for the play-out (:meth:`wait_released`) before the process ends.
        """
        self._stop_listening()
        self._release_player()
        self._state_label = 'finalized'
        self.finalized.set()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Release the device; back to unconfigured."""
        self._stop_listening()
        self._release_player()
        self._state_label = 'unconfigured'
        return TransitionCallbackReturn.SUCCESS

    def _stop_listening(self) -> None:
        self._active = False
        for sub in (self._sub, self._marks_sub):
            if sub is not None:
                self.destroy_subscription(sub)
        self._sub = self._marks_sub = None
        if self._player is not None:
            self._player.close_when_played(DRAIN_TIMEOUT_S)

    def _release_player(self) -> None:
        if self._player is not None:
            self._releasing.append(self._player)
        self._player = None

    def wait_released(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) for released players to finish playing out."""
        deadline = time.monotonic() + timeout
        while self._releasing:
            if not self._releasing[0].wait_closed(deadline - time.monotonic()):
                return False
            self._releasing.pop(0)
        return True

    @property
    def lifecycle_label(self) -> str:
        """Lifecycle state as a word."""
        return self._state_label

    def goals_running(self) -> int:
        """No goals: the player serves no action (for the shared runner)."""
        return 0

    def prepare_shutdown(self) -> None:
        """Nothing to cancel: the shutdown transition plays out the queue."""

    # ------------------------------------------------------------------ marks
    def _on_mark(self, msg: String) -> None:
        if self._player is None or not self._active:
            return
        try:
            line = self._marks.on_mark(parse_mark(msg.data))
        except ValueError as exc:
            self._last_error = f'bad speech mark: {exc}'
            self.get_logger().warning(f'speech mark ignored: {exc}',
                                      throttle_duration_sec=5.0)
            return
        if line:
            self.get_logger().debug(line)

    def _begin(self, stamp: float) -> None:
        if self._player is not None:
            self._player.begin(stamp)

    def _cut(self, start: Optional[float], end: float, approx_start: float) -> float:
        player = self._player
        return player.cut(start, end, approx_start) if player is not None else 0.0

    # ------------------------------------------------------------------ audio
    def _on_audio(self, msg: AudioStamped) -> None:
        player = self._player
        if player is None or not self._active:
            return
        try:
            samples = decode(msg)
            # The stamp stays in the node clock (exact: contiguity is judged on it); the
            # clocks' offset, read now, only places the first chunk of a run.
            now_ns = self.get_clock().now().nanoseconds
            clock_offset = time.monotonic() - now_ns * 1e-9
            stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            stamp = stamp_ns * 1e-9
            late = player.submit(stamp, samples, int(msg.audio.info.rate), clock_offset)
            self._upkeep.on_chunk()  # a resampled run's held tail is queued when due
            issue, started_idle = player.last_stamp_issue
            if started_idle:
                self._stamp_warned = False  # a new utterance: warn again if it needs it
            if issue and not self._stamp_warned:
                self._stamp_warned = True
                self.get_logger().warning(
                    f'chunk stamped {stamp:.6f}: {issue} (more than max_ahead_s '
                    f"{self._p('max_ahead_s')} s); played as if just stamped. Are the "
                    'clocks of the publisher and this machine in sync?')
            self.get_logger().debug(
                f'chunk stamped {stamp:.6f}: arrived {(stamp_ns - now_ns) * 1e-6:+.1f} ms '
                f'before its stamp, {player.last_headroom_s * 1e3:+.1f} ms before its turn')
            if late:
                self.get_logger().warning('underrun: a chunk arrived after the sound before '
                                          'it had played; played at once',
                                          throttle_duration_sec=5.0)
        except ValueError as exc:
            self._rejected += 1
            self._last_error = str(exc)
            self.get_logger().warning(f'audio chunk rejected: {exc}',
                                      throttle_duration_sec=5.0)
        except DeviceError as exc:
            self._last_error = str(exc)
            self.get_logger().error(str(exc), throttle_duration_sec=5.0)
        except Exception as exc:  # an unforeseen chunk must not take the node down
            self._rejected += 1
            self._last_error = f'{type(exc).__name__}: {exc}'
            self.get_logger().error(f'audio chunk failed: {self._last_error}',
                                    throttle_duration_sec=5.0)

    # ------------------------------------------------------------------ diagnostics
    def diagnostic_status(self) -> DiagnosticStatus:
        """Device, rates, latency, underruns, xruns, chunks, queue and state."""
        player = self._player
        status = DiagnosticStatus(name=f'{self.get_fully_qualified_name()}: audio output',
                                  hardware_id=player.device_name if player else '')
        values = {'lifecycle_state': self._state_label, 'rejected_chunks': self._rejected,
                  'last_error': self._last_error,
                  'incompatible_qos_publishers': self._incompatible}
        if player is not None:
            stats = player.stats()
            values.update(device=player.device_name, device_rate_hz=player.stream_rate,
                          output_latency_s=f'{player.latency_s:.4f}',
                          underruns=stats.underruns, late_s=f'{stats.late_s:.3f}',
                          min_headroom_s=f'{stats.min_headroom_s:.3f}',
                          xruns=player.xruns, chunks=stats.chunks,
                          resampled_chunks=stats.resampled,
                          stamps_out_of_range=stats.stamps_out_of_range,
                          cut_utterances=stats.cuts, cut_dropped_s=f'{stats.dropped_s:.3f}',
                          cut_late_chunks=stats.dropped_chunks,
                          queued_s=f'{player.queued_s:.3f}')
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        if player is None:
            status.level, status.message = DiagnosticStatus.ERROR, (
                self._last_error or 'no output device')
        elif self._incompatible:
            status.level = DiagnosticStatus.ERROR
            status.message = (f'incompatible QoS ({self._incompatible_policy}): a publisher '
                              'of the audio topic cannot be received')
        elif values.get('underruns') or player.xruns or stats.stamps_out_of_range:
            status.level = DiagnosticStatus.WARN
            status.message = (f"underruns {values['underruns']}, xruns {player.xruns}, "
                              f'stamps out of range {stats.stamps_out_of_range}')
        else:
            status.level, status.message = DiagnosticStatus.OK, 'playing' if (
                player.queued_s > 0) else 'idle'
        return status

    def _on_timer(self) -> None:
        publish_status(self, self._diag_pub, self.diagnostic_status)


def main(args=None, stop: Optional[threading.Event] = None) -> int:
    """Run ``player_node`` (``ros2 run`` enters through :mod:`hayakoe_ros.entry`).

    Returns the exit status; ``stop``: see :func:`hayakoe_ros.node.runner.run`.
    """
    # One thread: the PortAudio callback needs the GIL every 25 ms, and rclpy's
    # multi-threaded executor can hold it for a large fraction of a second (runner.run).
    return run(PlayerNode, args, num_threads=1, stop=stop)


if __name__ == '__main__':
    sys.exit(main())
