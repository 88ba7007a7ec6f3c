# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""SSML subset, used when a text starts with ``<speak>`` (no ROS imports).

Supported: ``<speak>`` (root), ``<break time="500ms"/>`` / ``time="1.5s"`` /
``strength="..."``, ``<sub alias="...">``, ``<say-as interpret-as="characters|spell-out|
digits|telephone|date|time|cardinal|number">`` (``format`` for a date's field order and a
time's clock), ``<prosody rate="slow|fast|80%|+50%|1.2">`` (``+50%``: 1.5 times as fast),
``<p>`` and ``<s>`` (each ends a sentence), ``<mark name="..."/>`` (an empty element
with a non-empty ``name`` and nothing else; where it is goes to the segment's
:class:`~.segment.SsmlMark` objects, :mod:`.wordmarks`). Parsed with ``defusedxml`` (the standard
library's parser, with entity expansion and external references refused). Anything else is
an :class:`~.segment.InputError` ``bad_ssml`` that names the problem; tags are never spoken.
"""

from __future__ import annotations

import calendar
import dataclasses
import re
from typing import Optional
from xml.etree.ElementTree import ParseError

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from . import english
from .frontend import clock_reading, compat_normalize, keep, time_reading
from .phones import phone_reading
from .numbers import MAX_CARDINAL_DIGITS, PHONE_KANA, cardinal, digits
from .checks import strip_control
from .segment import InputError

#: Longest accepted ``<break>`` (s): a longer pause is almost surely a typo (``1000s``).
MAX_BREAK_S = 10.0
#: ``<break strength>`` -> seconds (typical read-speech values).
BREAK_STRENGTH = {'none': 0.0, 'x-weak': 0.1, 'weak': 0.2, 'medium': 0.4, 'strong': 0.7,
                  'x-strong': 1.0}
#: ``<prosody rate>`` words -> speaking-rate multiplier.
RATE_WORDS = {'x-slow': 0.5, 'slow': 0.75, 'medium': 1.0, 'default': 1.0, 'fast': 1.25,
              'x-fast': 1.5}
#: Accepted speaking-rate multipliers (the node's goal ``rate`` range).
RATE_RANGE = (0.25, 4.0)
_SSML_START_RE = re.compile(r'\s*(?:<\?xml[^>]*\?>\s*)?(?:<!DOCTYPE[^\[>]*(?:\[.*?\])?\s*>\s*)?'
                            r'<speak[\s>/]', re.S)
_TIME_RE = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*$')
_SSML_NS = '{http://www.w3.org/2001/10/synthesis}'
#: Characters :func:`is_ssml` looks at: a DOCTYPE with a long internal subset is refused
#: by the parser anyway.
_SNIFF_CHARS = 4096
#: ``<say-as interpret-as="date" format>`` values: the fields' order (y year, m month,
#: d day), as Amazon Polly and Azure take them.
DATE_FORMATS = ('ymd', 'ydm', 'mdy', 'dmy', 'md', 'dm', 'ym', 'my', 'y', 'm', 'd',
                'yyyymmdd')
#: ``<say-as interpret-as="time" format>`` values (Azure's).
TIME_FORMATS = ('hms24', 'hms12')
_KANJI_TIME_RE = re.compile(r'(午前|午後)?\s*(\d{1,2})時(?:\s*(\d{1,2})分)?(?:\s*(\d{1,2})秒)?')
_DATE_UNIT = {'y': '年', 'm': '月', 'd': '日'}
_DATE_FIELD = {'y': 'year', 'm': 'month', 'd': 'day'}


@dataclasses.dataclass
class Piece:
    """A run of text spoken at one rate, and the explicit pause (s) after it, if any."""

    text: str
    rate: float = 1.0
    pause_after: Optional[float] = None


def is_ssml(text: str) -> bool:
    """True when ``text`` starts with a ``<speak`` tag.

    Whitespace, a byte-order mark (and any other format character, which the parser's
    input drops), an XML declaration and a DOCTYPE may come first (the parser then
    refuses any entity the DOCTYPE declares). A file saved with a BOM was spoken as
    markup (スピーク…ブレークタイムイコール…).
    """
    return _SSML_START_RE.match(strip_control(text[:_SNIFF_CHARS])) is not None


def _bad(problem: str) -> InputError:
    return InputError('bad_ssml', f'malformed SSML: {problem}')


def _break_s(el) -> float:
    time = el.get('time')
    if time is not None:
        m = _TIME_RE.match(time)
        if not m:
            raise _bad(f'<break time="{time}">: expected a duration such as "500ms" or "1s"')
        value = float(m.group(1)) / (1000.0 if m.group(2) == 'ms' else 1.0)
        if value > MAX_BREAK_S:
            raise _bad(f'<break time="{time}"> is longer than {MAX_BREAK_S:g} s')
        return value
    strength = el.get('strength', 'medium')
    if strength not in BREAK_STRENGTH:
        raise _bad(f'<break strength="{strength}">: use one of {", ".join(BREAK_STRENGTH)}')
    return BREAK_STRENGTH[strength]


_XML_NS = '{http://www.w3.org/XML/1998/namespace}'
_SENTENCE_ENDS = ('。', '！', '？', '!', '?', '.', '．')


def _rate(value: Optional[str]) -> float:
    if value is None:
        raise _bad('<prosody> needs a rate attribute (the only one supported)')
    value = value.strip()
    try:
        if value[:1] in '+-' and value.endswith('%'):
            # A relative change, as SSML 1.1 writes it: +50% is 1.5 times as fast
            # (it was taken as 50 %, half as fast).
            rate = 1.0 + float(value[:-1]) / 100.0
        else:
            rate = RATE_WORDS[value] if value in RATE_WORDS else (
                float(value[:-1]) / 100.0 if value.endswith('%') else float(value))
    except ValueError:
        raise _bad(f'<prosody rate="{value}">: use x-slow..x-fast, a percentage or a '
                   'multiplier') from None
    if not RATE_RANGE[0] <= rate <= RATE_RANGE[1]:
        raise _bad(f'<prosody rate="{value}"> is outside {RATE_RANGE[0]}..{RATE_RANGE[1]}')
    return rate


def _check_mark(el) -> None:
    """A ``<mark>`` must be empty and have a non-empty ``name`` and no other attribute."""
    if not el.get('name', '').strip():
        raise _bad('<mark> needs a non-empty name attribute')
    others = sorted(set(el.keys()) - {'name'})
    if others:
        raise _bad(f'<mark> takes only a name attribute, not {", ".join(others)}')
    if el.text or len(el):
        raise _bad(f'<mark name="{el.get("name")}"> must be empty (<mark name="..."/>): '
                   'it has content')


def _date(text: str, raw: str, fmt: Optional[str]) -> str:
    """``二千二十六年十二月六日`` for a date in ``raw``, its fields in ``fmt``'s order."""
    given = fmt
    if fmt == 'yyyymmdd':
        nums = [raw[:4], raw[4:6], raw[6:]] if re.fullmatch(r'\d{8}', raw) else []
        fmt = 'ymd'
    else:
        nums = re.findall(r'\d+', raw)
    if fmt is None:
        if len(nums) == 3 and len(nums[2]) == 4 and len(nums[0]) < 4:
            raise _bad(f'<say-as interpret-as="date">: {text!r} has its year last: give '
                       'format="dmy" or format="mdy" (its day and month could be either '
                       'way round)')
        if len(nums) not in (2, 3):
            raise _bad(f'<say-as interpret-as="date">: cannot read {text!r} as a date')
        # 12/6 is a month and day, 2026/12 a year and month.
        fmt = 'ymd'[-len(nums):] if len(nums[0]) < 4 else 'ymd'[:len(nums)]
    if len(nums) != len(fmt):
        raise _bad(f'<say-as interpret-as="date" format="{given or fmt}">: {text!r} does '
                   f'not have {len(fmt)} number(s)')
    fields = {unit: int(n) for unit, n in zip(fmt, nums)}
    year, month, day = fields.get('y', 2000), fields.get('m', 1), fields.get('d', 1)
    # Without a year, a leap one: 2/29 is a date. There is no year 0 (1 BC comes first).
    last = calendar.monthrange(year, month)[1] if 1 <= month <= 12 else 0
    if year < 1 or not 1 <= month <= 12 or not 1 <= day <= (last if 'm' in fields else 31):
        raise _bad(f'<say-as interpret-as="date">: {text!r} is not a date (' +
                   ', '.join(f'{_DATE_FIELD[u]} {fields[u]}' for u in 'ymd' if u in fields)
                   + ')')
    return ''.join(cardinal(fields[u]) + _DATE_UNIT[u] for u in 'ymd' if u in fields)


def say_as(kind: str, text: str, fmt: Optional[str] = None) -> str:
    """The reading of ``<say-as interpret-as=kind format=fmt>text</say-as>``.

    ``fmt``: for a date the order of its fields (:data:`DATE_FORMATS`, as Amazon Polly
    and Azure take them; without it ``2026/12/6``, ``12/6`` or ``2026/12``); for a time
    ``hms24`` or ``hms12`` (the time's own 午前/午後/AM/PM is read either way); no other
    kind takes one. Returns kanji/katakana.

    Raises:
        InputError: ``bad_ssml`` for an unknown kind or format, or text that is not of
            that kind (an impossible date, a year 0).
    """
    raw = compat_normalize(text).strip()
    formats = {'date': DATE_FORMATS, 'time': TIME_FORMATS}.get(kind, ())
    if fmt is not None and fmt not in formats:
        raise _bad(f'<say-as interpret-as="{kind}" format="{fmt}">: ' + (
            f'use one of {", ".join(formats)}' if formats else
            'format is taken by date and time only'))
    if kind in ('characters', 'spell-out'):
        return keep(''.join(english.spell(c) if c.isascii() and c.isalpha() else
                            digits(c) if c.isdigit() else c for c in raw))
    nums = re.findall(r'\d+', raw)
    if kind == 'digits' and nums:  # 'abc' was read as nothing
        return keep(digits(''.join(nums), PHONE_KANA))
    if kind == 'telephone' and re.fullmatch(r'(?:〒\s*|\+\d{1,3}[- ]?)?[\d\-() ]*\d[\d\-() ]*',
                                            raw):
        return keep(phone_reading(raw))
    if kind in ('cardinal', 'number') and re.fullmatch(r'-?\d{1,3}(?:,\d{3})*|-?\d+', raw):
        value = raw.lstrip('-').replace(',', '').lstrip('0') or '0'
        if len(value) > MAX_CARDINAL_DIGITS:
            raise _bad(f'<say-as interpret-as="{kind}">: {len(value)} digits, more than '
                       f'{MAX_CARDINAL_DIGITS} (interpret-as="digits" reads them one by one)')
        sign = 'マイナス' if raw.startswith('-') and value != '0' else ''  # -0 is zero
        return keep(sign + cardinal(int(value)))
    if kind == 'date':
        return keep(_date(text, raw, fmt))
    if kind == 'time':
        # As plain text reads a clock time, 午前/午後 and a.m./p.m. included (they were
        # dropped: 午後2:30 read 二時三十分).
        reading = clock_reading(raw)
        m = _KANJI_TIME_RE.fullmatch(raw)
        if reading is None and m:  # 午後2時30分: its 午後 was dropped too
            reading = time_reading(int(m.group(2)), int(m.group(3) or 0),
                                   int(m.group(4)) if m.group(4) else None, m.group(1) or '')
        if reading:
            return keep(reading)
    if kind not in ('characters', 'spell-out', 'digits', 'telephone', 'cardinal', 'number',
                    'date', 'time'):
        raise _bad(f'<say-as interpret-as="{kind}"> is not supported (characters, digits, '
                   'telephone, date, time, cardinal)')
    article = '' if kind.endswith('s') else 'a '
    raise _bad(f'<say-as interpret-as="{kind}">: cannot read {text!r} as {article}{kind}')


def parse(text: str) -> list:
    """Parse an SSML document into :class:`Piece` objects, in order.

    Raises:
        InputError: ``bad_ssml`` naming the problem (syntax error with line and column,
            unsupported element or attribute value, entity declarations).
    """
    try:
        root = SafeET.fromstring(text.strip())
    except ParseError as exc:
        raise _bad(str(exc)) from None
    except DefusedXmlException as exc:
        raise _bad(f'{type(exc).__name__}: entity and DTD declarations are refused') \
            from None
    # The W3C namespace (<speak xmlns="http://www.w3.org/2001/10/synthesis">, as SSML
    # writers emit it) names the same elements; any other namespace is not supported.
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag.startswith(_SSML_NS):
            el.tag = el.tag[len(_SSML_NS):]
    if root.tag != 'speak':
        raise _bad(f'the root element must be <speak>, not <{root.tag}>')
    pieces = [Piece('')]

    def add(txt: Optional[str], rate: float) -> None:
        if not txt:
            return
        if pieces[-1].rate != rate or pieces[-1].pause_after is not None:
            pieces.append(Piece('', rate))
        pieces[-1].text += txt

    def walk(el, rate: float) -> None:
        add(el.text, rate)
        for child in el:
            tag = child.tag
            if tag == 'break':
                pause = _break_s(child)
                if len(pieces) > 1 and not pieces[-1].text.strip():
                    pieces.pop()  # only blanks since the last break: the breaks add up
                if pieces[-1].text.strip():
                    pieces[-1].pause_after = (pieces[-1].pause_after or 0.0) + pause
            elif tag in ('sub', 'say-as') and len(child):
                # Their content is read as one (an alias, a reading): markup inside was
                # flattened away unheard (a break, a mark, an unknown tag).
                raise _bad(f'<{tag}> takes text only, not <{child[0].tag}>')
            elif tag == 'sub':
                if child.get('alias') is None:
                    raise _bad('<sub> needs an alias attribute')
                add(child.get('alias'), rate)
            elif tag == 'say-as':
                kind = child.get('interpret-as')
                if kind is None:
                    raise _bad('<say-as> needs an interpret-as attribute')
                add(say_as(kind, ''.join(child.itertext()), child.get('format')), rate)
            elif tag == 'prosody':
                # Nested rates multiply; the product must stay in the range one tag may
                # ask for: ten nested x-slow asked for 1/1024 of the rate, an utterance
                # of one kana that the engine would have made minutes long.
                other = sorted(a for a in set(child.attrib) - {'rate'}
                               if not a.startswith(_XML_NS))  # xml:lang is no prosody
                if other:  # refused as when rate is missing, not dropped unheard
                    raise _bad(f'<prosody {other[0]}> is not supported (rate only)')
                inner = rate * _rate(child.get('rate'))
                if not RATE_RANGE[0] <= inner <= RATE_RANGE[1]:
                    raise _bad(f'nested <prosody> rates combine to {inner:.4g}, outside '
                               f'{RATE_RANGE[0]}..{RATE_RANGE[1]}')
                walk(child, inner)
            elif tag == 'mark':
                _check_mark(child)
            elif tag in ('p', 's'):
                walk(child, rate)
                if not pieces[-1].text.rstrip().endswith(_SENTENCE_ENDS):
                    add('。', rate)  # not a second one: <s>…。</s> said 。。 in the result
            else:
                raise _bad(f'<{tag}> is not supported (speak, break, sub, say-as, prosody, '
                           'p, s, mark)')
            add(child.tail, rate)

    walk(root, 1.0)
    return [p for p in pieces if p.text.strip() or p.pause_after]
