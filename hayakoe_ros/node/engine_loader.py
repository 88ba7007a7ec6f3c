# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Engine life cycle of ``tts_node``: load (with the fallback voice), warm up, close.

Every failure is logged once, with its cause and what to do, on the node's logger.

Wrappers, innermost first: the engine, :class:`~hayakoe_ros.engines.resample.ResampledEngine`
(``output_rate``), :class:`~hayakoe_ros.engines.phrase_cache.CachingEngine`
(``phrase_cache_mb``). The cache is outside the resampler so that a hit costs neither
synthesis nor resampling; its entries are at the output rate, which is part of their key.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Optional

from ..engines import (Engine, EngineError, EngineLoadError, UnknownStyleError, VoiceParams,
                       create_engine)
from ..engines.hayakoe_load import keep_torch_out
from ..engines.phrase_cache import CachingEngine
from ..engines.shared import GatedEngine, SharedEngineView
from ..engines.preload import preload, read_phrases
from ..engines.resample import ResampledEngine
from ..text import pipeline, userdict
from .parameters import FallbackEngine


@dataclasses.dataclass(frozen=True)
class EngineSource:
    """An engine loaded once by someone else (``tts_fleet``) for a node to share.

    Attributes:
        open: Returns a new engine for the node whose name (a robot's namespace) it is
            given: a view of the shared engine; closing it leaves the shared one loaded.
        fallback_reason: Why the shared engine is the fallback voice ('' if it is not).
        parameters: The node parameters the source decided (engine, voice files, device,
            output rate, phrase cache, user dictionary...) and any of its own: the node
            does not declare them, and overrides naming them are not unknown to it.
    """

    open: Callable[[str], Engine]
    fallback_reason: str = ''
    parameters: tuple = ()


