# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Engine interface shared by every speech synthesiser (no ROS imports).

An engine turns one *segment* of Japanese text (a sentence or a clause) into mono float32
PCM at its own sample rate, and predicts the pause that belongs at the boundary between two
adjacent segments. Everything above this layer (segmenting, loudness, chunking, pacing,
queueing) lives in :mod:`hayakoe_ros.speech`.
"""

from __future__ import annotations

import abc
import contextlib
from typing import Iterator, Sequence

import numpy as np

# The errors, the cancel token and the value types live in their own modules; they are
# still found here, where every engine and the speech layer import them from.
from .errors import (CancelToken, EngineError, EngineLoadError, NothingToSpeakError,
                     SynthesisCanceledError, UnknownStyleError)
from .values import AudioWindow, Phone, VoiceParams, tile_phones

__all__ = ['AudioWindow', 'CancelToken', 'Engine', 'EngineError', 'EngineLoadError',
           'NothingToSpeakError', 'Phone', 'SynthesisCanceledError', 'UnknownStyleError',
           'VoiceParams', 'WrappedEngine', 'tile_phones']


class Engine(abc.ABC):
    """A loaded, warm speech synthesiser.

    Engines are not required to be thread-safe: the speech pipeline calls one engine from
    a single synthesis thread.
    """

    #: Short engine name used in logs and diagnostics (``"hayakoe"``, ``"openjtalk"``).
    name: str = 'engine'

    @property
    @abc.abstractmethod
    def sample_rate(self) -> int:
        """Output sample rate in Hz."""

    @property
    @abc.abstractmethod
    def styles(self) -> Sequence[str]:
        """Names of the styles the voice offers (at least one)."""

    @property
    def voice(self) -> str:
        """Name of the voice speaking (a hayakoe speaker, an HTS voice); defaults to ``name``."""
        return self.name

    @property
    def model_id(self) -> str:
        """Identity of the loaded model, for caches of its audio (e.g. the phrase cache).

        Two engines with the same ``model_id`` (and name, voice and settings) produce the
        same audio; a changed model file must change it. Defaults to ``name/voice``.
        """
        return f'{self.name}/{self.voice}'

    @property
    def device(self) -> str:
        """Device the engine computes on (``"cpu"``, ``"cuda"``, ``"cuda:1"``...)."""
        return 'cpu'

    def check_voice(self, voice: VoiceParams) -> None:
        """Raise :class:`UnknownStyleError` when ``voice`` names a style this voice lacks."""
        if voice.style not in self.styles:
            raise UnknownStyleError(
                f"unknown style '{voice.style}'; this voice offers: {', '.join(self.styles)}")

    @abc.abstractmethod
    def synthesize(self, text: str, voice: VoiceParams) -> np.ndarray:
        """Synthesise one segment.

        Args:
            text: One sentence or clause, Japanese (Latin letters are read in katakana).
            voice: Voice settings.

        Returns:
            Mono PCM, shape ``(samples,)``, dtype float32, nominal full scale +-1.0, at
            :attr:`sample_rate`. Not normalised: levels are the model's own, so relative
            loudness between segments is preserved.

        Raises:
            NothingToSpeakError: the text has no phonemes.
            UnknownStyleError: ``voice.style`` is not offered.
        """

    def synthesize_windows(self, text: str, voice: VoiceParams,
                           first_audio: bool = True) -> Iterator[AudioWindow]:
        """Synthesise one segment in windows, its first samples first (for first audio).

        The default yields :meth:`synthesize_timed`'s result as one window. An engine
        that can compute the start of a segment before its end (hayakoe's CPU engine
        decodes the latent in windows) yields several; their concatenation equals
        :meth:`synthesize`'s output to within 1e-4 of full scale, with the same length.
        The first window carries the whole segment's phones (:attr:`AudioWindow.phones`,
        as :meth:`synthesize_timed` gives them), the later ones none. Each window is
        computed when the iterator is advanced, so a cancel between two
        (:meth:`cancellable` around the iteration) stops it there. ``first_audio``: the
        windows bring an utterance its first audio (False: a later segment, windowed so
        that it plays in time); an engine shared by several robots lets such a first
        window go ahead of other calls (:class:`.shared.GatedEngine`).

        Raises:
            What :meth:`synthesize` raises.
        """
        yield self.synthesize_timed(text, voice)

    def window_seconds(self, audio_s: float, voice: VoiceParams) -> tuple:
        """Seconds of audio of each window :meth:`synthesize_windows` would yield.

        For a segment of about ``audio_s`` seconds (an estimate: the real windows follow
        the real length), so that a start can be planned for the windows of a segment
        not yet synthesised. The default: one window, ``(audio_s,)``.
        """
        return (float(audio_s),)

    def synthesize_timed(self, text: str, voice: VoiceParams) -> AudioWindow:
        """Synthesise one segment whole, with the time of each phoneme.

        The default returns :meth:`synthesize`'s audio with no phones; engines that know
        their durations (hayakoe's duration predictor, Open JTalk's HTS duration model)
        override it.

        Returns:
            An :class:`AudioWindow`: ``audio`` as :meth:`synthesize` returns it (float32
            ``(samples,)``), ``later_s`` empty, ``phones`` a :class:`Phone` tuple that
            tiles it (empty when the engine cannot time it).

        Raises:
            What :meth:`synthesize` raises.
        """
        return AudioWindow(self.synthesize(text, voice))

    @abc.abstractmethod
    def predict_pause(self, left: str, right: str, voice: VoiceParams) -> float:
        """Predict the silence (seconds) that belongs between two adjacent segments.

        Only the prediction: the speech pipeline decides the pause heard from it (SSML
        breaks, the sentence floor, the voice's own edge silence) in
        ``hayakoe_ros.speech.pauses``.

        Args:
            left: The segment that ends at the boundary (its final punctuation included).
            right: The segment that follows it (look-ahead context only).
            voice: Voice settings (the speaking rate scales pauses too).

        Returns:
            Pause length in seconds, >= 0.
        """

    def is_cached(self, text: str, voice: VoiceParams) -> bool:
        """True when :meth:`synthesize` would return stored audio at no synthesis cost.

        False by default; a phrase cache (``speech.phrase_cache.CachingEngine``) says
        which segments it holds, so that rate estimates and start delays leave them out.
        """
        return False

    @contextlib.contextmanager
    def cancellable(self, token: CancelToken) -> Iterator[None]:
        """Make the engine calls inside the block abort when ``token`` is canceled.

        The default checks the token at the block's boundaries only (before and after the
        call): the nearest boundary for engines whose call cannot be interrupted (Open
        JTalk's single C call, a CUDA kernel). Engines that can do better override it.

        Raises:
            SynthesisCanceledError: ``token`` was canceled before or during the block.
        """
        token.check()
        yield
        token.check()

    def warmup(self) -> None:
        """Run representative inferences so the first real request is not slow."""
        self.synthesize('こんにちは、テストです。', VoiceParams(style=self.styles[0]))

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release the model's memory. The engine is unusable afterwards."""


class WrappedEngine(Engine):
    """An engine that adds one thing to another (resampling, a cache) and delegates the rest.

    Subclasses override what they change; everything else (sample rate, styles, voice,
    device, model identity, voice checks, cache queries, cancellation, synthesis, pauses,
    warm-up, close) is the wrapped engine's.

    Args:
        engine: A loaded engine.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.name = engine.name

    @property
    def inner(self) -> Engine:
        """The wrapped engine."""
        return self._engine

    @property
    def sample_rate(self) -> int:
        """The wrapped engine's sample rate (Hz)."""
        return self._engine.sample_rate

    @property
    def styles(self) -> Sequence[str]:
        """The wrapped engine's styles."""
        return self._engine.styles

    @property
    def voice(self) -> str:
        """The wrapped engine's voice name."""
        return self._engine.voice

    @property
    def device(self) -> str:
        """The wrapped engine's device."""
        return self._engine.device

    @property
    def model_id(self) -> str:
        """The wrapped engine's model identity."""
        return self._engine.model_id

    def check_voice(self, voice: VoiceParams) -> None:
        """Delegate to the wrapped engine (raises ``UnknownStyleError``)."""
        self._engine.check_voice(voice)

    @contextlib.contextmanager
    def cancellable(self, token: CancelToken) -> Iterator[None]:
        """The wrapped engine's: a cancel aborts its call in flight (e.g. ONNX Runtime's).

        Raises:
            SynthesisCanceledError: ``token`` was canceled before or during the block.
        """
        with self._engine.cancellable(token):
            yield

    def is_cached(self, text: str, voice: VoiceParams) -> bool:
        """The wrapped engine's answer (see :meth:`Engine.is_cached`)."""
        return self._engine.is_cached(text, voice)

    def synthesize(self, text: str, voice: VoiceParams) -> np.ndarray:
        """The wrapped engine's synthesis (see :meth:`Engine.synthesize`)."""
        return self._engine.synthesize(text, voice)

    def synthesize_timed(self, text: str, voice: VoiceParams) -> AudioWindow:
        """The wrapped engine's timed synthesis (see :meth:`Engine.synthesize_timed`)."""
        return self._engine.synthesize_timed(text, voice)

    def synthesize_windows(self, text: str, voice: VoiceParams,
                           first_audio: bool = True) -> Iterator[AudioWindow]:
        """The wrapped engine's windows (see :meth:`Engine.synthesize_windows`)."""
        return self._engine.synthesize_windows(text, voice, first_audio)

    def window_seconds(self, audio_s: float, voice: VoiceParams) -> tuple:
        """The wrapped engine's windows' seconds (see :meth:`Engine.window_seconds`)."""
        return self._engine.window_seconds(audio_s, voice)

    def predict_pause(self, left: str, right: str, voice: VoiceParams) -> float:
        """The wrapped engine's pause (s)."""
        return self._engine.predict_pause(left, right, voice)

    def warmup(self) -> None:
        """Warm up the wrapped engine."""
        self._engine.warmup()

    def close(self) -> None:
        """Close the wrapped engine."""
        self._engine.close()
