# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The Japanese text front end: a client's text to synthesis segments (no ROS imports).

One way through it, :func:`~.pipeline.prepare`: input checks (:mod:`.checks`), SSML
(:mod:`.ssml`), readings of numbers, times, units, URLs, English, symbols, counted things
and rare characters (:mod:`.frontend`, :mod:`.numbers`, :mod:`.english`, :mod:`.symbols`,
:mod:`.counted`, :mod:`.chars`), the correction table of Open JTalk's misreads
(:mod:`.corrections`), the user dictionary (:mod:`.userdict`), then segmenting
(:mod:`.segment`, with :mod:`.words`: where every segment ends, the first one included) and
each segment's words with offsets into the caller's text (:mod:`.wordmarks`). It imports
nothing of the speech scheduling, which takes its :class:`~.segment.Segment` objects.
"""

from .pipeline import prepare, reading
from .segment import Boundary, InputError, Segment, SsmlMark, Word, prepare_text, segment
from .userdict import UserDictionary, UserDictionaryError

__all__ = ['Boundary', 'InputError', 'Segment', 'SsmlMark', 'UserDictionary',
           'UserDictionaryError', 'Word', 'prepare', 'prepare_text', 'reading', 'segment']
