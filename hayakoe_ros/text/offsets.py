# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Where each character the front end outputs came from in the caller's text (no ROS imports).

The front end (control-character removal, NFKC, the correction table, the readings) is a
chain of rewrites that keeps no offsets. Rather than thread an offset map through every
one of them, the caller's text is *aligned* with the front end's output afterwards: the
front end mostly copies characters, and wraps every reading it makes in no-cut marks.

* :func:`plain_source` / :func:`.ssml_offsets.ssml_source`: the caller's text as a
  *source*: a string of the characters the front end saw (each compatibility-normalised on
  its own, as the front end does to the whole text), with, for each, the ``(start, end)``
  span of the caller's characters it stands for. SSML: only the spoken text, entities
  decoded (``&amp;`` spans its five characters), a ``<sub>``'s alias standing for the
  element's content, a ``<say-as>``'s content for itself; and the ``<mark>`` tags found.
* :func:`align`: :class:`difflib.SequenceMatcher` (sentence by sentence) between the source
  and the output, with each reading between no-cut marks collapsed into one character that
  matches nothing, so a reading always maps to the whole source region it replaced and is
  never split. Each output character (marks removed) gets a source span: its own
  character's for a copy, the whole replaced region's for a rewrite, an empty span where
  the front end inserted text. A rewritten region that holds several words (readings side
  by side, a range, English words) is cut by :mod:`.region_splits`.
"""

from __future__ import annotations

import collections
import difflib
import re
import unicodedata
from typing import Optional

from . import frontend, region_splits
from .checks import _ANSI_RE, SPEAKABLE_RE

_REGION = region_splits.REGION
#: Stands for a ``<say-as>``'s content in a source: matches nothing in the output.
OPAQUE = '\ue003'
_WEEKDAY_RE = re.compile(r'[(（][月火水木金土日](?:曜日?)?[)）]')
CONTROL = ('Cc', 'Cf', 'Cs', 'Co')
_NORM: dict = {}


def _norm(ch: str) -> str:
    """``ch`` as the front end's first steps leave it (control characters: nothing)."""
    out = _NORM.get(ch)
    if out is None:
        if ch == '\n':
            out = ch
        elif ch in '\t\r':
            out = ' ' if ch == '\t' else '\n'
        elif unicodedata.category(ch) in CONTROL:
            out = ''
        else:
            out = frontend.compat_normalize(ch)
            if _REGION in out or OPAQUE in out:
                out = ''
        if len(_NORM) < 65536:
            _NORM[ch] = out
    return out


def add(chars: list, spans: list, text: str, span: tuple) -> None:
    """Append ``text``'s characters, normalised as in :func:`plain_source`, at ``span``."""
    for ch in text:
        for c in _norm(ch):
            chars.append(c)
            spans.append(span)


def plain_source(text: str) -> tuple:
    """``(source, spans)`` for plain text: ``spans[i]`` is ``(start, end)`` in ``text``.

    Terminal escape sequences and control characters are left out (the front end drops
    them); every other character is compatibility-normalised on its own (``㍻`` gives two
    source characters, both spanning it).
    """
    chars: list = []
    spans: list = []
    pos = 0
    for m in list(_ANSI_RE.finditer(text)) + [None]:
        end = m.start() if m is not None else len(text)
        for i in range(pos, end):
            ch = text[i]
            out = _NORM.get(ch)
            if out is None:
                out = _norm(ch)
            if out == ch:  # the common case: one character for itself
                chars.append(ch)
                spans.append((i, i + 1))
            else:
                chars.extend(out)
                spans.extend([(i, i + 1)] * len(out))
        pos = m.end() if m is not None else end
    return ''.join(chars), spans


def _regions(out: str) -> tuple:
    """The output without no-cut marks, its tokens and the string to align.

    Tokens: ``(start, end)`` in the unmarked output, one per character outside readings and
    one per reading. In the string to align a reading, even of one character, is
    :data:`_REGION`, so it never matches a source character.
    """
    plain: list = []
    tokens: list = []
    seq: list = []
    start: Optional[int] = None
    for ch in out:
        if ch == frontend.KEEP_OPEN:
            if start is None:
                start = len(plain)
        elif ch == frontend.KEEP_CLOSE:
            if start is not None and len(plain) > start:
                tokens.append((start, len(plain)))
                seq.append(_REGION)
            start = None
        else:
            if start is None:
                tokens.append((len(plain), len(plain) + 1))
                seq.append(ch)
            plain.append(ch)
    if start is not None and len(plain) > start:
        tokens.append((start, len(plain)))
        seq.append(_REGION)
    return ''.join(plain), tokens, ''.join(seq)


