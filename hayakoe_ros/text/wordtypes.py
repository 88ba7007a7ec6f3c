# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""What a segment tells of the caller's text: its words and SSML marks (no ROS imports).

Re-exported from :mod:`.segment`; filled in by :func:`~.pipeline.prepare`
(:mod:`.wordmarks`). Offsets are indices into the text exactly as the caller sent it
(for SSML: into the markup), in characters (Python ``str`` indices).
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Word:
    """One word a segment speaks, where it is in the caller's text, and what is said for it.

    A word is one of Open JTalk's NJD words, except that a front-end reading (a number with
    its counter, a time, a date, a phone number, a URL, a unit, a range, an English word, an
    SSML ``<sub>`` or ``<say-as>``) is one word whatever it reads as.

    Attributes:
        start: Offset of its first character in the caller's text.
        end: One past its last character (``start <= end``).
        value: ``text[start:end]`` of the caller's text (``"10:30"``, not its reading), less
            any SSML tag inside it.
        phonemes: Open JTalk phonemes of what the voice says for it, in order (pyopenjtalk
            ``g2p`` names: ``a i u e o A I U E O N cl k ky ...``; never ``pau`` or ``sil``).
        continues: Its reading goes on in the next word, an empty one (``start == end``
            at this word's end): a reading too long for one segment (a number of more
            than 20 digits, read in groups) spoken in several. The word is heard only
            once the last of them is.
    """

    start: int
    end: int
    value: str
    phonemes: tuple = ()
    continues: bool = False


@dataclasses.dataclass(frozen=True)
class SsmlMark:
    """An SSML ``<mark name="..."/>``, and the word of its segment that it precedes.

    Attributes:
        name: The mark's ``name`` (never empty).
        start: Offset of the tag's ``<`` in the SSML string as the caller sent it.
        end: One past the tag's ``>``.
        before: Index into the segment's ``words`` of the word it precedes;
            ``len(words)`` when it comes after the segment's last word.
    """

    name: str
    start: int
    end: int
    before: int
