# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Characters Open JTalk cannot read as written, and the log of those nobody reads.

Open JTalk's dictionary (naist-jdic) knows the Unicode BMP's common kanji and kana. What it
does with anything else is to drop it without a sound: Roman numerals (NFKC would make
``Ⅱ`` the letters ``II``, アイアイ), ideographic variation selectors (``葛󠄀`` read カズラ
and then the rest of the word cut off), rare and supplementary-plane variants of common
kanji (``髙``, ``𠮷``), ligatures (``〼``), the small ``ヮ`` that follows no ク/グ, ``ヷ`` to
``ヺ``, ``〇`` used as a placeholder (``〇〇ホテル``), ``々`` after a kanji that no
dictionary word pairs it with. :func:`before_nfkc` and :func:`rewrite` turn these into what
Open JTalk reads; :func:`log_unreadable` logs, once per character and process at DEBUG, every
character that is left with no reading, with its code point, so nothing vanishes unseen.
"""

from __future__ import annotations

import functools
import logging
import re

from ..engines import openjtalk_guard

_LOG = logging.getLogger('hayakoe_ros.text')

_ROMAN = ['Ⅰ', 'Ⅱ', 'Ⅲ', 'Ⅳ', 'Ⅴ', 'Ⅵ', 'Ⅶ', 'Ⅷ', 'Ⅸ', 'Ⅹ', 'Ⅺ', 'Ⅻ']
_ROMAN_SMALL = ['ⅰ', 'ⅱ', 'ⅲ', 'ⅳ', 'ⅴ', 'ⅵ', 'ⅶ', 'ⅷ', 'ⅸ', 'ⅹ', 'ⅺ', 'ⅻ']

#: Variants of common kanji that Open JTalk leaves unread when they stand outside the few
#: dictionary words that hold them (``髙橋`` came out as nothing; ``山﨑`` it knows either
#: way), each to the common form it is read as. Each was checked with Open JTalk alone.
VARIANTS = {
    '髙': '高', '﨑': '崎', '濵': '浜', '栁': '柳', '𠮷': '吉', '𡈽': '土', '𥔎': '崎',
    '𣘺': '橋', '德': '徳', '邊': '辺', '﨔': '欅', '靍': '鶴', '瀨': '瀬',
}

#: Ligatures and rare kana, to the kana they stand for.
LIGATURES = {'〼': 'ます', 'ゟ': 'より', 'ヿ': 'こと', 'ヷ': 'ヴァ', 'ヸ': 'ヴィ', 'ヹ': 'ヴェ',
             'ヺ': 'ヴォ', '〻': '々', '〆': 'しめ'}
#: Spellings that hayakoe's normaliser would cut short (it drops 〆, and reads the (株) that
#: NFKC makes of ㈱ as カブ), to ones both voices read in full.
WORD_FORMS = {'〆切': '締切', '(株)': '株式会社', '(有)': '有限会社'}
_WORD_FORMS_RE = re.compile('|'.join(re.escape(w) for w in WORD_FORMS))

# One str.translate table for all of it: variation selectors (standardised FE00-FE0F and
# ideographic E0100-E01EF) map to nothing, the rest to their readable forms.
_TABLE: dict = {cp: None for cp in range(0xFE00, 0xFE10)}
_TABLE.update({cp: None for cp in range(0xE0100, 0xE01F0)})
_TABLE.update({ord(ch): str(i + 1) for i, ch in enumerate(_ROMAN)})
_TABLE.update({ord(ch): str(i + 1) for i, ch in enumerate(_ROMAN_SMALL)})
_TABLE.update({ord(k): v for k, v in VARIANTS.items()})
_NEEDS_TABLE_RE = re.compile('[\ufe00-\ufe0f\U000e0100-\U000e01ef\u2160-\u216b\u2170-\u217b%s]'
                             % re.escape(''.join(VARIANTS)))
# Ligatures grow the text (〼 -> ます): replaced after the length check, in rewrite().
_LIGATURE_TABLE = {ord(k): v for k, v in LIGATURES.items()}
_LIGATURE_RE = re.compile('[%s]' % ''.join(LIGATURES))

# A small ヮ/ゎ joins a ク or グ before it (クヮ kwa); anywhere else Open JTalk drops it.
_LONE_SMALL_WA_RE = re.compile('(?<![クグくぐ])[ヮゎ]')
# 〇 (and the circles typed for it) as a placeholder: not next to a kanji numeral, where
# it is zero (二〇二四年).
_NUMERAL = '〇一二三四五六七八九十百千万億兆零'
_PLACEHOLDER_RE = re.compile('(?<![%s])[〇○◯]+(?![%s])' % (_NUMERAL, _NUMERAL))
_REPEAT_RE = re.compile('([一-鿿])々')
# Laughter typed after Japanese: w (NFKC made ｗ one) runs, read ワラ, never ダブリュー;
# not a host name's www (詳しくはwww.example.jp).
# は standing alone at the start of a reply (は、そうです; は？) is the interjection ハ, not
# the particle that Open JTalk reads ワ.
_HA_RE = re.compile('(?:^|(?<=[。！？!?\n「]))(\\s*)は(?=[、，,？?！!…])')
_LAUGH_RE = re.compile('(?<=[ぁ-ゖァ-ヺー一-鿿々！？!?。、…])w+(?![A-Za-z0-9]|\\.[A-Za-z0-9])')

# What needs no look-up: kana, ASCII, punctuation read as pauses or intonation, the
# front end's no-cut marks, whitespace.
_QUIET = ('ぁ-ゖァ-ヺー\u3000-\u3004\u3008-\u3011\u3014-\u301f\u30fb\u30fc\x20-\x7e'
          '\ue000\ue001\\s、。，．！？「」『』（）［］【】〈〉《》“”‘’…‥：；・')
_CANDIDATE_RE = re.compile('[^%s]' % _QUIET)
_KANJI_RE = re.compile('[一-鿿々〆]')
#: Characters logged as unreadable, at most this many (then no more are remembered).
MAX_LOGGED = 4096
_LOGGED: set = set()


# A power of a number (2³, 10⁻⁶): NFKC would make it digits of the number (2³ was 23).
# After a letter it is left to the units (m², km³).
_SUPERSCRIPT = str.maketrans('⁰¹²³⁴⁵⁶⁷⁸⁹⁻', '0123456789-')
_POWER_RE = re.compile('(?<=[0-9０-９])(⁻?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)')


# Pictographs: emoji (the Unicode emoji blocks, dingbats, miscellaneous symbols and
# technical signs, arrows), ©, ® and ™. None is spoken, and left in the text Open JTalk
# joins one to the word after it (明日は☀晴れ read バレ, ☔雨 ウ) or reads it as a word
# (the ♀ of 🙇‍♀️ メス, ™ as TM ム): each run becomes a space, a word boundary with no pause. A
# keycap's digit stays (1️⃣ is 1). Geometric shapes (○ ◯ ■ ▲, read as placeholders and
# bullets) and enclosed numbers (① is 1) are not pictographs here.
_PICTOGRAPHS = ('\u00a9\u00ae\u2122\u2139\u2190-\u21ff\u2300-\u23ff\u2600-\u263f'
                '\u2641\u2643-\u27bf\u2b00-\u2bff\u3030\u303d\U0001f000-\U0001faff')
# ♀ and ♂ alone are read, in kana so that hayakoe's own normaliser, which drops them,
# says them too (柴犬♂ オス); after an emoji they are its gender (🙇‍♀️): silent.
_SEX = {'\u2640': 'メス', '\u2642': 'オス'}
_SEX_RE = re.compile('[\u2640\u2642]')
_PICTOGRAPH_RE = re.compile('[%s](?:[%s\u2640\u2642])*' % (_PICTOGRAPHS, _PICTOGRAPHS))
_KEYCAP = '\u20e3'
# Keycaps side by side are a list (1️⃣2️⃣3️⃣: イチ、ニ、サン, not 百二十三).
_KEYCAP_RUN_RE = re.compile('\u20e3(?=[0-9#*]\u20e3)')


def pictographs(text: str) -> str:
    """Each run of pictographs (emoji, ``☀``, ``→``, ``™``) a space; a keycap its digit.

    Run on text to be read, after the input checks (which count an emoji-only text as
    nothing speakable, not as empty). ``™`` and ``ℹ`` reach it because
    :func:`~.frontend.compat_normalize` keeps them from NFKC (``TM``, ``i``).
    """
    text = _PICTOGRAPH_RE.sub(' ', text)
    if '\u2640' in text or '\u2642' in text:
        text = _SEX_RE.sub(lambda m: _SEX[m.group(0)], text)
    if _KEYCAP not in text:
        return text
    return _KEYCAP_RUN_RE.sub(' ', text).replace(_KEYCAP, '')


def before_nfkc(text: str) -> str:
    """Variation selectors dropped; Roman numerals and rare kanji variants replaced.

    A power of a number is written out (``2³`` -> ``2の3乗``). ``Ⅱ`` -> ``2`` (then read
    as a number: ``第Ⅱ期`` ダイニキ), ``髙`` -> ``高``. Run before NFKC, which would make
    Roman numerals Latin letters and superscripts plain digits.
    """
    text = _POWER_RE.sub(lambda m: 'の' + m.group(1).translate(_SUPERSCRIPT) + '乗', text)
    if _NEEDS_TABLE_RE.search(text) is None:
        return text
    return text.translate(_TABLE)


def fix_kana(text: str) -> str:
    """A small ワ that follows no ク/グ becomes a full-size ワ (Open JTalk drops it)."""
    if 'ヮ' not in text and 'ゎ' not in text:
        return text
    return _LONE_SMALL_WA_RE.sub(lambda m: 'ワ' if m.group(0) == 'ヮ' else 'わ', text)


@functools.lru_cache(maxsize=4096)
def _pairs(kanji: str) -> bool:
    """Whether Open JTalk reads ``kanji + '々'`` (a dictionary word such as 佐々, 時々)."""
    feats = openjtalk_guard.run_frontend(kanji + '々')
    return all('々' not in f['pron'] for f in feats if '々' in f['string'])


def rewrite(text: str) -> str:
    """Ligatures, placeholders, unpaired ``々`` and typed laughter, in text after NFKC.

    ``〼`` -> ``ます``, ``ヷ`` -> ``ヴァ`` (:data:`LIGATURES`), ``〆切`` -> ``締切``
    (:data:`WORD_FORMS`);
    ``〇〇ホテル`` -> ``マルマルホテル`` (``二〇二四`` stays a numeral); ``X々`` where no
    dictionary word pairs ``々`` with ``X`` -> ``XX``; ``すごいwww`` -> ``すごいワラ``; a
    reply's leading ``は、`` -> ``ハ、``.
    """
    if '〆' in text or '(' in text:
        text = _WORD_FORMS_RE.sub(lambda m: WORD_FORMS[m.group(0)], text)
    if _LIGATURE_RE.search(text):
        text = text.translate(_LIGATURE_TABLE)
    if '〇' in text or '○' in text or '◯' in text:
        text = _PLACEHOLDER_RE.sub(lambda m: 'マル' * len(m.group(0)), text)
    if '々' in text:
        text = _REPEAT_RE.sub(lambda m: m.group(0) if _pairs(m.group(1)) else m.group(1) * 2,
                              text)
    if 'w' in text:
        text = _LAUGH_RE.sub('ワラ', text)
    if 'は' in text:
        text = _HA_RE.sub(r'\1ハ', text)
    return text


@functools.lru_cache(maxsize=8192)
def _kanji_readable(ch: str) -> bool:
    # Every kanji of JIS X 0208 (what Shift_JIS encodes) is in naist-jdic's words; a third
    # of them are read only inside words (以 of 以上), so asking Open JTalk about the
    # character alone would call them unreadable. The rest (JIS X 0212/0213, the
    # supplementary planes) are asked about alone: few are read at all.
    try:
        ch.encode('shift_jis')
        return True
    except UnicodeEncodeError:
        pass
    feats = openjtalk_guard.run_frontend(ch)
    return any(f['pron'] and ch not in f['pron'] and f['pos'] != '記号' for f in feats)


def unreadable(text: str) -> list:
    """Characters of front-end output that no voice reads, in order of first occurrence.

    Kana, ASCII, whitespace and punctuation that is a pause (、。！？ brackets) are read
    or meant to be silent; a kanji counts as read when it is one of JIS X 0208 (all in
    Open JTalk's dictionary) or Open JTalk gives it a reading on its own (cached per
    character); anything else (emoji, symbols, unknown kanji) is returned.
    """
    found: dict = {}
    for m in _CANDIDATE_RE.finditer(text):
        ch = m.group(0)
        if ch in found:
            continue
        if _KANJI_RE.match(ch) and _kanji_readable(ch):
            continue
        found[ch] = None
    return list(found)


def log_unreadable(text: str) -> list:
    """Log each character of :func:`unreadable` once per process (DEBUG, with U+XXXX).

    Returns the unreadable characters of ``text`` (logged now or before).
    """
    chars = unreadable(text)
    for ch in chars:
        if ch not in _LOGGED and len(_LOGGED) < MAX_LOGGED:
            _LOGGED.add(ch)
            _LOG.debug('no reading for %r (U+%04X): it is not spoken', ch, ord(ch))
    return chars
