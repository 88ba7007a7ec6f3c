# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The speaker's ONNX graphs (synthesizer.onnx, duration_predictor.onnx), checked on export."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tools.random_model.synthesizer import new_net_g

_SYNTH_INPUTS = ('x', 'x_lengths', 'sid', 'tone', 'language', 'bert', 'style_vec',
                 'noise_scale', 'length_scale', 'noise_scale_w', 'sdp_ratio')
_DP_INPUTS = tuple(n for n in _SYNTH_INPUTS if n != 'noise_scale')
_N_TENSOR_INPUTS = 7  # x .. style_vec: positional; the scalars after them are keywords
_PHONE_AXES = {'x': {1: 'phones'}, 'tone': {1: 'phones'}, 'language': {1: 'phones'},
               'bert': {2: 'phones'}, 'durations': {1: 'phones'}}


@dataclass(frozen=True)
class _Graph:
    """One of hayakoe's speaker graphs: which ``net_g`` method it runs, its I/O names."""

    method: str                     # SynthesizerTrn method the graph's forward calls
    inputs: tuple[str, ...]         # input names, tensors first, then keyword scalars
    outputs: tuple[str, ...]        # output names
    post: Callable[[Any], Any]      # method result -> the graph's outputs
    axes: dict[str, dict[int, str]]  # dynamic axes


_GRAPHS = {
    # net_g.infer -> (audio [1, 1, samples], durations [1, phones]): the frames per
    # phoneme actually used.
    'synthesizer.onnx': _Graph('infer', _SYNTH_INPUTS, ('audio', 'durations'),
                               lambda out: (out[0], out[1].sum(2)[:, 0, :]),
                               {**_PHONE_AXES, 'audio': {2: 'samples'}}),
    # net_g.predict_durations -> durations [1, phones] (same code path as infer).
    'duration_predictor.onnx': _Graph('predict_durations', _DP_INPUTS, ('durations',),
                                      lambda durations: durations.unsqueeze(0), _PHONE_AXES),
}


def _export_graph(net_g, name: str, example: dict[str, Any], scalars: dict[str, float],
                  path: Path) -> None:
    """Export graph ``name`` of :data:`_GRAPHS` from ``net_g`` to ``path`` (ONNX opset 17).

    ``example`` holds the calibration tensors traced with; ``scalars`` the values of the
    graph's scalar inputs used while tracing.
    """
    import torch

    graph = _GRAPHS[name]
    keywords = graph.inputs[_N_TENSOR_INPUTS:]

    class Graph(torch.nn.Module):
        """``forward(*inputs)`` = ``graph.post(net_g.<graph.method>(tensors, **scalars))``."""

        def __init__(self, net) -> None:
            super().__init__()
            self.net_g = net

        def forward(self, *args):
            """Run the method on the graph inputs, in :data:`_GRAPHS` order."""
            result = getattr(self.net_g, graph.method)(
                *args[:_N_TENSOR_INPUTS], **dict(zip(keywords, args[_N_TENSOR_INPUTS:])))
            return graph.post(result)

    feeds = _feeds(example, graph.inputs, **{k: scalars[k] for k in keywords})
    torch.onnx.export(
        Graph(net_g).eval(), tuple(feeds.values()), str(path), dynamo=False,
        opset_version=17, input_names=list(graph.inputs), output_names=list(graph.outputs),
        dynamic_axes=graph.axes)


def _feeds(c: dict[str, Any], names: tuple[str, ...], **scalars: float) -> dict[str, Any]:
    """Return torch inputs by name: the calibration tensors plus [1] scalars."""
    import torch

    out = dict(c)
    for key, value in scalars.items():
        out[key] = torch.tensor([value], dtype=torch.float32)
    return {n: out[n] for n in names}


def write_speaker_common(directory: Path, hps, style_vectors: np.ndarray) -> None:
    """Write config.json and style_vectors.npy."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / 'config.json').write_text(hps.model_dump_json(indent=2) + '\n',
                                           encoding='utf-8')
    np.save(directory / 'style_vectors.npy', style_vectors)


def write_onnx_speaker(net_g, hps, calib: list[dict[str, Any]], directory: Path) -> None:
    """Export synthesizer.onnx and duration_predictor.onnx, then self-check them."""
    import torch
    from torch.nn.utils import parametrize

    # A fresh copy (deepcopy does not separate parametrizations cleanly).
    export_net = new_net_g(hps).eval()
    export_net.load_state_dict(net_g.state_dict())
    for module in export_net.modules():  # fold weight norm into plain weights
        if parametrize.is_parametrized(module):
            for name in list(module.parametrizations.keys()):
                parametrize.remove_parametrizations(module, name, leave_parametrized=True)

    scalars = {'noise_scale': 0.667, 'length_scale': 1.0, 'noise_scale_w': 0.8,
               'sdp_ratio': 0.2}
    example = min(calib, key=lambda c: c['x'].shape[1])  # shortest traces fastest
    synth_path = directory / 'synthesizer.onnx'
    dp_path = directory / 'duration_predictor.onnx'
    with torch.no_grad():
        for path in (synth_path, dp_path):
            _export_graph(export_net, path.name, example, scalars, path)
    _check_onnx_speaker(net_g, calib, synth_path, dp_path)


def _check_onnx_speaker(net_g, calib, synth_path: Path, dp_path: Path) -> None:
    """Compare the exported graphs with torch on inputs of other lengths."""
    import onnxruntime as ort
    import torch

    synth = ort.InferenceSession(str(synth_path), providers=['CPUExecutionProvider'])
    dp = ort.InferenceSession(str(dp_path), providers=['CPUExecutionProvider'])
    det = {'noise_scale': 0.0, 'length_scale': 1.0, 'noise_scale_w': 0.0, 'sdp_ratio': 0.0}
    for c in calib:
        feeds = {k: v.numpy() for k, v in _feeds(c, _SYNTH_INPUTS, **det).items()}
        audio, durations = synth.run(None, feeds)
        feeds.pop('noise_scale')
        dp_durations = dp.run(None, feeds)[0]
        with torch.no_grad():
            ref_audio, attn, _, _ = net_g.infer(**c, noise_scale=0.0, noise_scale_w=0.0,
                                                sdp_ratio=0.0)
        ref_durations = attn.sum(2)[:, 0, :].numpy()
        n = c['x'].shape[1]
        hop = int(np.prod(net_g.upsample_rates))
        ok = (
            durations.shape == (1, n) and dp_durations.shape == (1, n)
            and audio.shape == (1, 1, int(durations.sum()) * hop)
            and np.isfinite(audio).all()
            # ceil() may flip a frame where fp rounding differs; nothing more.
            and _nearly_equal_frames(durations, ref_durations)
            and _nearly_equal_frames(dp_durations, durations)
        )
        if ok and np.array_equal(durations, ref_durations):
            ok = float(np.abs(audio - ref_audio.numpy()).max()) < 1e-3
        if not ok:
            raise RuntimeError(f'exported speaker graphs disagree with torch on {n} phones')


def _nearly_equal_frames(a: np.ndarray, b: np.ndarray) -> bool:
    """Return True if frame counts differ by at most 1 in at most 2 places."""
    if a.shape != b.shape:
        return False
    diff = np.abs(a - b)
    return bool(diff.max(initial=0) <= 1 and (diff > 0).sum() <= 2)
