# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""From a client's text to synthesis segments, and the reading they give (no ROS imports).

:func:`prepare` is what the node runs on every utterance before it reaches the scheduler
(:meth:`hayakoe_ros.speech.SpeechScheduler.submit` takes its segments):
SSML (when the text starts with ``<speak>``) or plain-text checks, then the front end
(:func:`.frontend.normalize`, with the user dictionary's Latin words), then segmenting.
:func:`reading` runs the same steps and Open JTalk's g2p: the katakana the node speaks.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Union

from ..engines import openjtalk_guard
from . import frontend, ssml, userdict, wordmarks
from .segment import (SPEAKABLE_RE, Boundary, InputError, SegmentRamp, prepare_text, segment,
                   strip_control)

_SENTENCE_END = tuple('。．.！!？?')
_LOG = logging.getLogger(__name__)


def _latin_words():
    active = userdict.active()
    return active.replace_latin if active is not None else None


def prepare(text: str, max_chars: int, max_segment_chars: int,
            first_segment_morae: int = 0, plain: bool = False) -> tuple:
    """Check, normalise and segment one utterance.

    Args:
        text: Raw text or SSML from a client.
        max_chars: Longest accepted text (characters, after compatibility normalisation;
            for SSML the whole markup).
        max_segment_chars: Longest segment (characters of front-end output).
        first_segment_morae: 0, or the morae after which the first segment ends, later
            segments growing toward ``max_segment_chars`` (:class:`~.segment.SegmentRamp`).
        plain: Plain text whatever it starts with (a streamed reply's later piece: a
            ``<speak>`` there is text, not markup).

    A run of one character longer than :data:`~hayakoe_ros.engines.openjtalk_guard.MAX_REPEAT`
    in the front end's output is cut to that length (one WARN per utterance names it).

    Returns:
        ``(cleaned, segments)``: the cleaned text (SSML: its spoken text) and at least one
        :class:`~.segment.Segment`; the last has boundary ``END``. Segments before an SSML
        break have boundary ``BREAK`` and ``break_s``; SSML prosody sets ``rate``. Each
        segment tells its ``words`` with offsets into ``text`` as given (SSML: into the
        markup), the first of each sentence its ``sentence`` span, and SSML ``<mark>``
        tags go to ``marks`` (:func:`.wordmarks.annotate`).

    Raises:
        InputError: ``empty``, ``too_long``, ``nothing_speakable`` or ``bad_ssml``.
    """
    latin = _latin_words()
    is_ssml = not plain and ssml.is_ssml(text)
    if is_ssml:
        markup = strip_control(text).strip()
        if len(markup) > max_chars:
            raise InputError('too_long', f'text has {len(markup)} characters; the limit is '
                             f'max_chars={max_chars}')
        pieces = ssml.parse(markup)
    else:
        pieces = [ssml.Piece(prepare_text(frontend.compat_normalize(text), max_chars))]
    segments: list = []
    outputs: list = []  # (front-end output, segments from it) per piece, for the words
    shortened: list = []
    broken = 0
    ramp = SegmentRamp(max_segment_chars, first_segment_morae)  # one per utterance
    for piece in pieces:
        # A <say-as> reading holds the no-cut marks (one word: never cut into segments).
        body = strip_control(piece.text, frontend.KEEP_OPEN + frontend.KEEP_CLOSE).strip()
        if not SPEAKABLE_RE.search(frontend.strip_marks(frontend.compat_normalize(body))):
            if piece.pause_after is not None and segments:
                last = segments[-1]
                segments[-1] = dataclasses.replace(
                    last, boundary=Boundary.BREAK,
                    break_s=(last.break_s or 0.0) + piece.pause_after)
            continue
        # What no voice may be handed (Open JTalk would crash): cut here, once, with a WARN.
        normalized, runs = openjtalk_guard.shorten_repeats(frontend.normalize(body, latin))
        normalized, kana_runs = openjtalk_guard.break_kana_runs(normalized)
        shortened.extend(runs)
        broken += kana_runs
        segs = segment(normalized, max_segment_chars, ramp)
        if not segs:
            continue
        tail = segs[-1]
        if piece.pause_after is not None:
            tail = dataclasses.replace(tail, boundary=Boundary.BREAK,
                                       break_s=piece.pause_after)
        else:
            end = Boundary.SENTENCE if tail.text.endswith(_SENTENCE_END) else Boundary.CLAUSE
            tail = dataclasses.replace(tail, boundary=end)
        segs[-1] = tail
        segments.extend(dataclasses.replace(s, rate=piece.rate) if piece.rate != 1.0 else s
                        for s in segs)
        outputs.append((normalized, len(segs)))
    if shortened:
        _LOG.warning('shortened %s to %d each: Open JTalk crashes on longer runs of one '
                     'character (text %r)', openjtalk_guard.describe_runs(shortened),
                     openjtalk_guard.MAX_REPEAT, text[:40])
    if broken:
        _LOG.warning('cut %d run(s) of more than %d kana with nothing else in them into '
                     'sentences: Open JTalk takes such a run as one word and crashes on '
                     'longer ones (text %r)', broken, openjtalk_guard.MAX_KANA_RUN, text[:40])
    if not segments:
        raise InputError('nothing_speakable', f'nothing speakable in {text[:40]!r}')
    # Breaks in a row add up (SSML has no rule against it); past one break's limit the
    # sum is a typo or an attack, not a pause: 100 breaks of 10 s fit in 2,000 characters.
    # The breaks after the last word are not heard (ignored), whatever they add up to.
    for seg in segments[:-1]:
        if seg.break_s is not None and seg.break_s > ssml.MAX_BREAK_S:
            raise InputError('bad_ssml', f'malformed SSML: <break>s in a row add up to '
                             f'{seg.break_s:g} s after {seg.text!r}, more than '
                             f'{ssml.MAX_BREAK_S:g} s')
    segments[-1] = dataclasses.replace(segments[-1], boundary=Boundary.END)
    segments = wordmarks.annotate(text, is_ssml, outputs, segments)
    # The text the pieces read (a say goal's result): <say-as> readings carry the
    # front end's no-cut marks, which are not text.
    cleaned = frontend.strip_marks(''.join(p.text for p in pieces)).strip()
    return cleaned, segments


def reading(text: str, user_dictionary: Union[str, 'userdict.UserDictionary', None] = None,
            max_segment_chars: int = 60) -> str:
    """The katakana reading the node speaks for ``text``, on one line.

    Front end, user dictionary and segmenting as in :func:`prepare`, then Open JTalk's
    g2p (``pyopenjtalk.g2p(kana=True)``) per segment, joined. Pauses appear as 、。？ etc.

    Args:
        text: Plain text or SSML.
        user_dictionary: A dictionary file path or :class:`~.userdict.UserDictionary` to
            apply first (process-wide, like the node's ``user_dictionary``); None keeps
            whatever is in force.
        max_segment_chars: As the node's parameter (cuts do not change readings).

    Raises:
        InputError: as :func:`prepare`. UserDictionaryError: a bad dictionary file.
    """
    import pyopenjtalk

    if user_dictionary is not None:
        if not isinstance(user_dictionary, userdict.UserDictionary):
            user_dictionary = userdict.UserDictionary.load(str(user_dictionary))
        userdict.apply(user_dictionary)
    _, segments = prepare(text, 10 ** 6, max_segment_chars)
    return ''.join(pyopenjtalk.g2p(s.text, kana=True) for s in segments).replace('\u3000', '')


def warmup() -> None:
    """Load what the front end needs (Open JTalk's dictionary, e2k's model: ~0.15 s).

    Called at configure so that the first utterance with an unknown English word does not
    pay for it.
    """
    prepare('Warmup robot 10:30、1,234台。', 10 ** 6, 60)


__all__ = ['prepare', 'reading', 'warmup']
