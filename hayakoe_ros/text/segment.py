# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Segmenting of prepared text (no ROS imports; the input checks are :mod:`.checks`).

Segmenting is what keeps time to first audio short whatever the length of the text: the
text is cut at sentence ends, and any sentence longer than ``max_segment_chars`` is cut
again at clause boundaries (、, commas, semicolons, quotes), and a clause still too long at
the word or accent-phrase boundary nearest below the bound (Open JTalk's front end), so no
single synthesis call blocks for long. Cuts never fall inside a number, a word or a
front-end reading (see :mod:`.frontend`'s no-cut marks). hayakoe's own splitter cuts only
at 。！？!? and newlines.

With a :class:`SegmentRamp` whose ``first_morae`` is set, an utterance's first
segment ends at the first clause boundary after half that many morae or accent-phrase
boundary after that many (:func:`first_cut`), and each later segment may be at most as
long as all the segments before it together (a doubling ramp), up to
``max_segment_chars``: a segment is then synthesised while the audio before it plays, for
an engine at least twice as fast as real time.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Optional

from ..engines import openjtalk_guard
from .checks import (MAX_UNSPEAKABLE_RUN, SPEAKABLE_RE, InputError, prepare_text,  # noqa: F401
                     strip_control)  # re-exported: the speech layer and the tests import them here
from .frontend import KEEP_CLOSE, KEEP_OPEN, strip_marks
from .words import njd_cuts, word_boundaries
from .wordtypes import SsmlMark, Word  # noqa: F401  (re-exported: part of Segment)

# A sentence ends after a run of terminators (and closing brackets right after them), or
# at a newline. ASCII '.' ends a sentence only before whitespace or the end of the text.
_SENTENCE_END_RE = re.compile(
    r'(?:[。．！？!?]+|\.(?=\s|$))[」』）)\]"\'”’]*|\n+')
# Clause boundaries: after 、，；;： and closing quotes, before opening quotes; after ','
# and ':' unless a digit follows (1,234 / 10:30) or '//' does (a URL's scheme).
_CLAUSE_CUT_RE = re.compile(r'(?<=[、，；;：」』）)”])|(?<=,)(?!\d)|(?<=:)(?!\d|//)'
                            r'|(?=[「『（(“])')


class Boundary(str, enum.Enum):
    """What ends a :class:`Segment` (a str-Enum: ``Boundary.SENTENCE == 'sentence'``)."""

    SENTENCE = 'sentence'  # a sentence end (。！？ . newline)
    CLAUSE = 'clause'      # a clause mark (、, quotes) inside a long sentence
    WORD = 'word'          # a word / accent-phrase boundary inside a long clause
    BREAK = 'break'        # an SSML <break>: the pause is Segment.break_s exactly
    END = 'end'            # the last segment of the utterance


@dataclasses.dataclass(frozen=True)
class Segment:
    """One unit of synthesis.

    Attributes:
        text: The segment's text, its final punctuation included (what the engine gets).
        boundary: What ends it (:class:`Boundary`).
        break_s: Silence (s) to put after it instead of the engine's predicted pause,
            from an SSML ``<break>``; None = predicted. The scheduler makes the silence
            between this segment's last sample of speech and the next segment exactly
            this long.
        rate: Speaking-rate multiplier from SSML ``<prosody rate>`` (1.0 = the voice's
            own rate); the scheduler divides ``VoiceParams.length_scale`` by it.
        words: The :class:`Word` objects it speaks, in order (offsets into the caller's
            text; :func:`~.pipeline.prepare` fills them).
        sentence: ``(start, end)`` of its sentence in the caller's text on the first
            segment of each sentence; None on the others.
        marks: The SSML :class:`SsmlMark` objects that fall in it.
    """

    text: str
    boundary: Boundary
    break_s: Optional[float] = None
    rate: float = 1.0
    words: tuple = ()
    sentence: Optional[tuple] = None
    marks: tuple = ()


#: The node's default ``first_segment_morae``: chosen from measurements on the
#: full-size model (bench/first_segment.py; BENCHMARKS.md "Short first segment").
FIRST_SEGMENT_MORAE = 8


class SegmentRamp:
    """The length bound of each next segment of one utterance.

    Args:
        max_chars: ``max_segment_chars``: the bound once the ramp has grown (>= 1).
        first_morae: 0 = no ramp (every segment up to ``max_chars``, as before). Else the
            first segment ends at the first clause boundary after half this many morae or
            accent-phrase boundary after this many (:func:`first_cut`), and each next
            segment may hold at most as many characters as all the segments before it
            (never fewer than ``first_morae``), up to ``max_chars``; the last piece of a
            sentence may exceed that bound by half (:meth:`slack`) rather than leave a
            fragment such as ``します。``.

    Attributes:
        spoken: Characters (no-cut marks not counted) of the segments cut so far.
    """

    def __init__(self, max_chars: int, first_morae: int = 0) -> None:
        self.max_chars = int(max_chars)
        self.first_morae = int(first_morae)
        self.spoken = 0

    def bound(self) -> int:
        """Longest next segment, in characters."""
        if not self.first_morae or not self.spoken:
            return self.max_chars
        return min(self.max_chars, max(self.spoken, self.first_morae))

    def slack(self) -> int:
        """Characters the last piece of a sentence may exceed :meth:`bound` by (0: no ramp)."""
        return min(self.bound(), self.max_chars - self.bound()) // 2 if self.first_morae \
            else 0

    def add(self, text: str) -> None:
        """Count a segment that was cut (its text, marks allowed)."""
        self.spoken += _len(text)


def split_sentences(text: str) -> list:
    """Split at sentence ends; fragments with nothing speakable join their neighbour.

    Returns:
        Sentences (str), each with its terminating punctuation, whitespace-stripped.
    """
    pieces, start = [], 0
    for m in _SENTENCE_END_RE.finditer(text):
        pieces.append(text[start:m.end()])
        start = m.end()
    pieces.append(text[start:])
    return _merge_unspeakable([p.strip() for p in pieces if p.strip()])


def _merge_unspeakable(pieces: list) -> list:
    out: list = []
    pending = ''
    for piece in pieces:
        if not SPEAKABLE_RE.search(piece):
            if out:
                out[-1] += piece
            else:
                pending += piece
        else:
            out.append(pending + piece)
            pending = ''
    if pending:
        if out:
            out[-1] += pending
        else:
            out.append(pending)
    return out


def _split_long(sentence: str, ramp: SegmentRamp) -> list:
    """Cut one sentence into (text, boundary) pieces of at most ``ramp.bound()`` characters.

    Clause pieces are packed greedily (adjacent short clauses stay together, which keeps
    their prosody); a clause still too long is cut at word boundaries (:func:`_cut_words`).
    ``sentence`` may hold the front end's no-cut marks; lengths do not count them. Every
    piece but the last is counted in ``ramp``.
    """
    clauses = _merge_unspeakable([c for c in _CLAUSE_CUT_RE.split(sentence) if c])
    out: list = []
    current = ''

    def close(boundary: Boundary = Boundary.CLAUSE) -> None:
        nonlocal current
        out.append((current, boundary))
        ramp.add(current)
        current = ''

    for clause in clauses:
        if current and _len(current) + _len(clause) > ramp.bound():
            close()
        if _len(clause) > ramp.bound():
            if current:
                close()
            pieces = _cut_words(clause, ramp)
            out.extend((piece, Boundary.WORD) for piece in pieces[:-1])
            clause = pieces[-1]
        current += clause
    if current:
        out.append((current, Boundary.CLAUSE))
    # Cuts can strand punctuation: let it join the piece before.
    merged: list = []
    for text, boundary in out:
        if merged and not SPEAKABLE_RE.search(text):
            merged[-1] = (merged[-1][0] + text, boundary)
        else:
            merged.append((text, boundary))
    return merged


def _len(text: str) -> int:
    return len(text) - text.count(KEEP_OPEN) - text.count(KEEP_CLOSE)


def _unmark(text: str) -> tuple:
    """Text without no-cut marks, and the (start, end) spans the marks enclosed."""
    out: list = []
    spans: list = []
    start: Optional[int] = None
    for ch in text:
        if ch == KEEP_OPEN:
            start = len(out)
        elif ch == KEEP_CLOSE:
            if start is not None:
                spans.append((start, len(out)))
            start = None
        else:
            out.append(ch)
    return ''.join(out), spans


def first_cut(sentence: str, min_morae: int, max_chars: Optional[int] = None
              ) -> Optional[tuple]:
    """Where an utterance's first segment ends in its first sentence.

    The first clause boundary (after 、，；: and closing quotes, before opening quotes) with
    at least half of ``min_morae`` morae (Open JTalk's NJD ``mora_size``) before it, or
    accent-phrase boundary (:func:`word_boundaries`) with at least ``min_morae``, whichever
    comes first, outside any no-cut span: a clause mark a little early is preferred to a
    word cut, because its pause is predicted and its prosody is the sentence's own. Only
    when the rest of the sentence holds at least as many morae (the cut at least halves
    the first synthesis) and something speakable.

    Args:
        sentence: One sentence, which may hold the front end's no-cut marks.
        min_morae: Morae the first segment must hold (>= 1).
        max_chars: No cut after this many characters (None: anywhere); a sentence whose
            first candidate lies further in is segmented as any other.

    Returns:
        ``(offset, clause)``: the offset in ``sentence`` (marks included) to cut at and
        whether it is a clause boundary; None: no cut.
    """
    text, spans = _unmark(sentence)
    cuts, starts, total = njd_cuts(text)
    clause_cuts = {m.start() for m in _CLAUSE_CUT_RE.finditer(text)} - {0, len(text)}
    for cut in sorted({c for c, accent in cuts if accent} | clause_cuts):
        if max_chars is not None and cut > max_chars:
            return None
        if any(a < cut < b for a, b in spans):
            continue
        before = next((m for start, m in starts if start >= cut), total)
        if before < (min_morae + 1) // 2 or (before < min_morae and cut not in clause_cuts):
            continue
        if total - before < before or not SPEAKABLE_RE.search(text[cut:]):
            return None
        return _marked_offset(sentence, cut), cut in clause_cuts
    return None


def _marked_offset(marked: str, offset: int) -> int:
    """Index in ``marked`` after ``offset`` unmarked characters (and any closing mark)."""
    count, i = 0, 0
    while i < len(marked) and (count < offset or marked[i] == KEEP_CLOSE):
        if marked[i] not in (KEEP_OPEN, KEEP_CLOSE):
            count += 1
        i += 1
    return i


#: Characters a word or front-end reading may span in one segment even when that exceeds
#: ``max_segment_chars`` (a phone number's or a host name's reading: under 60).
MAX_WHOLE_CHARS = 80


def whole_limit(max_segment_chars: int) -> int:
    """Longest word or reading kept in one segment: ``max(max_segment_chars, 80)``, <= 100.

    At most :data:`~hayakoe_ros.engines.openjtalk_guard.MAX_KANA_RUN`. Anything longer (a
    "word" of hundreds of letters or of kana with nothing to cut at) is cut, so one engine
    call never grows with the input, and never holds a run of kana that Open JTalk would
    take as one word too long for it.
    """
    return min(max(int(max_segment_chars), MAX_WHOLE_CHARS), openjtalk_guard.MAX_KANA_RUN)


def _cut_words(clause: str, ramp: SegmentRamp) -> list:
    """Cut a clause longer than ``ramp.bound()`` at word or accent-phrase boundaries.

    Each cut goes at the accent-phrase boundary nearest below the bound when that leaves
    at least half the bound, else at the word boundary nearest below it; a word (or a
    front-end reading) longer than the bound stays whole up to :func:`whole_limit`
    characters. Longer than that, so that no engine call grows with the input: a reading
    (a digit string read digit by digit) is cut at its word boundaries, and a run with
    none (a long unknown "word") every :func:`whole_limit` characters. Every piece but
    the last is counted in ``ramp``. Returns the pieces, unmarked.
    """
    text, spans = _unmark(clause)
    hard = whole_limit(ramp.max_chars)
    spans = [(a, b) for a, b in spans if b - a <= hard]
    cuts = [(c, strong) for c, strong in word_boundaries(text)
            if not any(a < c < b for a, b in spans)]
    pieces, start = [], 0
    while len(text) - start > ramp.bound() + ramp.slack():
        max_chars = ramp.bound()
        limit = start + max_chars
        below = [(c, strong) for c, strong in cuts if start < c <= limit]
        strong = [c for c, s in below if s and c - start >= max_chars // 2]
        if strong:
            cut = strong[-1]
        elif below:
            cut = below[-1][0]
        else:
            above = [c for c, s in cuts if c > limit and s]  # no particle left alone
            if above and above[0] - start <= hard:
                cut = above[0]
            elif len(text) - start > hard:
                cut = start + hard
                if any(a < cut < b for a, b in spans):
                    cut = next(b for a, b in spans if a < cut < b)
            else:
                break
        pieces.append(text[start:cut])
        ramp.add(pieces[-1])
        start = cut
    pieces.append(text[start:])
    return pieces


def segment(text: str, max_segment_chars: int, ramp: Optional[SegmentRamp] = None) -> list:
    """Cut prepared text into :class:`Segment` objects for streaming synthesis.

    Args:
        text: Output of :func:`prepare_text`.
        max_segment_chars: Longest segment, in characters (>= 1). Sentences up to this
            length stay whole (unless ``ramp`` bounds them lower).
        ramp: The utterance's :class:`SegmentRamp` (shared by the calls for the pieces of
            one utterance); None = no ramp, every segment up to ``max_segment_chars``.

    Returns:
        At least one segment when ``text`` has something speakable; the last one has
        boundary :attr:`Boundary.END`. ``text`` may carry the front end's no-cut marks;
        segment texts do not.
    """
    if max_segment_chars < 1:
        raise ValueError('max_segment_chars must be >= 1')
    ramp = ramp or SegmentRamp(max_segment_chars)
    segments: list = []
    for sentence in split_sentences(text):
        if ramp.first_morae and not ramp.spoken:
            found = first_cut(sentence, ramp.first_morae, whole_limit(ramp.max_chars))
            if found is not None:
                cut, clause = found
                head, sentence = sentence[:cut], sentence[cut:]
                segments.append(Segment(strip_marks(head).strip(),
                                        Boundary.CLAUSE if clause else Boundary.WORD))
                ramp.add(head)
        if _len(sentence) <= ramp.bound() + ramp.slack():
            segments.append(Segment(strip_marks(sentence), Boundary.SENTENCE))
            ramp.add(sentence)
            continue
        pieces = _split_long(sentence, ramp)
        ramp.add(pieces[-1][0])
        for i, (piece, boundary) in enumerate(pieces):
            last = i == len(pieces) - 1
            segments.append(Segment(strip_marks(piece).strip(),
                                    Boundary.SENTENCE if last else boundary))
    segments = [s for s in segments if s.text]
    if segments:
        segments[-1] = dataclasses.replace(segments[-1], boundary=Boundary.END)
    return segments
