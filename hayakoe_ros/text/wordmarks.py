# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The words, sentences and SSML marks of an utterance's segments (no ROS imports).

:func:`annotate` is the last step of :func:`~.pipeline.prepare`: it aligns the caller's
text with the front end's output (:mod:`.offsets`), runs Open JTalk's front end on each
segment (what the voice itself will run) and groups its NJD words into :class:`Word`
objects: NJD words, except that those of one front-end reading (or of one ``<sub>``) are
one word, and a number keeps its counter (``3〜5個``, ``1,234台``). Punctuation and
whitespace belong to no word. Each word's phonemes come from its NJD pronunciation
(:func:`pron_phonemes`), so no labels are made (``make_label`` costs three times
``run_frontend``).
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata

from ..engines import openjtalk_guard
from . import offsets, ssml_offsets
from .kana_phonemes import VOWELS as _VOWELS, cached_phonemes as _phonemes, pron_phonemes
from .segment import _SENTENCE_END_RE, split_sentences
from .wordtypes import SsmlMark, Word

def _run_frontend(text: str) -> list:
    """Open JTalk's NJD features of one segment's text.

    A segment is what the voice itself is handed in one call, so it is within
    :mod:`~hayakoe_ros.engines.openjtalk_guard`'s limits; they are checked here anyway
    (cheaply: by length, and with the guard's own patterns), and anything outside them goes
    through the guard's cutting into pieces.
    """
    if len(text) * 4 <= openjtalk_guard.MAX_CALL_BYTES and not openjtalk_guard.repeats(text) \
            and not openjtalk_guard.break_kana_runs(text)[1]:
        import pyopenjtalk

        return pyopenjtalk.run_frontend(text)
    return openjtalk_guard.run_frontend(text)


@dataclasses.dataclass
class _Group:
    start: int
    end: int
    phonemes: list
    number: bool
    first: int = 0   # its characters in the segment's text: [first, last)
    last: int = 0


def _nodes(text: str) -> list:
    """Open JTalk's NJD words of ``text``: ``[start, end, phonemes, number, counter]`` each.

    A word is found in ``text`` by its spelling (NFKC); one that is not (Open JTalk writes
    一〇 as 十) takes the characters between the words found before and after it.
    """
    norm = unicodedata.normalize('NFKC', text)
    if len(norm) != len(text):  # keep offsets: only what NFKC maps one to one
        norm = ''.join(c if len(unicodedata.normalize('NFKC', c)) != 1
                       else unicodedata.normalize('NFKC', c) for c in text)
    nodes: list = []
    lost: list = []   # words not found since the last one found
    pos = 0
    vowel = ''
    for feat in _run_frontend(text):
        word = unicodedata.normalize('NFKC', feat['string'])
        start = norm.find(word, pos, pos + len(word) + 4) if word else -1
        phonemes = list(_phonemes(feat.get('pron') or '', vowel))
        # What a leading ー lengthens: the last mora said, none after a pause (punctuation).
        vowel = next((p for p in reversed(phonemes) if p.lower() in _VOWELS or p in ('N', 'cl')),
                     '' if not phonemes else vowel)
        node = [start, start + len(word), phonemes, feat.get('pos_group1') == '数',
                feat.get('pos_group1') == '接尾']
        if start < 0:
            lost.append(node)
            continue
        _place(lost, pos, start, nodes)
        nodes.append(node)
        pos = node[1]
    _place(lost, pos, len(text), nodes)
    return nodes


def _place(lost: list, start: int, end: int, nodes: list) -> None:
    """Give words not found in the text the characters ``start:end`` between found ones."""
    if not lost:
        return
    if end > start:
        node = [start, end, [p for n in lost for p in n[2]], any(n[3] for n in lost),
                lost[0][4]]
        nodes.append(node)
    elif nodes:
        nodes[-1][2].extend(p for n in lost for p in n[2])
    else:
        nodes.append([start, start, [p for n in lost for p in n[2]], False, False])
    lost.clear()


def _njd_words(text: str, spans: list, source: str, is_ssml: bool) -> list:
    """The :class:`_Group` words of one segment's text, ``spans`` its characters' spans.

    ``source``: the caller's text that ``spans`` index (``is_ssml``: markup), for
    :func:`_by_source_word`.
    """
    groups: list = []
    pending: list = []  # phonemes of words with no place in the text, for the next word
    for start, end, phonemes, is_num, counter in _nodes(text):
        if not phonemes:
            if groups:
                groups[-1].number = False  # punctuation ends a number
            continue
        if end <= start or start >= len(spans):
            if groups:
                groups[-1].phonemes.extend(phonemes)
            else:
                pending.extend(phonemes)
            continue
        real = [s for s in spans[start:end] if s[1] > s[0]]
        s, e = (real[0][0], real[-1][1]) if real else (spans[start][0], spans[start][0])
        last = groups[-1] if groups else None
        if last is not None and (s < last.end or s == e or (last.number and (
                is_num or counter))):
            last.end = max(last.end, e)
            last.phonemes.extend(phonemes)
            last.number = last.number or is_num
            last.last = max(last.last, min(end, len(spans)))
            continue
        groups.append(_Group(s, e, pending + phonemes, is_num, start, min(end, len(spans))))
        pending = []
    if pending and groups:
        groups[-1].phonemes.extend(pending)
    return [part for g in groups for part in _by_source_word(g, text, spans, source, is_ssml)]


