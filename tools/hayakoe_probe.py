# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Probes into hayakoe for tests and benchmarks only: its front end, its raw model output.

The node never calls these. They reach hayakoe's private API like
:mod:`hayakoe_ros.engines.hayakoe_internals` does, and every private name they use is in
that module's :func:`~hayakoe_ros.engines.hayakoe_internals.check_compatible` (the test
``test_the_compatibility_check_names_every_private_name_hayakoe_internals_uses`` scans
this file too), so a new hayakoe release that breaks them fails that test first.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from hayakoe_ros.engines import hayakoe_internals as hk
from hayakoe_ros.engines.base import VoiceParams


def synthesize_float(speaker, text: str, voice: VoiceParams) -> np.ndarray:
    """Raw model output for one segment: float32 ``(samples,)``, not peak-normalised.

    Same computation as ``Speaker.generate()`` for a single sentence, minus its
    ``_to_pcm`` peak normalisation. Holds the speaker's own lock like ``generate()``.
    """
    with speaker._gen_lock:
        audio, _ = speaker._synthesize_one(text, hk.synthesis_params(voice))
    return np.asarray(audio, dtype=np.float32).reshape(-1)


def phone_ids(speaker, text: str) -> list:
    """Phoneme id sequence (with interspersed blanks) hayakoe feeds the model for ``text``."""
    from hayakoe.models.text_preprocess import prepare_phone_sequences

    return list(prepare_phone_sequences(text, speaker._hps)[1])


def predict_durations(speaker, text: str, voice: VoiceParams
                      ) -> Optional[tuple[list, np.ndarray]]:
    """Run the text encoder and duration predictor only (no decoder) on ``text``.

    Returns:
        ``(phone_ids, frames)``: phoneme ids and predicted frames per phoneme (float array of
        the same length; one frame = ``hop_length`` samples), or ``None`` when the model has
        no duration predictor (an ONNX export without ``duration_predictor.onnx``).
    """
    feats = hk.segment_features(speaker, text)
    _, ids, tones, langs, _ = feats.nlp
    return hk.run_duration_predictor(speaker, list(ids), list(tones), list(langs),
                                     feats.bert, voice)


def front_end(text: str) -> tuple:
    """Hayakoe's own text front end on ``text``, as ``Speaker`` runs it before the model.

    Returns:
        ``(normalized, phones)``: hayakoe's ``normalize_text`` output (str) and the
        phonemes its ``g2p`` gives for it (list of str, punctuation marks included, the
        ``_`` padding removed). Used to check that the node's front end output reads the
        same after hayakoe's normaliser as on the Open JTalk voice.
    """
    from hayakoe.nlp.japanese.g2p import g2p
    from hayakoe.nlp.japanese.normalizer import normalize_text

    normalized = normalize_text(text)
    phones, _, _ = g2p(normalized)
    return normalized, [p for p in phones if p != '_']


def adjust_pitch(audio: np.ndarray, voice: VoiceParams, sample_rate: int = 44100) -> np.ndarray:
    """Pitch and intonation changed as hayakoe does it (WORLD re-synthesis) applied to ``audio``.

    The step ``Speaker`` runs after the model when ``voice.pitch_scale`` or
    ``voice.intonation_scale`` is not 1.0 (:func:`hayakoe.voice.adjust_voice`).

    Args:
        audio: float ``(samples,)`` model output at ``sample_rate`` Hz.
        voice: its ``pitch_scale`` and ``intonation_scale`` are used.
        sample_rate: Hz; 44100 is the JP-Extra models' rate.

    Returns:
        float32 ``(samples',)``: WORLD's output, whose length is a whole number of its
        5 ms frames and so may differ from the input's (unchanged when both scales are 1.0).
    """
    from hayakoe.voice import adjust_voice

    _, out = adjust_voice(sample_rate, np.asarray(audio, np.float64),
                          pitch_scale=voice.pitch_scale,
                          intonation_scale=voice.intonation_scale)
    return np.asarray(out, dtype=np.float32)
