# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""SSML as a source for :func:`.offsets.align`: its spoken text, with offsets into the markup.

ElementTree keeps no offsets, so the markup that :func:`.ssml.parse` accepted is scanned
again here, token by token (tags, entity references, CDATA, comments).
"""

from __future__ import annotations

import html
import re
import unicodedata

from . import offsets
from .checks import _ANSI_RE


def clean_index(text: str) -> tuple:
    """:func:`~.checks.strip_control` of ``text``, and where each of its characters came from.

    Returns:
        ``(cleaned, index)``: ``index[i]`` is the ``(start, end)`` span in ``text`` of
        ``cleaned[i]`` (a CR LF pair is one character, a line feed).
    """
    kept: list = []
    pos = 0
    for m in list(_ANSI_RE.finditer(text)) + [None]:
        end = m.start() if m is not None else len(text)
        kept.extend((text[i], i) for i in range(pos, end))
        pos = m.end() if m is not None else end
    out: list = []
    index: list = []
    k = 0
    while k < len(kept):
        ch, i = kept[k]
        if ch == '\r':
            if k + 1 < len(kept) and kept[k + 1][0] == '\n':
                k += 1
            out.append('\n')
            index.append((i, kept[k][1] + 1))
        elif ch == '\t':
            out.append(' ')
            index.append((i, i + 1))
        elif ch == '\n' or unicodedata.category(ch) not in offsets.CONTROL:
            out.append(ch)
            index.append((i, i + 1))
        k += 1
    return ''.join(out), index


# Markup tokens, in the order tried: comment, CDATA, processing instruction, DOCTYPE,
# element tag (closing?, name, attributes, self-closing?), entity or character reference.
_TOKEN_RE = re.compile(
    r'<!--.*?-->|<!\[CDATA\[(?P<cdata>.*?)\]\]>|<\?.*?\?>'
    r'|<!DOCTYPE[^\[>]*(?:\[.*?\])?\s*>'
    r'|<(?P<close>/?)(?P<tag>[^\s/>]+)(?P<attrs>(?:[^>"\']|"[^"]*"|\'[^\']*\')*?)(?P<empty>/?)>'
    r'|&(?P<ref>#x[0-9a-fA-F]+|#[0-9]+|[A-Za-z][\w.-]*);', re.S)
_ATTR_RE = re.compile(r'([^\s=]+)\s*=\s*(?:"([^"]*)"|\'([^\']*)\')')


def attributes(attrs: str) -> dict:
    """A tag's attributes (the text after its name), entity references decoded."""
    return {m.group(1): html.unescape(m.group(2) if m.group(2) is not None else m.group(3))
            for m in _ATTR_RE.finditer(attrs)}


def ssml_source(text: str) -> tuple:
    """``(source, spans, marks)`` for SSML that :func:`.ssml.parse` accepted.

    Spans and marks are offsets into ``text`` as the caller sent it (before control
    characters were removed). ``marks``: ``(name, start, end)`` of every ``<mark>`` tag, in
    order. A ``<p>``/``<s>`` adds the ``。`` that the parser adds, with an empty span.
    """
    cleaned, index = clean_index(text)
    lead = len(cleaned) - len(cleaned.lstrip())
    markup = cleaned.strip()
    index = index[lead:lead + len(markup)]

    def at(i: int) -> int:  # offset in ``text`` of markup position ``i`` (may be the end)
        if i < len(index):
            return index[i][0]
        return index[-1][1] if index else 0

    chars: list = []
    spans: list = []
    marks: list = []
    stack: list = []   # (tag, content start in markup, attributes)
    silent = False     # inside <sub>/<say-as>, whose text is not spoken as written
    pos = 0

    def text_run(a: int, b: int) -> None:
        if not silent and stack:
            for i in range(a, b):
                offsets.add(chars, spans, markup[i], index[i])

    for m in _TOKEN_RE.finditer(markup):
        text_run(pos, m.start())
        pos = m.end()
        if m.group('ref') is not None:
            if not silent and stack:
                offsets.add(chars, spans, html.unescape(m.group(0)), (at(m.start()), at(m.end())))
        elif m.group('cdata') is not None:
            text_run(m.start('cdata'), m.end('cdata'))
        elif m.group('tag') is not None:
            _tag(m, stack, at, chars, spans, marks)
            silent = any(t in ('sub', 'say-as') for t, _, _ in stack)
    text_run(pos, len(markup))
    return ''.join(chars), spans, marks


def _tag(m: re.Match, stack: list, at, chars: list, spans: list, marks: list) -> None:
    """One element tag of :func:`ssml_source`: what it adds to the source."""
    tag = m.group('tag')
    if m.group('close'):
        if not stack:
            return
        name, begin, attrs = stack.pop()
        span = (at(begin), at(m.start()))
        outer = any(t in ('sub', 'say-as') for t, _, _ in stack)
        if outer:
            return
        if span[0] == span[1]:
            span = (at(begin), at(m.end()))
        if name == 'sub':
            offsets.add(chars, spans, attrs.get('alias', ''), span)
        elif name == 'say-as':
            chars.append(offsets.OPAQUE)
            spans.append(span)
        elif name in ('p', 's'):
            chars.append('。')
            spans.append((span[1], span[1]))
        return
    attrs = attributes(m.group('attrs'))
    inside = any(t in ('sub', 'say-as') for t, _, _ in stack)
    if tag == 'mark' and not inside:
        marks.append((attrs.get('name', ''), at(m.start()), at(m.end())))
    if m.group('empty'):
        if tag == 'sub' and not inside:
            offsets.add(chars, spans, attrs.get('alias', ''), (at(m.start()), at(m.end())))
        return
    stack.append((tag, m.end(), attrs))
