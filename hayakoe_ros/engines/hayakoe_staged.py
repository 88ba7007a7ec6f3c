# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""hayakoe's CPU synthesizer replaced by the two-stage one, and its windows (no ROS).

:func:`stage_synthesizer` puts a :class:`.windowed_decoder.StagedSynthesizer` in the
place of the session hayakoe built from ``synthesizer.onnx`` (hayakoe then synthesises
whole segments through it, to the same samples), and :func:`decode_windows` runs its
two stages on one segment, the decoder window by window. What of hayakoe it touches goes
through :mod:`.hayakoe_internals`.
"""

from __future__ import annotations

import gc
import logging
import os
from typing import Callable, Iterator, Optional

from . import hayakoe_internals as hk
from . import decoder_pieces, hayakoe_phonemes, ort_session, windowed_decoder
from .base import AudioWindow, VoiceParams
from .decoder_split import SplitError

_LOG = logging.getLogger(__name__)

# Synthesizer files already reported as not cut: one WARNING each per process.
_NOT_SPLIT: set = set()


def stage_synthesizer(tts, speaker, hooks: dict, release: Callable[[], None],
                      decoder_spinning: bool = False
                      ) -> Optional[windowed_decoder.StagedSynthesizer]:
    """Cut the speaker's ``synthesizer.onnx`` (cached) and synthesise through the pieces.

    Args:
        tts: The prepared ``hayakoe.TTS`` (its cache directory holds the cut, under
            ``hayakoe_ros/ort-split``).
        speaker: Its loaded CPU speaker.
        hooks: :func:`.ort_session.onnx_session_hooks` keyword arguments, the ones
            hayakoe's sessions were built with.
        release: Returns freed memory to the system (called once hayakoe's own
            synthesizer session is dropped, before the pieces' sessions are built, so
            that the two never add up in the load's peak).
        decoder_spinning: Whether the decoder pieces' idle threads busy-wait within a
            run (``hooks['allow_spinning']`` is the first stage's).

    Returns:
        The two-stage synthesizer now in use, or None when the graph cannot be cut or
        its pieces not opened: hayakoe's own session stays (or is built again), and one
        WARNING per synthesizer file says why.
    """
    source = hk.synthesizer_file(speaker)
    root = os.path.join(hk.cache_dir(tts), 'hayakoe_ros', 'ort-split')
    try:
        if source is None:
            raise SplitError('the speaker has no synthesizer.onnx file')
        files, chain = decoder_pieces.prepare_pieces(source, hk.model_config(speaker), root)
    except SplitError as exc:
        level = logging.DEBUG if source in _NOT_SPLIT else logging.WARNING
        _NOT_SPLIT.add(source)
        _LOG.log(level, 'decoding whole segments (no first audio before a segment is '
                 'complete): cannot cut %s at its decoder: %s', source, exc)
        return None
    hk.replace_synthesizer(speaker, None)
    gc.collect()
    release()
    try:
        staged = decoder_pieces.open_pieces(
            files, chain, hooks, {**hooks, 'allow_spinning': decoder_spinning})
    except Exception as exc:  # a corrupt cached piece: what ONNX Runtime raises varies
        _LOG.warning('decoding whole segments: cannot open the cut of %s (%s: %s)',
                     source, type(exc).__name__, exc)
        with ort_session.onnx_session_hooks(**hooks):
            hk.restore_synthesizer(speaker)
        return None
    hk.replace_synthesizer(speaker, staged)
    return staged


def decode_windows(speaker, staged: windowed_decoder.StagedSynthesizer,
                   features: hk.SegmentFeatures, voice: VoiceParams, first_frames: int,
                   sample_rate: int) -> Iterator[AudioWindow]:
    """One segment: the first stage once, then the decoder window by window.

    Windows per :func:`.windowed_decoder.window_plan` (``first_frames``, then doubling);
    each is decoded when the iterator is advanced, holding hayakoe's model lock for that
    run only. The concatenation equals hayakoe's whole-segment output (pitch and
    intonation at 1: the caller's condition). The first window carries the segment's
    phones (:func:`.hayakoe_phonemes.phones_from_frames` of the first stage's durations,
    over the latent's ``frames x hop`` samples: the segment's length).
    """
    feed = hk.synthesizer_feed(speaker, features, voice)
    lock = hk.synthesis_lock(speaker)
    with lock:
        z, g, durations = staged.first_stage(feed)
    frames = int(z.shape[2])
    phones = hayakoe_phonemes.phones_from_frames(
        features.phones, None if durations is None else durations.reshape(-1), staged.hop,
        frames * staged.hop)
    plan = windowed_decoder.window_plan(frames, staged.hop, first_frames)
    seconds = [(hi - lo) / sample_rate for lo, hi in plan]
    stream = staged.stream(z, g)
    for i, (lo, hi) in enumerate(plan):
        with lock:
            audio = stream.decode(lo, hi)
        yield AudioWindow(audio, tuple(seconds[i + 1:]), phones if i == 0 else ())
