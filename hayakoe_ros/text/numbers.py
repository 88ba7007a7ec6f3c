# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Number readings for the text front end (no ROS imports).

Integers become kanji numerals (``1234`` -> ``千二百三十四``), which both voices' Open JTalk
front end reads with the right counter sound changes (``十パーセント`` -> ジュッパーセント,
``十日`` -> トーカ). Digits that are read one by one (decimals after 点, phone numbers,
codes with leading zeros) become katakana, the way Japanese announcers say them.
"""

from __future__ import annotations

from typing import Optional

_KANJI_DIGITS = '〇一二三四五六七八九'
_SMALL_UNITS = ((1000, '千'), (100, '百'), (10, '十'))
_BIG_UNITS = ('', '万', '億', '兆', '京')

#: Digits read one at a time (decimals, codes): イチ ニ サン...
DIGIT_KANA = {'0': 'ゼロ', '1': 'イチ', '2': 'ニ', '3': 'サン', '4': 'ヨン', '5': 'ゴ',
              '6': 'ロク', '7': 'ナナ', '8': 'ハチ', '9': 'キュー'}
#: Phone-number digits: one-mora 2 and 5 are lengthened (ニー, ゴー) as announcers do.
PHONE_KANA = dict(DIGIT_KANA, **{'2': 'ニー', '5': 'ゴー'})

#: Longest integer read as a number (京 = 10^16); longer digit runs are read digit by digit.
MAX_CARDINAL_DIGITS = 20


def _below_10000(n: int) -> str:
    out = []
    for value, unit in _SMALL_UNITS:
        q, n = divmod(n, value)
        if q:
            out.append(('' if q == 1 else _KANJI_DIGITS[q]) + unit)
    if n:
        out.append(_KANJI_DIGITS[n])
    return ''.join(out)


def cardinal(n: int) -> str:
    """Kanji numeral of a non-negative integer (0 -> ``ゼロ``, 10000 -> ``一万``).

    Raises:
        ValueError: ``n`` negative or of more than :data:`MAX_CARDINAL_DIGITS` digits.
    """
    if n < 0 or len(str(n)) > MAX_CARDINAL_DIGITS:
        raise ValueError(f'cannot read {n} as a cardinal')
    if n == 0:
        return 'ゼロ'
    groups = []
    i = 0
    while n:
        n, group = divmod(n, 10000)
        if group:
            head = _below_10000(group)
            if i and group == 1000:
                head = '一千'  # 一千万: イッセンマン, as in news reading
            groups.append(head + _BIG_UNITS[i])
        i += 1
    return ''.join(reversed(groups))


def digits(text: str, table: Optional[dict] = None) -> str:
    """Read a string of ASCII digits one by one in katakana (``090`` -> ゼロキューゼロ)."""
    table = DIGIT_KANA if table is None else table
    return ''.join(table[d] for d in text if d in table)


def number(text: str) -> str:
    """Read a decimal number written with ASCII digits.

    ``text`` may have thousands separators (``1,234``) and a decimal part (``3.14`` ->
    三点イチヨン, ``0.5`` -> 零点ゴ). Integers with a leading zero (``007``) or too long
    for a cardinal are read digit by digit. Returns kanji numerals and katakana only.
    """
    whole, _, frac = text.replace(',', '').partition('.')
    if not whole:
        whole = '0'
    if (len(whole) > 1 and whole.startswith('0') and not frac) or \
            len(whole) > MAX_CARDINAL_DIGITS:
        head = digits(whole)
    elif frac and int(whole) == 0:
        head = '零'  # 0.5: レーテンゴ, as in news reading
    else:
        head = cardinal(int(whole))
    return head + ('点' + digits(frac) if frac else '')
