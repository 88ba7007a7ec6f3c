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

import enum
from typing import Iterable, Optional

from ..engines import VoiceParams
from ..speech import QueuePolicy, SchedulerConfig
from ..speech.marks import KINDS as MARK_KINDS
from ..engines.phrase_cache import MAX_CACHE_MB
from ..engines.resample import MAX_OUTPUT_RATE, MIN_OUTPUT_RATE
from ..engines.values import Spinning
from ..text.segment import FIRST_SEGMENT_MORAE
from . import param_spec
from .param_spec import Apply, ParameterSpec

__all__ = ['Apply', 'FLEET_PARAMETERS', 'PARAMETERS', 'ParameterSpec', 'ROBOT_PARAMETERS',
           'declare_all', 'parameter_table', 'scheduler_config',
           'unknown_parameters', 'voice_params']

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

#: Default ``stream_timeout_s`` (s): an LLM that streams 10-50 tokens a second has never
#: been silent this long in the middle of a reply, unless it stopped.
STREAM_TIMEOUT_S = 3.0

#: The library's defaults, which the node's parameters take (one place for each number):
#: the voice's from :class:`VoiceParams`, scheduling's from :class:`SchedulerConfig`.
#: The node sets two otherwise: ``gapless`` on and ``first_segment_morae`` 8 (a robot's
#: reply starts fast and has no gaps; a bare scheduler does neither unless asked).
_VOICE = VoiceParams()
_SCHED = SchedulerConfig()


