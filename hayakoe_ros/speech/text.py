# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Input text checks and segmenting (no ROS imports).

Segmenting is what keeps time to first audio short whatever the length of the text: the
text is cut at sentence ends, and any sentence longer than ``max_segment_chars`` is cut
again at clause boundaries (、, commas, semicolons, quotes), so no single synthesis call
blocks for long. hayakoe's own splitter cuts only at 。！？!? and newlines.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata

#: Characters that produce morae: kana, kanji, Latin letters and digits (half and full
#: width). Same class as hayakoe's ``_HAS_SPEECH_RE``.
SPEAKABLE_RE = re.compile('[ぁ-ゖァ-ヶ一-鿿々〆〇a-zA-Z0-9０-９Ａ-Ｚａ-ｚｦ-ﾟ]')

# A sentence ends after a run of terminators (and closing brackets right after them), or
# at a newline. ASCII '.' ends a sentence only before whitespace or the end of the text.
_SENTENCE_END_RE = re.compile(
    r'(?:[。．！？!?]+|\.(?=\s|$))[」』）)\]"\'”’]*|\n+')
# Clause boundaries: after 、，,；;：: and closing quotes, before opening quotes.
_CLAUSE_CUT_RE = re.compile(r'(?<=[、，,；;：:」』）)”])|(?=[「『（(“])')


# ANSI/VT100 escape sequences: CSI (ESC [ ... final byte) and OSC (ESC ] ... BEL/ST).
# A lone ESC is dropped with the other control characters.
_ANSI_RE = re.compile(r'\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\))')
# Runs of characters the voice cannot read (punctuation, symbols, emoji) longer than this
# are cut to it: they add nothing to speech and would defeat max_segment_chars.
MAX_UNSPEAKABLE_RUN = 4
_SPEAKABLE_CLASS = 'ぁ-ゖァ-ヶ一-鿿々〆〇a-zA-Z0-9０-９Ａ-Ｚａ-ｚｦ-ﾟ'
_UNSPEAKABLE_RUN_RE = re.compile(
    r'[^%s\s]{%d,}' % (_SPEAKABLE_CLASS, MAX_UNSPEAKABLE_RUN + 1))


class InputError(ValueError):
    """Text that cannot be spoken. ``code`` is a stable machine-readable reason.

    Codes: ``empty``, ``nothing_speakable``, ``too_long``.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclasses.dataclass(frozen=True)
class Segment:
    """One unit of synthesis.

    Attributes:
        text: The segment's text, its final punctuation included.
        boundary: What ends it: ``"sentence"``, ``"clause"`` (cut at a clause mark),
            ``"split"`` (cut by length alone, no punctuation) or ``"end"`` (the last one).
    """

    text: str
    boundary: str


def strip_control(text: str) -> str:
    """Remove terminal escape sequences and control/format characters, keeping newlines.

    ANSI escape sequences (ESC ``[31m``) go whole; other Unicode Cc/Cf/Cs/Co characters
    are dropped; tabs and carriage returns become spaces/newlines; zero-width joiners and
    the like vanish. Returns the cleaned text (not stripped of spaces).
    """
    text = _ANSI_RE.sub('', text)
    text = text.replace('\r\n', '\n').replace('\r', '\n').replace('\t', ' ')
    return ''.join(ch for ch in text
                   if ch == '\n' or unicodedata.category(ch) not in ('Cc', 'Cf', 'Cs', 'Co'))


def prepare_text(text: str, max_chars: int) -> str:
    """Clean and check one utterance.

    Args:
        text: Raw text from a client.
        max_chars: Upper bound on the cleaned text's length, in characters.

    Returns:
        The text with control characters and escape sequences removed, runs of more than
        ``MAX_UNSPEAKABLE_RUN`` unreadable characters (punctuation, symbols, emoji) cut to
        that length, and outer whitespace stripped.

    Raises:
        InputError: ``empty`` (empty or whitespace only), ``too_long`` (over
            ``max_chars``), ``nothing_speakable`` (punctuation, emoji or symbols only).
    """
    cleaned = strip_control(text).strip()
    cleaned = _UNSPEAKABLE_RUN_RE.sub(lambda m: m.group(0)[:MAX_UNSPEAKABLE_RUN], cleaned)
    if not cleaned:
        raise InputError('empty', 'text is empty (or only whitespace/control characters)')
    if len(cleaned) > max_chars:
        raise InputError('too_long', f'text has {len(cleaned)} characters; the limit is '
                         f'max_chars={max_chars}')
    if not SPEAKABLE_RE.search(cleaned):
        raise InputError('nothing_speakable',
                         f'nothing speakable in {_preview(cleaned)}: it has no kana, kanji, '
                         'Latin letters or digits that the Japanese voice can read')
    return cleaned


def _preview(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + '...')


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


def _split_long(sentence: str, max_chars: int) -> list:
    """Cut one sentence into (text, boundary) pieces of at most ``max_chars`` characters.

    Clause pieces are packed greedily (adjacent short clauses stay together, which keeps
    their prosody); a clause still too long is cut by length.
    """
    clauses = _merge_unspeakable([c for c in _CLAUSE_CUT_RE.split(sentence) if c])
    out: list = []
    current = ''
    for clause in clauses:
        if current and len(current) + len(clause) > max_chars:
            out.append((current, 'clause'))
            current = ''
        while len(clause) > max_chars:
            head, clause = clause[:max_chars], clause[max_chars:]
            if current:
                out.append((current, 'clause'))
                current = ''
            out.append((head, 'split'))
        current += clause
    if current:
        out.append((current, 'clause'))
    # Cuts by length can strand punctuation: let it join the piece before.
    merged: list = []
    for text, boundary in out:
        if merged and not SPEAKABLE_RE.search(text):
            merged[-1] = (merged[-1][0] + text, boundary)
        else:
            merged.append((text, boundary))
    return merged


def segment(text: str, max_segment_chars: int) -> list:
    """Cut prepared text into :class:`Segment` objects for streaming synthesis.

    Args:
        text: Output of :func:`prepare_text`.
        max_segment_chars: Longest segment, in characters (>= 1). Sentences up to this
            length stay whole.

    Returns:
        At least one segment when ``text`` has something speakable; the last one has
        boundary ``"end"``.
    """
    if max_segment_chars < 1:
        raise ValueError('max_segment_chars must be >= 1')
    segments: list = []
    for sentence in split_sentences(text):
        if len(sentence) <= max_segment_chars:
            segments.append(Segment(sentence, 'sentence'))
            continue
        pieces = _split_long(sentence, max_segment_chars)
        for i, (piece, boundary) in enumerate(pieces):
            last = i == len(pieces) - 1
            segments.append(Segment(piece.strip(), 'sentence' if last else boundary))
    segments = [s for s in segments if s.text]
    if segments:
        segments[-1] = Segment(segments[-1].text, 'end')
    return segments