def align(source: str, spans: list, out: str) -> tuple:
    """Map the front end's output to source spans.

    Args:
        source: :func:`plain_source`'s or :func:`.ssml_offsets.ssml_source`'s source.
        spans: Its spans (``len(spans) == len(source)``).
        out: The front end's output for it (any number of pieces concatenated), no-cut
            marks included.

    Returns:
        ``(text, char_spans)``: ``out`` without its marks, and for each of its characters
        the ``(start, end)`` span of the caller's text it stands for (empty where the front
        end inserted it). Spans never decrease: ``char_spans[i][0] <= char_spans[j][0]``
        for ``i < j``.
    """
    text, tokens, seq = _regions(out)
    char_spans: list = [(0, 0)] * len(text)
    # A weekday in brackets is read as a reading of its own (土曜日) or not at all: its
    # characters match nothing, else its 日 (日曜日) paired with a date's 日 nearby.
    masked = _WEEKDAY_RE.sub(lambda m: OPAQUE * len(m.group()), source)
    for op, j1, j2, k1, k2 in _no_lost_speech(_late_copies(_opcodes(masked, seq), seq),
                                              source):
        if op == 'equal':
            for j, k in zip(range(j1, j2), range(k1, k2)):
                a, b = tokens[k]
                for i in range(a, b):
                    char_spans[i] = spans[j]
        elif op in ('replace', 'insert') and k2 > k1:
            if j2 > j1:
                parts = region_splits.split(source[j1:j2], seq[k1:k2], text,
                                            tokens[k1:k2], spans[j1:j2])
            else:
                at = spans[j1 - 1][1] if j1 > 0 else (spans[0][0] if spans else 0)
                parts = [((tokens[k1][0], tokens[k2 - 1][1]), (at, at))]
            for (a, b), span in parts:
                for i in range(a, b):
                    char_spans[i] = span
    return text, char_spans


# Where the matcher may cut the two strings first: sentence ends (the front end copies
# them and inserts none, but the SSML 。 of a <p>/<s>, which the source has too, and the
# line breaks that cut long runs of kana); then, in a stretch too long to match whole,
# commas and blanks (copied too; the front end may drop a blank between Japanese words
# and puts 、 between the groups of a long digit string, and the matcher of the marks
# leaves such ones unpaired).
_ANCHORS = (frozenset('。！？!?\n'), frozenset('、，, '))
#: Work allowed to one matcher (its longest-match searches' characters times how often
#: each occurs on the other side; about 0.1 s on this project's 2-core VM). Prose needs a
#: few thousand; ``'1/' * 999`` (a short copy between readings over and over, no sentence
#: end: every match one character long) about 10**9, 30 s in ``prepare`` before a budget.
MATCH_BUDGET = 40_000
#: Characters per block when a stretch is aligned block by block in proportion.
FALLBACK_BLOCK = 64


class _OverBudget(Exception):
    pass


class _BoundedMatcher(difflib.SequenceMatcher):
    """:class:`difflib.SequenceMatcher` (no autojunk) that gives up past ``budget``.

    Raises:
        _OverBudget: from :meth:`get_opcodes` once its searches would pass ``budget``.
    """

    def __init__(self, a: str, b: str, budget: int, diagonal: bool = False) -> None:
        super().__init__(None, a, b, autojunk=False)
        count = collections.Counter(b)
        pairs = sum(count[ch] for ch in a)
        self._per_char = pairs / max(1, len(a))
        self._left = budget
        self._diagonal = diagonal

    def find_longest_match(self, alo=0, ahi=None, blo=0, bhi=None):
        ahi = len(self.a) if ahi is None else ahi
        self._left -= (ahi - alo) * self._per_char + 1
        if self._left < 0:
            raise _OverBudget
        bhi = len(self.b) if bhi is None else bhi
        best = super().find_longest_match(alo, ahi, blo, bhi)
        if best.size != 1 or not self._diagonal:
            return best
        # One character matched, which may occur several times: the pair nearest the
        # diagonal of the two ranges, not the first (see _stretch).
        width, height = ahi - alo, bhi - blo
        i, j = min(((i, j) for i in range(alo, ahi) for j in self.b2j.get(self.a[i], ())
                    if blo <= j < bhi),
                   key=lambda ij: abs((ij[0] - alo) * height - (ij[1] - blo) * width))
        return difflib.Match(i, j, 1)


