# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The parameters of ``tts_node``: one typed spec record per parameter.

Each :class:`ParameterSpec` carries the name, default, unit-bearing description, range or
choices, and *when* a change applies (:class:`Apply`). The node declares them all from
:data:`PARAMETERS`; ``config/tts.yaml``, the launch file and README's table are checked
against it by ``test/test_config.py``. Validation (:meth:`ParameterSpec.check`) is the
same at start-up and on ``ros2 param set``.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import math
from typing import Iterable, Optional, Union

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType)

from ..engines import VoiceParams
from ..speech import QueuePolicy, SchedulerConfig
from ..speech.phrase_cache import MAX_CACHE_MB
from ..speech.text import FIRST_SEGMENT_MORAE

Value = Union[bool, int, float, str]


class Apply(str, enum.Enum):
    """When a parameter change takes effect."""

    #: At once (the next utterance or segment); ``ros2 param set`` works in any state.
    LIVE = 'live'
    #: At the next configure (lifecycle cleanup + configure, or a restart); may be set
    #: while the node is unconfigured or inactive, and is refused while it is active.
    RELOAD = 'reload'


class EngineName(str, enum.Enum):
    """Speech engines the node can load."""

    HAYAKOE = 'hayakoe'
    OPENJTALK = 'openjtalk'


class FallbackEngine(str, enum.Enum):
    """What to speak with when ``engine`` cannot be loaded."""

    OPENJTALK = 'openjtalk'
    NONE = 'none'


#: Goal ``rate`` and ``volume`` ranges (speaking-rate multiplier; linear gain).
RATE_RANGE = (0.25, 4.0)
VOLUME_RANGE = (0.0, 4.0)

#: Upper bound of ``max_queue``.
MAX_QUEUE_LIMIT = 1000

_TYPES = {bool: ('bool', ParameterType.PARAMETER_BOOL),
          int: ('int', ParameterType.PARAMETER_INTEGER),
          float: ('double', ParameterType.PARAMETER_DOUBLE),
          str: ('string', ParameterType.PARAMETER_STRING)}


def _article(word: str) -> str:
    """'a' or 'an' before ``word`` (type names: 'an int', 'a float', 'a bool', 'a str')."""
    return 'an' if word[:1] in 'aeiou' else 'a'


@dataclasses.dataclass(frozen=True)
class ParameterSpec:
    """One node parameter.

    Attributes:
        name: Parameter name.
        default: Default value; its Python type is the parameter's type.
        description: What it does, with units.
        apply: When a change takes effect (:class:`Apply`).
        range: Inclusive ``(low, high)`` for numbers, else None.
        choices: Allowed values for strings, else None.
    """

    name: str
    default: Value
    description: str
    apply: Apply = Apply.LIVE
    range: Optional[tuple] = None
    choices: Optional[tuple] = None

    @property
    def type_name(self) -> str:
        """ROS type name: bool, int, double or string."""
        return _TYPES[type(self.default)][0]

    def allowed(self) -> str:
        """What values are allowed, in words (empty when any value of the type is)."""
        if self.choices:
            return 'one of: ' + ', '.join(self.choices)
        if self.range:
            return (f'{_article(self.type_name)} {self.type_name} in '
                    f'[{self.range[0]:g}, {self.range[1]:g}]')
        return ''

    def descriptor(self) -> ParameterDescriptor:
        """The ``ParameterDescriptor`` declared for it (type, range, description, choices)."""
        desc = ParameterDescriptor(name=self.name, type=_TYPES[type(self.default)][1],
                                   description=self.description, read_only=False)
        if self.choices:
            desc.additional_constraints = self.allowed()
        elif self.range and isinstance(self.default, float):
            desc.floating_point_range = [FloatingPointRange(
                from_value=float(self.range[0]), to_value=float(self.range[1]), step=0.0)]
        elif self.range and isinstance(self.default, int):
            desc.integer_range = [IntegerRange(from_value=int(self.range[0]),
                                               to_value=int(self.range[1]), step=1)]
        if self.apply is Apply.RELOAD:
            desc.additional_constraints = (desc.additional_constraints + ' ' if
                                           desc.additional_constraints else '') + \
                'Applies at the next configure.'
        return desc

    def check(self, value: Value) -> Optional[str]:
        """Return why ``value`` is not allowed (naming parameter, value and rule), or None."""
        expected = type(self.default)
        ok_type = isinstance(value, expected) and not (
            expected is int and isinstance(value, bool))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            ok_type = True
        if not ok_type:
            return (f"parameter '{self.name}': {value!r} is a {type(value).__name__}, "
                    f'expected {_article(self.type_name)} {self.type_name}')
        if self.choices and value not in self.choices:
            return f"parameter '{self.name}': {value!r} is not allowed; {self.allowed()}"
        if self.range and isinstance(value, (int, float)) and not isinstance(value, bool):
            low, high = self.range
            if not (math.isfinite(value) and low <= value <= high):
                return (f"parameter '{self.name}': {value!r} is out of range; "
                        f'{self.allowed()}')
        return None


