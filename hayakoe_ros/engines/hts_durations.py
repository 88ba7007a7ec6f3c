# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Phoneme durations of an HTS voice, computed from its duration model (no synthesis).

pyopenjtalk runs HTS_Engine but returns only the waveform. The durations HTS_Engine gives
each label are a function of the voice's duration model alone: each full-context label
selects, through the duration decision tree, a Gaussian per HMM state; at speed 1 each
state lasts ``max(1, floor(mean + 0.5))`` frames, and at another speed the whole call's
frames are fixed first (``sum(means) / speed``, rounded) and shared out by the
variances as HTS_Engine 1.10's ``HTS_set_specified_duration`` does. This module reads
the ``.htsvoice`` file (the ``[POSITION]`` section locates the duration PDFs, float32
means then variances per PDF, and the duration tree, QS questions with glob label
patterns and ``index question no-child yes-child`` nodes) and redoes that arithmetic in
Python, which costs about a millisecond per sentence instead of a second synthesis.

A voice this parser does not understand raises :class:`HtsVoiceError`; callers then go
without timing.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
from typing import Optional, Sequence

import numpy as np


class HtsVoiceError(ValueError):
    """The ``.htsvoice`` file cannot be read as an HTS voice with one duration model."""


# Tokens of the text sections: quoted strings, braces, commas, and bare words.
_TOKEN_RE = re.compile(r'"[^"]*"|[{},]|[^\s{},"]+')
_TREE_HEAD_RE = re.compile(r'\{([^}]*)\}\[(\d+)\]')


def _glob_regex(patterns: Sequence[str]) -> re.Pattern:
    """One regex that fully matches a label when any HTS glob pattern (``*``, ``?``) does."""
    alts = []
    for pat in patterns:
        alts.append(''.join('.*' if c == '*' else '.' if c == '?' else re.escape(c)
                            for c in pat))
    return re.compile('(?:' + '|'.join(alts) + r')\Z', re.DOTALL)


def _leaf(token: str) -> Optional[int]:
    """The PDF number a tree leaf names (``"dur_s2_12"`` -> 12); None for a node index.

    HTS takes the digits at the end of the name; a bare (signed) number is a node.
    """
    if re.fullmatch(r'-?\d+', token):
        return None
    m = re.search(r'(\d+)"?\Z', token)
    if m is None:
        raise HtsVoiceError(f'tree leaf {token!r} names no PDF')
    return int(m.group(1))


@dataclasses.dataclass
class _Tree:
    """One decision tree: the label patterns it applies to and its nodes."""

    patterns: Optional[re.Pattern]   # None: every label
    nodes: dict                      # index -> (question regex, no child, yes child)
    root_pdf: Optional[int]          # a tree that is one leaf