def _opcodes(source: str, seq: str) -> list:
    """:meth:`difflib.SequenceMatcher.get_opcodes` of ``source`` and ``seq``, by stretch.

    The matcher's time grows faster than the length (every occurrence of a common
    character is tried), so the sentence ends of both sides are matched first and each
    stretch between two matched ends is aligned on its own; a stretch past
    :data:`MATCH_BUDGET` is cut at its commas and blanks the same way, and past it still
    into blocks in proportion (a word at a block's edge may then get a neighbour's span,
    still in order). So ``prepare`` of any 2,000 characters takes well under a second.
    """
    return _merged(_aligned(source, seq, 0, len(source), 0, len(seq), 0))


def _aligned(source: str, seq: str, j0: int, j1: int, k0: int, k1: int, level: int) -> list:
    """Opcodes of ``source[j0:j1]`` against ``seq[k0:k1]`` cut at ``_ANCHORS[level]``."""
    anchors = _ANCHORS[level]
    src_at = [i for i in range(j0, j1) if source[i] in anchors]
    seq_at = [k for k in range(k0, k1) if seq[k] in anchors]
    pairs: list = []
    src_marks = ''.join(source[i] for i in src_at)
    seq_marks = ''.join(seq[k] for k in seq_at)
    if src_marks == seq_marks:  # the usual case, and the matcher's slowest: one to one
        pairs = list(zip(src_at, seq_at))
    elif src_at and seq_at:
        try:
            ends = _BoundedMatcher(src_marks, seq_marks, MATCH_BUDGET)
            for a, b, size in ends.get_matching_blocks():
                pairs.extend((src_at[a + n], seq_at[b + n]) for n in range(size))
        except _OverBudget:
            return _blocks(source, seq, j0, j1, k0, k1)
    ops: list = []
    j, k = j0, k0
    for ja, ka in pairs + [(j1, k1)]:
        if ja > j or ka > k:
            ops.extend(_stretch(source, seq, j, ja, k, ka, level))
        if ja < j1:
            ops.append(('equal', ja, ja + 1, ka, ka + 1))
        j, k = ja + 1, ka + 1
    return ops


def _stretch(source: str, seq: str, j0: int, j1: int, k0: int, k1: int, level: int) -> list:
    """Opcodes of one stretch: matched whole, or cut finer past :data:`MATCH_BUDGET`.

    With readings in it, a lone character may match one that a reading replaced (日 of
    ツイタチ's 1日 and the 日 of a later 5日, ``1日(月)と2日(火)``), and the first match
    leaves the reading everything up to the later copy. Such a stretch (a lone match of a
    character the source has more of) is matched a second time taking, of several
    one-character matches, the one nearest the diagonal; the match that pairs more
    characters wins, then the one whose rewrites differ less in size (the first on a tie:
    ``8月5日(日曜日)``).
    """
    try:
        a, b = source[j0:j1], seq[k0:k1]
        ops = _BoundedMatcher(a, b, MATCH_BUDGET).get_opcodes()
        if _REGION in b and any(op == 'equal' and a2 - a1 == 1 and a.count(a[a1]) > 1
                                for op, a1, a2, _, _ in ops):
            other = _BoundedMatcher(a, b, MATCH_BUDGET, diagonal=True).get_opcodes()
            if _fit(other) > _fit(ops):
                ops = other
        return [(op, a1 + j0, a2 + j0, b1 + k0, b2 + k0) for op, a1, a2, b1, b2 in ops]
    except _OverBudget:
        if level + 1 < len(_ANCHORS):
            return _aligned(source, seq, j0, j1, k0, k1, level + 1)
        return _blocks(source, seq, j0, j1, k0, k1)


