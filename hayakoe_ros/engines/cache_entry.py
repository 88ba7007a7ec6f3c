# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""One phrase-cache entry on disk: a segment's audio and its phones in one ``.npz`` file.

Arrays: ``audio`` float32 ``(samples,)``, ``symbols`` str ``(phones,)`` and ``bounds``
int64 ``(phones, 2)`` (start, end sample of each phone). One file per entry keeps the
audio and its timing together: one atomic rename writes both, one unlink removes both.
"""

from __future__ import annotations

import re
from typing import BinaryIO

import numpy as np

from .base import Phone

#: File name suffix of an entry (``<key>.npz``).
SUFFIX = '.npz'

#: Names of the earlier format's entries (``<key>.npy``, the audio alone).
FORMAT_1_RE = re.compile(r'[0-9a-f]{64}\.npy')


def write(fileobj: BinaryIO, audio: np.ndarray, phones: tuple) -> None:
    """Write an entry (uncompressed ``.npz``) of float32 ``audio`` and its ``phones``."""
    np.savez(fileobj, audio=audio, symbols=np.array([p.symbol for p in phones], str),
             bounds=np.array([(p.start, p.end) for p in phones], np.int64).reshape(-1, 2))


def read(path: str) -> tuple:
    """``(audio, phones)`` of one entry file.

    Raises:
        ValueError: the arrays are not a float32 ``(samples,)`` audio and phones that
            tile it (``symbols`` str ``(n,)``, ``bounds`` int64 ``(n, 2)``).
        OSError, EOFError, KeyError, zipfile.BadZipFile: unreadable or incomplete file.
    """
    with np.load(path, allow_pickle=False) as z:
        audio, symbols, bounds = z['audio'], z['symbols'], z['bounds']
    if audio.dtype != np.float32 or audio.ndim != 1:
        raise ValueError(f'holds {audio.dtype} {audio.shape}, not float32 (samples,)')
    if symbols.ndim != 1 or bounds.shape != (len(symbols), 2):
        raise ValueError(f'phones of shapes {symbols.shape} and {bounds.shape}')
    phones = tuple(Phone(str(s), int(a), int(b)) for s, (a, b) in zip(symbols, bounds))
    ends = [0] + [p.end for p in phones]
    if phones and (any(p.start != e or p.end < p.start for p, e in zip(phones, ends))
                   or ends[-1] != len(audio)):
        raise ValueError('phones that do not tile the audio')
    return audio, phones