class HtsDurationModel:
    """The duration model of one HTS voice (parsed once; see :func:`load`).

    Attributes:
        sample_rate: Samples per second of the voice's audio (Hz).
        frame_period: Samples per frame (``FRAME_PERIOD``; 240 for mei at 48 kHz).
        num_states: HMM states per label (5).
    """

    def __init__(self, sample_rate: int, frame_period: int, num_states: int,
                 trees: list, means: np.ndarray, variances: np.ndarray) -> None:
        self.sample_rate = sample_rate
        self.frame_period = frame_period
        self.num_states = num_states
        self._trees = trees
        self._means = means
        self._variances = variances
        self._pdf = functools.lru_cache(maxsize=4096)(self._find_pdf)

    def _find_pdf(self, label: str) -> int:
        """The 0-based duration PDF of one full-context label (HTS's tree search)."""
        for tree in self._trees:
            if tree.patterns is not None and not tree.patterns.match(label):
                continue
            if tree.root_pdf is not None:
                return tree.root_pdf - 1
            node = tree.nodes.get(0)
            while node is not None:
                question, no, yes = node
                child = yes if question.match(label) else no
                kind, value = child
                if kind == 'pdf':
                    return value - 1
                node = tree.nodes.get(value)
            raise HtsVoiceError(f'the duration tree has no node for {label!r}')
        raise HtsVoiceError(f'no duration tree applies to {label!r}')

    def state_frames(self, labels: Sequence[str], speed: float = 1.0) -> np.ndarray:
        """Frames of every HMM state of ``labels``, as HTS_Engine gives them in one call.

        Args:
            labels: The full-context labels of one synthesis call (no times), in order.
            speed: HTS_Engine's speed (pyopenjtalk's ``speed``; 1/length_scale), > 0.

        Returns:
            int64 ``(len(labels), num_states)``, each >= 1.

        Raises:
            HtsVoiceError: a label no tree leads to a PDF for.
            ValueError: ``speed`` is not > 0.
        """
        if not speed > 0:
            raise ValueError(f'speed must be > 0, not {speed!r}')
        idx = [self._pdf(label) for label in labels]
        means = [float(v) for v in self._means[idx].reshape(-1)]
        if speed == 1.0:
            frames = [max(1, math.floor(m + 0.5)) for m in means]
        else:
            varis = [float(v) for v in self._variances[idx].reshape(-1)]
            total = 0.0
            for m in means:  # summed in order, in double precision, as HTS does
                total += m
            frames = _specified(means, varis, total / speed)
        return np.array(frames, dtype=np.int64).reshape(len(labels), self.num_states)

    def label_frames(self, labels: Sequence[str], speed: float = 1.0) -> np.ndarray:
        """Frames of each label (its states summed): int64 ``(len(labels),)``.

        Raises:
            What :meth:`state_frames` raises.
        """
        return self.state_frames(labels, speed).sum(axis=1)


def _specified(means: list, varis: list, frame_length: float) -> list:
    """Share ``frame_length`` frames out over states (``HTS_set_specified_duration``).

    Each state gets ``mean + rho * variance`` frames, rounded, with the one ``rho`` that
    makes them sum to the target; states are then lengthened or shortened one frame at
    a time, where that moves them least off that ``rho``, until the total is exact.
    """
    size = len(means)
    target = 1 if frame_length + 0.5 < 1.0 else int(frame_length + 0.5)
    if target <= size:
        return [1] * size
    sum_mean = sum_vari = 0.0
    for m, v in zip(means, varis):
        sum_mean += m
        sum_vari += v
    rho = (target - sum_mean) / sum_vari
    frames = np.array([1 if m + rho * v + 0.5 < 1.0 else int(m + rho * v + 0.5)
                       for m, v in zip(means, varis)], dtype=np.int64)
    mean, vari = np.array(means), np.array(varis)
    total = int(frames.sum())
    while total != target:
        # One frame more (or less) where that moves a state least off rho: the first such
        # state on ties, as HTS's strict comparison picks; only states > 1 frame shrink.
        step = 1 if target > total else -1
        off = np.abs(rho - (frames + step - mean) / vari)
        if step < 0:
            off[frames <= 1] = np.inf
        frames[int(np.argmin(off))] += step
        total += step
    return [int(f) for f in frames]


def _header(text: str) -> dict:
    """``{section: {key: value}}`` of the text header before ``[DATA]``."""
    sections: dict = {}
    current: dict = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith('[') and line.endswith(']'):
            current = sections.setdefault(line[1:-1], {})
        elif ':' in line:
            key, value = line.split(':', 1)
            current[key] = value
    return sections


def _span(value: str) -> tuple:
    """``"a-b"`` (inclusive byte offsets into [DATA]) -> ``(a, b + 1)``."""
    if ',' in value:
        raise HtsVoiceError(f'more than one duration file ({value}): not supported')
    lo, hi = (int(v) for v in value.split('-'))
    return lo, hi + 1


