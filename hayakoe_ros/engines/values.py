# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""What an engine takes and returns besides text: voice settings, timed audio (no ROS).

:class:`VoiceParams` in; :class:`AudioWindow` (mono float32 PCM with the segment's
:class:`Phone` tuple) out, and :func:`tile_phones`, which makes the phones of a segment
tile its audio exactly.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Sequence

import numpy as np


class Spinning(str, enum.Enum):
    """Which of a CPU engine's ONNX Runtime sessions let idle threads busy-wait in a run.

    A busy-waiting (spinning) intra-op thread picks up the next operator's work at once;
    a sleeping one must be woken, which on this 2-core VM cost the first audio of a
    reply after idle 6-25 ms (BENCHMARKS.md, "Spinning on the way to first audio").
    Spinning threads stop when their session's run returns
    (:data:`.ort_session.SPINNING_STOP_KEY`).

    * ``NONE``: no session spins; waiting threads leave their core to the rest of the robot.
    * ``FIRST_AUDIO``: the sessions on the way to a segment's first audio spin (BERT, the
      duration predictor and the synthesizer's first stage: about a fifth of its
      synthesis time); the decoder's windows, many short runs, do not. With whole
      segments (no cut synthesizer) the synthesizer is one session and spins.
    * ``ALL``: every session spins.
    """

    NONE = 'none'
    FIRST_AUDIO = 'first_audio'
    ALL = 'all'


@dataclasses.dataclass(frozen=True)
class VoiceParams:
    """Voice settings for one utterance.

    Attributes:
        style: Style name as listed in the model's ``style2id`` (e.g. ``"Neutral"``).
        style_weight: Interpolation weight between the mean style vector and ``style``
            (0 = mean voice, 1 = full style). Style-Bert-VITS2 convention.
        length_scale: Duration multiplier (hayakoe's ``speed``): 2.0 = twice as long.
            It is the inverse of a speaking *rate*.
        sdp_ratio: Mix of the stochastic (1.0) and deterministic (0.0) duration predictors.
        noise: Noise scale of the prior (hayakoe's ``noise``); 0 makes output deterministic.
        noise_w: Noise scale of the stochastic duration predictor.
        pitch_scale: Pitch multiplier (1.0 = unchanged); uses WORLD re-synthesis.
        intonation_scale: Multiplier of F0 deviation from its mean (1.0 = unchanged).
        speaker_id: Speaker index inside a multi-speaker model.
    """

    style: str = 'Neutral'
    style_weight: float = 1.0
    length_scale: float = 1.0
    sdp_ratio: float = 0.2
    noise: float = 0.6
    noise_w: float = 0.8
    pitch_scale: float = 1.0
    intonation_scale: float = 1.0
    speaker_id: int = 0


@dataclasses.dataclass(frozen=True)
class Phone:
    """One phoneme of a segment's audio, as the engine timed it.

    Attributes:
        symbol: Open JTalk's phoneme set: ``a i u e o``, ``A I U E O`` (devoiced), ``N``,
            ``cl``, ``k``, ``ky``, ``s``, ``sh``...; ``pau`` for a pause at punctuation,
            ``sil`` for the silence at the segment's ends.
        start: First sample, an offset into the segment's audio exactly as the engine
            returned it (engine sample rate).
        end: One past the last sample. A segment's phones tile its audio:
            ``phones[0].start == 0``, ``phones[i].end == phones[i + 1].start`` and
            ``phones[-1].end == len(audio)``.
    """

    symbol: str
    start: int
    end: int


@dataclasses.dataclass(frozen=True)
class AudioWindow:
    """A window of one segment's audio, as :meth:`~.base.Engine.synthesize_windows` yields it.

    Attributes:
        audio: Mono float32 PCM ``(samples,)`` at the engine's sample rate: the next
            samples of the segment (the windows, concatenated, are the segment).
        later_s: Seconds of audio of each window still to come in this segment, in order
            (empty for the last one): what a start delay must plan for.
        phones: The whole segment's :class:`Phone` tuple, on the first window only
            (sample offsets into the whole segment's audio, engine rate); empty on later
            windows and from an engine that does not time its phonemes.
    """

    audio: np.ndarray
    later_s: tuple = ()
    phones: tuple = ()


def tile_phones(spans: Sequence[tuple], length: int) -> tuple:
    """Phones that tile ``length`` samples exactly, from ``(symbol, samples)`` spans.

    The engines' own counts (hayakoe's frames x hop, HTS's frames x frame period) may
    miss the audio by up to a frame (WORLD re-synthesis, a resampler's rounding): the
    last phone absorbs the difference, so that the phones always tile the audio exactly.
    A phoneme given no samples stays, as an empty phone (``start == end``), so that the
    phoneme sequence is the one the engine spoke.

    Args:
        spans: ``(symbol, samples)`` pairs in order, samples >= 0.
        length: Samples of the audio the phones must tile, >= 0.

    Returns:
        A tuple of :class:`Phone` (empty when ``spans`` is).
    """
    phones = []
    pos = 0
    for symbol, samples in spans:
        end = min(length, pos + max(0, int(samples)))
        phones.append(Phone(symbol, pos, end))
        pos = end
    if phones and pos < length:
        phones[-1] = Phone(phones[-1].symbol, phones[-1].start, length)
    return tuple(phones)
