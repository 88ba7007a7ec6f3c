# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speech engines: text in, float PCM and pause lengths out. No ROS imports."""

from .base import (AudioWindow, CancelToken, Engine, EngineError, EngineLoadError,
                   NothingToSpeakError, Phone, SynthesisCanceledError, UnknownStyleError,
                   VoiceParams)

__all__ = ['AudioWindow', 'CancelToken', 'Engine', 'EngineError', 'EngineLoadError',
           'NothingToSpeakError', 'Phone', 'SynthesisCanceledError', 'UnknownStyleError',
           'VoiceParams', 'create_engine']


def create_engine(engine: str, **options) -> Engine:
    """Build and load an engine by name.

    Args:
        engine: ``"hayakoe"`` or ``"openjtalk"``.
        **options: keyword arguments of :class:`~.hayakoe_engine.HayakoeEngine`
            (ignored by Open JTalk).

    Raises:
        EngineLoadError: unknown engine name, or the model cannot be loaded; any other
            exception raised while loading (an incompatible hayakoe release, say) is
            reported as this too, with its type and message.
    """
    try:
        if engine == 'hayakoe':
            from .hayakoe_engine import HayakoeEngine

            return HayakoeEngine(**options)
        if engine == 'openjtalk':
            from .openjtalk_engine import OpenJTalkEngine

            return OpenJTalkEngine()
    except EngineLoadError:
        raise
    except Exception as exc:  # e.g. an incompatible hayakoe release: a load failure too
        raise EngineLoadError(f'{engine} failed to load: {type(exc).__name__}: '
                              f"{' '.join(str(exc).split())}") from exc
    raise EngineLoadError(f"unknown engine '{engine}'; use 'hayakoe' or 'openjtalk'")
