# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Which samples of each decoder stage a window of audio depends on (no ROS, no ONNX).

The Style-Bert-VITS2 decoder (HiFi-GAN's generator, hayakoe's
``models_jp_extra.Generator``) is a chain of convolutions over the latent ``z``
``[1, inter_channels, frames]``:

* ``conv_pre``: kernel 7, padding 3 (a constant of the generator's code, not of the
  config), plus ``cond(g)``, a 1x1 convolution of the speaker embedding added at every
  frame;
* per upsampling stage ``i``: a transposed convolution (kernel ``upsample_kernel_sizes[i]``,
  stride ``upsample_rates[i]``, padding ``(k - u) // 2``, so exactly ``u`` times longer),
  then the mean of ``len(resblock_kernel_sizes)`` residual blocks in parallel: block
  type ``"1"`` runs, for each dilation ``d`` of ``resblock_dilation_sizes[j]``, a kernel
  ``k_j`` convolution at dilation ``d`` then one at dilation 1, each with "same" padding
  ``d (k_j - 1) / 2``, inside a residual connection; type ``"2"`` one convolution per
  dilation;
* ``conv_post``: kernel 7, padding 3, then ``tanh``.

Everything else is pointwise (leaky ReLU, adds, the mean, tanh), so an output sample
depends on a finite, computable interval of each stage's input: :class:`ChainSpec`
computes it layer by layer, exactly, from the model config
(``HyperParameters.model``), for any output interval. At the signal's ends every layer
pads with zeros, so a window clipped there computes the same samples as the whole
signal: the exactness of a windowed decode needs nothing more than these intervals.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

#: ``conv_pre`` and ``conv_post`` of hayakoe's ``Generator`` (kernel 7, padding 3).
EDGE_KERNEL = 7

#: Receptive field (latent frames, both sides together) from which a stage is cut at its
#: residual joins. hayakoe's first upsampling stage reads 16 (its blocks' 60 samples each
#: side at 8 per frame), so a window that re-read all of it would redo about 7 frames of
#: the whole decoder's work per cut; the second reads 2 and the later ones 1 or less, and
#: cutting them too saved little work for more runs and copies (full-size model, one
#: thread: the windows' extra decoder time 8 % of a sentence's with every stage cut).
FINE_CONTEXT_FRAMES = 4.0


@dataclasses.dataclass(frozen=True)
class Conv:
    """A 1-D convolution: kernel ``k``, dilation ``d``, stride 1, padding ``pad``."""

    k: int
    d: int
    pad: int

    def needs(self, lo: int, hi: int) -> tuple:
        """Input interval ``[lo, hi]`` (inclusive) that outputs ``[lo, hi]`` read."""
        return lo - self.pad, hi - self.pad + (self.k - 1) * self.d

    def signature(self) -> tuple:
        """``(op, kernel, stride, dilation, pads)`` as an ONNX node states them."""
        return ('Conv', self.k, 1, self.d, self.pad)


@dataclasses.dataclass(frozen=True)
class ConvTranspose:
    """A transposed 1-D convolution: kernel ``k``, stride ``u``, padding ``pad``."""

    k: int
    u: int
    pad: int

    def needs(self, lo: int, hi: int) -> tuple:
        """Input interval read by outputs ``[lo, hi]``: ``j`` with ``lo+pad-k < j*u <= hi+pad``."""
        return -((self.k - 1 - lo - self.pad) // self.u), (hi + self.pad) // self.u

    def signature(self) -> tuple:
        """``(op, kernel, stride, dilation, pads)`` as an ONNX node states them."""
        return ('ConvTranspose', self.k, self.u, 1, self.pad)


@dataclasses.dataclass(frozen=True)
class Residual:
    """``x + f(x)``: reads what ``f``'s layers read, and the sample itself."""

    layers: tuple

    def needs(self, lo: int, hi: int) -> tuple:
        """Input interval read by outputs ``[lo, hi]``."""
        a, b = _back(self.layers, lo, hi)
        return min(a, lo), max(b, hi)

    def signature(self) -> tuple:
        """Not a node: its layers' signatures are listed by :func:`signatures`."""
        return ()


@dataclasses.dataclass(frozen=True)
class Parallel:
    """The mean of several branches over the same input (the residual blocks)."""

    branches: tuple

    def needs(self, lo: int, hi: int) -> tuple:
        """Input interval read by outputs ``[lo, hi]``: the union of the branches'."""
        spans = [_back(b, lo, hi) for b in self.branches]
        return min(s[0] for s in spans), max(s[1] for s in spans)

    def signature(self) -> tuple:
        """Not a node: its layers' signatures are listed by :func:`signatures`."""
        return ()


def _back(layers: Sequence, lo: int, hi: int) -> tuple:
    for layer in reversed(layers):
        lo, hi = layer.needs(lo, hi)
    return lo, hi


def signatures(layers: Sequence) -> list:
    """Every convolution's ``(op, kernel, stride, dilation, pad)`` in ``layers``, nested."""
    out: list = []
    for layer in layers:
        if isinstance(layer, Residual):
            out += signatures(layer.layers)
        elif isinstance(layer, Parallel):
            for branch in layer.branches:
                out += signatures(branch)
        else:
            out.append(layer.signature())
    return out


@dataclasses.dataclass(frozen=True)
class StageSpec:
    """One piece of the decoder chain: its layers and how much longer it makes the signal.

    Attributes:
        layers: The convolutions, in order (pointwise operations left out).
        up: Output samples per input sample (1 for ``conv_pre``, ``u`` for a stage).
        extra: Signatures of convolutions that read no part of the signal (``cond(g)``).
    """

    layers: tuple
    up: int
    extra: tuple = ()

    def needs(self, lo: int, hi: int) -> tuple:
        """Input interval (inclusive) that the outputs ``[lo, hi]`` depend on."""
        return _back(self.layers, lo, hi)


def _resblock(kind: str, k: int, dilations: Sequence[int]) -> tuple:
    same = lambda d: Conv(k, d, d * (k - 1) // 2)  # noqa: E731 - "same" padding
    if kind == '1':
        return tuple(Residual((same(d), same(1))) for d in dilations)
    if kind == '2':
        return tuple(Residual((same(d),)) for d in dilations)
    raise ValueError(f"unknown resblock type {kind!r} (hayakoe's generator has '1' and '2')")


@dataclasses.dataclass(frozen=True)
class PieceSpec:
    """One piece of the decoder as it is cut and run: a residual pair, say.

    Attributes:
        name: Where it sits, for messages (``pre``, ``up1``, ``res1.2.0``, ``mean1``,
            ``post``).
        inputs: Keys of the signals it reads (``z``, ``x<i>``: stage ``i``'s output,
            ``u<i>``: its upsampled signal, ``r<i>.<j>.<p>``: residual block ``j``'s
            ``p``-th residual pair's output); the speaker embedding ``g`` is read by
            ``pre`` besides.
        output: Key of the signal it computes (``audio`` for the last).
        up: Output samples per input sample.
        layers: Its convolutions in order (for :meth:`needs` and the cut's check).
        extra: Signatures of convolutions that read no part of the signal (``cond(g)``).
    """

    name: str
    inputs: tuple
    output: str
    up: int
    layers: tuple
    extra: tuple = ()

    def needs(self, lo: int, hi: int) -> tuple:
        """Input interval (inclusive) that the outputs ``[lo, hi]`` depend on."""
        return _back(self.layers, lo, hi)


@dataclasses.dataclass(frozen=True)
class ChainSpec:
    """The decoder as ``conv_pre`` then one :class:`StageSpec` per upsampling stage.

    Build it with :meth:`from_config`. ``stages[0]`` is ``conv_pre`` (with ``cond``);
    the last stage ends with ``conv_post``.
    """

    stages: tuple

    @classmethod
    def from_config(cls, model: dict) -> 'ChainSpec':
        """The chain of a JP-Extra model config (``config.json``'s ``model`` section).

        Reads ``upsample_rates``, ``upsample_kernel_sizes``, ``resblock``,
        ``resblock_kernel_sizes``, ``resblock_dilation_sizes`` and ``gin_channels``.

        Raises:
            ValueError: a field is missing or inconsistent (what and why in the message).
        """
        try:
            rates = [int(u) for u in model['upsample_rates']]
            kernels = [int(k) for k in model['upsample_kernel_sizes']]
            kind = str(model['resblock'])
            rkernels = [int(k) for k in model['resblock_kernel_sizes']]
            rdil = [[int(d) for d in ds] for ds in model['resblock_dilation_sizes']]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f'model config has no usable decoder fields: {exc!r}') from exc
        if not rates or len(rates) != len(kernels) or len(rkernels) != len(rdil) \
                or not rkernels:
            raise ValueError(f'decoder config is inconsistent: upsample_rates {rates}, '
                             f'upsample_kernel_sizes {kernels}, resblock_kernel_sizes '
                             f'{rkernels}, resblock_dilation_sizes {rdil}')
        if any(u < 1 or (k - u) % 2 or k < u for u, k in zip(rates, kernels)):
            raise ValueError(f'upsampling {rates} / kernels {kernels} do not give exactly '
                             'u times longer outputs ((k - u) must be even and >= 0)')
        cond = (('Conv', 1, 1, 1, 0),) if int(model.get('gin_channels', 0)) else ()
        stages = [StageSpec((Conv(EDGE_KERNEL, 1, EDGE_KERNEL // 2),), 1, cond)]
        for i, (u, k) in enumerate(zip(rates, kernels)):
            blocks = Parallel(tuple(_resblock(kind, rk, ds) for rk, ds in zip(rkernels, rdil)))
            layers: tuple = (ConvTranspose(k, u, (k - u) // 2), blocks)
            if i == len(rates) - 1:
                layers += (Conv(EDGE_KERNEL, 1, EDGE_KERNEL // 2),)
            stages.append(StageSpec(layers, u))
        return cls(tuple(stages))

    @property
    def hop(self) -> int:
        """Output samples per latent frame (the product of the upsampling rates)."""
        hop = 1
        for stage in self.stages:
            hop *= stage.up
        return hop

    def pieces(self) -> tuple:
        """The decoder cut into the pieces a window runs, in an order that runs it.

        ``pre`` (``conv_pre + cond(g)``) first. An upsampling stage ``i`` (from 1) whose
        receptive field spans :data:`FINE_CONTEXT_FRAMES` latent frames or more is cut at
        every residual join: ``up<i>`` (leaky ReLU, transposed convolution), each
        residual pair of each block, and ``mean<i>`` (the mean of the blocks: pointwise);
        any other stage is one piece ``stage<i>``. The last stage ends with ``conv_post``
        (``post`` when the stage is cut). A window re-reads at each piece only that
        piece's own context beyond what earlier windows computed
        (:class:`.windowed_decoder.DecoderStream`).
        """
        first = self.stages[0]
        out = [PieceSpec('pre', ('z',), 'x0', 1, first.layers, first.extra)]
        last = len(self.stages) - 1
        rate = first.up
        for i, stage in enumerate(self.stages[1:], start=1):
            far = 10 ** 6
            a, b = stage.needs(far, far)
            output = 'audio' if i == last else f'x{i}'
            if (b - a) / rate < FINE_CONTEXT_FRAMES:
                out.append(PieceSpec(f'stage{i}', (f'x{i - 1}',), output, stage.up,
                                     stage.layers))
                rate *= stage.up
                continue
            rate *= stage.up
            upsample, blocks = stage.layers[0], stage.layers[1]
            out.append(PieceSpec(f'up{i}', (f'x{i - 1}',), f'u{i}', stage.up, (upsample,)))
            ends = []
            for j, block in enumerate(blocks.branches):
                source = f'u{i}'
                for p, pair in enumerate(block):
                    key = f'r{i}.{j}.{p}'
                    out.append(PieceSpec(f'res{i}.{j}.{p}', (source,), key, 1, (pair,)))
                    source = key
                ends.append(source)
            out.append(PieceSpec(f'mean{i}', tuple(ends), f'x{i}', 1, ()))
            if i == last:
                out.append(PieceSpec('post', (f'x{i}',), 'audio', 1, stage.layers[2:]))
        return tuple(out)

    def plan(self, lo: int, hi: int, frames: int) -> list:
        """What each stage computes for output samples ``[lo, hi)`` of a ``frames`` latent.

        Returns:
            One ``(in_lo, in_hi, keep_lo, keep_hi)`` per stage, in decode order: the stage
            runs on its input ``[in_lo, in_hi)`` (clipped to the signal) and keeps its
            output ``[keep_lo, keep_hi)`` (absolute indices at its output rate), which is
            exact and is what the next stage reads. The last stage keeps ``[lo, hi)``.

        Raises:
            ValueError: ``[lo, hi)`` is empty or not inside ``[0, frames * hop)``.
        """
        if not 0 <= lo < hi <= frames * self.hop:
            raise ValueError(f'output window [{lo}, {hi}) outside [0, {frames * self.hop})')
        length = frames * self.hop
        out: list = []
        keep_lo, keep_hi = lo, hi
        for stage in reversed(self.stages):
            length //= stage.up
            a, b = stage.needs(keep_lo, keep_hi - 1)
            in_lo, in_hi = max(0, a), min(length, b + 1)
            out.append((in_lo, in_hi, keep_lo, keep_hi))
            keep_lo, keep_hi = in_lo, in_hi
        return out[::-1]

    def context_frames(self) -> tuple:
        """Latent frames one frame of audio reads before and after itself (interior).

        E.g. (13, 13) for hayakoe's JP-Extra decoder (rates 8, 8, 2, 2, 2).
        """
        far = 10 ** 6  # an interior frame: nothing clipped
        (a, b, _, _) = self.plan(far * self.hop, (far + 1) * self.hop, 2 * far)[0]
        return far - a, b - far - 1
