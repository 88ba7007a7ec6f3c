# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Symbols in running text: arithmetic, ``&`` ``±`` ``≒`` ``※`` ``#``, angles, dotted numbers.

Open JTalk reads none of these symbols (it keeps them as they are and says nothing). The
front end (:func:`.frontend.normalize`) calls these functions at fixed points of its order,
on text still holding ASCII digits, which its number step reads afterwards:

* :func:`equations` (before dates and ranges, so ``8/4=2`` and ``5-3=2`` are no date and
  no range): ``2+3=5`` -> 2たす3は5 (ニタスサンワゴ); ``×`` ``*`` かける, ``÷`` ``/`` わる,
  ``-`` ``−`` ひく.
* :func:`dotted` (after the year-month-day dates): ``192.168.1.10``, ``ver.2.1.3``: each
  part a number, テン between (ヒャクキュージューニテン...), ``ver``/``v`` バージョン.
* :func:`idioms` (before abbreviations): ``No.1``-``No.3`` and ``#1``-``#3`` ナンバーワン/
  ツー/スリー, as these ranks are said; other numbers ナンバー + the Japanese number.
* :func:`degrees` (after temperatures): ``45°`` -> 四十五度.
* :func:`operators` (just before plain numbers): the symbols left.

Hiragana words (たす, ひく, かける, わる) and not kanji: Open JTalk reads 割る as ワリル.
"""

from __future__ import annotations

import re

from .numbers import number

_NUM = r'\d+(?:\.\d+)?'
_OPS = {'+': 'たす', '-': 'ひく', '−': 'ひく', '×': 'かける', '*': 'かける', '÷': 'わる',
        '/': 'わる'}
_OP_CLASS = r'[+\-−×*÷/]'
_EQUATION_RE = re.compile(r'(?<![\d.,:/A-Za-z])%s(?:\s*%s\s*%s)+\s*=\s*[-−]?%s(?![\d:/])'
                          % (_NUM, _OP_CLASS, _NUM, _NUM))
_EQ_PART_RE = re.compile(r'(%s)|\s*(%s|=)\s*' % (_NUM, _OP_CLASS))

_DOTTED_RE = re.compile(r'(?<![\d.])(?:(?i:ver(?:sion)?\.?\s*|v(?=\d+\.\d)))?'
                        r'\d+(?:\.\d+){2,}(?![\d]|\.\d)')
_VERSION_RE = re.compile(r'(?<![A-Za-z])(?i:ver(?:sion)?)\.?\s*(?=\d)')
# A lower-case v before a version of one or two parts (v2, v2.1; v1.2.3 is _DOTTED_RE's).
_SHORT_VERSION_RE = re.compile(r'(?<![A-Za-z0-9])(?<!バージョン)v'
                               r'(?=\d+(?:\.\d+)?(?![\d.]|[A-Za-z]))')

_RANK = {'1': 'ナンバーワン', '2': 'ナンバーツー', '3': 'ナンバースリー'}
_RANK_RE = re.compile(r'(?<![A-Za-z.])(?:No\.|#)\s*(\d+)(?![\d.])')
_SHARP_RE = re.compile(r'(?<=[A-Za-z])#')
_HASHTAG_RE = re.compile(r'(?:(?<=\s)|^)#(?=[^\s\d#])')

_DEGREE_RE = re.compile(r'((?<![A-Za-z0-9.,])[-−–])?(%s)\s*°(?!\s*[CF](?![A-Za-z]))' % _NUM)

_BETWEEN_DIGITS = {'+': 'たす', '−': 'ひく', '×': 'かける', '÷': 'わる'}
_BETWEEN_RE = re.compile(r'(?<=\d)\s*([+−×÷])\s*(?=\d)')
#: Readings of the symbols left after numbers were read (as a Japanese announcer says them).
SYMBOLS = {'+': 'プラス', '±': 'プラスマイナス', '≒': 'ニアリーイコール', '=': 'イコール',
           '&': 'アンド', '※': 'コメ', '×': 'バツ', '÷': 'わる', '#': 'シャープ', '°': '度',
           '≠': 'ノットイコール', '≦': 'ショーナリイコール', '≧': 'ダイナリイコール',
           '<': 'ショーナリ', '>': 'ダイナリ'}
_TIMES_RE = re.compile(r'×\s*(?=\d)')
_SYMBOL_RE = re.compile('[+±≒=&※×÷#°≠≦≧]')
_COMPARE_RE = re.compile(r'(?<=\d)\s*([<>])\s*(?=\d)')


def _equation(m: re.Match) -> str:
    out = []
    for part in _EQ_PART_RE.finditer(m.group(0)):
        if part.group(1):
            out.append(part.group(1))
        else:
            out.append('は' if part.group(2) == '=' else _OPS[part.group(2)])
    return ''.join(out)


def equations(text: str) -> str:
    """``2+3=5`` -> ``2たす3は5``: an arithmetic statement, read as one is said aloud."""
    if '=' not in text:
        return text
    return _EQUATION_RE.sub(_equation, text)


def _dotted(m: re.Match, keep) -> str:
    text = m.group(0)
    head = ''
    version = _VERSION_RE.match(text) or re.match(r'v(?=\d)', text)
    if version:
        head, text = 'バージョン', text[version.end():]
    return keep(head + 'テン'.join(number(p) for p in text.split('.')))


def dotted(text: str, keep) -> str:
    """IP addresses and versions of three or more dotted parts, ``ver.`` and ``v`` before numbers.

    Args:
        text: Front-end text.
        keep: The front end's no-cut wrapper (:func:`.frontend.keep`).
    """
    if '.' in text:
        text = _DOTTED_RE.sub(lambda m: _dotted(m, keep), text)
    if 'er' in text or 'ER' in text:
        text = _VERSION_RE.sub('バージョン', text)
    if 'v' in text:
        text = _SHORT_VERSION_RE.sub('バージョン', text)
    return text


# Around the clock, as said in Japanese; as a fraction or a date it was 7分の24.
_ALWAYS_RE = re.compile(r'(?<![\d/.,])24/7(?![\d/.,])')


def idioms(text: str) -> str:
    """Symbols read as set phrases.

    ``No.2`` ナンバーツー, ``No.5`` ナンバー5, ``#3`` ナンバースリー; ``C#`` シャープ;
    ``24/7`` トゥエンティーフォーセブン.
    """
    if '24/7' in text:
        text = _ALWAYS_RE.sub('トゥエンティーフォーセブン', text)
    if 'No.' in text or '#' in text:
        text = _RANK_RE.sub(lambda m: _RANK.get(m.group(1), 'ナンバー' + m.group(1)), text)
    if '#' in text:
        text = _SHARP_RE.sub('シャープ', text)
        text = _HASHTAG_RE.sub('ハッシュタグ', text)
    return text


def degrees(text: str, keep) -> str:
    """``45°`` -> 四十五度 (an angle; ``°C`` and ``°F`` are temperatures, read before)."""
    if '°' not in text:
        return text
    return _DEGREE_RE.sub(lambda m: keep(('マイナス' if m.group(1) else '') +
                                         number(m.group(2)) + '度'), text)


def operators(text: str) -> str:
    """The symbols still in the text, read (:data:`SYMBOLS`); between digits as arithmetic.

    ``10×2`` じゅうかけるに, ``×2`` かける2, ``○×`` マルバツ, ``A&B`` エーアンドビー,
    ``±3`` プラスマイナス3, ``≒10`` ニアリーイコール10, ``※`` コメ, ``1<2`` いちしょうなりに.
    """
    if not _SYMBOL_RE.search(text) and '−' not in text and '<' not in text and '>' not in text:
        return text
    text = _BETWEEN_RE.sub(lambda m: _BETWEEN_DIGITS[m.group(1)], text)
    text = _COMPARE_RE.sub(lambda m: SYMBOLS[m.group(1)], text)
    text = _TIMES_RE.sub('かける', text)
    return _SYMBOL_RE.sub(lambda m: SYMBOLS[m.group(0)], text)


# Markdown that a language model's reply carries: the markers are layout, not words.
_MD_HEADING_RE = re.compile(r'^[ \t]{0,3}#{1,6}[ \t]+', re.M)
_MD_BULLET_RE = re.compile(r'^[ \t]*[-*+][ \t]+(?=\S)', re.M)
_MD_EMPHASIS_RE = re.compile(r'(\*\*|__)(?=\S)(.+?)(?<=\S)\1|`([^`\n]+)`')
_MD_LINK_RE = re.compile(r'\[([^\]\n]+)\]\((?:https?://|/|\.)[^)\s]*\)')


def markdown(text: str) -> str:
    """Markdown's layout marks removed, their text kept (a reply from a language model).

    ``# 手順`` -> 手順 (it was シャープテジュン), a ``- `` / ``* `` / ``+ `` bullet at a line's
    start, ``**bold**`` / ``__bold__`` and inline code in backquotes -> their text,
    ``[text](url)`` -> text. A ``#`` elsewhere (``#1``, ``C#``) and a lone ``*`` stay as they are.
    """
    if not any(ch in text for ch in '#*-+_`['):
        return text
    text = _MD_HEADING_RE.sub('', text)
    text = _MD_BULLET_RE.sub('', text)
    text = _MD_LINK_RE.sub(r'\1', text)
    return _MD_EMPHASIS_RE.sub(lambda m: m.group(2) if m.group(2) is not None
                               else m.group(3), text)
