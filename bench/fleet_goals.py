# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The fleet benchmark's client side: a ``say`` goal in flight, and the robots it targets.

Used by ``bench/fleet.py``; a :class:`Goal` records each feedback chunk's arrival (monotonic
s), frames, rate and stamp, and :meth:`Goal.wait` turns them into TTFA, audio seconds and
lost audio.
"""

from __future__ import annotations

import time

from bench.node_driver import BenchClient, NodeProcess

#: Longest a goal may take, from sending to its last feedback (s).
GOAL_TIMEOUT_S = 900.0

#: A goal's feedback counts as complete once none has come for this long after its result (s).
FEEDBACK_QUIET_S = 0.3

#: A client's first goal is sent again when not accepted within this long (s): see
#: :func:`first_goal`.
FIRST_ACCEPT_S = 30.0


class NotAccepted(RuntimeError):
    """The goal's acceptance did not reach the client in time."""


def missing_s(chunks: list) -> float:
    """Seconds missing between ``(arrival, frames, rate, stamp ns)`` chunks, in stamp order.

    A node's chunks follow each other without gaps in their stamps within a goal (each
    is stamped where the one before it ends, exact to the nanosecond), whatever their
    sizes; a gap of more than 1 ms is audio that did not arrive.
    """
    ordered = sorted(chunks, key=lambda c: c[3])
    gaps = ((b[3] - a[3]) * 1e-9 - a[1] / a[2] for a, b in zip(ordered, ordered[1:]))
    return sum(g for g in gaps if g > 1e-3)


class RobotTarget:
    """One robot of a fleet process, addressed like a :class:`NodeProcess` by BenchClient."""

    def __init__(self, fleet: NodeProcess, robot: str) -> None:
        self.namespace = f'{fleet.namespace}/{robot}'
        self.pid = fleet.pid

    def topic(self, name: str) -> str:
        """Fully qualified name of the robot's node-relative topic, service or action."""
        return f'{self.namespace}/{name}'


class Goal:
    """A ``say`` goal in flight: send time, feedback arrivals and samples."""

    def __init__(self, client: BenchClient, text: str, gapless: bool = True) -> None:
        # gapless: the node's stamps have no gaps (pacing off); a pacing robot relaying a
        # host slower than real time stamps its own underruns as pauses.
        self.gapless = gapless
        self.chunks: list = []  # (monotonic arrival, frames, rate, stamp ns)
        self.sent = time.monotonic()
        self._future = client._action.send_goal_async(
            client._tts.Goal(text=text), feedback_callback=self._on_feedback)

    def _on_feedback(self, fb) -> None:
        audio = fb.feedback.audio
        stamp = audio.header.stamp.sec * 1_000_000_000 + audio.header.stamp.nanosec
        self.chunks.append((time.monotonic(), len(audio.audio.audio_data.int16_data),
                            audio.audio.info.rate, stamp))

    def wait(self, timeout: float = GOAL_TIMEOUT_S, whole: bool = True,
             accept_s: float = GOAL_TIMEOUT_S) -> dict:
        """``ttfa_s``, ``last``, ``audio_s``, ``sent``, ``lost_s``; ``whole``: raise on a loss.

        Raises:
            NotAccepted: no acceptance within ``accept_s`` (s).
        """
        deadline = time.monotonic() + timeout
        accept_by = time.monotonic() + min(timeout, accept_s)
        while not self._future.done():
            if time.monotonic() > accept_by:
                raise NotAccepted('goal not accepted in time')
            time.sleep(0.002)
        handle = self._future.result()
        if handle is None or not handle.accepted:
            raise RuntimeError('goal rejected')
        result = handle.get_result_async()
        while not result.done():
            if time.monotonic() > deadline:
                raise RuntimeError('goal not finished in time')
            time.sleep(0.005)
        if not self.chunks:
            response = result.result()
            text = response.result.text if response is not None else '(no result)'
            raise RuntimeError(f'goal finished without audio: {text}')
        # The result and the feedback travel apart: the last chunks may still be on the
        # way. Then every chunk must be here (stamps are gapless with pacing off), or the
        # audio seconds, and the throughput and CPU ratios built on them, would be short.
        quiet_until = time.monotonic() + FEEDBACK_QUIET_S
        count = len(self.chunks)
        while time.monotonic() < min(quiet_until, deadline):
            time.sleep(0.02)
            if len(self.chunks) != count:
                count, quiet_until = len(self.chunks), time.monotonic() + FEEDBACK_QUIET_S
        lost = missing_s(self.chunks) if self.gapless else 0.0
        if lost > 0 and whole:
            raise RuntimeError(f'{lost:.3f} s of feedback audio lost (gaps in the stamps of '
                               f'{len(self.chunks)} chunks)')
        return {'sent': self.sent, 'ttfa_s': self.chunks[0][0] - self.sent,
                'last': self.chunks[-1][0],
                'audio_s': sum(n / r for _, n, r, _s in self.chunks), 'lost_s': lost}


def first_goal(client: BenchClient, text: str, log) -> None:
    """A new client's first goal, sent again (twice at most) if its acceptance is lost.

    A node can take a client's first goal and speak it without the acceptance reaching
    the client: Fast DDS drops a service response whose reader the server has not
    matched yet (the node logs "failed to send response (timeout)"). Seen once in a
    ``make bench`` (the robot of the relay step), which then waited ``GOAL_TIMEOUT_S``
    and failed.
    """
    for attempt in range(3):
        try:
            Goal(client, text, gapless=False).wait(accept_s=FIRST_ACCEPT_S)
            return
        except NotAccepted:
            log(f'fleet bench: a first goal was not accepted in {FIRST_ACCEPT_S:g} s '
                f'(try {attempt + 1} of 3)')
    raise RuntimeError('three first goals were not accepted')
