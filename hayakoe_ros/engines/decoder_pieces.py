# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The synthesizer's cut pieces on disk and their ONNX Runtime sessions (no ROS).

:func:`prepare_pieces` finds (or makes, through :mod:`.decoder_split`'s cache) the cut
of a ``synthesizer.onnx``; :func:`open_pieces` opens one CPU session per piece and
returns the :class:`.windowed_decoder.StagedSynthesizer` that runs them.
"""

from __future__ import annotations

from typing import Sequence

from .decoder_receptive import ChainSpec
from .decoder_split import SplitError, SplitModelCache, stage_files
from . import ort_session
from .ort_session import share_cpu_arena
from .windowed_decoder import StagedSynthesizer


def prepare_pieces(source: str, model_config: dict, root: str) -> tuple:
    """The cut pieces of ``source`` (cut now if not cached under ``root``) and the chain.

    Returns:
        ``(files, chain)``: ``[stage1.onnx, dec0.onnx, ...]`` paths and the
        :class:`ChainSpec` of ``model_config``.

    Raises:
        SplitError: the graph cannot be cut, or the config lacks the decoder's fields.
    """
    try:
        chain = ChainSpec.from_config(model_config)
    except ValueError as exc:
        raise SplitError(str(exc)) from exc
    entry = SplitModelCache(root).pieces(source, model_config)
    files = stage_files(entry)
    if files is None or len(files) != len(chain.pieces()) + 1:
        raise SplitError(f'the cut in {entry} is incomplete (delete it to cut again)')
    return [str(f) for f in files], chain


def open_pieces(files: Sequence[str], chain: ChainSpec, hooks: dict,
                decoder_hooks: dict) -> StagedSynthesizer:
    """Build one CPU session per piece, with the options hayakoe gives its synthesizer.

    ``ORT_ENABLE_ALL``, CPU provider, the first stage built inside
    :func:`.ort_session.onnx_session_hooks` ``(**hooks)`` and the decoder pieces inside
    ``(**decoder_hooks)``, so that the node's thread, spinning and optimised-copy settings
    apply as to hayakoe's own sessions (the two differ in spinning only:
    :class:`.values.Spinning`). The pieces share one CPU arena
    (:func:`.ort_session.share_cpu_arena`), without memory patterns: they run one after
    the other, so their working memory is that of the largest, as in the uncut graph
    (peak RSS over the benchmark's 1, 3 and 10 sentences: 1322 MB against 1311 MB with
    hayakoe's own session; 2137 MB with an arena per piece).

    Raises:
        Whatever ONNX Runtime raises for a piece it cannot load.
    """
    sessions = []
    for i, path in enumerate(files):
        with ort_session.onnx_session_hooks(**(hooks if i == 0 else decoder_hooks)):
            sessions.append(_open(path))
    return StagedSynthesizer(sessions[0], sessions[1:], chain)


def _open(path: str):
    """One piece's CPU session (inside the caller's session hooks)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    share_cpu_arena(options)
    # Windows come in many lengths: a memory pattern per shape grew the arena by
    # 110 MB over the 10-sentence text (full-size model); without, +11 MB over the
    # uncut graph, at the same CPU time.
    options.enable_mem_pattern = False
    return ort.InferenceSession(path, options, providers=['CPUExecutionProvider'])