class EngineLoader:
    """Holds the node's engine and why it is (or is not) the one asked for.

    Args:
        logger: The node's logger.

    Attributes:
        engine: The loaded engine, or None.
        fallback_reason: Why the fallback voice speaks instead of ``engine`` ('' if not).
        engine_error: Why no engine could be loaded ('' if none failed).
    """

    def __init__(self, logger) -> None:
        self._log = logger
        self.engine: Optional[Engine] = None
        self.fallback_reason = ''
        self.engine_error = ''

    @property
    def voice_name(self) -> str:
        """``engine/voice`` of the engine speaking ('' when none is loaded)."""
        engine = self.engine
        return f'{engine.name}/{engine.voice}' if engine is not None else ''

    def _unshared(self) -> Optional[Engine]:
        """The engine, or the shared engine behind it (a fleet's view)."""
        engine = self.engine
        return engine.inner if isinstance(engine, SharedEngineView) else engine

    def describe(self) -> str:
        """One-line description for the ``ready:`` log line."""
        engine = self._unshared()
        if engine is None:
            return 'no engine'
        rate = f'{engine.sample_rate} Hz'
        inner = engine.inner if isinstance(engine, CachingEngine) else engine
        inner = inner.inner if isinstance(inner, GatedEngine) else inner
        if isinstance(inner, ResampledEngine):
            rate += f' resampled from {inner.engine_rate} Hz'
        cache = ''
        if isinstance(engine, CachingEngine):
            cache = f', phrase cache {engine.max_mb:g} MiB' + (
                f' in {engine.directory}' if engine.directory else '')
        shared = (f', shared by the fleet as {self.engine.owner!r}'
                  if isinstance(self.engine, SharedEngineView) else '')
        return (f'{self.voice_name} ({engine.device}, {rate}{cache}{shared})'
                + (' [FALLBACK voice]' if self.fallback_reason else ''))

    def diagnostics(self) -> dict:
        """``cache_hits`` and ``cache_misses`` of the phrase cache ('' when it is off)."""
        engine = self._unshared()
        if isinstance(engine, CachingEngine):
            return {'cache_hits': engine.hits, 'cache_misses': engine.misses}
        return {'cache_hits': '', 'cache_misses': ''}

    def adapt_voice(self, voice: VoiceParams) -> VoiceParams:
        """The voice settings for the engine speaking.

        With the fallback voice, a style it lacks becomes its first style (the configured
        style belongs to the voice that failed to load).
        """
        engine = self.engine
        if self.fallback_reason and engine is not None and voice.style not in engine.styles:
            return dataclasses.replace(voice, style=engine.styles[0])
        return voice

    def load(self, params: dict, voice: Callable[[], VoiceParams]) -> Optional[Engine]:
        """Load, check and warm up the engine named by ``params['engine']``.

        Args:
            params: Parameter values by name (``engine``, ``fallback_engine``, ``speaker``,
                ``device``, ``speaker_source``, ``bert_source``, ``cache_dir``,
                ``num_threads``, ``spinning``, ``first_window_s``, ``compile``,
                ``cudnn``).
            voice: Returns the configured voice settings (called once the engine is set).

        Returns:
            The engine, also kept in :attr:`engine`; None on failure (logged as ERROR, the
            reason in :attr:`engine_error`).
        """
        self.close()
        self.fallback_reason = self.engine_error = ''
        name, fallback = params['engine'], params['fallback_engine']
        if name == 'hayakoe' and params['device'] == 'cpu':
            keep_torch_out()  # its CPU path never calls torch (see there)
        t0 = time.perf_counter()
        try:
            engine = create_engine(
                name, speaker=params['speaker'], device=params['device'],
                speaker_source=params['speaker_source'], bert_source=params['bert_source'],
                cache_dir=params['cache_dir'], num_threads=params['num_threads'],
                compile=params['compile'], cudnn=params['cudnn'],
                spinning=params['spinning'],
                first_window_s=params['first_window_s'])
        except EngineLoadError as exc:
            cause = str(exc).rstrip('. ')
            if fallback == FallbackEngine.NONE.value or fallback == name:
                self.engine_error = str(exc)
                self._log.error(
                    f'{cause}. fallback_engine is {fallback!r}, so this is fatal. Check '
                    'speaker_source/bert_source (file:// paths for offline use) or let the '
                    'node download the model once with network access.')
                return None
            self.fallback_reason = str(exc)
            self._log.warning(
                f'{cause}. Speaking with the {fallback!r} fallback voice instead. To use '
                f'{name}: give speaker_source/bert_source as file:// paths to a downloaded '
                'model (or run once with network access so it is cached), or set '
                'fallback_engine:=none to make this an error.')
            try:
                engine = create_engine(fallback)
            except EngineLoadError as exc2:
                self.engine_error = str(exc2)
                self._log.error(f'fallback engine failed too: {exc2}')
                return None
        load_s = time.perf_counter() - t0
        if params.get('output_rate'):  # one output rate for every voice, fallback included
            try:
                engine = ResampledEngine(engine, params['output_rate'])
            except ValueError as exc:
                engine.close()
                self.engine_error = str(exc)
                self._log.error(f'{exc} (parameter output_rate)')
                return None
        self.engine = engine
        try:
            engine.check_voice(voice())
        except UnknownStyleError as exc:
            self.engine_error = str(exc)
            self._log.error(f'{exc} (parameters style/speaker_id)')
            self.close()
            return None
        t1 = time.perf_counter()
        engine.warmup()
        self._log.info(f'engine {self.voice_name} on {engine.device} loaded in {load_s:.2f} '
                       f's, warmed up in {time.perf_counter() - t1:.2f} s '
                       f"({engine.sample_rate} Hz, styles: {', '.join(engine.styles)})")
        if params.get('phrase_cache_mb'):
            return self.add_cache(engine, params, voice())
        if params.get('preload_phrases', '').strip():
            self._log.warning('preload_phrases is set but phrase_cache_mb is 0 (the phrase '
                              'cache is off): nothing preloaded')
        return engine

    def adopt(self, source: EngineSource, owner: str, voice: Callable[[], VoiceParams]
              ) -> Optional[Engine]:
        """Take a view of a shared engine (loaded and warm) instead of loading one.

        Args:
            source: The shared engine.
            owner: Who the view is for (the node's namespace), for logs.
            voice: Returns the node's voice settings, checked against the shared voice.

        Returns:
            The view, also kept in :attr:`engine`; None on failure (logged as ERROR).
        """
        self.close()
        self.fallback_reason, self.engine_error = source.fallback_reason, ''
        try:
            self.engine = source.open(owner)
            self.engine.check_voice(voice())
        except (EngineError, UnknownStyleError) as exc:
            self.engine_error = str(exc)
            self._log.error(f'{exc} (parameters style/speaker_id)' if isinstance(
                exc, UnknownStyleError) else f'shared engine: {exc}')
            self.close()
            return None
        return self.engine

    def add_cache(self, engine: Engine, params: dict, voice: VoiceParams
                  ) -> Optional[Engine]:
        """Wrap ``engine`` in the phrase cache and preload ``preload_phrases`` into it.

        Args:
            engine: The engine to cache (a loaded one, or a fleet's gated engine).
            params: ``phrase_cache_mb``, ``phrase_cache_dir``, ``preload_phrases`` and the
                segmenting parameters (``max_chars``, ``max_segment_chars``,
                ``first_segment_morae``).
            voice: The voice the phrases are preloaded in.

        Returns:
            The cache, also kept in :attr:`engine`; None on failure (logged as ERROR;
            ``engine`` is then closed only if it was :attr:`engine`).
        """
        try:
            phrases = read_phrases(params.get('preload_phrases', ''))
            cached = CachingEngine(engine, params['phrase_cache_mb'],
                                   params.get('phrase_cache_dir') or None,
                                   dictionary=userdict.digest)
        except (ValueError, OSError) as exc:
            self.engine_error = str(exc)
            self._log.error(f'{exc} (parameters phrase_cache_mb/phrase_cache_dir/'
                            'preload_phrases)')
            self.close()
            return None
        self.engine = cached
        if phrases:
            res = preload(cached, phrases, voice, lambda phrase: pipeline.prepare(
                phrase, params['max_chars'], params['max_segment_chars'],
                params.get('first_segment_morae', 0))[1])
            for error in res.errors:
                self._log.warning(f'preload_phrases: not cached: {error}')
            self._log.info(
                f'phrase cache: preloaded {res.phrases - len(res.errors)}/{res.phrases} '
                f'phrase(s), {res.segments} segment(s) ({res.synthesised} synthesised, '
                f'{res.segments - res.synthesised} already cached) in {res.seconds:.2f} s; '
                f'{cached.size_bytes / 2 ** 20:.1f} of {cached.max_mb:g} MiB used')
        return cached

    def close(self) -> None:
        """Free the engine's memory (no-op when none is loaded)."""
        engine = self.detach()
        if engine is not None:
            engine.close()

    def detach(self) -> Optional[Engine]:
        """Give up the engine without closing it (its new owner closes it); None if none."""
        engine, self.engine = self.engine, None
        return engine
