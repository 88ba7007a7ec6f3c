# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Where a text may be cut: word and accent-phrase boundaries from Open JTalk (no ROS imports).

The segmenter (:mod:`.segment`) cuts a clause too long for one segment only here, so a cut
never falls inside a word, a number or a counter after its number.
"""

from __future__ import annotations

import unicodedata

from ..engines import openjtalk_guard


def word_boundaries(text: str) -> list:
    """Offsets where ``text`` may be cut, from Open JTalk's front end (NJD features).

    Returns:
        ``(offset, accent_phrase)`` pairs, ``0 < offset < len(text)``, in order:
        ``accent_phrase`` is True where an accent phrase starts (NJD ``chain_flag`` != 1),
        False at other word starts. Never between two numeral words (百 / 二十), so a
        number stays whole, nor before a suffix or after a prefix (三百 / 本 would read
        ホン, not ボン; 第 / 三). Words Open JTalk reads differently from their spelling (ASCII
        digits) are skipped, so no boundary is reported inside them.
    """
    return njd_cuts(text)[0]


def njd_cuts(text: str) -> tuple:
    """``(cuts, starts, total)``: the NJD words of ``text`` and their morae.

    ``cuts``: :func:`word_boundaries`' ``(offset, accent_phrase)`` pairs; ``starts``:
    ``(offset, morae before it)`` of every word found in the text; ``total``: the morae
    (NJD ``mora_size``) of every word.
    """
    norm = ''.join(c if len(unicodedata.normalize('NFKC', c)) != 1
                   else unicodedata.normalize('NFKC', c) for c in text)
    pos, prev_num, prev_prefix, cuts, starts, morae = 0, False, False, [], [], 0
    for feat in openjtalk_guard.run_frontend(text):
        word = unicodedata.normalize('NFKC', feat['string'])
        start = norm.find(word, pos, pos + len(word) + 4) if word else -1
        size = int(feat.get('mora_size') or 0)
        if start < 0:
            prev_num = False
            morae += size
            continue
        starts.append((start, morae))
        is_num = feat.get('pos_group1') == '数'
        bound = feat.get('pos_group1') == '接尾' or prev_prefix  # a counter after a number
        if 0 < start < len(text) and not (is_num and prev_num) and feat['pos'] != '記号' \
                and not bound:
            cuts.append((start, feat.get('chain_flag') != 1))
        pos, prev_num, prev_prefix = start + len(word), is_num, feat['pos'] == '接頭詞'
        morae += size
    return cuts, starts, morae
