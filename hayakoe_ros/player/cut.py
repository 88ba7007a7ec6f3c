# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Which queued audio belongs to a cut utterance, and the fade that ends it (no ROS).

``tts_node`` marks each utterance on its ``marks`` topic: a ``start`` mark stamped exactly
like the utterance's first chunk, and an ``end`` mark stamped with the play time of the
sample after the last one it published. When an utterance is cut (canceled, interrupted,
aborted), the player still holds up to ``max_lead_s`` of it; :class:`~.playout.Playout`
drops that audio and ends the sound with :func:`fade_out`.

An utterance's chunks are told apart by their stamps alone (publisher's clock,
:meth:`Utterances.tag`): its first is stamped exactly at its start, each next one
continues the one before exactly. Order alone cannot tell: a new utterance's first chunk
is stamped with its publish time, which may fall before the cut one's end (the cut one
had audio published up to ``max_lead_s`` ahead), and a chunk of the cut one may still
arrive after its end mark (another topic: no order between them).
"""

from __future__ import annotations

import collections
from typing import Iterable, Optional, Tuple

import numpy as np

#: Length of the fade that ends a cut utterance's sound (s): short enough that the cut
#: is heard at once, long enough that a raised cosine over it steps by at most
#: pi / (2 * 0.005 * rate) of the signal per sample (0.007 at 48 kHz), far below a
#: voice's own sample-to-sample change, so there is no click.
FADE_S = 0.005


class Utterances:
    """The utterances that ``start`` marks announced, and which of them were cut.

    Not thread-safe: :class:`~.playout.Playout` calls it under its producer lock.
    Stamps are seconds in the publisher's clock.
    """

    #: Utterances remembered (the oldest are forgotten first): far more than the few
    #: whose chunks can be in flight or queued at once.
    KEEP = 32

    def __init__(self) -> None:
        self._next: collections.OrderedDict = collections.OrderedDict()  # start -> chain
        self._cut: collections.OrderedDict = collections.OrderedDict()   # start -> end
        self._spans: collections.deque = collections.deque(maxlen=self.KEEP)  # (lo, end)

    def begin(self, start: float) -> None:
        """A ``start`` mark: an utterance whose first chunk is stamped ``start``."""
        self._next[start] = start
        while len(self._next) > self.KEEP:
            self._next.popitem(last=False)

    def tag(self, stamp: float, seconds: float, rate: int) -> Optional[float]:
        """The start of the utterance a chunk belongs to (None: no start mark for it).

        A chunk stamped exactly at a start is that utterance's first; one that continues
        an utterance's last chunk exactly (within half a sample) is that utterance's;
        any other (after a pause in the stamps) belongs to the latest utterance started
        at or before its stamp.
        """
        tol = 0.5 / max(rate, 1)
        found = next((s for s in self._next if abs(stamp - s) <= tol), None)
        if found is None:
            found = next((s for s, nxt in self._next.items() if abs(stamp - nxt) <= tol),
                         None)
        if found is None:
            earlier = [s for s in self._next if s <= stamp + tol]
            found = max(earlier) if earlier else None
        if found is not None:
            self._next[found] = stamp + seconds
        return found

    def cut(self, start: Optional[float], end: float, approx_start: float) -> None:
        """An utterance was cut: its chunks, queued or still to come, are dropped.

        Args:
            start: Its start mark's stamp, or None when none was received.
            end: Its end mark's stamp.
            approx_start: Without a start mark, the stamp from which chunks up to
                ``end`` are its own, unless they belong to a later utterance.
        """
        if start is not None:
            self._cut[start] = end
            while len(self._cut) > self.KEEP:
                self._cut.popitem(last=False)
        else:
            self._spans.append((approx_start, end))

    def is_cut(self, tag: Optional[float], stamp: Optional[float]) -> bool:
        """Whether a chunk (its :meth:`tag` and stamp) belongs to a cut utterance."""
        if tag is not None and tag in self._cut:
            return True
        return stamp is not None and any(
            lo <= stamp < end and (tag is None or tag <= lo) for lo, end in self._spans)


def fade_out(samples: np.ndarray, rate: int) -> np.ndarray:
    """``samples`` (float32) faded to silence over :data:`FADE_S` by a raised cosine.

    Args:
        samples: The samples that would have followed the last one rendered; at most
            :func:`fade_frames` of them are used.
        rate: Their sample rate (Hz).

    Returns:
        The fade (float32, :func:`fade_frames` long): the first sample nearly at full
        gain, the last nearly at zero, then silence follows.
    """
    n = fade_frames(rate)
    out = np.zeros(n, np.float32)
    k = min(n, samples.size)
    gain = 0.5 + 0.5 * np.cos(np.pi * (np.arange(1, n + 1) / (n + 1)))
    out[:k] = samples[:k] * gain[:k].astype(np.float32)
    return out


def fade_frames(rate: int) -> int:
    """Frames in the fade at ``rate`` Hz (at least 1)."""
    return max(1, int(round(FADE_S * rate)))


def drop_cut(blocks: Iterable[list], frame: int, rate: int,
             utterances: Utterances) -> Tuple[collections.deque, int, int]:
    """Drop the blocks of cut utterances from a timeline, ending their sound in a fade.

    Args:
        blocks: The timeline's blocks in order, ``[start_frame, samples, tag, stamp]``.
        frame: The next frame the device renders: everything before it is heard.
        rate: The device's rate (Hz).
        utterances: Which utterances are cut.

    Returns:
        ``(kept, fade_end, dropped)``: the blocks left, the fade among them (a block
        ``[frame, fade, None, None]``, when the cut utterances had sound at ``frame``);
        the frame where that fade ends (0 without one); frames dropped, fade excluded.
    """
    n = fade_frames(rate)
    following = np.zeros(n, np.float32)
    kept: collections.deque = collections.deque()
    dropped = 0
    for block in blocks:
        start, data, tag, stamp = block
        if not utterances.is_cut(tag, stamp):
            kept.append(block)
            continue
        lo, hi = max(start, frame), min(start + data.size, frame + n)
        if hi > lo:  # the samples that would have followed the last one rendered
            following[lo - frame:hi - frame] = data[lo - start:hi - start]
        dropped += max(0, start + data.size - max(start, frame + n))
    if not following.any():
        return kept, 0, dropped
    at = next((k for k, b in enumerate(kept) if b[0] > frame), len(kept))
    kept.insert(at, [frame, fade_out(following, rate), None, None])
    return kept, frame + n, dropped
