# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``tts_node`` lifecycle node: Japanese text in, streamed audio chunks out.

Interfaces (node-relative names, remappable):

* subscribes ``text`` (``std_msgs/String``): each message is one utterance;
* action server ``say`` (``audio_common_msgs/action/TTS``); feedback = every chunk;
* publishes ``audio`` (``audio_common_msgs/AudioStamped``), mono int16 PCM chunks;
* publishes ``speaking`` (``std_msgs/Bool``, transient local) and ``/diagnostics``;
* service ``stop`` (``std_srvs/Trigger``): silence the node and flush the queue.

Lifecycle: ``on_configure`` loads and warms up the engine (falling back to Open JTalk when
allowed), ``on_activate`` starts serving, ``on_deactivate`` stops speaking and cancels
goals, ``on_cleanup`` frees the engine. ``autostart`` (default true) drives the node to
active by itself.
"""

from __future__ import annotations

import array
import math
import signal
import sys
import threading
import time
from typing import Any, Optional

import rclpy
from action_msgs.msg import GoalStatus  # noqa: F401  (documents the goal states used)
from audio_common_msgs.action import TTS
from audio_common_msgs.msg import AudioStamped
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType, SetParametersResult)
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy)
from rclpy.qos_overriding_options import QoSOverridingOptions
from rclpy.signals import SignalHandlerOptions
from rclpy.time import Time
from std_msgs.msg import Bool, String
from std_srvs.srv import Trigger

from .engines import EngineLoadError, UnknownStyleError, VoiceParams, create_engine
from .speech import (InputError, Outcome, QueueFullError, SchedulerClosedError,
                     SchedulerConfig, SpeechScheduler)

#: PortAudio sample format flag for int16 (paInt16), as audio_common's AudioInfo uses.
PA_INT16 = 8

#: Language codes accepted on goals: Japanese, plus empty and the action's default "en"
#: (clients often leave the field; hayakoe reads English words in katakana).
ACCEPTED_LANGUAGES = frozenset({'', 'ja', 'ja-jp', 'ja_jp', 'jp', 'jpn', 'en'})

#: Upper bound of ``max_queue``; the executor gets this many threads plus spares, because
#: each accepted goal holds one while it waits (threads are created only when needed).
MAX_QUEUE_LIMIT = 1000
EXECUTOR_THREADS = MAX_QUEUE_LIMIT + 16

#: Goal results are kept this long after a goal ends (s), the rcl default (15 min).
RESULT_TIMEOUT_S = 900

RATE_RANGE = (0.25, 4.0)
VOLUME_RANGE = (0.0, 4.0)

# name: (default, description, range or choices, read_only)
PARAMETERS: dict = {
    'engine': ('hayakoe', "Speech engine: 'hayakoe' (Style-Bert-VITS2) or 'openjtalk'.",
               ('hayakoe', 'openjtalk'), True),
    'fallback_engine': ('openjtalk', "Engine used when 'engine' cannot be loaded: "
                        "'openjtalk' or 'none' (load failure is then fatal).",
                        ('openjtalk', 'none'), True),
    'device': ('cpu', "hayakoe device: 'cpu' (ONNX Runtime) or 'cuda'/'cuda:N' (PyTorch).",
               None, True),
    'compile': (False, 'CUDA only: torch.compile the BERT (slower start, faster speech).',
                None, True),
    'speaker': ('jvnv-F1-jp', 'hayakoe speaker (voice) name.', None, True),
    'speaker_source': ('', "URI of the speaker files (hf://user/repo, file:///path, "
                       "s3://bucket/prefix); empty = hayakoe's Hugging Face repo.", None,
                       True),
    'bert_source': ('', "URI of the shared BERT and tokenizer; empty = hayakoe's repo.",
                    None, True),
    'cache_dir': ('', 'hayakoe download cache; empty = $HAYAKOE_CACHE or ./hayakoe_cache.',
                  None, True),
    'num_threads': (0, 'ONNX Runtime intra-op threads per session (0 = runtime default, '
                    'one per core). On a Pi 4B leave a core to the rest of the robot: 3.',
                    (0, 256), True),
    'style': ('Neutral', 'Voice style (emotion) name offered by the model.', None, False),
    'style_weight': (1.0, 'Style strength: 0 = mean voice, 1 = full style.', (0.0, 10.0),
                     False),
    'speaker_id': (0, 'Speaker index in a multi-speaker model.', (0, 1000), False),
    'rate': (1.0, 'Speaking-rate multiplier (2.0 = twice as fast); multiplies goal rate.',
             RATE_RANGE, False),
    'volume': (1.0, 'Linear gain of the voice (1.0 = the model level); multiplies goal '
               'volume. A limiter keeps peaks under -1 dBFS.', VOLUME_RANGE, False),
    'pitch_scale': (1.0, 'Pitch multiplier (1.0 = unchanged; WORLD re-synthesis).',
                    (0.5, 2.0), False),
    'intonation_scale': (1.0, 'Intonation (F0 deviation) multiplier.', (0.0, 2.0), False),
    'sdp_ratio': (0.2, 'Stochastic duration predictor mix (0 = deterministic DP).',
                  (0.0, 1.0), False),
    'noise': (0.6, 'Prior noise scale (0 = deterministic audio).', (0.0, 2.0), False),
    'noise_w': (0.8, 'Duration noise scale of the stochastic predictor.', (0.0, 2.0),
                False),
    'queue_policy': ('enqueue', "'enqueue': utterances wait in FIFO order; 'interrupt': a "
                     'new utterance cancels the one speaking and is spoken next.',
                     ('enqueue', 'interrupt'), False),
    'max_queue': (16, 'Utterances that may wait behind the one speaking; more are '
                  'rejected with an error (0: speak only when idle).', (0, MAX_QUEUE_LIMIT),
                  False),
    'max_chars': (2000, 'Longest accepted utterance, characters.', (1, 1000000), False),
    'max_segment_chars': (60, 'Longest synthesis segment, characters: longer sentences '
                          'are cut at clause boundaries (BERT reads at most 510).',
                          (4, 400), False),
    'chunk': (2048, 'Frames (samples) per audio message.', (64, 1048576), False),
    'frame_id': ('tts', 'header.frame_id of audio messages.', None, False),
    'max_lead_s': (0.3, 'Publish audio at most this far ahead of playback (s).',
                   (0.0, 60.0), False),
    'pacing': (True, 'Publish at playback rate (false: as fast as synthesis allows).',
               None, False),
    'qos_depth': (100, 'Depth of the audio publisher queue (keep-last).', (1, 100000),
                  True),
    'diagnostics_period_s': (1.0, 'Period of /diagnostics messages (s).', (0.1, 60.0),
                             True),
    'autostart': (True, 'Configure and activate at start-up (no lifecycle manager '
                  'needed).', None, True),
}

_VOICE_PARAMS = ('style', 'style_weight', 'speaker_id', 'rate', 'pitch_scale',
                 'intonation_scale', 'sdp_ratio', 'noise', 'noise_w')
_SCHEDULER_PARAMS = {'queue_policy': 'queue_policy', 'max_queue': 'max_queue',
                     'max_chars': 'max_chars', 'max_segment_chars': 'max_segment_chars',
                     'chunk': 'chunk_frames', 'max_lead_s': 'max_lead_s',
                     'pacing': 'pacing', 'volume': 'volume'}


def _descriptor(name: str, default: Any, description: str, bounds: Any,
                read_only: bool) -> ParameterDescriptor:
    desc = ParameterDescriptor(name=name, read_only=read_only)
    text = description
    if isinstance(bounds, tuple) and bounds and isinstance(bounds[0], str):
        text += ' One of: ' + ', '.join(bounds) + '.'
    elif isinstance(default, float) and bounds is not None:
        desc.floating_point_range = [FloatingPointRange(
            from_value=float(bounds[0]), to_value=float(bounds[1]), step=0.0)]
    elif isinstance(default, int) and not isinstance(default, bool) and bounds is not None:
        desc.integer_range = [IntegerRange(from_value=int(bounds[0]),
                                           to_value=int(bounds[1]), step=1)]
    desc.description = text
    desc.type = {bool: ParameterType.PARAMETER_BOOL, int: ParameterType.PARAMETER_INTEGER,
                 float: ParameterType.PARAMETER_DOUBLE,
                 str: ParameterType.PARAMETER_STRING}[type(default)]
    return desc


def parameter_table() -> str:
    """Markdown table of every parameter (README's table is this, verbatim)."""
    rows = ['| parameter | type | default | range / values | live | description |',
            '|---|---|---|---|---|---|']
    for name, (default, description, bounds, read_only) in PARAMETERS.items():
        kind = {bool: 'bool', int: 'int', float: 'double', str: 'string'}[type(default)]
        if isinstance(bounds, tuple) and bounds and isinstance(bounds[0], str):
            values = ' / '.join(f'`{b}`' for b in bounds)
        elif bounds is not None:
            values = f'[{bounds[0]:g}, {bounds[1]:g}]'
        else:
            values = ''
        shown = str(default).lower() if isinstance(default, bool) else default
        shown = f'`{shown}`' if shown != '' else '`""`'
        rows.append(f"| `{name}` | {kind} | {shown} | {values} | "
                    f"{'no (reload)' if read_only else 'yes'} | {description} |")
    return '\n'.join(rows)


def language_error(code: str) -> Optional[str]:
    """Return why a goal's language code is unsupported, or None if it is accepted."""
    if code.strip().lower() in ACCEPTED_LANGUAGES:
        return None
    return (f"unsupported language '{code}': this node speaks Japanese; use 'ja' "
            "(or leave the field empty / at its default)")


class TTSNode(LifecycleNode):
    """Lifecycle node speaking Japanese text as streamed ``AudioStamped`` chunks."""

    def __init__(self, node_name: str = 'tts_node', **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        for name, (default, description, bounds, read_only) in PARAMETERS.items():
            self.declare_parameter(name, default,
                                   _descriptor(name, default, description, bounds,
                                               read_only))
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._engine = None
        self._scheduler: Optional[SpeechScheduler] = None
        self._active = False
        self._fallback_reason = ''
        self._engine_error = ''
        self._last_error = ''
        self._lifecycle_label = 'unconfigured'
        self._goals: dict = {}
        self._cancel_early: set = set()
        self._running_goals = 0
        self._running_cv = threading.Condition()
        self._clock_offsets: dict = {}
        self._goals_lock = threading.Lock()
        self._cb_group = ReentrantCallbackGroup()
        self._audio_pub = None
        self._text_sub = None
        self._action_server = None
        self._stop_srv = None
        self._speaking = False
        self._speaking_lock = threading.Lock()
        self._speaking_pub = self.create_publisher(
            Bool, 'speaking', QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                                         reliability=ReliabilityPolicy.RELIABLE,
                                         durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self._speaking_pub.publish(Bool(data=False))
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._diag_timer = self.create_timer(
            self.get_parameter('diagnostics_period_s').value, self._publish_diagnostics,
            callback_group=MutuallyExclusiveCallbackGroup())

    # ------------------------------------------------------------------ parameters
    def _p(self, name: str) -> Any:
        return self.get_parameter(name).value

    def _voice(self, overrides: Optional[dict] = None, goal_rate: float = 1.0) -> VoiceParams:
        values = {name: self._p(name) for name in _VOICE_PARAMS}
        values.update(overrides or {})
        style = values['style']
        if self._fallback_reason and self._engine is not None and \
                style not in self._engine.styles:
            style = self._engine.styles[0]  # the fallback voice has its own styles
        return VoiceParams(
            style=style, style_weight=values['style_weight'],
            length_scale=1.0 / (values['rate'] * goal_rate),
            sdp_ratio=values['sdp_ratio'], noise=values['noise'], noise_w=values['noise_w'],
            pitch_scale=values['pitch_scale'], intonation_scale=values['intonation_scale'],
            speaker_id=values['speaker_id'])

    def _scheduler_config(self, overrides: Optional[dict] = None) -> SchedulerConfig:
        values = {field: self._p(name) for name, field in _SCHEDULER_PARAMS.items()}
        for name, value in (overrides or {}).items():
            if name in _SCHEDULER_PARAMS:
                values[_SCHEDULER_PARAMS[name]] = value
        return SchedulerConfig(**values)

    def _on_set_parameters(self, params) -> SetParametersResult:
        changes = {p.name: p.value for p in params}
        try:
            if 'queue_policy' in changes and changes['queue_policy'] not in (
                    'enqueue', 'interrupt'):
                raise ValueError(f"queue_policy must be 'enqueue' or 'interrupt', got "
                                 f"'{changes['queue_policy']}'")
            for name in ('engine', 'fallback_engine'):
                if name in changes and changes[name] not in PARAMETERS[name][2]:
                    raise ValueError(f"{name} must be one of {PARAMETERS[name][2]}, got "
                                     f"'{changes[name]}'")
            if self._engine is not None and (
                    'style' in changes or 'speaker_id' in changes):
                self._engine.check_voice(self._voice(
                    {k: v for k, v in changes.items() if k in _VOICE_PARAMS}))
            if self._scheduler is not None and set(changes) & set(_SCHEDULER_PARAMS):
                self._scheduler.configure(**{
                    k: v for k, v in vars(self._scheduler_config(changes)).items()})
        except (ValueError, UnknownStyleError) as exc:
            self.get_logger().warning(f'parameter change rejected: {exc}')
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Load and warm up the engine; create the audio publisher and the action server."""
        log = self.get_logger()
        name = self._p('engine')
        options = dict(speaker=self._p('speaker'), device=self._p('device'),
                       speaker_source=self._p('speaker_source'),
                       bert_source=self._p('bert_source'), cache_dir=self._p('cache_dir'),
                       num_threads=self._p('num_threads'), compile=self._p('compile'))
        t0 = time.perf_counter()
        self._fallback_reason = ''
        self._engine_error = ''
        try:
            engine = create_engine(name, **options)
        except EngineLoadError as exc:
            fallback = self._p('fallback_engine')
            if fallback == 'none' or fallback == name:
                self._engine_error = str(exc)
                cause = str(exc).rstrip('. ')
                log.error(f'{cause}. fallback_engine is {fallback!r}, so this is fatal. '
                          'Check speaker_source/bert_source (file:// paths for offline use) '
                          'or let the node download the model once with network access.')
                return TransitionCallbackReturn.FAILURE
            self._fallback_reason = str(exc)
            cause = str(exc).rstrip('. ')
            log.warning(
                f'{cause}. Speaking with the {fallback!r} fallback voice instead. To use '
                f'{name}: give speaker_source/bert_source as file:// paths to a downloaded '
                'model (or run once with network access so it is cached), or set '
                'fallback_engine:=none to make this an error.')
            try:
                engine = create_engine(fallback)
            except EngineLoadError as exc2:
                self._engine_error = str(exc2)
                log.error(f'fallback engine failed too: {exc2}')
                return TransitionCallbackReturn.FAILURE
        load_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        try:
            engine.check_voice(self._voice())
        except UnknownStyleError as exc:
            self._engine_error = str(exc)
            log.error(f'{exc} (parameters style/speaker_id)')
            engine.close()
            return TransitionCallbackReturn.FAILURE
        engine.warmup()
        warm_s = time.perf_counter() - t1
        self._engine = engine
        self._scheduler = SpeechScheduler(engine, self._sink, self._scheduler_config(),
                                          on_speaking=self._set_speaking)
        qos = QoSProfile(depth=self._p('qos_depth'), history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
        self._audio_pub = self.create_publisher(
            AudioStamped, 'audio', qos,
            qos_overriding_options=QoSOverridingOptions.with_default_policies())
        # Deep service queues: a burst of goals must reach the queue bound and get an
        # answer, not vanish in a depth-10 service queue.
        burst = QoSProfile(depth=EXECUTOR_THREADS, reliability=ReliabilityPolicy.RELIABLE)
        self._action_server = ActionServer(
            self, TTS, 'say', execute_callback=self._execute, goal_callback=self._on_goal,
            cancel_callback=self._on_cancel, callback_group=self._cb_group,
            goal_service_qos_profile=burst, result_service_qos_profile=burst,
            cancel_service_qos_profile=burst, result_timeout=RESULT_TIMEOUT_S)
        self._stop_srv = self.create_service(Trigger, 'stop', self._on_stop,
                                             callback_group=self._cb_group)
        self._lifecycle_label = 'inactive'
        log.info(f'engine {engine.name} on {engine.device} loaded in {load_s:.2f} s, warmed '
                 f'up in {warm_s:.2f} s ({engine.sample_rate} Hz, styles: '
                 f"{', '.join(engine.styles)})")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Start serving the text topic and ``say`` goals."""
        # Deep enough that a burst reaches the queue bound and is answered with a WARN.
        self._text_sub = self.create_subscription(String, 'text', self._on_text,
                                                  EXECUTOR_THREADS,
                                                  callback_group=self._cb_group)
        self._active = True
        self._lifecycle_label = 'active'
        engine = self._engine
        self.get_logger().info(
            f'ready: speaking with {engine.name} ({engine.device}, {engine.sample_rate} Hz)'
            + (' [FALLBACK voice]' if self._fallback_reason else ''))
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop speaking, cancel running goals, stop serving the text topic."""
        self._active = False
        self._lifecycle_label = 'inactive'
        if self._text_sub is not None:
            self.destroy_subscription(self._text_sub)
            self._text_sub = None
        if self._scheduler is not None:
            n = self._scheduler.stop('the node was deactivated (lifecycle transition)')
            if n:
                self.get_logger().info(f'deactivated: canceled {n} utterance(s)')
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Free the engine and the interfaces created by ``on_configure``."""
        self._teardown()
        self._lifecycle_label = 'unconfigured'
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop speaking and free everything."""
        self._active = False
        self._teardown()
        self._lifecycle_label = 'finalized'
        return TransitionCallbackReturn.SUCCESS

    @property
    def lifecycle_label(self) -> str:
        """Lifecycle state as a word: unconfigured, inactive, active or finalized."""
        return self._lifecycle_label

    def goals_running(self) -> int:
        """Number of ``say`` goals whose execute callback has not returned yet."""
        with self._running_cv:
            return self._running_goals

    def stop_speech(self, reason: str) -> int:
        """Cancel what is speaking and everything queued; return how many were canceled."""
        self._active = False
        scheduler = self._scheduler
        return scheduler.stop(reason) if scheduler is not None else 0

    def _teardown(self) -> None:
        if self._text_sub is not None:
            self.destroy_subscription(self._text_sub)
            self._text_sub = None
        if self._scheduler is not None:
            self._scheduler.shutdown()
            self._scheduler = None
        # Let every execute callback return its result before the server goes away.
        with self._running_cv:
            had_goals = self._running_goals > 0
            self._running_cv.wait_for(lambda: self._running_goals == 0, timeout=5.0)
        if had_goals:
            time.sleep(0.5)  # their results are sent by executor tasks queued on return
        if self._action_server is not None:
            self._action_server.destroy()
            self._action_server = None
        if self._stop_srv is not None:
            self.destroy_service(self._stop_srv)
            self._stop_srv = None
        if self._audio_pub is not None:
            self.destroy_publisher(self._audio_pub)
            self._audio_pub = None
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()
        self._set_speaking(False)

    # ------------------------------------------------------------------ audio out
    def _sink(self, utt, chunk) -> None:
        msg = AudioStamped()
        if chunk.index == 0 or utt.id not in self._clock_offsets:
            # One ROS-clock/monotonic offset per utterance keeps the stamps exactly one
            # chunk apart (reading both clocks per chunk would add jitter).
            self._clock_offsets = {utt.id: self.get_clock().now().nanoseconds
                                   - int(time.monotonic() * 1e9)}
        stamp_ns = self._clock_offsets[utt.id] + int(round(chunk.play_time * 1e9))
        msg.header.stamp = Time(nanoseconds=stamp_ns,
                                clock_type=self.get_clock().clock_type).to_msg()
        msg.header.frame_id = self._p('frame_id')
        msg.audio.info.format = PA_INT16
        msg.audio.info.channels = 1
        msg.audio.info.rate = chunk.sample_rate
        msg.audio.info.chunk = len(chunk.samples)
        msg.audio.audio_data.int16_data = array.array('h', chunk.samples.tobytes())
        pub = self._audio_pub
        if pub is not None:
            pub.publish(msg)
        goal_handle = utt.tag
        if goal_handle is not None:
            goal_handle.publish_feedback(TTS.Feedback(audio=msg))

    def _set_speaking(self, speaking: bool) -> None:
        with self._speaking_lock:
            if speaking == self._speaking:
                return
            self._speaking = speaking
            self._speaking_pub.publish(Bool(data=speaking))

    # ------------------------------------------------------------------ text topic
    def _on_text(self, msg: String) -> None:
        if not self._active or self._scheduler is None:
            return
        try:
            self._scheduler.submit(msg.data, self._voice(), on_done=self._log_outcome)
        except (InputError, UnknownStyleError, QueueFullError, SchedulerClosedError) as exc:
            self._last_error = str(exc)
            self.get_logger().warning(f'text topic: not speaking {msg.data[:40]!r}: {exc}')
        except Exception as exc:  # an unforeseen input must not take the node down
            self._last_error = f'{type(exc).__name__}: {exc}'
            self.get_logger().error(f'text topic: failed on {msg.data[:40]!r}: '
                                    f'{self._last_error}')

    def _log_outcome(self, utt) -> None:
        if utt.outcome is Outcome.ABORTED:
            self._last_error = utt.error
            self.get_logger().error(f'utterance {utt.id} failed: {utt.error}')

    # ------------------------------------------------------------------ action
    def _on_goal(self, goal_request) -> GoalResponse:
        # Accept every goal: a rejection cannot carry a reason, an aborted goal can.
        return GoalResponse.ACCEPT

    def _on_cancel(self, goal_handle) -> CancelResponse:
        key = bytes(goal_handle.goal_id.uuid)
        with self._goals_lock:
            utt = self._goals.get(key)
            if utt is None:
                self._cancel_early.add(key)  # not submitted yet: _execute will not start it
        if utt is not None and self._scheduler is not None:
            # Synchronous: once this returns (and the cancel is acknowledged), no further
            # chunk of this goal is published.
            self._scheduler.cancel(utt, 'canceled by the client')
        return CancelResponse.ACCEPT

    def _goal_error(self, goal) -> Optional[str]:
        if not self._active or self._scheduler is None:
            return f'the node is {self._lifecycle_label}, not active: not accepting speech'
        err = language_error(goal.language)
        if err:
            return err
        for field, (low, high) in (('rate', RATE_RANGE), ('volume', VOLUME_RANGE)):
            value = getattr(goal, field)
            if not (math.isfinite(value) and low <= value <= high):
                return f'{field} {value} is out of range [{low}, {high}]'
        return None

    def _execute(self, goal_handle) -> TTS.Result:
        with self._running_cv:
            self._running_goals += 1
        try:
            return self._execute_goal(goal_handle)
        finally:
            with self._running_cv:
                self._running_goals -= 1
                self._running_cv.notify_all()

    def _execute_goal(self, goal_handle) -> TTS.Result:
        goal = goal_handle.request
        key = bytes(goal_handle.goal_id.uuid)
        error = self._goal_error(goal)
        done = threading.Event()
        utt = None
        with self._goals_lock:
            canceled_early = key in self._cancel_early
            self._cancel_early.discard(key)
            if error is None and not canceled_early:
                try:
                    utt = self._scheduler.submit(
                        goal.text, self._voice(goal_rate=goal.rate), volume=goal.volume,
                        tag=goal_handle, on_done=lambda _u: done.set())
                    self._goals[key] = utt
                except (InputError, UnknownStyleError, QueueFullError,
                        SchedulerClosedError) as exc:
                    error = str(exc)
                except Exception as exc:  # an unforeseen input must not take the node down
                    error = f'internal error: {type(exc).__name__}: {exc}'
        if error is not None:
            self._last_error = error
            self.get_logger().warning(f'say goal aborted: {error}')
            goal_handle.abort()
            return TTS.Result(text=f'error: {error}')
        if utt is None:  # canceled before it started
            return self._end_canceled(goal_handle)
        try:
            done.wait()
        finally:
            with self._goals_lock:
                self._goals.pop(key, None)
        self._log_outcome(utt)
        if utt.outcome is Outcome.SUCCEEDED:
            goal_handle.succeed()
            return TTS.Result(text=utt.text)
        if utt.error == 'canceled by the client':
            return self._end_canceled(goal_handle)
        goal_handle.abort()
        return TTS.Result(text=f'error: {utt.error}')

    @staticmethod
    def _end_canceled(goal_handle) -> TTS.Result:
        # The server moves the goal to CANCELING right after the cancel callback returns.
        deadline = time.monotonic() + 2.0
        while not goal_handle.is_cancel_requested and time.monotonic() < deadline:
            time.sleep(0.005)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return TTS.Result(text='')

    # ------------------------------------------------------------------ stop service
    def _on_stop(self, request, response):
        if self._scheduler is None:
            response.success = False
            response.message = 'not configured: nothing to stop'
            return response
        n = self._scheduler.stop()
        response.success = True
        response.message = f'stopped: {n} utterance(s) canceled'
        self.get_logger().info(response.message)
        return response

    # ------------------------------------------------------------------ diagnostics
    def diagnostic_status(self) -> DiagnosticStatus:
        """Build the node's ``DiagnosticStatus`` (engine, state, queue, RTF, TTFA...)."""
        status = DiagnosticStatus(name=f'{self.get_fully_qualified_name()}: speech synthesis',
                                  hardware_id=self._p('device'))
        engine, sched = self._engine, self._scheduler
        last = sched.last if sched is not None else None
        values = {
            'engine': engine.name if engine else self._p('engine'),
            'device': engine.device if engine else self._p('device'),
            'speaker': self._p('speaker'),
            'lifecycle_state': self._lifecycle_label,
            'fallback_in_use': str(bool(self._fallback_reason)).lower(),
            'sample_rate': str(engine.sample_rate) if engine else '',
            'queue_depth': str(sched.queue_depth) if sched else '0',
            'speaking': str(self._speaking).lower(),
            'utterances_spoken': str(sched.spoken) if sched else '0',
            'utterances_failed': str(sched.failed) if sched else '0',
            'last_rtf': f'{last.rtf:.3f}' if last is not None and last.rtf else '',
            'last_ttfa_s': f'{last.ttfa_s:.3f}' if last is not None and last.ttfa_s else '',
            'last_error': self._last_error,
        }
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        if self._engine_error:
            status.level = DiagnosticStatus.ERROR
            status.message = f'engine failed: {self._engine_error}'
        elif self._fallback_reason:
            status.level = DiagnosticStatus.WARN
            status.message = f'fallback voice in use: {self._fallback_reason}'
        else:
            status.level = DiagnosticStatus.OK
            status.message = f'{self._lifecycle_label}' + (', speaking' if self._speaking
                                                           else '')
        return status

    def _publish_diagnostics(self) -> None:
        try:
            msg = DiagnosticArray()
            msg.header.stamp = self.get_clock().now().to_msg()
            msg.status = [self.diagnostic_status()]
            self._diag_pub.publish(msg)
        except Exception as exc:  # diagnostics must never take the node down
            self.get_logger().error(f'diagnostics failed: {type(exc).__name__}: {exc}',
                                    throttle_duration_sec=10.0)


def main(args=None) -> int:
    """Entry point of ``ros2 run hayakoe_ros tts_node``; returns the exit status.

    SIGINT and SIGTERM stop the node gracefully: speech is canceled, running goals get an
    aborted result and ``speaking`` goes false while the ROS context is still alive, then
    the lifecycle shutdown transition runs. (rclpy's own handlers would shut the context
    down first, leaving clients without results.)
    """
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    node = TTSNode()
    executor = MultiThreadedExecutor(num_threads=EXECUTOR_THREADS)
    executor.add_node(node)
    code = 0
    try:
        if node.get_parameter('autostart').value:
            if node.trigger_configure() != TransitionCallbackReturn.SUCCESS:
                node.get_logger().fatal('configure failed; exiting (see the error above)')
                code = 1
                stop.set()
            else:
                node.trigger_activate()
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
        if rclpy.ok():
            node.stop_speech('the node is shutting down')
            deadline = time.monotonic() + 3.0
            while node.goals_running() and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            # Results go out in executor tasks scheduled when each execute callback returns.
            flush_until = time.monotonic() + 0.5
            while time.monotonic() < flush_until:
                executor.spin_once(timeout_sec=0.05)
            if node.lifecycle_label in ('unconfigured', 'inactive', 'active'):
                node.trigger_shutdown()
    except ExternalShutdownException:
        pass
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.try_shutdown()
    return code


if __name__ == '__main__':
    sys.exit(main())
