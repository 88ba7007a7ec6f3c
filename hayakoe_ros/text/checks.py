# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Checks of a client's text before any reading is made of it (no ROS imports).

:func:`prepare_text` cleans one utterance (terminal escapes, control and format characters,
runs of unreadable symbols) and refuses what cannot be spoken with an :class:`InputError`
whose ``code`` names the reason; :data:`SPEAKABLE_RE` is the class of characters that give
morae, which the segmenter and the speech scheduler use too.
"""

from __future__ import annotations

import re
import unicodedata

#: Characters that produce morae: kana, kanji, Latin letters and digits (half and full
#: width): hayakoe's ``_HAS_SPEECH_RE`` class, and the rare kana and ligatures ゟ ヷ-ヺ ヿ 〼
#: that the front end rewrites into kana (:mod:`.chars`).
SPEAKABLE_RE = re.compile('[ぁ-ゖゟァ-ヺヿ一-鿿々〆〇〼a-zA-Z0-9０-９Ａ-Ｚａ-ｚｦ-ﾟ]')

# ANSI/VT100 escape sequences: CSI (ESC [ ... final byte) and OSC (ESC ] ... BEL/ST).
# A lone ESC is dropped with the other control characters.
_ANSI_RE = re.compile(r'\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\))')
# Runs of characters the voice cannot read (punctuation, symbols, emoji) longer than this
# are cut to it: they add nothing to speech and would defeat max_segment_chars.
MAX_UNSPEAKABLE_RUN = 4
_SPEAKABLE_CLASS = 'ぁ-ゖゟァ-ヺヿ一-鿿々〆〇〼a-zA-Z0-9０-９Ａ-Ｚａ-ｚｦ-ﾟ'
_UNSPEAKABLE_RUN_RE = re.compile(
    r'[^%s\s]{%d,}' % (_SPEAKABLE_CLASS, MAX_UNSPEAKABLE_RUN + 1))


class InputError(ValueError):
    """Text that cannot be spoken. ``code`` is a stable machine-readable reason.

    Codes: ``empty``, ``nothing_speakable``, ``too_long``, ``bad_ssml`` (see :mod:`.ssml`).
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def strip_control(text: str, keep: str = '') -> str:
    """Remove terminal escape sequences and control/format characters, keeping newlines.

    ANSI escape sequences (ESC ``[31m``) go whole; other Unicode Cc/Cf/Cs/Co characters
    are dropped, but those in ``keep`` (the front end's no-cut marks, in text that the
    SSML parser made from cleaned markup); tabs and carriage returns become
    spaces/newlines; zero-width joiners and the like vanish. Returns the cleaned text (not
    stripped of spaces).
    """
    text = _ANSI_RE.sub('', text)
    text = text.replace('\r\n', '\n').replace('\r', '\n').replace('\t', ' ')
    return ''.join(ch for ch in text if ch == '\n' or ch in keep
                   or unicodedata.category(ch) not in ('Cc', 'Cf', 'Cs', 'Co'))


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
