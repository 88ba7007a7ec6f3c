# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Benchmark texts: the repository's own (``test/data/texts.yaml``, via tools/texts.py).

The 1-, 3- and 10-sentence texts are prefixes of one another: all three start with the
same sentence, so a TTFA ratio between them measures what the *rest* of the text costs
before the first audio, not a difference between first sentences. The speaking-rate check
uses the repository's ``phoneme_rate`` sentences, and the ITA corpus
(``../shared/corpus/ita_emotion100.txt``) as extra input when it is present.
"""

from __future__ import annotations

from tools.texts import load_texts, shared_ita_sentences

SIZES = (1, 3, 10)


def benchmark_texts() -> dict:
    """Return the 1-, 3- and 10-sentence texts, keyed by sentence count.

    Raises ``ValueError`` if texts.yaml lists fewer than 10 benchmark sentences.
    """
    pool = list(load_texts()['benchmark'])
    if len(pool) < max(SIZES):
        raise ValueError(f'texts.yaml: {len(pool)} benchmark sentences, need {max(SIZES)}')
    return {n: ''.join(pool[:n]) for n in SIZES}


def benchmark_sentences() -> list:
    """Return the benchmark sentences one by one (the 10-sentence text's parts)."""
    return list(load_texts()['benchmark'])


def rate_sentences() -> dict:
    """Return the speaking-rate sentences by source: ``repo`` always, ``ita`` when present."""
    out = {'repo': list(load_texts()['phoneme_rate'])}
    ita = shared_ita_sentences()
    if ita:
        out['ita'] = ita
    return out