def _parse_trees(text: str) -> list:
    """The decision trees of a tree section (questions first, then the trees)."""
    tokens = _TOKEN_RE.findall(text)
    questions: dict = {}
    trees: list = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == 'QS':
            name, i = tokens[i + 1], i + 2
            if tokens[i] != '{':
                raise HtsVoiceError(f'question {name} has no pattern list')
            patterns = []
            i += 1
            while tokens[i] != '}':
                if tokens[i] != ',':
                    patterns.append(tokens[i].strip('"'))
                i += 1
            questions[name] = _glob_regex(patterns)
            i += 1
        elif tok == '{':  # a tree's head: {patterns}[state]
            j = tokens.index('}', i)
            pats = [t.strip('"') for t in tokens[i + 1:j] if t != ',']
            i = j + 2  # past '}' and '[state]'
            tree = _Tree(None if pats in ([], ['*']) else _glob_regex(pats), {}, None)
            if tokens[i] != '{':
                tree.root_pdf = _leaf(tokens[i])
                i += 1
            else:
                i += 1
                while tokens[i] != '}':
                    index, qname, no, yes = tokens[i:i + 4]
                    if qname not in questions:
                        raise HtsVoiceError(f'the tree asks unknown question {qname}')
                    tree.nodes[int(index)] = (questions[qname], _child(no), _child(yes))
                    i += 4
                i += 1
            trees.append(tree)
        else:
            raise HtsVoiceError(f'unexpected {tok!r} in the duration tree')
    if not trees:
        raise HtsVoiceError('no duration tree')
    return trees


def _child(token: str) -> tuple:
    """``('pdf', n)`` for a leaf, ``('node', index)`` for an inner node."""
    pdf = _leaf(token)
    return ('node', int(token)) if pdf is None else ('pdf', pdf)


@functools.lru_cache(maxsize=4)
def load(path: str) -> HtsDurationModel:
    """Parse the duration model of the ``.htsvoice`` file at ``path`` (cached per path).

    Raises:
        HtsVoiceError: not an HTS voice (version 1.0 format), or one this parser does
            not take (several duration files, a malformed tree, PDFs that do not fit).
        OSError: the file cannot be read.
    """
    with open(os.fsdecode(path), 'rb') as fh:
        data = fh.read()
    mark = data.find(b'[DATA]\n')
    if mark < 0:
        raise HtsVoiceError(f'{path}: no [DATA] section')
    body = data[mark + len(b'[DATA]\n'):]
    try:
        head = _header(data[:mark].decode('utf-8'))
        glob, pos = head['GLOBAL'], head['POSITION']
        rate, fperiod = int(glob['SAMPLING_FREQUENCY']), int(glob['FRAME_PERIOD'])
        nstate = int(glob['NUM_STATES'])
        pdf_lo, pdf_hi = _span(pos['DURATION_PDF'])
        tree_lo, tree_hi = _span(pos['DURATION_TREE'])
        trees = _parse_trees(body[tree_lo:tree_hi].decode('utf-8'))
    except (KeyError, ValueError, IndexError, UnicodeDecodeError) as exc:
        if isinstance(exc, HtsVoiceError):
            raise
        raise HtsVoiceError(f'{path}: not a readable HTS voice header or duration tree: '
                            f'{type(exc).__name__}: {exc}') from exc
    raw = body[pdf_lo:pdf_hi]
    # One int32 PDF count per tree, then per PDF the state means, then the variances.
    counts = np.frombuffer(raw, '<i4', count=len(trees)) if len(raw) >= 4 * len(trees) \
        else np.zeros(0, np.int32)
    width = 2 * nstate
    if len(counts) != len(trees) or len(raw) != 4 * len(trees) + 4 * width * int(counts.sum()):
        raise HtsVoiceError(f'{path}: the duration PDFs ({len(raw)} bytes) do not fit '
                            f'{len(trees)} tree(s) of {nstate} states')
    if len(trees) != 1:
        raise HtsVoiceError(f'{path}: {len(trees)} duration trees: not supported')
    pdfs = np.frombuffer(raw, '<f4', offset=4 * len(trees)).reshape(-1, width)
    pdfs = pdfs.astype(np.float64)
    return HtsDurationModel(rate, fperiod, nstate, trees, pdfs[:, :nstate], pdfs[:, nstate:])


def phoneme(label: str) -> str:
    """The current phoneme of a full-context label (``xx^sil-k+o=N/A:...`` -> ``k``)."""
    return label.split('-', 1)[1].split('+', 1)[0]
