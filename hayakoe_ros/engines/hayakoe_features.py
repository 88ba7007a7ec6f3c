# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A segment's features, and the model inputs built from them (numpy and torch only).

:class:`SegmentFeatures` holds what hayakoe's front end and BERT computed for one
segment. From them and a voice's style vector, the functions here build the inputs of
the synthesizer and of the duration predictor (ONNX feeds, torch tensors), and join two
adjacent segments' features for a pause prediction. Nothing here reaches hayakoe's
private API: the style vector, the sessions and the lock around a model run come from
:mod:`.hayakoe_internals`, which calls these.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

from .base import VoiceParams

#: The synthesizer's inputs, in the order hayakoe's ONNX synthesis feeds them (checked
#: against hayakoe by :func:`~.hayakoe_internals.check_compatible`).
SYNTH_FEED = ('x', 'x_lengths', 'sid', 'tone', 'language', 'bert', 'style_vec',
              'noise_scale', 'length_scale', 'noise_scale_w', 'sdp_ratio')


@dataclasses.dataclass(frozen=True)
class SegmentFeatures:
    """Front-end output and BERT features of one segment, computed once and reused.

    Attributes:
        nlp: hayakoe's ``(norm_text, phones, tones, languages, word2ph)`` tuple; the three
            sequences are phoneme ids with blanks (id 0) interspersed.
        bert: BERT features per phoneme, shape ``(1024, len(phones))``: a float32 numpy
            array (ONNX backend) or a torch tensor (PyTorch backend).
    """

    nlp: tuple
    bert: Any

    @property
    def phones(self) -> list:
        """Phoneme id sequence (with blanks)."""
        return list(self.nlp[1])


def synthesizer_inputs(features: SegmentFeatures, style_vec: np.ndarray,
                       voice: VoiceParams) -> dict:
    """The synthesizer's inputs for a segment, as hayakoe's ONNX synthesis builds them.

    Args:
        features: The segment's features (numpy BERT: the ONNX backend's).
        style_vec: The voice's style vector, float ``(256,)``.
        voice: Voice settings (speaker id, noise, length and duration-predictor scales).

    Returns:
        ``{name: array}`` for :data:`SYNTH_FEED`: int64 ``[1, phonemes]`` ids, tones and
        languages, ``x_lengths`` and ``sid`` ``[1]``, float32 ``bert [1, 1024, phonemes]``,
        ``style_vec [1, 256]`` and the four ``[1]`` scales.
    """
    _, phones, tones, langs, _ = features.nlp
    scalar = lambda v: np.array([v], dtype=np.float32)  # noqa: E731
    return dict(zip(SYNTH_FEED, (
        np.array(phones, dtype=np.int64)[np.newaxis, :],
        np.array([len(phones)], dtype=np.int64),
        np.array([voice.speaker_id], dtype=np.int64),
        np.array(tones, dtype=np.int64)[np.newaxis, :],
        np.array(langs, dtype=np.int64)[np.newaxis, :],
        np.asarray(features.bert)[np.newaxis, :, :].astype(np.float32),
        style_vec[np.newaxis, :].astype(np.float32),
        scalar(voice.noise), scalar(voice.length_scale), scalar(voice.noise_w),
        scalar(voice.sdp_ratio))))


