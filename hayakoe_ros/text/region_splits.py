# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""How :func:`.offsets.align` cuts one rewritten region into words (no ROS imports).

The aligner pairs a stretch of the caller's text with the front end's rewrite of it as a
whole (a reading, or several side by side). Each function here cuts such a pair into
parts, each part ``((start, end) in the output text, (start, end) in the caller's text)``,
where the words are plain: a range mark read から (``9時〜17時``), readings written side by
side (``12/6(土) 10:00``), English words read as one run (``how are you``).
"""

from __future__ import annotations

import re
from typing import Optional

from . import english, frontend

#: Stands for one kept reading in the aligned output; never in a source.
REGION = '\ue002'


def split(src: str, seq: str, text: str, tokens: list, spans: list) -> list:
    """``src`` (the caller's characters, ``spans`` theirs) rewritten as ``tokens``, in parts.

    Args:
        src: The source characters of the region.
        seq: The aligned output of the region (:data:`REGION` per kept reading).
        text: The whole output text (marks removed) that ``tokens`` index.
        tokens: ``(start, end)`` in ``text`` per character of ``seq``.
        spans: ``(start, end)`` in the caller's text per character of ``src``.

    Returns:
        ``[((start, end) in text, (start, end) in the caller's text), ...]`` in order:
        one part (the whole region) unless one of the cuts below applies.
    """
    return (_split_range(src, text, tokens, spans) or _split_kept(src, seq, text, tokens, spans)
            or _split_english(src, text, tokens, (spans[0][0], spans[-1][1]), spans))


#: Range marks the front end reads から (9時〜17時: 九時から十七時).
_RANGE_MARKS = frozenset('〜~～')
_FROM = 'から'


def _split_range(src: str, text: str, tokens: list, spans: list) -> Optional[list]:
    """A rewritten region that starts with a range mark read から, as its two parts.

    ``9時〜17時`` reads 九時から十七時: 時 pairs with 時, and ``〜17`` / から十七 is left
    as one region, which made ``〜17時`` one word. Split, 〜 stands for から and the rest
    for the rest, as in ``9時から17時``. None where the region does not start so (``3〜5個``,
    read 三個から五個, stays one region: one word with its shared counter).
    """
    if len(src) < 2 or src[0] not in _RANGE_MARKS or \
            not text.startswith(_FROM, tokens[0][0]):
        return None
    end = tokens[0][0] + len(_FROM)
    n = next((i for i, (_, b) in enumerate(tokens) if b >= end), len(tokens))
    if n + 1 >= len(tokens) or tokens[n][1] != end:
        return None  # から ends inside a reading, or nothing follows it
    return [((tokens[0][0], end), spans[0])] + _split_english(
        src[1:], text, tokens[n + 1:], (spans[1][0], spans[-1][1]), spans[1:])


#: A source's parts: between blanks, a bracketed group and a range mark each a part of
#: their own (12/6(土) 10:00: 12/6, (土), 10:00; (火)〜5: (火), 〜, 5); or, wide, with a
#: range mark inside its part (10:00〜12:00, read as one reading).
_PART_RE = re.compile(r'[(（][^()（）\s]*[)）]|[〜~～]|[^\s(（)）〜~～]+')
_WIDE_PART_RE = re.compile(r'[(（][^()（）\s]*[)）]|[^\s(（)）]+')
_BRACKETED_RE = re.compile(r'[(（][^()（）\s]*[)）]')


def _split_kept(src: str, seq: str, text: str, tokens: list,
                spans: list) -> Optional[list]:
    """A rewrite holding kept readings as one part per reading, or None.

    ``12/6(土) 10:00`` reads as three readings (十二月六日, 土曜日, 十時) and was one word.
    The rewrite's groups (each kept reading, each run of other characters; then, if that
    does not pair, each run but から joined to the reading before it: 五 + 日 of ``5日``)
    pair in order with the source's parts (:data:`_PART_RE`, then :data:`_WIDE_PART_RE`)
    when they are as many (other characters only beside a bracketed part: ``(火)〜5``);
    else bracketed parts at the end pair with the last groups first
    (``1/15(月)〜1/20(土)``: one reading of the range, then 土曜日) and the rest with the
    one left. None when they do not pair so, or the rewrite holds no kept reading.
    """
    if REGION not in seq or (seq.strip(REGION) and not _BRACKETED_RE.search(src)):
        return None  # から of 2〜3人 stays with its numbers: one word, the counter shared
    groups: list = []   # [start, end, is a reading]
    for n, (a, b) in enumerate(tokens):
        if seq[n] != REGION and groups and not groups[-1][2]:
            groups[-1][1] = b
        else:
            groups.append([a, b, seq[n] == REGION])
    joined: list = []
    for a, b, reading in groups:
        if not reading and joined and joined[-1][2] and text[a:b] != _FROM:
            joined[-1] = [joined[-1][0], b, False]  # a counter after its number: 5日
        else:
            joined.append([a, b, reading])
    for these in (groups, joined):
        for pattern in (_PART_RE, _WIDE_PART_RE):
            parts = _paired(src, [m.span() for m in pattern.finditer(src)], len(these))
            if parts is not None:
                return [((g[0], g[1]), (spans[a][0], spans[b - 1][1]))
                        for g, (a, b) in zip(these, parts)]
    return None


def _paired(src: str, parts: list, n: int) -> Optional[list]:
    """``parts`` made ``n`` (bracketed ones at the end first, the rest as one), or None."""
    tail: list = []
    while len(parts) > n > 1 and src[parts[-1][0]] in '(（':
        tail.insert(0, parts.pop())
        n -= 1
    if len(parts) > n == 1:
        parts = [(parts[0][0], parts[-1][1])]
    if n < 2 and not tail or len(parts) != n:
        return None
    return parts + tail


def _split_english(src: str, text: str, tokens: list, whole: tuple, spans: list) -> list:
    """A rewritten region as ``((start, end) in text, source span)`` parts.

    One part (the whole region) unless the region is a run of English words whose
    readings the front end concatenated (``how are you`` -> ハウアーユー): then one part per
    word, so that each English word is a word of its own.
    """
    a, b = tokens[0][0], tokens[-1][1]
    run = frontend.straight_apostrophes(src.strip())  # as the front end read it
    if ' ' not in run or not frontend.english_run_match(run):
        return [((a, b), whole)]
    lead = len(src) - len(src.lstrip())
    readings = english.run_words(run)
    words = [(m.start() + lead, m.end() + lead) for m in
             re.finditer(r'\S+', english.join_thank_you(run))]
    if ''.join(readings) != text[a:b] or len(words) != len(readings):
        return [((a, b), whole)]
    parts = []
    for (ws, we), reading in zip(words, readings):
        parts.append(((a, a + len(reading)), (spans[ws][0], spans[we - 1][1])))
        a += len(reading)
    return parts
