# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``say --marks``: an utterance's speech marks, one line each, as the node publishes them.

No ROS here: :class:`Timeline` takes the JSON strings that :mod:`hayakoe_ros.say_client`
receives on the node's ``marks`` topic, keeps those of one utterance (a goal's UUID as 32
lowercase hex characters) and prints them. Marks that arrive before the goal's id is known
(the goal response and the first marks travel on different topics) are held until it is.

Line format (``time`` is ms from the utterance's first sample, as the mark says)::

       0 ms  start     [0:19]
       0 ms  sentence  [0:12]
       8 ms  word      10:30  [0:5]  (812 ms)
       8 ms  viseme    u  (95 ms)
       8 ms  phoneme   j  (48 ms)
    2675 ms  end       succeeded  heard [0:19] '10:30に出発します。今日は…'
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Iterable, Optional, TextIO

#: Every mark type the node publishes, in the order ``--mark-types`` lists them.
MARK_TYPES = ('start', 'sentence', 'word', 'phoneme', 'viseme', 'ssml', 'end')


def marks_topic_for(action: str) -> str:
    """The ``marks`` topic beside an action: ``/robot/say`` -> ``/robot/marks``.

    The node publishes ``marks`` in its own namespace, where its ``say`` action is; a
    relative action name gives a relative topic (``say`` -> ``marks``).
    """
    head, sep, _ = action.rstrip('/').rpartition('/')
    return f'{head}{sep}marks' if sep else 'marks'


def parse_types(spec: str) -> frozenset:
    """The mark types of a ``--mark-types`` value (comma-separated; ``all``: every one).

    Raises:
        ValueError: a name that is no mark type.
    """
    names = {s.strip() for s in spec.split(',') if s.strip()}
    if names == {'all'}:
        return frozenset(MARK_TYPES)
    unknown = sorted(names - set(MARK_TYPES))
    if unknown:
        raise ValueError(f"unknown mark type(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(MARK_TYPES)} or all")
    return frozenset(names)


def format_mark(mark: dict) -> str:
    """One mark as a timeline line (see the module docstring)."""
    kind = mark.get('type', '?')
    line = f"{int(mark.get('time', 0)):4d} ms  {kind:<9}"
    if kind == 'end':
        line += f" {mark.get('value', '')}  heard [0:{mark.get('heard_end', 0)}] " \
                f"{mark.get('heard', '')!r}"
        if mark.get('error'):
            line += f"  error: {mark['error']}"
        return line
    parts = []
    if mark.get('value'):
        parts.append(str(mark['value']))
    if 'start' in mark and 'end' in mark and kind != 'phoneme' and kind != 'viseme':
        parts.append(f"[{mark['start']}:{mark['end']}]")
    if 'duration' in mark:
        parts.append(f"({mark['duration']} ms)")
    if mark.get('continues') is True:
        parts.append('continues')  # the word's reading goes on in the next word marks
    return (line + ' ' + '  '.join(parts)).rstrip()


class Timeline:
    """The marks of one utterance, printed as they come.

    Args:
        types: Mark types to print; the ``end`` mark is always printed.
        out: Where the lines go (default stdout, flushed after each).
    """

    def __init__(self, types: Iterable[str] = MARK_TYPES,
                 out: Optional[TextIO] = None) -> None:
        self._types = frozenset(types) | {'end'}
        self._out = out
        self._lock = threading.Lock()
        self._key: Optional[str] = None
        self._held: list = []  # marks received before the key was known
        #: The utterance's ``end`` mark once printed, else None.
        self.end: Optional[dict] = None
        #: Messages on the topic that were not JSON objects (counted, not printed).
        self.malformed = 0

    @property
    def ended(self) -> bool:
        """Whether the utterance's ``end`` mark has been printed."""
        return self.end is not None

    def set_key(self, key: str) -> None:
        """Follow the utterance ``key``; print what of it came already, drop the rest."""
        with self._lock:
            self._key = key
            held, self._held = self._held, []
        for mark in held:
            self._take(mark)

    def on_message(self, data: str) -> None:
        """Take one message of the ``marks`` topic (a JSON object)."""
        try:
            mark = json.loads(data)
        except ValueError:
            mark = None
        if not isinstance(mark, dict):
            self.malformed += 1
            return
        with self._lock:
            if self._key is None:
                self._held.append(mark)
                return
        self._take(mark)

    def _take(self, mark: dict) -> None:
        if mark.get('utterance') != self._key or self.ended:
            return
        if mark.get('type') in self._types:
            print(format_mark(mark), file=self._out or sys.stdout, flush=True)
        if mark.get('type') == 'end':
            self.end = mark
