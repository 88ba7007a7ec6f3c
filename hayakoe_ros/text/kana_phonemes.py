# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Open JTalk's phonemes of katakana (an NJD word's ``pron``), without labels (no ROS).

:func:`pron_phonemes` maps each mora through Open JTalk's own table (JPCommon), so the
word marks' phonemes are those of ``pyopenjtalk.g2p`` without making labels
(``make_label`` costs three times ``run_frontend``).
"""

from __future__ import annotations

# Open JTalk's morae (its JPCommon table), katakana to phonemes. Built from the rows below.
_ROWS = {  # row consonant per vowel a i u e o ('' = none in that place)
    'アイウエオ': ('', '', '', '', ''), 'カキクケコ': 'k' * 5, 'ガギグゲゴ': 'g' * 5,
    'サシスセソ': ('s', 'sh', 's', 's', 's'), 'ザジズゼゾ': ('z', 'j', 'z', 'z', 'z'),
    'タチツテト': ('t', 'ch', 'ts', 't', 't'), 'ダヂヅデド': ('d', 'j', 'z', 'd', 'd'),
    'ナニヌネノ': 'n' * 5, 'ハヒフヘホ': ('h', 'h', 'f', 'h', 'h'), 'バビブベボ': 'b' * 5,
    'パピプペポ': 'p' * 5, 'マミムメモ': 'm' * 5, 'ヤ-ユ-ヨ': 'y' * 5, 'ラリルレロ': 'r' * 5,
    'ワヰ-ヱヲ': ('w', '', '', '', ''), 'ァィゥェォ': ('', '', '', '', ''),
    'ャ-ュ-ョ': 'y' * 5, 'ヮ----': ('w', '', '', '', ''),
}
_MORA: dict = {'ン': ('N',), 'ッ': ('cl',), 'ヴ': ('v', 'u'), 'ヵ': ('k', 'a'),
               'ヶ': ('k', 'e')}
for _kana, _cons in _ROWS.items():
    for _ch, _c, _v in zip(_kana, _cons, 'aiueo'):
        if _ch != '-':
            _MORA[_ch] = (_c, _v) if _c else (_v,)
# Palatalised: キャ kya ... (i-row kana + small ャュョェ).
for _ch, _c in zip('キギシジチヂニヒビピミリ',
                   ('ky', 'gy', 'sh', 'j', 'ch', 'j', 'ny', 'hy', 'by', 'py', 'my', 'ry')):
    for _small, _v in zip('ャュェョ', 'aueo'):
        _MORA[_ch + _small] = (_c, _v)
_MORA.update({k: tuple(v.split()) for k, v in {
    'ティ': 't i', 'ディ': 'd i', 'トゥ': 't u', 'ドゥ': 'd u', 'テャ': 'ty a', 'テュ': 'ty u',
    'テョ': 'ty o', 'デャ': 'dy a', 'デュ': 'dy u', 'デョ': 'dy o', 'ファ': 'f a',
    'フィ': 'f i', 'フェ': 'f e', 'フォ': 'f o', 'フュ': 'hy u', 'ウィ': 'w i', 'ウェ': 'w e',
    'ウォ': 'w o', 'ヴァ': 'v a', 'ヴィ': 'v i', 'ヴェ': 'v e', 'ヴォ': 'v o', 'ヴュ': 'by u',
    'ヴャ': 'by a', 'ヴョ': 'by o',
    'ツァ': 'ts a', 'ツィ': 'ts i', 'ツェ': 'ts e', 'ツォ': 'ts o', 'スィ': 's i', 'ズィ': 'z i',
    'イェ': 'y e', 'クヮ': 'kw a', 'グヮ': 'gw a', 'クァ': 'kw a', 'グァ': 'gw a'}.items()})
#: Vowels, lower case (devoiced ones are upper case).
VOWELS = frozenset('aiueo')


_PRON_CACHE: dict = {}


def cached_phonemes(pron: str, before: str) -> tuple:
    """:func:`pron_phonemes`, cached (one NJD word's pron: a few distinct hundred a text)."""
    if pron[:1] == 'ー':
        return pron_phonemes(pron, before)
    out = _PRON_CACHE.get(pron)
    if out is None:
        out = pron_phonemes(pron)
        if len(_PRON_CACHE) < 16384:
            _PRON_CACHE[pron] = out
    return out


def pron_phonemes(pron: str, before: str = '') -> tuple:
    """Open JTalk phonemes of an NJD ``pron`` (katakana, ``’`` after a devoiced mora).

    ``トッキュー`` -> ``t o cl ky u u``; ``デス’`` -> ``d e s U``. Characters that are no
    kana (punctuation, symbols) give nothing, as in Open JTalk's g2p (which gives ``pau``
    for some of them: never a word's). ``before``: the vowel said last before this word,
    which a leading ``ー`` lengthens (``でしょ`` + ``う`` read ``ー``).
    """
    out: list = [before] if before else []
    skip = len(out)
    i = 0
    while i < len(pron):
        two = _MORA.get(pron[i:i + 2])
        if two is not None:
            out.extend(two)
            i += 2
            continue
        ch = pron[i]
        i += 1
        one = _MORA.get(ch)
        if one is not None:
            out.extend(one)
        elif ch == 'ー' and out and out[-1] in ('N', 'cl'):
            out.append(out[-1])  # Open JTalk lengthens ン and ッ as themselves
        elif ch == 'ー':
            vowel = next((p for p in reversed(out) if p.lower() in VOWELS), None)
            if vowel is not None:
                out.append(vowel)  # a devoiced vowel stays devoiced
        elif ch == '’' and out and out[-1] in VOWELS:
            out[-1] = out[-1].upper()
    return tuple(out[skip:])