def _choices(enum_type: type) -> tuple:
    return tuple(member.value for member in enum_type)  # type: ignore[attr-defined]


_SPECS = (
    # --- engine (reload) ---
    ParameterSpec('engine', EngineName.HAYAKOE.value,
                  "Speech engine: 'hayakoe' (Style-Bert-VITS2) or 'openjtalk'.",
                  Apply.RELOAD, choices=_choices(EngineName)),
    ParameterSpec('fallback_engine', FallbackEngine.OPENJTALK.value,
                  "Engine used when 'engine' cannot be loaded: 'openjtalk' or 'none' "
                  '(load failure is then fatal).', Apply.RELOAD,
                  choices=_choices(FallbackEngine)),
    ParameterSpec('device', 'cpu', "hayakoe device: 'cpu' (ONNX Runtime) or 'cuda'/'cuda:N' "
                  '(PyTorch).', Apply.RELOAD),
    ParameterSpec('compile', False, 'CUDA only: torch.compile the BERT (slower start, '
                  'faster speech).', Apply.RELOAD),
    ParameterSpec('speaker', 'jvnv-F1-jp', 'hayakoe speaker (voice) name.', Apply.RELOAD),
    ParameterSpec('speaker_source', '', 'URI of the speaker files (hf://user/repo, '
                  "file:///path, s3://bucket/prefix); empty = hayakoe's Hugging Face repo.",
                  Apply.RELOAD),
    ParameterSpec('bert_source', '', "URI of the shared BERT and tokenizer; empty = "
                  "hayakoe's repo.", Apply.RELOAD),
    ParameterSpec('cache_dir', '', 'hayakoe download cache, also holding the ONNX models '
                  'optimised once for this machine (hayakoe_ros/ort-optimized); empty = '
                  '$HAYAKOE_CACHE or ./hayakoe_cache.', Apply.RELOAD),
    ParameterSpec('num_threads', 0, 'ONNX Runtime intra-op threads per session (0 = runtime '
                  'default, one per core). On a Pi 4B leave a core to the rest of the '
                  'robot: 3.', Apply.RELOAD, range=(0, 256)),
    ParameterSpec('allow_spinning', False, 'ONNX Runtime intra-op threads busy-wait between '
                  'operators (its default). false: they sleep: 2-9 % less CPU at the same '
                  'speed here, left to the rest of the robot.', Apply.RELOAD),
    # --- voice (live) ---
    ParameterSpec('style', 'Neutral', 'Voice style (emotion) name offered by the model.'),
    ParameterSpec('style_weight', 1.0, 'Style strength: 0 = mean voice, 1 = full style.',
                  range=(0.0, 10.0)),
    ParameterSpec('speaker_id', 0, 'Speaker index in a multi-speaker model.',
                  range=(0, 1000)),
    ParameterSpec('rate', 1.0, 'Speaking-rate multiplier (2.0 = twice as fast); multiplies '
                  'goal rate.', range=RATE_RANGE),
    ParameterSpec('volume', 1.0, 'Linear gain of the voice (1.0 = the model level); '
                  'multiplies goal volume. A limiter keeps peaks under -1 dBFS.',
                  range=VOLUME_RANGE),
    ParameterSpec('pitch_scale', 1.0, 'Pitch multiplier (1.0 = unchanged; WORLD '
                  're-synthesis).', range=(0.5, 2.0)),
    ParameterSpec('intonation_scale', 1.0, 'Intonation (F0 deviation) multiplier.',
                  range=(0.0, 2.0)),
    ParameterSpec('sdp_ratio', 0.2, 'Stochastic duration predictor mix (0 = deterministic '
                  'DP).', range=(0.0, 1.0)),
    ParameterSpec('noise', 0.6, 'Prior noise scale (0 = deterministic audio).',
                  range=(0.0, 2.0)),
    ParameterSpec('noise_w', 0.8, 'Duration noise scale of the stochastic predictor.',
                  range=(0.0, 2.0)),
    # --- scheduling (live) ---
    ParameterSpec('queue_policy', QueuePolicy.ENQUEUE.value,
                  "'enqueue': utterances wait in FIFO order; 'interrupt': a new utterance "
                  'cancels the one speaking and is spoken next.',
                  choices=_choices(QueuePolicy)),
    ParameterSpec('max_queue', 16, 'Utterances that may wait behind the one speaking; more '
                  'are rejected with an error (0: speak only when idle).',
                  range=(0, MAX_QUEUE_LIMIT)),
    ParameterSpec('max_chars', 2000, 'Longest accepted utterance, characters.',
                  range=(1, 1000000)),
    ParameterSpec('max_segment_chars', 60, 'Longest synthesis segment, characters: longer '
                  'sentences are cut at clause boundaries (BERT reads at most 510).',
                  range=(4, 400)),
    # --- short first segment and gapless starts (live) ---
    ParameterSpec('first_segment_morae', FIRST_SEGMENT_MORAE, "An utterance's first segment "
                  'ends at the first clause mark after half this many morae, or accent-phrase '
                  'boundary after this many (when that at least halves it); each later '
                  'segment may be as long as all before it, up to max_segment_chars. 0 = '
                  'off (first segment as long as the others).', range=(0, 200)),
    ParameterSpec('gapless', True, 'Delay the start of an utterance just enough that, at '
                  'the measured real-time factor (per engine and voice), no segment boundary '
                  'underruns (with pacing only; the delay is in the log and /diagnostics). '
                  'false = start as soon as the first segment is ready.'),
    # --- text front end (reload) ---
    ParameterSpec('user_dictionary', '', 'User dictionary file: surface<TAB>katakana reading'
                  '[<TAB>accent type] per line, for both voices (empty: none).', Apply.RELOAD),
    ParameterSpec('chunk', 2048, 'Frames (samples) per audio message.', range=(64, 1048576)),
    ParameterSpec('frame_id', 'tts', 'header.frame_id of audio messages.'),
    ParameterSpec('max_lead_s', 0.3, 'Publish audio at most this far ahead of playback (s), '
                  'and at most 3 chunks ahead (so a depth-5 best-effort player keeps every '
                  'chunk).', range=(0.0, 60.0)),
    ParameterSpec('pacing', True, 'Publish at playback rate (false: as fast as synthesis '
                  'allows).'),
    # --- phrase cache (reload) ---
    ParameterSpec('phrase_cache_mb', 0, 'Phrase cache: MiB of synthesised segment audio '
                  'kept (LRU; key: engine, model files, voice settings, output rate, user '
                  'dictionary, segment text), so a repeated phrase costs no synthesis; 0 = '
                  'off. 1 MiB holds about 6 s of 44.1 kHz audio.', Apply.RELOAD,
                  range=(0, int(MAX_CACHE_MB))),
    ParameterSpec('phrase_cache_dir', '', 'Directory where phrase-cache entries persist '
                  'across restarts (one .npy each, same MiB bound); empty = memory only.',
                  Apply.RELOAD),
    ParameterSpec('preload_phrases', '', 'Phrases synthesised into the phrase cache at '
                  'configure (after warm-up): phrases separated by vertical bars, or the path '
                  'of a UTF-8 file with one phrase per line (needs phrase_cache_mb > 0).',
                  Apply.RELOAD),
    # --- interfaces (reload) ---
    ParameterSpec('qos_depth', 100, 'Depth of the audio publisher queue (keep-last).',
                  Apply.RELOAD, range=(1, 100000)),
    ParameterSpec('output_rate', 0, "Sample rate of the published audio (Hz): 0 = the "
                  "engine's own (hayakoe 44100, Open JTalk 48000); else the voice, fallback "
                  'included, is resampled to it (libsoxr). At least 8000.', Apply.RELOAD,
                  range=(0, 192000)),
    ParameterSpec('diagnostics_period_s', 1.0, 'Period of /diagnostics messages (s).',
                  Apply.RELOAD, range=(0.1, 60.0)),
    ParameterSpec('autostart', True, 'Configure and activate at start-up (no lifecycle '
                  'manager needed).', Apply.RELOAD),
)

