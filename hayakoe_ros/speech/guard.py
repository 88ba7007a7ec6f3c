# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The speech scheduler's internal threads: a death fails it loudly; clean-up after both end.

:class:`ThreadGuard` is a base class of :class:`.scheduler.SpeechScheduler`; the scheduler
owns the attributes named below (no ROS imports).
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Optional

from .lineup import Lineup
from .utterance import Outcome, Utterance

_LOG = logging.getLogger('hayakoe_ros.speech.scheduler')


class ThreadGuard:
    """Runs the scheduler's thread loops; fails the scheduler when one dies.

    Attributes used (the scheduler's): ``_state`` (lock of ``_alive`` and
    ``_after_stop``), ``_alive`` (threads still running), ``_after_stop`` (callables run
    once both ended), ``failure`` and ``_line``.
    """

    _state: threading.Lock
    _alive: int
    _after_stop: list
    failure: Optional[str]
    _line: Lineup

    def _finish(self, utt: Utterance, outcome: Outcome, error: str = '',
                reason=None) -> bool:
        raise NotImplementedError

    def when_stopped(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` once both internal threads have ended (now, if they have).

        Otherwise the last thread to end calls it, as its final act: the way to free an
        engine that a synthesis call may still be using after :meth:`shutdown`. Exceptions
        from ``fn`` are logged, not raised.
        """
        with self._state:
            if self._alive:
                self._after_stop.append(fn)
                return
        self._run_after_stop([fn])

    @staticmethod
    def _run_after_stop(fns: list) -> None:
        for fn in fns:
            try:
                fn()
            except Exception:  # e.g. an engine that fails to close: keep going
                _LOG.exception('clean-up after the speech scheduler stopped failed')

    def _guarded(self, loop: Callable[[], None], name: str) -> None:
        """Run an internal thread's loop; if it dies, fail the scheduler loudly."""
        try:
            loop()
        except BaseException as exc:  # noqa: B036 - anything that ends the thread
            _LOG.critical('speech scheduler %s thread died', name, exc_info=True)
            self._fail(f'the {name} thread died: {type(exc).__name__}: {exc}')
        finally:
            with self._state:
                self._alive -= 1
                fns, self._after_stop = (self._after_stop, []) if not self._alive \
                    else ([], self._after_stop)
            self._run_after_stop(fns)

    def _fail(self, reason: str) -> None:
        """Stop serving: abort every utterance held or waiting; refuse new ones."""
        if self.failure is None:
            self.failure = reason  # before closing: a submit that gets in is drained below
        for utt in self._line.close('failed'):
            self._finish(utt, Outcome.ABORTED, f'speech pipeline failed: {reason}')
