# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A reply that arrives in fragments (an LLM's tokens), cut into pieces to speak (no ROS).

:class:`StreamAssembler` keeps the text of one streamed reply and hands out each piece as
soon as its end has arrived, never waiting for the rest of the reply:

* a **sentence** ends at 。．！？!? (with the closing brackets after them, as far as they
  have arrived) or a newline; an ASCII ``.`` only once the next character is known to be
  whitespace (``3.`` may go on as ``3.14``), a ``．`` after a digit only once the next is
  known not to be one (``3．5``); an ASCII ``?`` or ``!`` right after an
  ASCII letter, digit or ``/`` only once the next character is known not to go on with
  a URL (``example.com/a?`` may go on as ``example.com/a?b=1``, one word);
* a **clause** mark (、；, a ``,`` or ``，`` once the next character is known not to be a
  digit) ends a piece once the
  piece holds at least :data:`CLAUSE_CHARS` speakable characters, so that a long sentence
  starts to be spoken before its end has been typed;
* a piece with no mark at all that grows past ``max_chars`` is cut at the last word
  boundary (Open JTalk's) at least :data:`WORD_MARGIN` characters before the end of
  what has arrived: the word at the end may still be incomplete (a run with no word
  boundary at all is cut once it is four times that long); never inside a URL, whose
  path the front end leaves unsaid, nor inside a run of letters and digits joined by
  the marks of numbers, times, dates, ranges and phone numbers (``090-1234-5678``,
  ``10:30〜11:00``), which the front end reads as one word.

A cut never falls inside a word: a word split across fragments ("こん", "にちは") stays
whole, because the cut points are marks that end words. Offsets of each piece into the
whole reply's text are kept, so the words' offsets (speech marks, what was heard) refer
to the reply as the fragments concatenated.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from typing import Callable, Iterator, Optional, Sequence

from .checks import SPEAKABLE_RE
from .words import word_boundaries

#: Speakable characters a piece needs before a clause mark ends it: about one accent
#: phrase pair, so the first piece is short (first audio soon) but not a lone word.
CLAUSE_CHARS = 12

#: How far before the end of the text received a forced word cut must be (characters):
#: the last word may still be arriving.
WORD_MARGIN = 8

# Sentence ends that are final as soon as they arrive; closing brackets and further
# terminators after them are taken when they are already there.
_SENTENCE_RE = re.compile(r'[。．！？!?]+[」』）)\]"\'”’]*|\n+')
_DOT_RE = re.compile(r'\.(?=\s)')
# An ASCII ? or ! after these may be inside a URL or a name; what may follow it there.
_URL_BEFORE = re.compile(r'[A-Za-z0-9/]')
_URL_AFTER = re.compile(r'[A-Za-z0-9/=&%#_.~+\-]')
# A comma (ASCII or full-width) ends a clause only before a non-digit: 1,234 and 1，234.
_CLAUSE_RE = re.compile(r'[、；;]|[,，](?=[^\d])')
# Runs that a word cut must not split: a URL (the front end reads its domain only), and
# letters and digits joined by the marks inside numbers, times, dates, ranges and phone
# numbers (half- and full-width), which the front end reads as one word (090-1234-5678,
# 10:30〜11:00, 2024/1/15, 1,234.5) while Open JTalk's word boundaries fall inside them
# (09|0-1234-5678 was read ゼロキュー | ゼロカラセンニヒャク...; H|ave エイチ | エーブ).
_URL_RE = re.compile(r'(?:[A-Za-z][A-Za-z0-9+.-]*://|www\.)[A-Za-z0-9\-._~:/?#@!$&*+,;=%]*')
_ALNUM = '0-9A-Za-z\uff10-\uff19\uff21-\uff3a\uff41-\uff5a'
_JOIN = "-:/.,'〜~\uff5e\u2010-\u2015\uff0d\uff1a\uff0f\uff0e\uff0c"
_TOKEN_RE = re.compile(f'[{_ALNUM}]+(?:[{_JOIN}][{_ALNUM}]+)*')


class StreamAssembler:
    """The text of one streamed reply and the pieces of it ready to be spoken.

    Args:
        max_chars: Longest piece with no sentence or clause mark before a word cut is
            forced (characters; the node's ``max_segment_chars``).

    Attributes:
        text: Everything received so far (the reply's text, for offsets).
        spoken: Offset up to which pieces have been handed out.
    """

    def __init__(self, max_chars: int = 60) -> None:
        self.max_chars = max(2 * WORD_MARGIN, int(max_chars))
        self.text = ''
        self.spoken = 0
        self._clean: dict = {}  # per kind of cut: no hit before this offset

    @property
    def pending(self) -> str:
        """The text received and not yet handed out."""
        return self.text[self.spoken:]

    def add(self, fragment: str) -> list:
        """Append ``fragment``; return the pieces now complete, as ``(start, text)``.

        ``start`` is the piece's offset into :attr:`text`. Pieces may hold nothing
        speakable (punctuation only); the caller skips those.
        """
        return list(self.feed(fragment))

    def feed(self, fragment: str) -> Iterator[tuple]:
        """Append ``fragment``; yield each piece now complete, as :meth:`add` returns them.

        Each piece is cut as it is asked for: the first piece of one message holding a
        whole reply is spoken while the rest is still to be cut (a goal sent a
        millisecond after a 54,000-character message was spoken before it, 10 runs of
        11). A piece not asked for stays pending.
        """
        self.text += fragment
        while True:
            cut = self._cut()
            if cut is None:
                return
            piece = (self.spoken, self.text[self.spoken:cut])
            self.spoken = cut
            yield piece

    def flush(self) -> Optional[tuple]:
        """Hand out the rest as the last piece ``(start, text)``; None when nothing is left."""
        if self.spoken >= len(self.text):
            return None
        piece = (self.spoken, self.text[self.spoken:])
        self.spoken = len(self.text)
        return piece

    def _cut(self) -> Optional[int]:
        """Offset into :attr:`text` where the next complete piece ends, or None.

        The earliest of the first final sentence end, the first ``.`` before a blank and
        the first clause mark with :data:`CLAUSE_CHARS` speakable characters before it.
        Each search stops at its first hit, no later than an earlier kind's, and starts
        where an earlier search of its kind found nothing (the text only grows): one
        message holding a whole reply was searched whole for every piece cut from it,
        and the clause count re-read the piece for every mark (54,000 characters took
        12.5 s, and a reply sent after it was spoken first).
        """
        text, base = self.text, self.spoken
        best = self._first('sentence', _SENTENCE_RE, lambda m: _final(text, base, m))
        best = self._first('dot', _DOT_RE, lambda m: True, best) or best

        def enough(m: re.Match) -> bool:
            found = SPEAKABLE_RE.finditer(text, base, m.start())
            return sum(1 for _ in itertools.islice(found, CLAUSE_CHARS)) >= CLAUSE_CHARS

        best = self._first('clause', _CLAUSE_RE, enough, best) or best
        if best is not None:
            return best
        pending = self.pending
        if len(pending) <= self.max_chars:
            return None
        inside = [(m.start(), m.end()) for pattern in (_URL_RE, _TOKEN_RE)
                  for m in pattern.finditer(pending)]
        usable = [offset for offset, _ in word_boundaries(pending)
                  if offset <= len(pending) - WORD_MARGIN
                  and not any(a < offset < b for a, b in inside)]
        if usable:
            return base + usable[-1]
        if len(pending) > 4 * self.max_chars:
            # No word boundary in four segments' worth: no word is that long (a run of
            # one letter); cut it where the front end would cut such a run anyway.
            return base + len(pending) - WORD_MARGIN
        return None

    def _first(self, kind: str, pattern: re.Pattern, accept: Callable[[re.Match], bool],
               before: Optional[int] = None) -> Optional[int]:
        """End of the first match of ``pattern`` after :attr:`spoken` that ``accept`` takes.

        Only matches ending before ``before`` count (None: any). A search that reached the
        end of the text finding nothing is not repeated there: only its last character
        can still become a hit (every kind looks one character ahead at most), and a
        clause mark too short for one piece is too short for any later one.
        """
        text = self.text
        start = max(self.spoken, self._clean.get(kind, 0))
        end = len(text) if before is None else before
        for m in pattern.finditer(text, start, end):
            if accept(m):
                return m.end()
        if before is None:
            self._clean[kind] = max(start, len(text) - 1)
        return None


def _final(text: str, base: int, match: re.Match) -> bool:
    """Whether a sentence end found in ``text[base:]`` ends a sentence (not a URL's ``?``).

    What lies before ``base`` (pieces already handed out) is not looked at.
    """
    at = match.start()
    if text[at] == '．' and at > base and text[at - 1].isdigit():
        # A full-width point after a digit may be a decimal point (3．5度).
        return at + 1 < len(text) and not text[at + 1].isdigit()
    if text[at] not in '?!' or at == base or not _URL_BEFORE.match(text[at - 1]):
        return True
    after = match.start() + 1
    if after >= len(text):
        return False  # what comes next decides
    return not _URL_AFTER.match(text[after])


def shift_segments(segments: Sequence, offset: int, starts_sentence: bool = True) -> list:
    """A piece's segments with their offsets moved ``offset`` characters on.

    :func:`~.pipeline.prepare` gives a piece's word, sentence and SSML-mark offsets into
    the piece; a streamed reply's are into the whole reply.

    Args:
        segments: The piece's :class:`~.segment.Segment` objects.
        offset: Where the piece starts in the reply (characters).
        starts_sentence: False when the piece goes on with a sentence an earlier piece
            began (it followed a clause mark): its first segment starts none.
    """
    out = []
    for i, seg in enumerate(segments):
        sentence = None
        if seg.sentence is not None and (i or starts_sentence):
            sentence = (seg.sentence[0] + offset, seg.sentence[1] + offset)
        out.append(dataclasses.replace(
            seg, sentence=sentence,
            words=tuple(dataclasses.replace(w, start=w.start + offset, end=w.end + offset)
                        for w in seg.words),
            marks=tuple(dataclasses.replace(m, start=m.start + offset, end=m.end + offset)
                        for m in seg.marks)))
    return out