#: Every parameter of ``tts_node``, by name, in declaration order.
PARAMETERS: dict = {spec.name: spec for spec in _SPECS}

#: Parameters that make up :class:`~hayakoe_ros.engines.VoiceParams`.
VOICE_PARAMETERS = ('style', 'style_weight', 'speaker_id', 'rate', 'pitch_scale',
                    'intonation_scale', 'sdp_ratio', 'noise', 'noise_w')

#: Node parameter name -> :class:`~hayakoe_ros.speech.SchedulerConfig` field.
SCHEDULER_PARAMETERS = {'queue_policy': 'queue_policy', 'max_queue': 'max_queue',
                        'max_chars': 'max_chars', 'max_segment_chars': 'max_segment_chars',
                        'chunk': 'chunk_frames', 'max_lead_s': 'max_lead_s',
                        'pacing': 'pacing', 'volume': 'volume',
                        'first_segment_morae': 'first_segment_morae', 'gapless': 'gapless'}

#: Parameters every rclpy node has (never "unknown").
_BUILTIN = ('use_sim_time', 'start_type_description_service')


def voice_params(values: dict, goal_rate: float = 1.0) -> VoiceParams:
    """Build :class:`VoiceParams` from parameter values.

    Args:
        values: At least the :data:`VOICE_PARAMETERS`, by name.
        goal_rate: A goal's speaking-rate multiplier; multiplies ``rate``.

    Returns:
        The voice settings; ``length_scale = 1 / (rate * goal_rate)`` (hayakoe's ``speed``
        is a length scale, the inverse of a rate).
    """
    return VoiceParams(
        style=values['style'], style_weight=values['style_weight'],
        length_scale=1.0 / (values['rate'] * goal_rate), sdp_ratio=values['sdp_ratio'],
        noise=values['noise'], noise_w=values['noise_w'], pitch_scale=values['pitch_scale'],
        intonation_scale=values['intonation_scale'], speaker_id=values['speaker_id'])