def _between_words(text: str, spans: list, i: int, source: str, is_ssml: bool) -> bool:
    """Whether a blank of the caller's parts ``text[i - 1]`` from ``text[i]``.

    Only between two sources of which one at least is a rewrite (an English word read in
    katakana), never between copied kana.
    """
    (a, b), (c, d) = spans[i - 1], spans[i]
    if not a < b < c < d:
        return False
    gap = source[b:c]
    if is_ssml:
        gap = _TAG_RE.sub('', gap)
    return gap.isspace() and (source[a:b] != text[i - 1] or source[c:d] != text[i])


def _by_source_word(group: _Group, text: str, spans: list, source: str,
                    is_ssml: bool) -> list:
    """``group`` cut where its characters come from source words apart, or ``[group]``.

    English words read as one run (``are you today`` -> アーユートゥデイ) come as
    katakana that Open JTalk cuts where it likes (ア, ーユートゥデイ), so one NJD word spans
    several of them. Its characters' spans tell the source words apart (a blank between
    two rewritten words, :func:`_between_words`; a katakana word is never cut, whatever
    invisible character or tag splits it); each part takes as many of the group's phonemes
    as its own kana say. Kept whole when those counts do not add up.
    """
    cuts = [i for i in range(group.first + 1, group.last)
            if _between_words(text, spans, i, source, is_ssml)]
    if not cuts:
        return [group]
    bounds = [group.first] + cuts + [group.last]
    counts, before = [], ''
    for a, b in zip(bounds, bounds[1:]):
        said = pron_phonemes(text[a:b], before)
        counts.append(len(said))
        before = next((p for p in reversed(said) if p.lower() in _VOWELS), before)
    if sum(counts) != len(group.phonemes) or 0 in counts:
        return [group]
    parts, at = [], 0
    for (a, b), n in zip(zip(bounds, bounds[1:]), counts):
        parts.append(_Group(spans[a][0], spans[b - 1][1], group.phonemes[at:at + n],
                            group.number, a, b))
        at += n
    return parts


def _locate(texts: list, haystack: str, start: int) -> list:
    """Where consecutive ``texts`` are in ``haystack`` from ``start``.

    Returns:
        Per text, the index in ``haystack`` of each of its characters (a ``range`` where it
        is a substring), or None where it cannot be found. The segmenter joins a fragment
        with nothing speakable to the next sentence without the whitespace between, so a
        text may also be found with whitespace of ``haystack`` skipped.
    """
    out: list = []
    pos = start
    for text in texts:
        at = haystack.find(text, pos) if text else -1
        if at >= 0 and not haystack[pos:at].strip():
            out.append(range(at, at + len(text)))
            pos = at + len(text)
            continue
        found = []
        i = pos
        for ch in text:
            while i < len(haystack) and haystack[i] != ch and haystack[i].isspace():
                i += 1
            if i >= len(haystack) or haystack[i] != ch:
                break
            found.append(i)
            i += 1
        if len(found) == len(text) and text:
            out.append(found)
            pos = i
        else:
            out.append(None)
    return out


def _at(char_spans: list, where) -> list:
    if isinstance(where, range):
        return char_spans[where.start:where.stop]
    return [char_spans[i] for i in where]


def _ends_sentence(text: str) -> bool:
    return any(m.end() == len(text) for m in _SENTENCE_END_RE.finditer(text))


def _span(spans: list) -> tuple:
    real = [s for s in spans if s[1] > s[0]]
    if real:
        return real[0][0], max(s[1] for s in real)
    return (spans[0][0], spans[0][0]) if spans else (0, 0)


def _trimmed(text: str, start: int, stop: int, is_ssml: bool) -> tuple:
    """``[start, stop)`` without the blanks at its ends (and, in SSML, tags after its end).

    A word's span reached over the blank after it (``123 です``: ``'123 '``; in SSML
    ``123</say-as> ``): a caption showed the blank. Blanks belong to no word.
    """
    lo, hi = start, stop
    while hi > lo:
        if text[hi - 1].isspace():
            hi -= 1
        elif is_ssml and text[hi - 1] == '>' and text.rfind('<', lo, hi) > lo:
            hi = text.rfind('<', lo, hi)  # a closing tag after the word's last character
        else:
            break
    while lo < hi and text[lo].isspace():
        lo += 1
    return (lo, hi) if hi > lo else (start, stop)


_BREAK_RE = re.compile(r'<break\b')


