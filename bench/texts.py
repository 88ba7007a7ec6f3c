# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Benchmark texts, read from the shared corpus (``../shared/corpus`` beside the repo).

The 1-, 3- and 10-sentence texts are prefixes of one another: all three start with the
same sentence, so a TTFA ratio between them measures what the *rest* of the text costs
before the first audio, not a difference between first sentences.
"""

from __future__ import annotations

import os
from pathlib import Path
import re

REPO = Path(__file__).resolve().parents[1]

#: Sentences of robot_dialogue.txt skipped before the benchmark texts start: the file opens
#: with a five-character greeting (こんにちは。), which would make TTFA(1) unrepresentatively
#: short; the texts start at line 3, a sentence of typical length (15 characters).
DIALOGUE_SKIP = 3

_SENTENCE_RE = re.compile(r'[^。！？!?]+[。！？!?]+')


def corpus_dir() -> Path:
    """Return the corpus directory: $HAYAKOE_ROS_CORPUS, or ../shared/corpus beside the repo.

    CI clones put shared/ beside the repository, as on the development machine.
    """
    env = os.environ.get('HAYAKOE_ROS_CORPUS')
    candidates = [Path(env)] if env else []
    candidates += [REPO.parent / 'shared' / 'corpus', REPO / 'shared' / 'corpus']
    for path in candidates:
        if (path / 'robot_dialogue.txt').is_file():
            return path
    raise FileNotFoundError(
        'corpus not found: expected robot_dialogue.txt and ita_emotion100.txt in '
        + ' or '.join(str(p) for p in candidates))


def sentences(text: str) -> list:
    """Split ``text`` into sentences ending in 。！？!? (the punctuation kept)."""
    return [s.strip() for s in _SENTENCE_RE.findall(text) if s.strip()]


def dialogue_sentences(directory: Path) -> list:
    """Return every sentence of robot_dialogue.txt, in file order."""
    out: list = []
    for line in (directory / 'robot_dialogue.txt').read_text(encoding='utf-8').splitlines():
        out += sentences(line)
    return out


def ita_sentences(directory: Path) -> list:
    """Return the texts of ita_emotion100.txt (format ``ID:text,reading``), in file order."""
    out = []
    for line in (directory / 'ita_emotion100.txt').read_text(encoding='utf-8').splitlines():
        if ':' not in line:
            continue
        text = line.split(':', 1)[1].rsplit(',', 1)[0].strip()
        if text:
            out.append(text)
    return out


def benchmark_texts(directory: Path) -> dict:
    """Return the short/medium/long texts (1, 3 and 10 sentences), keyed by sentence count.

    They come from robot_dialogue.txt (the robot's domain), starting at sentence
    :data:`DIALOGUE_SKIP`; each text is a prefix of the next one.
    """
    pool = dialogue_sentences(directory)[DIALOGUE_SKIP:]
    if len(pool) < 10:
        raise ValueError(f'robot_dialogue.txt has too few sentences ({len(pool)})')
    return {n: ''.join(pool[:n]) for n in (1, 3, 10)}
