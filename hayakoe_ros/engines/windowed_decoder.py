# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The synthesizer as two stages on ONNX Runtime, the decoder run in windows (no ROS).

:class:`StagedSynthesizer` holds one session per piece that :mod:`.decoder_split` cut
from ``synthesizer.onnx``: the first stage (text to the latent ``z``, the speaker
embedding ``g`` and the durations) and the decoder's pieces, cut at every residual join.
A :class:`DecoderStream` decodes a segment's windows one after the other: each piece
computes only its new samples, reading what the windows before left, so the samples
equal those of the whole segment's decode and the overlap between windows is each
piece's own context. :class:`StagedSynthesizer` also answers ``run(None, feed)`` as
hayakoe's synthesizer session does (first stage, then the whole decode), so it can stand
in for it. Pure ONNX Runtime and NumPy: no torch.
"""

from __future__ import annotations

import math
import threading
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
    """First-stage and decoder-piece sessions of one synthesizer.

    Args:
        stage1: Session of ``stage1.onnx`` (the synthesizer's inputs to ``z``, ``g`` and
            the durations, in that output order; ``g`` absent for a model without it).
        decoders: Sessions of ``dec0.onnx`` ..., one per :meth:`ChainSpec.pieces` in
            that order, each reading its piece's inputs in order (``dec0``: ``z`` then
            ``g``).
        chain: The decoder's layers from the model config (:class:`ChainSpec`).

    Raises:
        ValueError: the sessions do not match ``chain``'s pieces (counts, inputs).
    """

    def __init__(self, stage1, decoders: Sequence, chain: ChainSpec) -> None:
        self.pieces = chain.pieces()
        if len(decoders) != len(self.pieces):
            raise ValueError(f'{len(decoders)} decoder pieces for the {len(self.pieces)} '
                             'the model config gives')
        self.stage1 = stage1
        self.decoders = list(decoders)
        self.chain = chain
        self._has_g = len(stage1.get_outputs()) == 3
        self._inputs = [[i.name for i in s.get_inputs()] for s in self.decoders]
        for names, spec in zip(self._inputs, self.pieces):
            want = len(spec.inputs) + (1 if spec.name == 'pre' and self._has_g else 0)
            if len(names) != want:
                raise ValueError(f'decoder piece {spec.name} reads {names}, expected '
                                 f'{want} inputs')
        # Samples per latent frame of each signal, and the last piece to read each.
        self._rate = {'z': 1}
        self._last_reader: dict = {}
        for n, spec in enumerate(self.pieces):
            self._rate[spec.output] = self._rate[spec.inputs[0]] * spec.up
            for key in spec.inputs:
                self._last_reader[key] = n
        # Per signal, a buffer the pieces' inputs are gathered into when a window needs
        # a copy (held context joined to new samples), kept from window to window and
        # segment to segment: a fresh array for every such input made the benchmark's
        # first segment fault in 1855 new pages (7.6 MB) per windowed decode, 66 now
        # (the stream's Python 10.2-10.8 ms before, 7.1-8.0 ms after; 2 threads). It
        # holds the longest inputs a window gathered (full-size model: at most about
        # 0.19 MB per latent frame of that window). One decode at a time uses it.
        self._scratch: dict = {}
        self._lock = threading.Lock()
        # The first upsampling stage's signals (and the latent's): computed ahead to the
        # segment's end by the window before a last, no longer one (DecoderStream).
        top = self._rate.get('x1', 0)
        self.lead_keys = frozenset(k for k, r in self._rate.items() if r <= top and k != 'z')

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

    def stream(self, z: np.ndarray, g: Optional[np.ndarray],
               run_options: Any = None) -> 'DecoderStream':
        """A :class:`DecoderStream` of the segment whose latent is ``z``."""
        return DecoderStream(self, z, g, run_options)

    def decode(self, z: np.ndarray, g: Optional[np.ndarray], lo: int, hi: int,
               run_options: Any = None) -> np.ndarray:
        """Audio samples ``[lo, hi)`` of the segment whose latent is ``z``, on their own.

        Computes from the latent alone; windows in a row share work through
        :meth:`stream` instead. Returns float32 ``(hi - lo,)`` (``tanh``: within +-1),
        equal to the whole segment's decode there up to float rounding.

        Raises:
            ValueError: ``[lo, hi)`` outside ``[0, frames * hop)``.
        """
        return self.stream(z, g, run_options).decode(lo, hi)

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


class DecoderStream:
    """The decoder over one segment's latent, window after window, computing nothing twice.

    For each window every piece computes just the part of its output that is new and
    needed, from its inputs' samples that earlier windows left (each signal keeps what
    later windows will read, found from the pieces' receptive fields). A piece's run
    covers its new part plus its own context, and that context, recomputed at every
    cut, is the whole overlap between windows: the residual pairs' few samples at their
    own rate instead of the 13 latent frames the whole decoder reads on each side.
    A piece computes only samples whose inputs it has whole, or that lie at the signal's
    ends where every layer pads with zeros, so the samples are those of one whole decode
    (up to float rounding: ONNX Runtime may pick other kernels for other lengths). The
    window before a last window no longer than itself also computes the first
    upsampling stage's signals (:attr:`StagedSynthesizer.lead_keys`) to the segment's
    end, so that the last window does not run those pieces again for a few samples.

    Args:
        synth: The :class:`StagedSynthesizer` whose decoder pieces run.
        z: float32 ``[1, inter_channels, frames]``, the first stage's latent.
        g: float32 ``[1, gin, 1]`` speaker embedding, or None.
        run_options: ONNX Runtime ``RunOptions`` for every run (or None).

    Not thread-safe: one thread decodes a stream (the engine's own rule).
    """

    def __init__(self, synth: StagedSynthesizer, z: np.ndarray, g: Optional[np.ndarray],
                 run_options: Any = None) -> None:
        self._synth = synth
        self._g = g
        self._options = run_options
        self.frames = int(z.shape[2])
        self._length = {key: self.frames * rate for key, rate in synth._rate.items()}
        # key -> [(first sample index, array [1, channels, n]), ...]: exact samples held,
        # in order and adjoining. Each run's output is kept as a view, not joined to what
        # is held: a piece's input is copied once, when it is gathered. The later
        # stages' signals are about 3 MB per second of audio each, and joining them on
        # every window copied them twice (the benchmark's first segment, full-size
        # model: the stream's Python 17 ms with joins, 10 ms with views, 2 threads).
        self._held: dict = {'z': [(0, z)]}

    @property
    def samples(self) -> int:
        """Audio samples of the whole segment (``frames x hop``)."""
        return self._length['audio']

    @property
    def held(self) -> dict:
        """Samples kept per signal (``{name: count}``, the latent ``z`` included).

        Between windows this is what later windows read again: each piece's context
        at the cut, a few frames' worth, however long the windows grow.
        """
        return {key: sum(x.shape[2] for _, x in chunks) for key, chunks in self._held.items()}

    def context_at(self, sample: int) -> dict:
        """Per signal, the samples (inclusive bounds) that audio sample ``sample`` reads."""
        return self._span(sample, sample)

    def _span(self, lo: int, hi: int) -> dict:
        """Per signal, the samples (inclusive) that audio ``[lo, hi]`` needs."""
        span = {'audio': (lo, hi)}
        for spec in reversed(self._synth.pieces):
            if spec.output not in span:
                continue
            a, b = spec.needs(*span[spec.output])
            for key in spec.inputs:
                a2, b2 = max(0, a), min(self._length[key] - 1, b)
                old = span.get(key)
                span[key] = (a2, b2) if old is None else (min(old[0], a2), max(old[1], b2))
        return span

    def decode(self, lo: int, hi: int) -> np.ndarray:
        """Audio samples ``[lo, hi)``: float32 ``(hi - lo,)``, within +-1.

        Windows should come in order (each ``lo`` the last ``hi``); any other window is
        computed afresh, which is correct and costs what a lone window does.

        Raises:
            ValueError: ``[lo, hi)`` empty or outside ``[0, frames * hop)``.
        """
        if not 0 <= lo < hi <= self.samples:
            raise ValueError(f'output window [{lo}, {hi}) outside [0, {self.samples})')
        with self._synth._lock:
            return self._decode(lo, hi)

    def _decode(self, lo: int, hi: int) -> np.ndarray:
        span = self._span(lo, hi - 1)
        rest = self.samples - hi
        if lo > 0 and 0 < rest <= hi - lo:
            # The first stage's pieces run on few samples (8 a frame on the full-size
            # model), where a run's fixed cost weighs most, and cost a fifth of the
            # decoder's time per frame: once what is left of the segment is no longer
            # than this window, they compute it too, and the last window runs without
            # them (the benchmark's first segment: -9 ms of its windows' extra at 2
            # threads; this window +12 %). Never in a first window: first audio waits.
            ahead = self._span(lo, self.samples - 1)
            for key in self._synth.lead_keys & span.keys():
                span[key] = ahead[key]
        if any(key != 'z' and key in self._held and span[key][0] < self._held[key][0][0]
               for key in span):
            self._held = {'z': self._held['z']}  # behind what is kept: start afresh
        keep = self._span(hi, hi) if hi < self.samples else {}
        synth = self._synth
        for n, spec in enumerate(synth.pieces):
            if spec.output in span:
                self._compute(spec, n, *span[spec.output])
            for key in spec.inputs:
                if synth._last_reader[key] == n and key != 'z':
                    self._trim(key, keep.get(key))
        # One copy, the caller's own: concatenate copies even a single part.
        out = np.concatenate([x[0, 0] for x in self._parts('audio', lo, hi - 1)]
                             ).astype(np.float32, copy=False)
        self._trim('audio', keep.get('audio'))
        return out

    def _end(self, key: str) -> int:
        """One past the last sample of ``key`` held (0 when none is)."""
        chunks = self._held.get(key)
        if not chunks:
            return 0
        start, x = chunks[-1]
        return start + x.shape[2]

    def _parts(self, key: str, a: int, b: int) -> list:
        """Views of the held chunks of ``key`` that together are samples ``[a, b]``."""
        parts = []
        for start, x in self._held[key]:
            end = start + x.shape[2]
            if end <= a or start > b:
                continue
            parts.append(x[:, :, max(a, start) - start:min(b + 1, end) - start])
        return parts

    def _input(self, key: str, a: int, b: int) -> np.ndarray:
        """Samples ``[a, b]`` of ``key`` as one C-contiguous array, for a run's feed.

        A view when one held chunk holds them contiguously (a whole decode); otherwise
        copied into the synthesizer's buffer for ``key`` (valid until the next call for
        ``key``: a run reads its feed only while it runs; decodes hold the synthesizer's
        lock).
        """
        parts = self._parts(key, a, b)
        if len(parts) == 1 and parts[0].flags.c_contiguous:
            return parts[0]
        channels, n = parts[0].shape[1], b - a + 1
        scratch = self._synth._scratch
        buf = scratch.get(key)
        if buf is None or buf.dtype != parts[0].dtype or buf.size < channels * n:
            buf = scratch[key] = np.empty(channels * n, parts[0].dtype)
        out = buf[:channels * n].reshape(1, channels, n)
        np.concatenate(parts, axis=2, out=out)
        return out

    def _compute(self, spec, n: int, a: int, b: int) -> None:
        held = spec.output in self._held
        end = self._end(spec.output)
        if held and end > b:
            return  # all held already
        new_lo = max(a, end) if held else a
        in_a, in_b = spec.needs(new_lo, b)
        length = self._length[spec.inputs[0]]
        in_a, in_b = max(0, in_a), min(length - 1, in_b)
        feed = {}
        for name, key in zip(self._synth._inputs[n], spec.inputs):
            feed[name] = self._input(key, in_a, in_b)
        if spec.name == 'pre' and self._g is not None:
            feed[self._synth._inputs[n][-1]] = self._g
        y = self._synth.decoders[n].run(None, feed, self._options)[0]
        first = in_a * spec.up
        part = (new_lo, y[:, :, new_lo - first:b + 1 - first])
        if not held or end < new_lo:
            self._held[spec.output] = [part]
        else:
            self._held[spec.output].append(part)

    def _trim(self, key: str, keep: Optional[tuple]) -> None:
        chunks = self._held.get(key)
        if chunks is None:
            return
        if keep is None:
            del self._held[key]  # nothing later reads it
            return
        # Chunks wholly before what later windows read go; of the one that reaches into
        # it only that part stays, copied, so that the run's whole output it is a view
        # of is freed (what stays between windows is the pieces' context, not a window).
        kept = [(s, x) for s, x in chunks if s + x.shape[2] > keep[0]]
        if not kept:
            start, x = chunks[-1]
            kept = [(start + x.shape[2], x[:, :, x.shape[2]:].copy())]  # empty: marks the end
        elif kept[0][0] < keep[0]:
            start, x = kept[0]
            kept[0] = (keep[0], x[:, :, keep[0] - start:].copy())
        self._held[key] = kept
