# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``marks`` topic: speech marks as JSON in ``std_msgs/String``, one per message.

Schema (README, "Speech marks"): every message is one JSON object

``{"utterance": "<id>", "type": "start|sentence|word|phoneme|viseme|ssml|end",
"time": <int ms>, "stamp": {"sec": <int>, "nanosec": <int>}, ...}``

with ``duration`` (ms: word, phoneme, viseme), ``start``/``end`` (character offsets into
the text as the caller sent it: sentence, word, ssml, start, end), ``value`` (the
word's spelling, the phoneme, the viseme, the SSML mark's name, the outcome) and, on a
word whose reading goes on in later word marks, ``"continues": true``. ``stamp``
is when the mark's first sample plays, on the clock and with the origin of the audio
chunks' ``header.stamp``; ``time`` is that minus the stamp of the utterance's first
sample. The ``start`` mark's stamp is the first chunk's stamp exactly, and it is
published before that chunk; every other mark before the chunk that holds its first
sample; the ``end`` mark after the last chunk, with ``heard`` and ``heard_end`` (what of
the text was heard) and, when it did not succeed, ``error``.

Threads: the scheduler's publisher thread calls :meth:`MarksOut.publish` (under the
scheduler's publishing lock, so marks and chunks go out in order); ``end`` comes from the
thread that gives the utterance its outcome.
"""

from __future__ import annotations

import json
import threading
from typing import Callable, Optional

from rclpy.publisher import Publisher
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from ..speech import CancelReason, Outcome, Utterance
from ..speech.marks import KINDS, TIMED, Mark
from .param_spec import QOS_OVERRIDES

#: Cancel reasons that mean someone interrupted the robot (a barge-in, a newer text, a
#: stop): the end mark says ``interrupted``. A client's own cancel is ``canceled``; the
#: node going away, or a failure, ``aborted``.
INTERRUPTING = frozenset({CancelReason.INTERRUPTED, CancelReason.REPLACED, CancelReason.STOP,
                          CancelReason.URGENT})

def end_value(utt: Utterance) -> str:
    """The ``end`` mark's outcome: succeeded, canceled, interrupted or aborted."""
    if utt.outcome is Outcome.SUCCEEDED:
        return 'succeeded'
    if utt.outcome is Outcome.CANCELED:
        if utt.cancel_reason is CancelReason.CLIENT:
            return 'canceled'
        if utt.cancel_reason in INTERRUPTING:
            return 'interrupted'
    return 'aborted'


def mark_object(key: str, kind: str, stamp_ns: int, first_ns: int, **fields) -> dict:
    """One mark as the JSON object the topic carries (see the module docstring).

    Args:
        key: The utterance's id.
        kind: The mark's type.
        stamp_ns: When its first sample plays (node clock, ns).
        first_ns: When the utterance's first sample plays (ns): ``time``'s origin.
        fields: ``duration`` (s, given in ms), ``start``, ``end``, ``value`` and any
            others (``heard``...), copied as they are; a None value is left out.
    """
    sec, nanosec = divmod(int(stamp_ns), 1_000_000_000)
    obj = {'utterance': key, 'type': kind, 'time': int(round((stamp_ns - first_ns) / 1e6)),
           'stamp': {'sec': sec, 'nanosec': nanosec}}
    if 'duration' in fields:
        obj['duration'] = int(round(fields.pop('duration') * 1000))
    obj.update({k: v for k, v in fields.items() if v is not None})
    return obj


def mark_fields(mark: Mark, sample_rate: int) -> dict:
    """A mark's own fields for :func:`mark_object`: ``value``, ``duration`` (s), offsets.

    ``continues`` (True) only on a word whose reading goes on in later word marks (a
    number of more than 20 digits, read in groups across segments): a listener, or a
    robot relaying this node, counts it as heard only with its last group.
    """
    fields: dict = {'value': mark.value}
    if mark.kind in TIMED:
        fields['duration'] = mark.duration / sample_rate
    if mark.start >= 0:
        fields['start'], fields['end'] = mark.start, mark.end
    if mark.continues:
        fields['continues'] = True
    return fields


