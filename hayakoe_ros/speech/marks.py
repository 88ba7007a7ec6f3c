# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speech marks of one segment: sentences, words, phonemes, visemes, SSML marks (no ROS).

The engine times every phoneme of the audio it returns (:class:`~.engines.base.Phone`,
sample offsets into the segment's own audio); the text front end says which words of the
caller's text the segment speaks (:class:`~.text.segment.Word`, with their phonemes).
:func:`segment_marks` puts the two together on the utterance's sample axis: the segment's
raw sample 0 lies at ``offset`` in the published stream (its own leading silence was cut,
a lead-in padded, a join crossfaded: :class:`.segment_audio.SegmentAudio` says where), so
each mark's position is where its first sample is published. The scheduler releases a
mark with the chunk that holds that sample (:mod:`.track`).

Words are aligned to the engine's phonemes by their phoneme sequences
(:func:`align_words`): both voices read through Open JTalk's g2p, so the sequences agree
but for rare differences (devoiced vowels are compared without their case), which the
alignment skips over.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Optional, Sequence

import numpy as np

#: Kinds of mark within an utterance (between its ``start`` and ``end``, which the node
#: adds).
KINDS = ('sentence', 'word', 'phoneme', 'viseme', 'ssml')

#: Kinds of mark that last (a ``duration``); the others are points in time.
TIMED = frozenset({'word', 'phoneme', 'viseme'})

#: Phonemes of no sound of their own: the edges of a call and pauses at punctuation.
SILENT = frozenset({'sil', 'pau'})

#: Level (linear full scale) at which a word after silence is heard to start: -50 dBFS,
#: above the Open JTalk voice's pauses (their peaks stay under -58 dBFS, measured) and
#: below the start of any speech sound.
WORD_ONSET_LEVEL = 10.0 ** (-50.0 / 20.0)

#: Viseme of each phoneme class, a small set suited to Japanese: the five vowels, closed
#: lips, the moraic nasal and silence. Consonants other than the lips' take the viseme
#: of the vowel after them (the mouth is already shaping it), so a mora is one viseme.
VOWEL_VISEMES = {'a': 'a', 'i': 'i', 'u': 'u', 'e': 'e', 'o': 'o'}
#: Bilabials: the lips close (ま, ぱ, ば rows).
CLOSED = frozenset({'m', 'my', 'p', 'py', 'b', 'by'})


@dataclasses.dataclass(frozen=True)
class Mark:
    """One speech mark of an utterance, on its sample axis.

    Attributes:
        kind: ``sentence``, ``word``, ``phoneme``, ``viseme`` or ``ssml``.
        position: Samples from the utterance's first published sample to the mark's.
        duration: Samples it lasts (word, phoneme, viseme; 0 for the others).
        start: Offset into the caller's text (sentence, word, ssml), else -1.
        end: One past its last character there, else -1.
        value: The word's spelling, the phoneme, the viseme or the mark's name.
        continues: A word whose reading goes on in the next word mark
            (:attr:`~hayakoe_ros.text.wordtypes.Word.continues`): not heard by itself.
    """

    kind: str
    position: int
    duration: int = 0
    start: int = -1
    end: int = -1
    value: str = ''
    continues: bool = False


def viseme(symbol: str) -> Optional[str]:
    """The viseme of one phoneme; None for a consonant that takes its vowel's.

    ``a i u e o`` (devoiced ``A I U E O`` likewise), ``closed`` (m, p, b and their
    palatalised forms), ``N`` (the moraic nasal), ``sil`` (``pau``, ``sil``).
    """
    if symbol in SILENT:
        return 'sil'
    if symbol == 'N':
        return 'N'
    if symbol in CLOSED:
        return 'closed'
    return VOWEL_VISEMES.get(symbol.lower())


def _visemes(spans: list) -> list:
    """``(viseme, start, end)`` from ``(symbol, start, end)``: consonants join their vowel.

    Consecutive equal visemes are merged into one.
    """
    out: list = []
    pending: Optional[int] = None  # start of consonants waiting for their vowel
    for symbol, start, end in spans:
        vis = viseme(symbol)
        if vis is None:
            pending = start if pending is None else pending
            continue
        if pending is not None:
            start, pending = pending, None
        if out and out[-1][0] == vis and out[-1][2] >= start:
            out[-1] = (vis, out[-1][1], end)
        else:
            out.append((vis, start, end))
    if pending is not None and out:  # consonants with no vowel after them (rare)
        vis, start, _ = out[-1]
        out[-1] = (vis, start, spans[-1][2])
    return out


def _fold(symbol: str) -> str:
    # Devoiced vowels are upper case in Open JTalk's set; whether a vowel is devoiced
    # depends on context, which a word alone does not have.
    return symbol.lower()


def align_words(words: Sequence, phones: Sequence) -> list:
    """Which of ``phones`` each word speaks: ``(first, last)`` indices, or None.

    Args:
        words: The segment's :class:`~hayakoe_ros.text.segment.Word` objects.
        phones: The engine's :class:`~hayakoe_ros.engines.base.Phone` objects.

    Returns:
        One entry per word: ``(first, last)`` indices into ``phones`` (inclusive) of the
        phonemes matched to it, or None when none of its phonemes were found.
    """
    ours: list = []
    owner: list = []
    for i, word in enumerate(words):
        for symbol in word.phonemes:
            if symbol not in SILENT:
                ours.append(_fold(symbol))
                owner.append(i)
    spoken = [j for j, p in enumerate(phones) if p.symbol not in SILENT]
    theirs = [_fold(phones[j].symbol) for j in spoken]
    found: list = [None] * len(words)
    matcher = difflib.SequenceMatcher(None, ours, theirs, autojunk=False)
    for a, b, size in matcher.get_matching_blocks():
        for k in range(size):
            i, j = owner[a + k], spoken[b + k]
            first, last = found[i] if found[i] is not None else (j, j)
            found[i] = (min(first, j), max(last, j))
    return found


def _heard_from(phone, audio: Optional[np.ndarray]) -> int:
    """Samples into ``phone`` before its first sound above :data:`WORD_ONSET_LEVEL`.

    0 when its audio is not at hand (a later window) or it has no such sound.
    """
    if audio is None:
        return 0
    part = np.abs(audio[phone.start:min(phone.end, audio.size)])
    loud = np.flatnonzero(part > WORD_ONSET_LEVEL)
    return int(loud[0]) if loud.size else 0


def segment_marks(seg, phones: Sequence, offset: int, floor: int,
                  audio: Optional[np.ndarray] = None, limit: Optional[int] = None) -> list:
    """The marks of one segment, on the utterance's sample axis, in time order.

    Phonemes and visemes start where the engine's durations put them. A word starts with
    its first phoneme, except after silence (a pause, the segment's start), where it starts
    at that phoneme's first sound above :data:`WORD_ONSET_LEVEL` when the audio is at hand:
    a stop's closure after silence is itself silent (Open JTalk's /k/ after a pause: 60 ms
    of it), and a caption should show a word when it is heard.

    Args:
        seg: The :class:`~hayakoe_ros.text.segment.Segment` (its ``words``, ``sentence``
            and ``marks``).
        phones: The engine's :class:`~hayakoe_ros.engines.base.Phone` objects for its
            audio (sample offsets into the audio the engine returned).
        offset: Where the engine's sample 0 lies in the utterance's published stream
            (samples; negative when leading silence was cut).
        floor: The stream position of the segment's first published sample: nothing of
            it is placed earlier.
        audio: The engine's float32 audio of the segment as far as it has come
            ``(samples,)`` (the first window when it is decoded in windows), or None.
        limit: The stream position one past the segment's last published sample, when
            known (a segment in one window): nothing of it is placed later. Its own
            trailing silence is cut at -40 dBFS, and with it the quiet end of a devoiced
            vowel (です, ます), which the engine's durations still count: the last word ran
            34-60 ms past the audio.

    Returns:
        :class:`Mark` objects sorted by position (ties: sentence, ssml, word, viseme,
        phoneme), positions >= ``floor``.
    """
    spans = [(p.symbol, int(max(floor, offset + p.start)), int(max(floor, offset + p.end)))
             for p in phones if p.symbol != 'sil']
    marks: list = []
    for symbol, start, end in spans:
        if end > start:
            marks.append(Mark('phoneme', start, end - start, value=symbol))
    for vis, start, end in _visemes(spans):
        if end > start:
            marks.append(Mark('viseme', start, end - start, value=vis))
    words = tuple(seg.words)
    where = align_words(words, phones)
    speech = [s for s in spans if s[0] not in SILENT]
    cursor = speech[0][1] if speech else floor
    word_at: list = []
    for word, found in zip(words, where):
        if found is None:  # nothing of it was heard as such (an emoji): a point in time
            start = end = cursor
        else:
            head = phones[found[0]]
            after_silence = found[0] == 0 or phones[found[0] - 1].symbol in SILENT
            start = int(max(floor, offset + head.start
                            + (_heard_from(head, audio) if after_silence else 0)))
            end = int(max(start, offset + phones[found[1]].end))
            cursor = end
        word_at.append(start)
        marks.append(Mark('word', start, end - start, word.start, word.end, word.value,
                          word.continues))
    seg_end = speech[-1][2] if speech else floor
    first = word_at[0] if word_at else (speech[0][1] if speech else floor)
    if seg.sentence is not None:
        marks.append(Mark('sentence', first, 0, seg.sentence[0], seg.sentence[1]))
    for mark in seg.marks:
        at = word_at[mark.before] if mark.before < len(word_at) else seg_end
        marks.append(Mark('ssml', at, 0, mark.start, mark.end, mark.name))
    if limit is not None:
        marks = list(ending_at(marks, limit))
    order = {'sentence': 0, 'ssml': 1, 'word': 2, 'viseme': 3, 'phoneme': 4}
    marks.sort(key=lambda m: (m.position, order[m.kind]))
    return marks


def marks_before(marks: Sequence, end: int) -> tuple:
    """``(due, held)``: the marks that start before stream position ``end``, and the rest.

    A segment decoded in windows hands each mark over with the window whose published
    samples hold its start, so that the marks still held when its last window (and the
    trim of its trailing silence) comes can be held to its end (:func:`ending_at`).
    """
    due = tuple(m for m in marks if m.position < end)
    return due, tuple(m for m in marks if m.position >= end)


def ending_at(marks: Sequence, limit: int) -> tuple:
    """``marks`` held to end by stream position ``limit`` (one past a segment's last sample).

    The one place a segment's end bounds its marks: :func:`segment_marks` applies it with
    its ``limit``, and the synthesis to the marks of a segment in windows, made before its
    end was known. A phoneme or viseme left with no samples is dropped; a word, sentence
    or SSML mark is moved to ``limit`` (a point in time, duration 0).
    """
    out = []
    for m in marks:
        start = min(m.position, limit)
        end = min(m.position + m.duration, limit)
        if m.kind in ('phoneme', 'viseme') and end <= start:
            continue
        out.append(m if (start, end - start) == (m.position, m.duration)
                   else dataclasses.replace(m, position=start, duration=end - start))
    return tuple(out)


def heard_ends(marks: Sequence) -> list:
    """``(sample_end, char_end)`` of each word mark, in order: what :mod:`.track` counts.

    A word counts as heard once every sample up to ``sample_end`` has been published; a
    word whose reading goes on in a later mark (:attr:`Mark.continues`) counts only with
    that last mark (a cut after a long number's first group counted all of it heard).
    """
    return [(m.position + m.duration, m.end) for m in marks
            if m.kind == 'word' and not m.continues]