def join_pair(left: SegmentFeatures, right: SegmentFeatures, onnx: bool
              ) -> Optional[tuple[list, list, list, Any]]:
    """The duration predictor's input for two adjacent segments, from their own features.

    The pair's input is ``left`` without its closing pad and blank, then ``right``
    without its opening blank, pad and blank: the phoneme sequence hayakoe's front end
    produces for the joined text, with each segment's own BERT features (hayakoe's
    batched path also encodes sentences separately). No BERT runs here: each segment's
    BERT was computed once, for its synthesis.

    Args:
        left: The features of the segment that ends at the boundary.
        right: The features of the segment that follows it.
        onnx: True for numpy BERT features (the ONNX backend), False for torch tensors.

    Returns:
        ``(ids, tones, langs, bert)``: three int lists and the BERT features
        ``(1024, len(ids))`` (numpy or torch, as given); None when a sequence does not
        have the expected pad/blank ends. ``left``'s phonemes keep their indices.
    """
    lp, rp = left.phones, right.phones
    if lp[-2:] != [0, 0] or rp[:3] != [0, 0, 0]:
        return None
    _, _, ltone, llang, _ = left.nlp
    _, _, rtone, rlang, _ = right.nlp
    ids = lp[:-2] + rp[3:]
    tones = list(ltone)[:-2] + list(rtone)[3:]
    langs = list(llang)[:-2] + list(rlang)[3:]
    bert: Any  # numpy (ONNX backend) or torch (PyTorch backend)
    if onnx:
        bert = np.concatenate([left.bert[:, :-2], right.bert[:, 3:]], axis=1)
    else:
        import torch

        bert = torch.cat([left.bert[:, :-2], right.bert[:, 3:]], dim=1)
    return ids, tones, langs, bert


def duration_feed(ids: list, tones: list, langs: list, bert, style_vec: np.ndarray,
                  voice: VoiceParams) -> dict:
    """The ONNX duration predictor's inputs for one phoneme sequence.

    Args:
        ids: Phoneme ids (with blanks).
        tones: Tone of each id, ``len(ids)``.
        langs: Language of each id, ``len(ids)``.
        bert: BERT features ``(1024, len(ids))``, numpy.
        style_vec: The voice's style vector, float ``(256,)``.
        voice: Voice settings (speaker id, length scale, duration-predictor settings).

    Returns:
        ``{name: array}``: int64 ``[1, phonemes]`` ``x``, ``tone`` and ``language``,
        int64 ``[1]`` ``x_lengths`` and ``sid``, float32 ``bert [1, 1024, phonemes]``,
        ``style_vec [1, 256]`` and the ``[1]`` ``length_scale``, ``noise_scale_w`` and
        ``sdp_ratio``.
    """
    return {
        'x': np.array([ids], dtype=np.int64),
        'x_lengths': np.array([len(ids)], dtype=np.int64),
        'sid': np.array([voice.speaker_id], dtype=np.int64),
        'tone': np.array([tones], dtype=np.int64),
        'language': np.array([langs], dtype=np.int64),
        'bert': np.asarray(bert)[np.newaxis, :, :].astype(np.float32),
        'style_vec': style_vec[np.newaxis, :].astype(np.float32),
        'length_scale': np.array([voice.length_scale], dtype=np.float32),
        'noise_scale_w': np.array([voice.noise_w], dtype=np.float32),
        'sdp_ratio': np.array([voice.sdp_ratio], dtype=np.float32),
    }


def duration_tensors(ids: list, tones: list, langs: list, bert, style_vec: np.ndarray,
                     voice: VoiceParams, device) -> tuple:
    """The PyTorch duration predictor's positional inputs for one phoneme sequence.

    Args:
        ids: Phoneme ids (with blanks).
        tones: Tone of each id, ``len(ids)``.
        langs: Language of each id, ``len(ids)``.
        bert: BERT features ``(1024, len(ids))``, a torch tensor.
        style_vec: The voice's style vector, float ``(256,)`` numpy.
        voice: Voice settings (the speaker id).
        device: The torch device the model is on.

    Returns:
        ``(x, x_lengths, sid, tone, language, bert, style_vec)`` on ``device``: int64
        ``[1, phonemes]``, ``[1]``, ``[1]``, ``[1, phonemes]`` twice, BERT
        ``[1, 1024, phonemes]`` and the style vector ``[1, 256]``.
    """
    import torch

    return (torch.LongTensor([ids]).to(device), torch.LongTensor([len(ids)]).to(device),
            torch.LongTensor([voice.speaker_id]).to(device),
            torch.LongTensor([tones]).to(device), torch.LongTensor([langs]).to(device),
            bert.to(device).unsqueeze(0),
            torch.from_numpy(style_vec).to(device).unsqueeze(0))
