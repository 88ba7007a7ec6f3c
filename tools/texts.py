# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The project's own test and benchmark texts, and the optional shared corpora.

The texts live in ``test/data/texts.yaml``. Tests and benchmarks use the repository's
texts; the corpora in ``../shared/corpus`` beside the repository (``$HAYAKOE_ROS_CORPUS``
names another place) are extra input, used when present and never required.
"""

from __future__ import annotations

from functools import lru_cache
import os
from pathlib import Path
import re
from typing import Optional

import yaml

REPO = Path(__file__).resolve().parents[1]
TEXTS_FILE = REPO / 'test' / 'data' / 'texts.yaml'

_SENTENCE_RE = re.compile(r'[^。！？!?]+[。！？!?]+')


@lru_cache(maxsize=1)
def load_texts() -> dict:
    """Return the parsed ``test/data/texts.yaml``.

    Keys: ``utterances`` (dict kind -> list of str), ``benchmark`` (list of 10 sentences)
    and ``phoneme_rate`` (list of sentences). Raises ``OSError`` if the file is missing.
    """
    with open(TEXTS_FILE, encoding='utf-8') as fh:
        return yaml.safe_load(fh)


def utterances(kind: Optional[str] = None) -> list:
    """Return the repository's utterances of one ``kind`` (all kinds when None), in order.

    Raises ``KeyError`` for an unknown kind.
    """
    table = load_texts()['utterances']
    kinds = [kind] if kind is not None else list(table)
    return [text for k in kinds for text in table[k]]


def shared_corpus_dir() -> Optional[Path]:
    """Return the shared corpus directory, or None when there is none.

    ``$HAYAKOE_ROS_CORPUS`` when set (a directory without the corpus, e.g. ``none``, turns
    the extra input off), else ``../shared/corpus`` beside the repository; a directory
    counts when it holds ``robot_dialogue.txt``.
    """
    env = os.environ.get('HAYAKOE_ROS_CORPUS')
    path = Path(env) if env else REPO.parent / 'shared' / 'corpus'
    return path if (path / 'robot_dialogue.txt').is_file() else None


def sentences(text: str) -> list:
    """Split ``text`` into sentences ending in 。！？!? (the punctuation kept)."""
    return [s.strip() for s in _SENTENCE_RE.findall(text) if s.strip()]


def shared_dialogue_lines() -> list:
    """Non-empty lines of the shared ``robot_dialogue.txt``; [] when there is no corpus."""
    directory = shared_corpus_dir()
    if directory is None:
        return []
    lines = (directory / 'robot_dialogue.txt').read_text(encoding='utf-8').splitlines()
    return [line.strip() for line in lines if line.strip()]


def shared_ita_sentences() -> list:
    """Texts of the shared ``ita_emotion100.txt`` (``ID:text,reading``); [] when absent."""
    directory = shared_corpus_dir()
    path = directory / 'ita_emotion100.txt' if directory else None
    if path is None or not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding='utf-8').splitlines():
        if ':' not in line:
            continue
        text = line.split(':', 1)[1].rsplit(',', 1)[0].strip()
        if text:
            out.append(text)
    return out
