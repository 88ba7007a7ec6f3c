# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Quantities: speeds, temperatures, amounts of money, percentages and units (no ROS).

Called by :func:`.frontend.normalize` on text that still holds ASCII digits: first
:func:`durations` (``5min``, ``2h``: the Japanese counter), then, around its
bare-number ranges, :func:`measures` before them (``5m/s``, ``-5°C``, ``45°``: their
reading then joins a range as a kept reading), :func:`amounts` after (``$5M``, ``-3%``,
``10kg``). Each reading is wrapped in the front end's no-cut marks (``keep``). A sign
before a number is read (``-3%`` was サンパーセント: the meaning flipped).
"""

from __future__ import annotations

import decimal
import re
from typing import Optional

from . import symbols
from .numbers import number

#: A number as written: digits with thousands commas or not, a decimal part or not.
NUM = r'\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?'
# After 風速 (wind speed) no 秒速 is added: 風速秒速5メートル said it twice.
_SPEED_RE = re.compile(r'(時速|秒速|(?<=速)|(?<=速は)|(?<=速が))?\s*(%s)\s*(km/h|m/s)'
                       r'(?![A-Za-z0-9])' % NUM)

# A minus sign: not after a letter or digit (10-20 is a range, A-1 a name); an en dash
# is one too where it stands alone before a number (気温は–5℃).
SIGN = r'(?:(?<![A-Za-z0-9.,\ue001])[-−–])'
_TEMP_RE = re.compile(r'(%s)?(%s)\s*°\s*([CF])(?![A-Za-z])' % (SIGN, NUM))
# English scales after an amount ($5M, $1.2B, €300K) are multiplied out: 五百万ドル.
_CURRENCY_RE = re.compile(r'(%s)?([¥$€£₩])\s*(%s)(?:\s*([万億兆])|(K|M|B|bn|mn)(?![A-Za-z]))?'
                          % (SIGN, NUM))
_SCALE = {'K': 3, 'M': 6, 'mn': 6, 'B': 9, 'bn': 9}
_CURRENCY = {'¥': '円', '$': 'ドル', '€': 'ユーロ', '£': 'ポンド', '₩': 'ウォン'}
_PERCENT_RE = re.compile(r'(%s)?(%s)\s*%%' % (SIGN, NUM))

#: Units read after a number (longest first in the pattern).
UNITS = {
    'km/h': 'キロメートル毎時', 'm/s': 'メートル毎秒', 'km': 'キロメートル',
    'cm': 'センチメートル', 'mm': 'ミリメートル', 'm': 'メートル', 'kg': 'キログラム',
    'mg': 'ミリグラム', 'g': 'グラム', 'mL': 'ミリリットル', 'ml': 'ミリリットル',
    'L': 'リットル', 'kHz': 'キロヘルツ', 'MHz': 'メガヘルツ', 'GHz': 'ギガヘルツ',
    'Hz': 'ヘルツ', 'kW': 'キロワット', 'W': 'ワット', 'mAh': 'ミリアンペアアワー',
    'mA': 'ミリアンペア', 'V': 'ボルト', 'A': 'アンペア', 'TB': 'テラバイト',
    'GB': 'ギガバイト', 'MB': 'メガバイト', 'KB': 'キロバイト', 'kB': 'キロバイト',
    'ms': 'ミリ秒', 'dB': 'デシベル', 'rpm': 'アールピーエム', 'fps': 'エフピーエス',
    'm2': '平方メートル', 'km2': '平方キロメートル', 'cm2': '平方センチメートル',
    'mm2': '平方ミリメートル', 'm3': '立方メートル', 'cm3': '立方センチメートル',
    'mm3': '立方ミリメートル', 'km3': '立方キロメートル',
    'μm': 'マイクロメートル', 'nm': 'ナノメートル', 'hPa': 'ヘクトパスカル',
    'kPa': 'キロパスカル', 'kWh': 'キロワットアワー', 'Wh': 'ワットアワー', 'mV': 'ミリボルト',
    'mg/dL': 'ミリグラムパーデシリットル', 'dL': 'デシリットル', 'dl': 'デシリットル',
    'l': 'リットル', 't': 'トン', 'ha': 'ヘクタール',
}
_UNIT_RE = re.compile(r'(%s)?(%s)\s*(%s)(?![A-Za-z0-9])' % (
    SIGN, NUM, '|'.join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))))


def _speed(m: re.Match, keep) -> str:
    word = m.group(1) if m.group(1) is not None else \
        ('時速' if m.group(3) == 'km/h' else '秒速')
    return keep(word + number(m.group(2)) + ('キロ' if m.group(3) == 'km/h' else 'メートル'))


def signed(sign: Optional[str], value: str) -> str:
    """The reading of ``value`` (kanji numerals), マイナス before it when ``sign`` is set."""
    return ('マイナス' if sign else '') + number(value)


def _temp(m: re.Match, keep) -> str:
    head = '華氏' if m.group(3) == 'F' else ''
    value = '零' if m.group(2) == '0' else signed(m.group(1), m.group(2))  # 0℃: レード
    return keep(head + value + '度')


#: The hundredth of a currency, said for an amount with two decimals ($1.50: 1ドル50セント;
#: it was イッテンゴゼロドル, the zero read as a digit).
_CENTS = {'$': 'セント', '€': 'セント', '£': 'ペンス'}


def _currency(m: re.Match, keep) -> str:
    value = m.group(3)
    whole, _, cents = value.partition('.')
    if len(cents) == 2 and m.group(2) in _CENTS and not (m.group(4) or m.group(5)):
        unit, small, sign = _CURRENCY[m.group(2)], _CENTS[m.group(2)], m.group(1)
        if not whole.strip('0,'):  # $0.99: 99セント
            return keep(signed(sign, str(int(cents))) + (small if int(cents) else unit))
        return keep(signed(sign, whole) + unit +
                    (number(str(int(cents))) + small if int(cents) else ''))
    if m.group(5):
        with decimal.localcontext() as exact:  # a long amount keeps every digit
            exact.prec = 2 * len(value) + 12
            value = format(decimal.Decimal(value.replace(',', '')).scaleb(
                _SCALE[m.group(5)]).normalize(), 'f')
    return keep(signed(m.group(1), value) + (m.group(4) or '') + _CURRENCY[m.group(2)])


# Durations in English abbreviations take the Japanese counter, whose sound the number
# then changes as after any counter (5min ゴフン, 1h30m イチジカンサンジュップン; they were
# ゴミン, イチエイチサンジューメートル).
_DURATION_RE = re.compile(r'(?<![A-Za-z0-9.])(\d+)\s*(?:h(?:(\d{1,2})m(?:in)?)?|(min|sec))'
                          r'(?![A-Za-z0-9/])')
# 何 before a unit: how many of it (何kg なんキログラム; it was ナンケージー).
_HOW_MANY_RE = re.compile(r'何(%s)(?![A-Za-z0-9])' % '|'.join(
    re.escape(u) for u in sorted(UNITS, key=len, reverse=True)
    if u[0].isalpha() and u not in ('L', 'A', 'V', 'W', 'l', 't')))  # 何L, 何A: a size, a class


def _duration(m: re.Match) -> str:
    if m.group(3):
        return m.group(1) + ('分' if m.group(3) == 'min' else '秒')
    around = m.string[max(0, m.start() - 1):m.start()] + m.string[m.end():m.end() + 1]
    if not m.group(2) and any(c in '-–~〜' for c in around):
        return m.group(1) + '時'  # hours of a day: 9h-18h, 8h〜17h
    return m.group(1) + '時間' + (m.group(2) + '分' if m.group(2) else '')


def durations(text: str) -> str:
    """``5min`` -> 5分, ``2h`` -> 2時間, ``1h30m`` -> 1時間30分, ``9h-18h`` -> 9時-18時.

    Applied before times, dates and ranges, which then read the counters as written so.
    """
    return _DURATION_RE.sub(_duration, text) if 'h' in text or 'min' in text \
        or 'sec' in text else text


def measures(text: str, keep) -> str:
    """Speeds, temperatures and angles to their readings (before the ranges)."""
    if '何' in text:
        text = _HOW_MANY_RE.sub(lambda m: keep('なん' + UNITS[m.group(1)]), text)
    text = _SPEED_RE.sub(lambda m: _speed(m, keep), text)
    text = _TEMP_RE.sub(lambda m: _temp(m, keep), text)
    return symbols.degrees(text, keep)


def amounts(text: str, keep) -> str:
    """Money, percentages and units after a number to their readings (after the ranges)."""
    text = _CURRENCY_RE.sub(lambda m: _currency(m, keep), text)
    text = _PERCENT_RE.sub(lambda m: keep(signed(m.group(1), m.group(2)) + 'パーセント'),
                           text)
    return _UNIT_RE.sub(lambda m: keep(signed(m.group(1), m.group(2)) + UNITS[m.group(3)]),
                        text)
