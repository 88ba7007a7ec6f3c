# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""hayakoe's phoneme ids read: punctuation runs, and phones from the model's durations.

hayakoe feeds its model the phoneme ids of its public symbol table
(``hayakoe.nlp.symbols.SYMBOLS``) with a blank (id 0) before, between and after them, and
a pad (``_``, id 0 too) at each end: ``[blank, pad, blank, p1, blank, ..., pn, blank,
pad, blank]``; the model gives each id a whole number of frames of ``hop_length``
samples, and the audio is exactly their sum. Nothing here reaches hayakoe's private API
(that is :mod:`.hayakoe_internals`).
"""

from __future__ import annotations

import functools
from typing import Optional, Sequence

import numpy as np

from .base import tile_phones

# hayakoe's names that differ from Open JTalk's: its sokuon, and its non-speech symbols.
_RENAMED = {'q': 'cl', 'SP': 'pau'}


@functools.lru_cache(maxsize=1)
def _symbols() -> tuple:
    """The symbol table of hayakoe, its punctuation as ``pau`` and ``q`` as ``cl``."""
    from hayakoe.nlp.symbols import PUNCTUATIONS, SYMBOLS

    return tuple('pau' if s in PUNCTUATIONS else _RENAMED.get(s, s) for s in SYMBOLS)


def punctuation_ids() -> frozenset:
    """Ids of the punctuation phonemes (``! ? … , . ' -``) in hayakoe's symbol table."""
    from hayakoe.nlp.symbols import PUNCTUATIONS, SYMBOLS

    return frozenset(SYMBOLS.index(p) for p in PUNCTUATIONS if p in SYMBOLS)


def punctuation_runs(ids: Sequence[int], punct: frozenset) -> list:
    """Index of the last phoneme of each run of punctuation (runs may hold blanks, id 0).

    Same merging rule as hayakoe's ``find_boundary_punct_positions`` ("!?" is one boundary),
    extended to every punctuation phoneme so clause marks (、 -> ``,``) count too.
    """
    runs: list = []
    for i, p in enumerate(ids):
        if p not in punct:
            continue
        if runs and all(ids[j] == 0 for j in range(runs[-1] + 1, i)):
            runs[-1] = i
        else:
            runs.append(i)
    return runs


def phones_from_frames(ids: Sequence[int], frames: Optional[np.ndarray], hop: int,
                       length: int) -> tuple:
    """The :class:`~.base.Phone` tuple of a segment from its ids and frames per id.

    Each blank's frames go to the phoneme before it (the leading blank's to the first
    phone); the pads at the ends are ``sil``, punctuation (and ``SP``) ``pau``, the
    sokuon ``q`` is Open JTalk's ``cl``, other symbols keep hayakoe's names (lower-case
    vowels: hayakoe does not mark devoicing; long vowels are repeated vowels). Adjacent
    pauses (``!?``) are one ``pau``. The last phone is stretched or cut to end at
    ``length`` (:func:`~.base.tile_phones`: WORLD re-synthesis for ``pitch_scale`` may
    change the length by a few samples).

    Args:
        ids: Phoneme ids with blanks, as fed to the model (``SegmentFeatures.phones``).
        frames: Frames per id, ``(len(ids),)`` (whole numbers, float or int), or None
            when the synthesizer gave none (an old ``synthesizer.onnx``).
        hop: Samples per frame (``hop_length``).
        length: Samples of the audio returned for the segment.

    Returns:
        The phones tiling ``length`` samples; empty when ``frames`` is None or does not
        match ``ids``, or the ids lack the blank/pad layout described above.
    """
    n = len(ids)
    if frames is None or len(frames) != n or n < 5 or n % 2 == 0 \
            or any(ids[i] != 0 for i in range(0, n, 2)):
        return ()
    names = _symbols()
    counts = np.rint(np.asarray(frames, dtype=np.float64)).astype(np.int64) * int(hop)
    spans: list = []
    lead = int(counts[0])
    for i in range(1, n, 2):
        symbol = 'sil' if i in (1, n - 2) else names[ids[i]]
        samples = lead + int(counts[i]) + int(counts[i + 1])
        lead = 0
        if spans and symbol in ('pau', 'sil') and spans[-1][0] == symbol:
            spans[-1] = (symbol, spans[-1][1] + samples)
        else:
            spans.append((symbol, samples))
    return tile_phones(spans, length)
