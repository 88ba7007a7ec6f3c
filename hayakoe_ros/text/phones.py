# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Phone numbers in running text and their readings, digit by digit (no ROS imports).

:data:`PHONE_RE` finds them (Japanese numbers with hyphens, blanks or none, with +81 or
another country's code, postal codes after 〒 or 郵便番号 or with a second group that
starts with 0); :func:`phone_reading` reads one as a
number is read out to be dialled. Used by :mod:`.frontend` and SSML's ``telephone``.
"""

from __future__ import annotations

import re

from .numbers import PHONE_KANA, digits

PHONE_RE = re.compile(r'(?<![\d-])(?:\+81[- ]?)?\(?0\d{1,4}\)?[- ]?\d{1,4}-\d{3,4}(?![\d-])'
                      r'|(?<![\d-])\+81[- ]?\(?[1-9]\d{0,3}\)?[- ]?\d{1,4}[- ]\d{3,4}(?![\d-])'
                      # Groups between blanks (090 1234 5678), another country's code.
                      r'|(?<![\d-])0\d{1,4} \d{2,4} \d{3,4}(?![\d-])'
                      r'|(?<![\d+-])\+(?!81)[1-9]\d{0,2}[- ]\(?\d{1,4}\)?(?:[- ]\d{2,4}){2,3}'
                      r'(?![\d-])'
                      r'|(?<![\d-])0\d{1,4}-\d{1,4}-\d{3,4}(?![\d-])'
                      r'|(?<![\d-])0[5789]0\d{8}(?![\d-])|〒\s*\d{3}[- ]?\d{4}(?!\d)'
                      # Postal codes after 郵便番号, or with a zero no range ends on.
                      r'|(?:(?<=郵便番号)|(?<=郵便番号は)|(?<=郵便番号:))\s*\d{3}-?\d{4}(?![\d-])'
                      r'|(?<![\d-])\d{3}-0\d{3}(?![\d-])'
                      # The area code's own group in brackets: 03(1234)5678.
                      r'|(?<![\d-])0\d{1,4}\(\d{1,4}\)\d{3,4}(?![\d-])')


# A minus sign or a Unicode hyphen between the groups of a phone number, an address or a
# postal code, as some input methods write them (03−1234−5678, 〒100−0001: they were read
# as subtraction, ゼロサンヒク...): three or four groups that start with 0 or come right
# after a place name's kanji (六本木6−10−1), or a postal code after 〒; 10−3−2 stays
# arithmetic.
_DASHES_RE = re.compile(r'(?:(?<![\d.−‐‑])(?=0)|(?<=[一-鿿]))\d{1,5}(?:[−‐‑]\d{1,4}){2,3}'
                        r'(?![\d−‐‑])|(?<=〒)\s*\d{3}[−‐‑]\d{4}(?!\d)')


def dashes(text: str) -> str:
    """``text`` with the minus signs and hyphens of :data:`_DASHES_RE`'s numbers made ``-``."""
    if '−' not in text and '‐' not in text and '‑' not in text:
        return text
    return _DASHES_RE.sub(lambda m: re.sub('[−‐‑]', '-', m.group(0)), text)


def phone_reading(text: str) -> str:
    """Digit by digit, group by group with の between (``090-1234-5678``).

    Japan's country code is read as a call from within Japan is dialled: ``+81-3-...``
    and ``+81-(0)3-...`` as ``03-...``. Another country code is read ``プラス`` and its
    digits (``+1 555 ...``).
    """
    if text.startswith('〒') or re.fullmatch(r'\s*\d{7}', text):
        # A postal code written without its hyphen (〒1000001) is read as with it.
        text = re.sub(r'^(\d{3})(\d{4})$', r'\1-\2', text.removeprefix('〒').strip())
    head = ''
    country = re.match(r'\+(\d{1,3})[- ]?', text)
    if country and country.group(1) == '81':
        rest = re.sub(r'^\(0\)\s*', '0', text[country.end():])
        text = rest if rest.lstrip('(').startswith('0') else '0' + rest
    elif country:
        head = 'プラス' + digits(country.group(1), PHONE_KANA) + 'の'
        text = text[country.end():]
    groups = [g for g in re.split(r'[-() ]+', text) if g]
    return head + 'の'.join(digits(g, PHONE_KANA) for g in groups)
