# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Preloading the phrase cache with the phrases a robot says often (no ROS imports).

:func:`preload` synthesises phrases cut into segments by the same front end as the node's
utterances (given to it as ``segments_of``: the engines know no front end), so each of
their segments becomes an entry of a :class:`~.phrase_cache.CachingEngine` and a later
utterance of that phrase starts with no synthesis.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from typing import Callable, Iterable

from .base import VoiceParams
from .phrase_cache import CachingEngine


# A value written as a file path (preload_phrases is a path or phrases).
_PATH_LIKE_RE = re.compile(r'^(?:/|~|\.\.?/|file:)|\.(?:txt|ya?ml|csv)$'
                           r'|^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+$', re.IGNORECASE)


def read_phrases(spec: str) -> list:
    """The phrases of the ``preload_phrases`` parameter.

    Args:
        spec: Phrases separated by ``|``, or the path of a UTF-8 file with one phrase per
            line (blank lines and lines starting with ``#`` are skipped). A value naming an
            existing file is read as a file.

    Returns:
        The non-empty phrases, stripped, in order.

    Raises:
        ValueError: the file cannot be read or is not UTF-8, or a single value that is
            written as a path (it starts with ``/``, ``~``, ``./``, ``../`` or ``file:``,
            ends with ``.txt``, ``.yaml`` or ``.csv``, or is ASCII names joined by ``/``)
            names no file: a mistyped path was spoken as a phrase.
    """
    spec = spec.strip()
    if not spec:
        return []
    path = os.path.expanduser(spec)
    single = '|' not in spec and '\n' not in spec
    is_file = single and os.path.isfile(path)
    if single and not is_file and _PATH_LIKE_RE.search(spec):
        raise ValueError(f'preload_phrases file {path} does not exist (a phrase that '
                         "looks like a path: write it with a '|' after it to speak it)")
    if is_file:
        try:
            with open(path, encoding='utf-8') as f:
                lines = f.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f'preload_phrases file {path}: {exc}') from exc
        return [line.strip() for line in lines
                if line.strip() and not line.lstrip().startswith('#')]
    return [p.strip() for p in spec.split('|') if p.strip()]


@dataclasses.dataclass
class PreloadResult:
    """What :func:`preload` did.

    Attributes:
        phrases: Phrases given.
        segments: Segments now in the cache.
        synthesised: Of those, segments synthesised now (the rest were cached already).
        seconds: Wall time (s).
        errors: ``phrase: reason`` of each phrase that could not be preloaded.
    """

    phrases: int = 0
    segments: int = 0
    synthesised: int = 0
    seconds: float = 0.0
    errors: list = dataclasses.field(default_factory=list)


def preload(engine: CachingEngine, phrases: Iterable[str], voice: VoiceParams,
            segments_of: Callable[[str], list]) -> PreloadResult:
    """Synthesise ``phrases`` into ``engine``'s cache as the node would segment them.

    Each segment is synthesised with ``voice`` (a segment's SSML ``<prosody rate>`` scales
    ``length_scale`` as in the scheduler). A phrase that fails (bad input, nothing to
    speak) is reported in :attr:`PreloadResult.errors`, not raised. The engine's
    :attr:`~CachingEngine.hits` and :attr:`~CachingEngine.misses` are left as they were:
    they count speech only.

    Args:
        engine: The caching engine the node speaks with.
        phrases: Texts (plain or SSML).
        voice: The configured voice settings (the node's parameters, goal rate 1).
        segments_of: The node's front end: a phrase to its segments (objects with
            ``text`` and ``rate``), with the node's ``max_chars``, ``max_segment_chars``
            and ``first_segment_morae`` (other values segment differently and miss the
            cache); raises for bad input.
    """
    result = PreloadResult()
    t0 = time.perf_counter()
    counts = engine.hits, engine.misses
    for phrase in phrases:
        result.phrases += 1
        try:
            for seg in segments_of(phrase):
                seg_voice = voice if seg.rate == 1.0 else dataclasses.replace(
                    voice, length_scale=voice.length_scale / seg.rate)
                misses = engine.misses
                engine.synthesize(seg.text, seg_voice)
                result.segments += 1
                result.synthesised += engine.misses - misses
        except Exception as exc:  # one bad phrase must not stop the others
            result.errors.append(f'{phrase[:40]!r}: {type(exc).__name__}: {exc}')
    engine.hits, engine.misses = counts
    result.seconds = time.perf_counter() - t0
    return result


__all__ = ['PreloadResult', 'preload', 'read_phrases']