_TAG_RE = re.compile(r'<[^>]*>')


def annotate(text: str, is_ssml: bool, outputs: list, segments: list) -> list:
    """Fill ``words``, ``sentence`` and ``marks`` of an utterance's segments.

    Args:
        text: The text exactly as the caller sent it (SSML: the markup).
        is_ssml: Whether it was read as SSML.
        outputs: ``(normalized, n)`` per piece that gave segments, in order: the front
            end's output for the piece (no-cut marks included) and how many consecutive
            segments of ``segments`` came from it.
        segments: The utterance's segments (``sum(n) == len(segments)``).

    Returns:
        New segments, texts and boundaries unchanged. Never raises for any input that
        :func:`~.pipeline.prepare` accepted: a segment whose text cannot be found in the
        output (none known) gets no words.
    """
    if is_ssml:
        source, spans, marks = ssml_offsets.ssml_source(text)
    else:
        (source, spans), marks = offsets.plain_source(text), []
    plain, char_spans = offsets.align(source, spans, ''.join(out for out, _ in outputs))
    out_segments: list = []
    words_at: list = []      # (segment index, word)
    sentences: list = []     # [span, first segment index, ends]
    base = 0
    seg_index = 0
    for normalized, count in outputs:
        sents = [re.sub('[\ue000\ue001]', '', s) for s in split_sentences(normalized)]
        sent_at = _locate(sents, plain, base)
        segs = segments[seg_index:seg_index + count]
        seg_at = _locate([s.text for s in segs], plain, base)
        # Sentences and segments both lie in text order: the first segment of each
        # sentence is found moving forward (a scan of every segment per sentence took
        # 6.7 s of a 100,000-character text's 9 s preparation).
        ahead = 0
        for si, (sent, where) in enumerate(zip(sents, sent_at)):
            if not where:
                continue
            span = _span(_at(char_spans, where))
            ends = _ends_sentence(sent)
            if si == 0 and sentences and not sentences[-1][2]:
                # A break or a rate change inside a sentence: the same sentence goes on.
                prev = sentences[-1]
                prev[0] = (prev[0][0], max(prev[0][1], span[1]))
                prev[2] = ends
                continue
            while ahead < len(seg_at) and (not seg_at[ahead] or seg_at[ahead][0] < where[0]):
                ahead += 1
            first = seg_index + ahead if ahead < len(seg_at) and \
                seg_at[ahead][0] <= where[-1] else None
            if first is not None:
                sentences.append([span, first, ends])
        for k, (seg, where) in enumerate(zip(segs, seg_at)):
            groups = _njd_words(seg.text, _at(char_spans, where), text,
                                is_ssml) if where else []
            words_at.extend((seg_index + k, g) for g in groups)
        base += len(normalized) - normalized.count('\ue000') - normalized.count('\ue001')
        seg_index += count
    per_segment: list = [[] for _ in segments]
    end = 0
    last = None  # (segment, position) of the word before
    for index, g in words_at:
        start = max(g.start, end)
        start, stop = _trimmed(text, start, max(g.end, start), is_ssml)
        value = text[start:stop]
        if is_ssml and '<' in value:  # a word across a tag: 1234567</say-as>個 is 1234567個
            value = _TAG_RE.sub('', value)
        if start == stop and g.start < end and last is not None:
            # More of the word before (its reading cut into segments): that one goes on.
            i, k = last
            per_segment[i][k] = dataclasses.replace(per_segment[i][k], continues=True)
        per_segment[index].append(Word(start, stop, value, tuple(g.phonemes)))
        last = (index, len(per_segment[index]) - 1)
        end = stop
    seg_marks: list = [[] for _ in segments]
    flat = [(i, k, w) for i, ws in enumerate(per_segment) for k, w in enumerate(ws)]
    # A <break> between a mark and the next word: the mark stands before the pause, at
    # the end of the words before it (it was stamped after the pause, with the next
    # word, and never published when a cancel came during the pause).
    breaks = [m.start() for m in _BREAK_RE.finditer(text)] if marks else []
    for name, start, stop in marks:
        hit = next(((i, k, w) for i, k, w in flat if w.start >= stop), None)
        before = None
        if hit is not None and any(stop <= b < hit[2].start for b in breaks):
            before = next((i for i, _, w in reversed(flat) if w.end <= start), None)
        if before is not None:
            i, k = before, len(per_segment[before])
        elif hit is not None:
            i, k = hit[0], hit[1]
        else:
            i, k = len(segments) - 1, len(per_segment[-1])
        seg_marks[i].append(SsmlMark(name, start, stop, k))
    sentence_of = {first: tuple(span) for span, first, _ in sentences}
    for i, seg in enumerate(segments):
        out_segments.append(dataclasses.replace(
            seg, words=tuple(per_segment[i]), sentence=sentence_of.get(i),
            marks=tuple(seg_marks[i])))
    return out_segments
