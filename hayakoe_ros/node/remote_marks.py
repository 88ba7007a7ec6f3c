# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A host's ``marks`` messages as a relaying robot reads them (no ROS imports).

The JSON is :mod:`.marks_out`'s (README, "Speech marks"). Anyone may publish on a
host's marks topic, so every field the relay computes with is checked here: a mark
that fails is dropped by the caller, and the audio and the goal's result still come.
"""

from __future__ import annotations

import math

from ..speech.remote import RemoteMark


def remote_mark(obj: dict) -> RemoteMark:
    """One of the host's ``marks`` objects (README, "Speech marks") as a :class:`RemoteMark`.

    ``time`` and ``duration`` come in ms; a field left out takes its default (no
    offsets: -1; ``continues``: False).

    Raises:
        ValueError: a field of the wrong type, a time or duration that is not a finite
            number of ms >= 0, an offset that is not a whole number (anyone may publish
            on the topic: such a mark must not reach the relay's sample arithmetic).
    """
    try:
        time_s, duration_s = _seconds(obj.get('time', 0)), _seconds(obj.get('duration', 0))
        start, end = obj.get('start', -1), obj.get('end', -1)
        if not (isinstance(start, int) and isinstance(end, int)):
            raise ValueError(f'offsets {start!r}, {end!r} are not whole numbers')
        return RemoteMark(str(obj.get('type', '')), time_s, duration_s, start, end,
                          str(obj.get('value', '')), obj.get('continues') is True)
    except (TypeError, OverflowError) as exc:
        raise ValueError(f'malformed mark: {exc}') from exc


def _seconds(ms) -> float:
    """A mark's ``time`` or ``duration`` (ms, finite, >= 0) in seconds."""
    if isinstance(ms, bool) or not isinstance(ms, (int, float)):
        raise ValueError(f'{ms!r} is not a number of ms')
    value = float(ms)  # OverflowError for an int beyond float's range
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f'{ms!r} is not a finite number of ms >= 0')
    return value / 1000.0