def _output_rate_rule(value) -> Optional[str]:
    """Why ``output_rate`` ``value`` is refused (1-7999 Hz: no voice at that rate), or None."""
    if 0 < value < MIN_OUTPUT_RATE:
        return (f"{value} Hz is out of range; use 0 (the engine's own rate) or "
                f'{MIN_OUTPUT_RATE}..{MAX_OUTPUT_RATE} Hz')
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
    ParameterSpec('device', 'cpu', "hayakoe device: 'cpu' (ONNX Runtime; the process then "
                  "runs without torch) or 'cuda'/'cuda:N' (PyTorch; from 'cpu' to 'cuda' "
                  'needs a restart).', Apply.RELOAD),
    ParameterSpec('compile', False, 'CUDA only: torch.compile the BERT (minutes more to '
                  'start; measured no faster on an H200).', Apply.RELOAD),
    ParameterSpec('cudnn', False, 'CUDA only, process-wide: run the convolutions through '
                  'cuDNN (it plans every new sentence length again: first audio of new '
                  'sentences 295 ms instead of 121 ms on an H200).', Apply.RELOAD),
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
    ParameterSpec('spinning', Spinning.FIRST_AUDIO.value, 'Which ONNX Runtime sessions '
                  'let idle threads busy-wait between the operators of a run (they stop '
                  "when it returns): 'none' (all sleep and leave that time to the rest of "
                  "the robot), 'first_audio' (BERT and the synthesizer's first stage, on "
                  "the way to a segment's first audio) or 'all' (the decoder's windows "
                  "too). Here, against 'none' (four runs of 40 paired replies): first audio "
                  "6-20 ms sooner ('first_audio', 2-4 % more CPU) or 13-22 ms ('all', "
                  "2-5 %): on average 'all' gave 4 ms more for 0.7 % more CPU.",
                  Apply.RELOAD, choices=_choices(Spinning)),
    ParameterSpec('first_window_s', 0.1, "CPU only: the first segment's audio (and, "
                  "with gapless, a later one that would be late whole) is decoded in "
                  'windows, the first this long (s), each later one twice the one '
                  'before, so that it starts playing before the rest is decoded; 0 = '
                  'whole segments.', Apply.RELOAD, range=(0.0, 10.0)),
    # --- voice (live) ---
    ParameterSpec('style', _VOICE.style, 'Voice style (emotion) name offered by the model.'),
    ParameterSpec('style_weight', _VOICE.style_weight,
                  'Style strength: 0 = mean voice, 1 = full style.', range=(0.0, 10.0)),
    ParameterSpec('speaker_id', _VOICE.speaker_id, 'Speaker index in a multi-speaker model.',
                  range=(0, 1000)),
    ParameterSpec('rate', 1.0 / _VOICE.length_scale,
                  'Speaking-rate multiplier (2.0 = twice as fast); multiplies '
                  'goal rate.', range=RATE_RANGE),
    ParameterSpec('volume', _SCHED.volume, 'Linear gain of the voice (1.0 = the model level); '
                  'multiplies goal volume. A limiter keeps peaks under -1 dBFS.',
                  range=VOLUME_RANGE),
    ParameterSpec('pitch_scale', _VOICE.pitch_scale,
                  'Pitch multiplier (1.0 = unchanged; WORLD re-synthesis).', range=(0.5, 2.0)),
    ParameterSpec('intonation_scale', _VOICE.intonation_scale,
                  'Intonation (F0 deviation) multiplier.', range=(0.0, 2.0)),
    ParameterSpec('sdp_ratio', _VOICE.sdp_ratio,
                  'Stochastic duration predictor mix (0 = deterministic DP).', range=(0.0, 1.0)),
    ParameterSpec('noise', _VOICE.noise, 'Prior noise scale (0 = deterministic audio).',
                  range=(0.0, 2.0)),
    ParameterSpec('noise_w', _VOICE.noise_w,
                  'Duration noise scale of the stochastic predictor.', range=(0.0, 2.0)),
    # --- scheduling (live) ---
    ParameterSpec('queue_policy', _SCHED.queue_policy.value,
                  "'enqueue': utterances wait in FIFO order; 'interrupt': a new utterance "
                  'cancels the one speaking and is spoken next (after other interrupting '
                  "ones not yet started), the rest waiting on; 'replace': a new utterance "
                  'cancels the one speaking and every one waiting (newest wins).',
                  choices=_choices(QueuePolicy)),
    ParameterSpec('max_queue', _SCHED.max_queue,
                  'Utterances that may wait behind the one speaking; more '
                  'are rejected with an error (0: speak only when idle).',
                  range=(0, MAX_QUEUE_LIMIT)),
    ParameterSpec('max_chars', _SCHED.max_chars, 'Longest accepted utterance, characters.',
                  range=(1, 1000000)),
    ParameterSpec('max_segment_chars', _SCHED.max_segment_chars,
                  'Longest synthesis segment, characters: longer '
                  'sentences are cut at clause boundaries (BERT reads at most 510).',
                  range=(4, 400)),
    ParameterSpec('stream_timeout_s', STREAM_TIMEOUT_S, 'A reply on text_stream ends when no '
                  'fragment has come for this long (s): the text received without an end is '
                  'spoken, and the next fragment starts a new reply.', range=(0.1, 600.0)),
    ParameterSpec('resume_interrupted', True, 'After a text_urgent utterance, the utterance '
                  'it interrupted goes on from the start of the sentence that was cut '
                  "(false: it ends 'interrupted', with what was heard)."),
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
    ParameterSpec('chunk', _SCHED.chunk_frames,
                  'Frames (samples) per audio message. A chunk once published is '
                  'heard whole by listeners other than player_node, so a stop ends within '
                  'one: at most 65536 (1.4 s at 48 kHz).', range=(64, 65536)),
    ParameterSpec('frame_id', 'tts', 'header.frame_id of audio messages.'),
    ParameterSpec('max_lead_s', _SCHED.max_lead_s,
                  'Publish audio at most this far ahead of playback (s), '
                  'and at most 3 chunks ahead (so a depth-5 best-effort player keeps every '
                  'chunk).', range=(0.0, 60.0)),
    ParameterSpec('pacing', _SCHED.pacing, 'Publish at playback rate (false: as fast as synthesis '
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
    ParameterSpec('marks', True, "Publish speech marks on 'marks' (words, phonemes, "
                  'visemes, what was heard). false: nothing is published there (what was '
                  "heard is still tracked: a canceled goal's result text).",
                  Apply.RELOAD),
    ParameterSpec('mark_types', ','.join(MARK_KINDS), "Which marks go out on 'marks', "
                  'separated by commas (a face needs viseme, captions word): each message '
                  'costs the node CPU. start and end always go out.', items=MARK_KINDS),
    ParameterSpec('output_rate', 0, "Sample rate of the published audio (Hz): 0 = the "
                  "engine's own (hayakoe 44100, Open JTalk 48000); else the voice, fallback "
                  'included, is resampled to it (libsoxr). At least 8000.', Apply.RELOAD,
                  range=(0, MAX_OUTPUT_RATE), rule=_output_rate_rule),
    # --- a host's voice, falling back onboard ---
    ParameterSpec('offboard_action', '', "A host's say action that speaks every whole "
                  "utterance first (e.g. '/fleet/r1/say', served by tts_fleet); its audio is "
                  "republished on 'audio' at this node's rate, its marks on 'marks'. When it "
                  'fails, this node speaks the rest from the start of the sentence that was '
                  'cut. Empty = off.', Apply.RELOAD),
    ParameterSpec('offboard_timeout_s', _SCHED.offboard_timeout_s, 'No first audio from the '
                  'host by then (s): this node speaks the utterance itself.',
                  range=(0.05, 60.0)),
    ParameterSpec('offboard_stall_s', _SCHED.offboard_stall_s, "The host's audio stops "
                  'mid-utterance for this long (s): this node speaks the rest itself.',
                  range=(0.05, 60.0)),
    ParameterSpec('diagnostics_period_s', 1.0, 'Period of /diagnostics messages (s).',
                  Apply.RELOAD, range=(0.1, 60.0)),
    ParameterSpec('autostart', True, 'Configure and activate at start-up (no lifecycle '
                  'manager needed).', Apply.RELOAD),
)