class MarksOut:
    """The ``marks`` publisher (while configured) and each utterance's time origin.

    Args:
        node: The owning node.
        stamp_ns: ``stamp_ns(utt, play_time)``: the node-clock ns at which scheduler-clock
            ``play_time`` plays for that utterance, as its audio chunks are stamped.
        now_ns: The node clock's time now (ns): an end mark with no audio before it.
    """

    def __init__(self, node, stamp_ns: Callable[[Utterance, float], int],
                 now_ns: Callable[[], int]) -> None:
        self._node = node
        self._stamp_ns = stamp_ns
        self._now_ns = now_ns
        self._pub: Optional[Publisher] = None
        self._lock = threading.Lock()
        self._origin: dict = {}  # utterance key -> (first sample's ns, its play time)
        # Kinds published besides start and end; swapped whole (one reference), so the
        # publishing thread reads either set, never a half-changed one.
        self._kinds: frozenset = frozenset(KINDS)

    def set_kinds(self, kinds) -> None:
        """Publish only these kinds of mark (of ``speech.marks.KINDS``) from the next on.

        ``start`` and ``end`` always go out: they frame an utterance and carry what was
        heard. Every mark is still worked out: what was heard is counted from them.

        Raises:
            ValueError: a kind not in ``KINDS``.
        """
        kinds = frozenset(kinds)
        if kinds - set(KINDS):
            raise ValueError(f'unknown mark kinds {sorted(kinds - set(KINDS))}; '
                             f'known: {", ".join(KINDS)}')
        self._kinds = kinds

    def open(self, depth: int) -> None:
        """Create the publisher: reliable, keep-last ``depth``, volatile, QoS overridable."""
        qos = QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
        self._pub = self._node.create_publisher(
            String, 'marks', qos,
            qos_overriding_options=QOS_OVERRIDES)

    def close(self) -> None:
        """Destroy the publisher."""
        pub, self._pub = self._pub, None
        if pub is not None:
            self._node.destroy_publisher(pub)
        with self._lock:
            self._origin.clear()

    def _send(self, obj: dict) -> None:
        pub = self._pub
        if pub is not None:
            pub.publish(String(data=json.dumps(obj, ensure_ascii=False)))

    def publish(self, utt: Utterance, mark: Mark, play_time: float) -> None:
        """Publish one mark of ``utt`` whose first sample plays at ``play_time`` (s)."""
        if mark.kind not in ('start', 'end') and mark.kind not in self._kinds:
            return
        with self._lock:
            if mark.kind == 'start':
                stamp = self._stamp_ns(utt, play_time)
                self._origin[utt.key] = (stamp, play_time)
            first, first_play = self._origin.get(utt.key, (None, play_time))
        if first is None:  # no start mark: cannot happen, the start comes first
            first = stamp = self._stamp_ns(utt, play_time)
        else:
            stamp = first + int(round((play_time - first_play) * 1e9))
        fields = mark_fields(mark, utt.sample_rate)
        if mark.kind == 'start':
            fields['value'] = ''
            fields['text'] = utt.source
        self._send(mark_object(utt.key, mark.kind, stamp, first, **fields))

    def end(self, utt: Utterance) -> None:
        """Publish ``utt``'s ``end`` mark (it has its outcome): heard text, error."""
        with self._lock:
            origin = self._origin.pop(utt.key, None)
        if origin is not None and utt.end_play_time is not None:
            first, first_play = origin
            stamp = first + int(round((utt.end_play_time - first_play) * 1e9))
        else:  # nothing of it was published
            first = stamp = self._now_ns()
        value = end_value(utt)
        self._send(mark_object(
            utt.key, 'end', stamp, first, start=0, end=len(utt.source), value=value,
            heard=utt.heard, heard_end=utt.heard_end,
            error=utt.error if value != 'succeeded' else None))

    def refused(self, key: str, text: str, error: str) -> None:
        """Publish the ``end`` mark of a text refused before it was queued (bad input)."""
        now = self._now_ns()
        self._send(mark_object(key, 'end', now, now, start=0, end=len(text), value='aborted',
                               heard='', heard_end=0, error=error))
