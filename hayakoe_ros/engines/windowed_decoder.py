# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The synthesizer as two stages on ONNX Runtime, the decoder run in windows (no ROS).

:class:`StagedSynthesizer` holds one session per piece that :mod:`.decoder_split` cut
from ``synthesizer.onnx``: the first stage (text to the latent ``z``, the speaker
embedding ``g`` and the durations) and the decoder's stages. :meth:`~StagedSynthesizer.
decode` computes any window of a segment's audio: each stage runs on exactly the part
of its input the window needs (:meth:`.decoder_receptive.ChainSpec.plan`), so the
samples equal those of the whole segment's decode, and the overlap between windows is
only the receptive field of the later (cheaper) stages. It also answers
``run(None, feed)`` as hayakoe's synthesizer session does (first stage, then the whole
decode), so it can stand in for it. Pure ONNX Runtime and NumPy: no torch.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from .decoder_receptive import ChainSpec

#: Longest first window accepted (s): beyond it windows gain nothing over a whole segment.
MAX_FIRST_WINDOW_S = 10.0


def window_plan(frames: int, hop: int, first_frames: int, growth: float = 2.0) -> list:
    """Sample bounds ``[(lo, hi), ...]`` of the windows a ``frames`` latent is decoded in.

    The first window is ``first_frames`` frames; each later one ``growth`` times the one
    before (so that it is decoded while those before it play, on a decoder faster than
    real time, and the overlaps, one per cut, stay few); a last piece shorter than half
    the window before it joins that window. All bounds are frame boundaries (x ``hop``
    samples); the windows tile ``[0, frames * hop)``.

    Raises:
        ValueError: ``first_frames`` < 1, ``growth`` < 1 or ``frames`` < 1.
    """
    if frames < 1 or first_frames < 1 or not growth >= 1.0:
        raise ValueError(f'window plan needs frames >= 1 ({frames}), a first window >= 1 '
                         f'frame ({first_frames}) and growth >= 1 ({growth})')
    bounds = [0]
    size = float(first_frames)
    while bounds[-1] < frames:
        nxt = min(frames, bounds[-1] + max(1, int(round(size))))
        if len(bounds) > 1 and frames - nxt < 0.5 * size and nxt < frames:
            nxt = frames  # a short tail joins this window
        bounds.append(nxt)
        size *= growth
    return [(a * hop, b * hop) for a, b in zip(bounds, bounds[1:])]


def first_window_frames(first_window_s: float, sample_rate: int, hop: int) -> int:
    """Frames of a first window of ``first_window_s`` seconds (rounded up, at least 1).

    Raises:
        ValueError: ``first_window_s`` not in ``(0, MAX_FIRST_WINDOW_S]``.
    """
    if not 0.0 < first_window_s <= MAX_FIRST_WINDOW_S:
        raise ValueError(f'first window {first_window_s!r} s is out of range '
                         f'(0, {MAX_FIRST_WINDOW_S:g}]')
    return max(1, math.ceil(first_window_s * sample_rate / hop - 1e-9))


class StagedSynthesizer:
    """First-stage and decoder-stage sessions of one synthesizer.

    Args:
        stage1: Session of ``stage1.onnx`` (the synthesizer's inputs to ``z``, ``g`` and
            the durations, in that output order; ``g`` absent for a model without it).
        decoders: Sessions of ``dec0.onnx`` ... in order (``dec0`` reads ``z`` and ``g``).
        chain: The decoder's layers from the model config (:class:`ChainSpec`); as many
            stages as ``decoders``.

    Raises:
        ValueError: the sessions do not match ``chain`` (counts, inputs).
    """

    def __init__(self, stage1, decoders: Sequence, chain: ChainSpec) -> None:
        if len(decoders) != len(chain.stages):
            raise ValueError(f'{len(decoders)} decoder pieces for {len(chain.stages)} stages')
        self.stage1 = stage1
        self.decoders = list(decoders)
        self.chain = chain
        self._has_g = len(stage1.get_outputs()) == 3
        self._inputs = [[i.name for i in s.get_inputs()] for s in self.decoders]
        if len(self._inputs[0]) != (2 if self._has_g else 1) or any(
                len(names) != 1 for names in self._inputs[1:]):
            raise ValueError(f'decoder pieces read {self._inputs}')

    @property
    def sessions(self) -> list:
        """Every ONNX Runtime session, first stage first."""
        return [self.stage1] + self.decoders

    @property
    def hop(self) -> int:
        """Audio samples per latent frame."""
        return self.chain.hop

    def first_stage(self, feed: dict, run_options: Any = None) -> tuple:
        """Run the first stage on a synthesizer feed (the same inputs as hayakoe's).

        Returns:
            ``(z, g, durations)``: ``z`` float32 ``[1, inter_channels, frames]``, ``g``
            float32 ``[1, gin, 1]`` or None, ``durations`` ``[1, phonemes]`` (frames per
            phoneme, as the synthesizer's second output).
        """
        out = self.stage1.run(None, feed, run_options)
        if self._has_g:
            return out[0], out[1], out[2]
        return out[0], None, out[1]

    def decode(self, z: np.ndarray, g: Optional[np.ndarray], lo: int, hi: int,
               run_options: Any = None) -> np.ndarray:
        """Audio samples ``[lo, hi)`` of the segment whose latent is ``z``.

        Each stage runs on the slice of its input that :meth:`ChainSpec.plan` names and
        keeps the part that is exact, so the result equals ``decode(z, g, 0, n)[lo:hi]``
        up to float rounding (ONNX Runtime may pick other kernels for other lengths).

        Returns:
            float32 ``(hi - lo,)``, the decoder's output (``tanh``: within +-1).

        Raises:
            ValueError: ``[lo, hi)`` outside ``[0, frames * hop)``.
        """
        frames = int(z.shape[2])
        plan = self.chain.plan(lo, hi, frames)
        in_lo, in_hi, _, _ = plan[0]
        x = np.ascontiguousarray(z[:, :, in_lo:in_hi])
        for k, (session, names, stage) in enumerate(zip(self.decoders, self._inputs,
                                                        self.chain.stages)):
            in_lo, in_hi, keep_lo, keep_hi = plan[k]
            feed: dict = {names[0]: x}
            if k == 0 and self._has_g:
                feed[names[1]] = g
            y = session.run(None, feed, run_options)[0]
            start = keep_lo - in_lo * stage.up
            x = y[:, :, start:start + keep_hi - keep_lo]
        return np.asarray(x, dtype=np.float32).reshape(-1)

    # hayakoe's synthesizer session, as Speaker uses it: run(None, feed) -> [audio, durations]
    def run(self, output_names, input_feed: dict, run_options: Any = None) -> list:
        """The whole synthesizer: ``[audio [1, 1, samples], durations [1, phonemes]]``."""
        z, g, durations = self.first_stage(input_feed, run_options)
        audio = self.decode(z, g, 0, int(z.shape[2]) * self.hop, run_options)
        return [audio[np.newaxis, np.newaxis, :], durations]

    def get_inputs(self) -> list:
        """The first stage's inputs (the synthesizer's)."""
        return self.stage1.get_inputs()

    def get_outputs(self) -> list:
        """Two outputs, as the synthesizer's: the audio's and the durations'."""
        return [self.decoders[-1].get_outputs()[0], self.stage1.get_outputs()[-1]]

    def get_session_options(self):
        """The first stage's options (every piece is built with the same)."""
        return self.stage1.get_session_options()


def prepare_pieces(source: str, model_config: dict, root: str) -> tuple:
    """The cut pieces of ``source`` (cut now if not cached under ``root``) and the chain.

    Returns:
        ``(files, chain)``: ``[stage1.onnx, dec0.onnx, ...]`` paths and the
        :class:`ChainSpec` of ``model_config``.

    Raises:
        SplitError: the graph cannot be cut, or the config lacks the decoder's fields.
    """
    from .decoder_split import SplitError, SplitModelCache, stage_files

    try:
        chain = ChainSpec.from_config(model_config)
    except ValueError as exc:
        raise SplitError(str(exc)) from exc
    entry = SplitModelCache(root).pieces(source, model_config)
    files = stage_files(entry)
    if files is None or len(files) != len(chain.stages) + 1:
        raise SplitError(f'the cut in {entry} is incomplete (delete it to cut again)')
    return [str(f) for f in files], chain


def open_pieces(files: Sequence[str], chain: ChainSpec) -> StagedSynthesizer:
    """Build one CPU session per piece, with the options hayakoe gives its synthesizer.

    ``ORT_ENABLE_ALL``, CPU provider; run inside :func:`.ort_session.onnx_session_hooks`
    so that the node's thread, spinning and optimised-copy settings apply as to
    hayakoe's own sessions. The pieces share one CPU arena
    (:func:`.ort_session.share_cpu_arena`), without memory patterns: they run one after
    the other, so their working memory is that of the largest, as in the uncut graph
    (peak RSS over the benchmark's 1, 3 and 10 sentences: 1322 MB against 1311 MB with
    hayakoe's own session; 2137 MB with an arena per piece).
    """
    import onnxruntime as ort

    from .ort_session import share_cpu_arena

    sessions = []
    for path in files:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        share_cpu_arena(options)
        # Windows come in many lengths: a memory pattern per shape grew the arena by
        # 110 MB over the 10-sentence text (full-size model); without, +11 MB over the
        # uncut graph, at the same CPU time.
        options.enable_mem_pattern = False
        sessions.append(ort.InferenceSession(path, options,
                                             providers=['CPUExecutionProvider']))
    return StagedSynthesizer(sessions[0], sessions[1:], chain)
