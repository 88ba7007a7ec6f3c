# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``tts_node``'s speech marks as the player reads them (no ROS imports).

One JSON object per ``std_msgs/String`` on ``marks``: ``utterance`` (id), ``type``
(``start``, ``sentence``, ``word``, ``phoneme``, ``viseme``, ``ssml``, ``end``), ``time``
(ms since the utterance's first sample), ``stamp`` (``{"sec", "nanosec"}``: play time, the
clock of the audio's ``header.stamp``) and, on ``end``, ``value``: ``succeeded``,
``canceled``, ``interrupted`` or ``aborted``. The player needs ``start`` and ``end`` only:
:class:`MarkFollower` pairs them and cuts an utterance that did not succeed.
"""

from __future__ import annotations

import collections
import dataclasses
import json
from typing import Callable, Optional

#: Outcomes an ``end`` mark may carry; all but ``succeeded`` cut the utterance short.
OUTCOMES = ('succeeded', 'canceled', 'interrupted', 'aborted')


@dataclasses.dataclass(frozen=True)
class Mark:
    """One speech mark, the fields the player uses.

    Attributes:
        utterance: The utterance's id.
        type: ``start``, ``end``, or another type (ignored by the player).
        stamp: Play time (s, the audio stamps' clock), from integer nanoseconds exactly
            as the player reads a chunk's ``header.stamp``.
        time_ms: Milliseconds since the utterance's first sample (0 when absent).
        value: The ``value`` field ('' when absent); an outcome on ``end``.
    """

    utterance: str
    type: str
    stamp: float
    time_ms: int = 0
    value: str = ''


def parse_mark(data: str) -> Mark:
    """The :class:`Mark` in one ``marks`` message's text.

    Raises:
        ValueError: not JSON, not an object, or a field the player needs is missing or
            of the wrong type (the message says which).
    """
    try:
        obj = json.loads(data)
    except ValueError as exc:
        raise ValueError(f'not JSON: {exc}') from None
    if not isinstance(obj, dict):
        raise ValueError(f'not a JSON object: {type(obj).__name__}')
    utterance, kind = obj.get('utterance'), obj.get('type')
    if not isinstance(utterance, str) or not utterance:
        raise ValueError("missing 'utterance' (a non-empty string)")
    if not isinstance(kind, str):
        raise ValueError("missing 'type' (a string)")
    stamp = obj.get('stamp')
    if not isinstance(stamp, dict) or not all(
            isinstance(stamp.get(k), int) and not isinstance(stamp.get(k), bool)
            for k in ('sec', 'nanosec')):
        raise ValueError("missing 'stamp' ({'sec': int, 'nanosec': int})")
    time_ms = obj.get('time', 0)
    if not isinstance(time_ms, (int, float)) or isinstance(time_ms, bool):
        raise ValueError("'time' is not a number")
    value = obj.get('value', '')
    if kind == 'end' and value not in OUTCOMES:
        raise ValueError(f"end mark 'value' {value!r} is not one of: {', '.join(OUTCOMES)}")
    ns = stamp['sec'] * 1_000_000_000 + stamp['nanosec']
    return Mark(utterance, kind, ns * 1e-9, int(time_ms), str(value))


class MarkFollower:
    """Pairs ``start`` and ``end`` marks and tells the player what to cut.

    An ``end`` mark that is not ``succeeded`` cuts its utterance at the end's stamp; a
    ``start`` mark while another utterance has not ended (an urgent text suspended it, to
    resume later) cuts that one at the new start's stamp.

    Args:
        begin: Called with an utterance's start stamp (s) on its ``start`` mark.
        cut: Called as ``cut(start, end, approx_start)`` on an ``end`` mark whose
            outcome is not ``succeeded``; ``start`` is None when its start mark never
            came, and ``approx_start`` is then the end less the mark's ``time``. Returns
            the seconds of audio dropped.
    """

    def __init__(self, begin: Callable[[float], None],
                 cut: Callable[[Optional[float], float, float], float]) -> None:
        self._begin = begin
        self._cut = cut
        self._starts: collections.OrderedDict = collections.OrderedDict()

    def on_mark(self, mark: Mark) -> Optional[str]:
        """Act on one mark; return a line for the log when it cut an utterance."""
        if mark.type == 'start':
            # tts_node speaks one utterance at a time and ends each with its end mark
            # before the next starts, unless an urgent text suspended it: what is still
            # held of one that did not end is abandoned where the new one starts.
            line = None
            for other, start in list(self._starts.items()):
                if other != mark.utterance:
                    del self._starts[other]
                    dropped = self._cut(start, mark.stamp, start)
                    if dropped > 0:
                        line = (f'utterance {other} suspended by {mark.utterance}: dropped '
                                f'{dropped * 1e3:.0f} ms of its audio held here')
            self._starts[mark.utterance] = mark.stamp
            self._begin(mark.stamp)
            return line
        if mark.type != 'end':
            return None
        start = self._starts.pop(mark.utterance, None)
        if mark.value == 'succeeded':
            return None
        if start is None and mark.time_ms <= 0:
            return None  # never started: it has no audio to drop
        # Without its start mark, the stamps up to 1 ms before its first sample (the
        # mark's time is whole milliseconds).
        approx = mark.stamp - (mark.time_ms + 1) * 1e-3
        dropped = self._cut(start, mark.stamp, approx)
        return (f'utterance {mark.utterance} {mark.value}: dropped {dropped * 1e3:.0f} ms '
                'of its audio held here')
