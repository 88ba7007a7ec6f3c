# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""How an engine call fails, and the token that cancels one (no ROS imports).

Every error an engine raises is an :class:`EngineError`; a call aborted through its
:class:`CancelToken` raises :class:`SynthesisCanceledError`.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator


class EngineError(RuntimeError):
    """Base class of every error an engine raises."""


class EngineLoadError(EngineError):
    """The engine's model could not be loaded (missing, unreachable or corrupt files)."""


class UnknownStyleError(EngineError, ValueError):
    """The requested style (or speaker id) does not exist in the loaded model."""


class NothingToSpeakError(EngineError, ValueError):
    """The text yields no phonemes: there is nothing the voice can say."""


class SynthesisCanceledError(EngineError):
    """The engine call was aborted because its :class:`CancelToken` was canceled."""


class CancelToken:
    """Cancellation of engine calls, set from any thread (one token per utterance attempt).

    :meth:`cancel` is idempotent and runs every hook registered with :meth:`hook` at once
    (in the canceling thread), so an engine can interrupt a call in flight (e.g. ONNX
    Runtime's ``RunOptions.terminate``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._canceled = False
        self._hooks: list = []

    @property
    def canceled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._canceled

    def cancel(self) -> None:
        """Cancel: run the hooks registered now (hook exceptions propagate)."""
        with self._lock:
            if self._canceled:
                return
            self._canceled = True
            hooks = list(self._hooks)
        for fn in hooks:
            fn()

    @contextlib.contextmanager
    def hook(self, fn: Callable[[], None]) -> Iterator[None]:
        """Call ``fn`` on cancel while the block runs (at once if already canceled)."""
        with self._lock:
            self._hooks.append(fn)
            run_now = self._canceled
        try:
            if run_now:
                fn()
            yield
        finally:
            with self._lock:
                self._hooks.remove(fn)

    def check(self) -> None:
        """Raise :class:`SynthesisCanceledError` if canceled."""
        if self._canceled:
            raise SynthesisCanceledError('synthesis canceled')