def _fit(ops: list) -> tuple:
    """How well opcodes pair two strings: characters matched, then -(sizes differing)."""
    return (sum(a2 - a1 for op, a1, a2, _, _ in ops if op == 'equal'),
            -sum(abs((a2 - a1) - (b2 - b1)) for op, a1, a2, b1, b2 in ops if op != 'equal'))


def _blocks(source: str, seq: str, j0: int, j1: int, k0: int, k1: int) -> list:
    """Opcodes of blocks of at most about :data:`FALLBACK_BLOCK` characters, in proportion."""
    count = max(1, -(-max(j1 - j0, k1 - k0) // FALLBACK_BLOCK))
    ops: list = []
    for n in range(count):
        a1, a2 = j0 + (j1 - j0) * n // count, j0 + (j1 - j0) * (n + 1) // count
        b1, b2 = k0 + (k1 - k0) * n // count, k0 + (k1 - k0) * (n + 1) // count
        ops.extend(_shifted(difflib.SequenceMatcher(None, source[a1:a2], seq[b1:b2],
                                                    autojunk=False), a1, b1))
    return ops


def _shifted(matcher, j0: int, k0: int) -> list:
    """``matcher``'s opcodes with its two strings' offsets moved by ``j0`` and ``k0``."""
    return [(op, a1 + j0, a2 + j0, b1 + k0, b2 + k0)
            for op, a1, a2, b1, b2 in matcher.get_opcodes()]


def _merged(ops: list) -> list:
    """Adjacent opcodes of one kind as one (the stretches' seams)."""
    out: list = []
    for op in ops:
        if out and out[-1][0] == op[0] and out[-1][2] == op[1] and out[-1][4] == op[3]:
            prev = out.pop()
            op = (op[0], prev[1], op[2], prev[3], op[4])
        out.append(op)
    return out


def _no_lost_speech(ops: list, source: str) -> list:
    """Opcodes where no speakable source character is deleted outright.

    The front end drops no speakable character on its own (a reading replaces them), so a
    deletion of one is a bad match nearby (``1日(月)`` -> ツイタチ月曜日: 日 matched the 日 of
    月曜日): the deletion joins the opcode before it (of a longer copy, only its last
    character) into one rewrite, or the one after it at the start.
    """
    out: list = []
    for op in ops:
        if op[0] != 'delete' or not SPEAKABLE_RE.search(source[op[1]:op[2]]):
            out.append(op)
            continue
        _, j1, j2, _, _ = op
        if out:
            prev = out.pop()
            if prev[0] == 'equal' and prev[2] - prev[1] > 3:
                out.append(('equal', prev[1], prev[2] - 1, prev[3], prev[4] - 1))
                prev = ('replace', prev[2] - 1, prev[2], prev[4] - 1, prev[4])
            out.append(('replace', prev[1], j2, prev[3], prev[4]))
        else:
            out.append(op)
    # A deletion at the start joins the opcode after it.
    if len(out) > 1 and out[0][0] == 'delete' and SPEAKABLE_RE.search(
            source[out[0][1]:out[0][2]]):
        first, nxt = out[0], out[1]
        out[:2] = [('replace', first[1], nxt[2], nxt[3], nxt[4])]
    return out


def _late_copies(ops: list, seq: str) -> list:
    """Opcodes with a short copy that the front end repeated matched to its last copy.

    A range gives its counter to both numbers (``10~20分`` -> 十分から二十分): the matcher
    takes the first 分 for the source's, which leaves から二十分 inserted after it. A reading,
    then a copy of at most three characters, then an insertion ending with the same
    characters become one rewrite of the reading's source and the copy at the end.
    """
    out: list = []
    i = 0
    while i < len(ops):
        if (i + 2 < len(ops) and ops[i][0] in ('replace', 'insert')
                and ops[i + 1][0] == 'equal' and ops[i + 2][0] == 'insert'):
            _, ja, _, ka, _ = ops[i]
            _, j1, j2, k1, k2 = ops[i + 1]
            k3 = ops[i + 2][4]
            n = k2 - k1
            if n <= 3 and seq[k1:k2] == seq[k3 - n:k3]:
                out.append(('replace' if j1 > ja else 'insert', ja, j1, ka, k3 - n))
                out.append(('equal', j1, j2, k3 - n, k3))
                i += 3
                continue
        out.append(ops[i])
        i += 1
    return out