#: Every parameter of ``tts_node``, by name, in declaration order.
PARAMETERS: dict = {spec.name: spec for spec in _SPECS}

#: A robot's use of a host (``tts_node`` only: a fleet process is the host).
OFFBOARD_PARAMETERS = ('offboard_action', 'offboard_timeout_s', 'offboard_stall_s')

#: Parameters that stay each node's own in a fleet process (``tts_fleet``): its
#: interfaces' QoS depth, diagnostics period and speech marks, and every live one (voice,
#: queue, segmenting, pacing).
ROBOT_PARAMETERS: dict = {
    name: spec for name, spec in PARAMETERS.items() if name not in OFFBOARD_PARAMETERS
    and (spec.apply is Apply.LIVE or name in ('qos_depth', 'diagnostics_period_s', 'marks'))}

#: Parameters a fleet process takes once for every robot: the engine and its files,
#: device, threads, output rate, phrase cache, user dictionary (process-wide), autostart.
FLEET_PARAMETERS: dict = {name: spec for name, spec in PARAMETERS.items()
                          if name not in ROBOT_PARAMETERS and name not in OFFBOARD_PARAMETERS}

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
    """Return ``(name, closest declared name or '')`` for names ``tts_node`` does not declare.

    QoS overrides (``qos_overrides.*``) and rclpy's own parameters are not unknown.
    """
    return param_spec.unknown_parameters(names, PARAMETERS)


def parameter_table() -> str:
    """Markdown table of every parameter (README's table is this, verbatim)."""
    rows = ['| parameter | type | default | range / values | applies | description |',
            '|---|---|---|---|---|---|']
    for spec in PARAMETERS.values():
        if spec.choices:
            values = ' / '.join(f'`{c}`' for c in spec.choices)
        elif spec.items:
            values = 'any of ' + ', '.join(f'`{c}`' for c in spec.items)
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


def declare_all(node, specs: Optional[dict] = None, also_known: Iterable[str] = ()) -> list:
    """Declare every parameter of ``tts_node``; errors of invalid start-up values.

    Args:
        node: The node.
        specs: The specs to declare (default :data:`PARAMETERS`; a fleet's robot node
            declares :data:`ROBOT_PARAMETERS`).
        also_known: Names another node of the process declares: an override naming one
            is no unknown parameter here.

    See :func:`~.param_spec.declare_specs`.
    """
    return param_spec.declare_specs(node, PARAMETERS if specs is None else specs,
                                    also_known)


def not_a_robots(name: str, fleet: str) -> str:
    """Why ``name`` is no parameter of a fleet's robot (``''`` when it is none of the node's).

    ``fleet``: the fleet's namespace (``/fleet``). The relay's settings belong to a
    robot's own ``tts_node``, the engine's to ``tts_fleet``.
    """
    if name in OFFBOARD_PARAMETERS:  # a fleet's robot is the host's voice: it relays to nobody
        return (f"'{name}' is no parameter of a fleet's robot: it is set on a robot's own "
                'tts_node, which relays to a host; a robot of the fleet speaks with the '
                f'engine of {fleet}/tts_fleet')
    if name in PARAMETERS:
        return (f"'{name}' is no parameter of a fleet's robot; the fleet's are set on "
                f'{fleet}/tts_fleet')
    return ''