def scheduler_config(values: dict) -> SchedulerConfig:
    """Build :class:`SchedulerConfig` from parameter values (every scheduler parameter)."""
    return SchedulerConfig(**{field: values[name]
                              for name, field in SCHEDULER_PARAMETERS.items()})


def unknown_parameters(names: Iterable[str]) -> list:
    """Return ``(name, closest declared name or '')`` for names the node does not declare.

    QoS overrides (``qos_overrides.*``) and rclpy's own parameters are not unknown.
    """
    unknown = []
    for name in sorted(set(names)):
        if name in PARAMETERS or name in _BUILTIN or name.startswith('qos_overrides.'):
            continue
        close = difflib.get_close_matches(name, list(PARAMETERS), n=1, cutoff=0.5)
        unknown.append((name, close[0] if close else ''))
    return unknown


def parameter_table() -> str:
    """Markdown table of every parameter (README's table is this, verbatim)."""
    rows = ['| parameter | type | default | range / values | applies | description |',
            '|---|---|---|---|---|---|']
    for spec in PARAMETERS.values():
        if spec.choices:
            values = ' / '.join(f'`{c}`' for c in spec.choices)
        elif spec.range:
            values = f'[{spec.range[0]:g}, {spec.range[1]:g}]'
        else:
            values = ''
        default = spec.default
        shown = str(default).lower() if isinstance(default, bool) else default
        shown = f'`{shown}`' if shown != '' else '`""`'
        applies = 'live' if spec.apply is Apply.LIVE else 'next configure'
        rows.append(f'| `{spec.name}` | {spec.type_name} | {shown} | {values} | {applies} '
                    f'| {spec.description} |')
    return '\n'.join(rows)


def declare_all(node) -> list:
    """Declare every parameter on ``node``; return the errors of invalid start-up values.

    The node's set-parameters callback must be registered first, so that start-up values
    are validated exactly like ``ros2 param set``. A parameter whose override is invalid
    (wrong type, out of range, not a choice, refused by the callback) is declared with its
    default, and its error (naming parameter, value and what is allowed) is returned for
    ``on_configure`` to report. Overrides that name no parameter get one WARN each, with
    the closest declared name.
    """
    errors = []
    overrides = node._parameter_overrides  # rclpy keeps the -p / params-file values here
    for name, spec in PARAMETERS.items():
        try:
            node.declare_parameter(name, spec.default, spec.descriptor())
        except Exception as exc:  # invalid type/value/choice given at start-up
            given = overrides[name].value if name in overrides else None
            errors.append(spec.check(given) or f"parameter '{name}': {given!r}: {exc}")
            node.declare_parameter(name, spec.default, spec.descriptor(),
                                   ignore_override=True)
    for name, close in unknown_parameters(overrides):
        hint = f" (did you mean '{close}'?)" if close else ''
        node.get_logger().warning(f"unknown parameter '{name}' ignored: the node has no "
                                  f'such parameter{hint}')
    return errors
