# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A phrase cache: an engine wrapper that remembers the audio of segments (no ROS imports).

Robots say the same phrases again and again. :class:`CachingEngine` memoises
``synthesize(text, voice)`` in an LRU bounded in megabytes, optionally persisted as one
``.npz`` file per entry, so that a repeated segment costs no synthesis. An entry is the
segment's audio and its phones (:class:`~hayakoe_ros.engines.base.Phone`, as the engine
timed them: a hit is timed like a miss). The key is a
SHA-256 of everything that changes the audio: engine name, voice name, model identity
(:attr:`~hayakoe_ros.engines.Engine.model_id`: the model files' names, sizes and mtimes
for hayakoe; the HTS voice and pyopenjtalk version for Open JTalk), output sample rate,
every :class:`~hayakoe_ros.engines.VoiceParams` field, the user dictionary in force
(it changes Open JTalk's readings) and the segment text after the front end. A new model,
new settings or a new dictionary therefore never meet an old entry: their keys differ.

:mod:`.cache_files` keeps the entries on disk; :mod:`.preload` fills the cache at configure
with the node's ``preload_phrases``.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os
import threading
from typing import Callable, Iterator, Optional

import numpy as np

from .base import AudioWindow, Engine, VoiceParams, WrappedEngine
from .cache_files import EntryFiles

#: Bumped when the key or file format changes: older files are then never used.
#: 2: ``.npz`` entries with the phones (format 1 was the audio alone, one ``.npy`` each:
#: such files are removed when a directory is scanned, and their segments synthesised
#: again once, with their phones).
CACHE_FORMAT = 2

#: Pause predictions remembered (a float each; far below any audio entry's size).
MAX_PAUSES = 4096

#: Largest phrase cache accepted (MiB), the node parameter's range.
MAX_CACHE_MB = 4096.0

_MIB = 1024 * 1024


def cache_key(engine: str, voice_name: str, model_id: str, sample_rate: int,
              voice: VoiceParams, text: str, dictionary: str = '') -> str:
    """The hex SHA-256 naming one cache entry.

    Args:
        engine: Engine name (``hayakoe``, ``openjtalk``).
        voice_name: The engine's voice (a hayakoe speaker, an HTS voice).
        model_id: Model identity (see :attr:`Engine.model_id`).
        sample_rate: Output sample rate (Hz).
        voice: Voice settings; every field is part of the key.
        text: The segment text as given to ``synthesize`` (front-end output).
        dictionary: Digest of the user dictionary in force ('' if none).

    Returns:
        64 lowercase hex digits.
    """
    record = {'format': CACHE_FORMAT, 'engine': engine, 'voice_name': voice_name,
              'model': model_id, 'rate': int(sample_rate), 'voice': dataclasses.asdict(voice),
              'dictionary': dictionary, 'text': text}
    blob = json.dumps(record, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode('utf-8')).hexdigest()


class CachingEngine(WrappedEngine):
    """``engine`` with a phrase cache in front of :meth:`synthesize`.

    Args:
        engine: A loaded engine (possibly a :class:`~.resample.ResampledEngine`).
        max_mb: Bound of the cached audio in MiB (float32 samples: 1 MiB is about 6 s at
            44.1 kHz), in (0, :data:`MAX_CACHE_MB`]. The same bound applies to the files
            under ``directory`` (oldest written or used first out).
        directory: Where entries persist across restarts (created if missing); None =
            memory only.
        model_id: Model identity for the key; '' = ``engine.model_id``.
        dictionary: Returns a digest of the user dictionary in force ('' for none): it
            changes Open JTalk's readings, so it is part of every key. The engines know no
            front end; the node passes :func:`hayakoe_ros.text.userdict.digest`.

    Attributes:
        hits: Segments served from the cache (memory or disk).
        misses: Segments synthesised by ``engine``.

    Raises:
        ValueError: ``max_mb`` is out of range. OSError: ``directory`` cannot be created.
    """

    def __init__(self, engine: Engine, max_mb: float, directory: Optional[str] = None,
                 model_id: str = '', dictionary: Callable[[], str] = lambda: '') -> None:
        if not 0 < float(max_mb) <= MAX_CACHE_MB:
            raise ValueError(f'phrase cache size {max_mb} MiB is out of range: use 0 (off) '
                             f'or up to {MAX_CACHE_MB:g} MiB')
        super().__init__(engine)
        self._max_bytes = int(float(max_mb) * _MIB)
        self._model_id = model_id or engine.model_id
        self._dictionary = dictionary
        self._entries: collections.OrderedDict = collections.OrderedDict()
        self._bytes = 0
        self._pauses: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self._dir = os.path.abspath(os.path.expanduser(directory)) if directory else None
        self._disk = (EntryFiles(self._dir, self._max_bytes, self._lock)
                      if self._dir is not None else None)

    # ------------------------------------------------------------------ pass-through
    @property
    def model_id(self) -> str:
        """The model identity used in keys."""
        return self._model_id

    def warmup(self) -> None:
        """Warm up the wrapped engine (nothing is cached)."""
        self._engine.warmup()

    def close(self) -> None:
        """Drop the memory entries and close the wrapped engine (files stay)."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            self._pauses.clear()
        self._engine.close()

    def __getattr__(self, name: str):
        """Engine-specific extras beyond :class:`~.base.Engine` are the wrapped engine's.

        E.g. :class:`~.hayakoe_engine.HayakoeEngine`'s ``session_threads``,
        ``session_spinning`` and ``speaker``, read by diagnostics and tests.
        """
        if name.startswith('__') or name == '_engine':
            raise AttributeError(name)
        return getattr(self._engine, name)

    # ------------------------------------------------------------------ the cache
    @property
    def max_mb(self) -> float:
        """The size bound (MiB)."""
        return self._max_bytes / _MIB

    @property
    def size_bytes(self) -> int:
        """Bytes of audio held in memory."""
        return self._bytes

    @property
    def entries(self) -> int:
        """Entries held in memory."""
        return len(self._entries)

    @property
    def directory(self) -> Optional[str]:
        """The persistence directory (absolute), or None."""
        return self._dir

    @property
    def write_error(self) -> str:
        """Why entries cannot be written to the directory ('' while they can, or without one).

        After the first failure (a read-only directory) none is tried again, and it is
        logged once.
        """
        return self._disk.write_error if self._disk is not None else ''

    def key(self, text: str, voice: VoiceParams) -> str:
        """The entry name of ``text`` spoken with ``voice`` now (see :func:`cache_key`)."""
        return cache_key(self.name, self.voice, self._model_id, self.sample_rate, voice,
                         text, self._dictionary())

    def is_cached(self, text: str, voice: VoiceParams) -> bool:
        """True when ``text`` spoken with ``voice`` is held in memory or on disk."""
        key = self.key(text, voice)
        with self._lock:
            return key in self._entries or (self._disk is not None and self._disk.holds(key))

    def _lookup(self, key: str) -> Optional[AudioWindow]:
        """A fresh copy of the audio held for ``key`` with its phones (memory, then disk).

        None on a miss.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return AudioWindow(entry[0].copy(), phones=entry[1])
        entry = self._disk.load(key) if self._disk is not None else None
        if entry is not None:
            with self._lock:
                self.hits += 1
                self._remember(key, *entry)
            return AudioWindow(entry[0].copy(), phones=entry[1])
        return None

    def _keep(self, key: str, audio: np.ndarray, phones: tuple) -> None:
        """Remember a miss's audio and phones (memory LRU, and disk when persistent)."""
        with self._lock:
            self.misses += 1
            self._remember(key, audio.copy(), phones)
        if self._disk is not None:
            self._disk.store(key, audio, phones)

    def synthesize(self, text: str, voice: VoiceParams) -> np.ndarray:
        """Return the cached audio of ``text``, or synthesise and remember it.

        A miss is synthesised with its phones (:meth:`synthesize_timed`), so that a later
        timed call is served from the same entry.

        Returns:
            float32 ``(samples,)`` at :attr:`sample_rate`: a fresh copy, identical to the
            wrapped engine's output for that key. Raises what the wrapped engine raises
            (errors are not cached).
        """
        return self.synthesize_timed(text, voice).audio

    def synthesize_timed(self, text: str, voice: VoiceParams) -> AudioWindow:
        """The cached audio of ``text`` and its phones, or the wrapped engine's, remembered.

        Returns:
            An :class:`~.base.AudioWindow`: a fresh float32 copy of the audio and the
            phones the wrapped engine timed it with (empty when it did not). Raises what
            the wrapped engine raises (errors are not cached).
        """
        key = self.key(text, voice)
        hit = self._lookup(key)
        if hit is not None:
            return hit
        timed = self._engine.synthesize_timed(text, voice)
        audio = np.ascontiguousarray(timed.audio, dtype=np.float32)
        self._keep(key, audio, tuple(timed.phones))
        return AudioWindow(audio, phones=tuple(timed.phones))

    def synthesize_windows(self, text: str, voice: VoiceParams,
                           first_audio: bool = True) -> Iterator[AudioWindow]:
        """A hit as one window (whole, at no cost); a miss as the wrapped engine's windows.

        A hit's window carries the phones stored with it; a miss's windows are the
        wrapped engine's (its first carries the phones). A miss is remembered whole once
        its last window has come (an abandoned or failed one is not). Raises what the
        wrapped engine raises.
        """
        key = self.key(text, voice)
        hit = self._lookup(key)
        if hit is not None:
            yield hit
            return
        parts: list = []
        phones: tuple = ()
        for window in self._engine.synthesize_windows(text, voice, first_audio):
            if not parts:
                phones = tuple(window.phones)
            parts.append(np.asarray(window.audio, dtype=np.float32))
            if not window.later_s:
                self._keep(key, np.ascontiguousarray(np.concatenate(parts)), phones)
            yield window

    def predict_pause(self, left: str, right: str, voice: VoiceParams) -> float:
        """The wrapped engine's pause (s), remembered (:data:`MAX_PAUSES` entries)."""
        key = (left, right, voice, self._dictionary())
        with self._lock:
            pause = self._pauses.get(key)
            if pause is not None:
                self._pauses.move_to_end(key)
                return pause
        pause = self._engine.predict_pause(left, right, voice)
        with self._lock:
            self._pauses[key] = pause
            while len(self._pauses) > MAX_PAUSES:
                self._pauses.popitem(last=False)
        return pause

    def _remember(self, key: str, audio: np.ndarray, phones: tuple) -> None:
        """Put an entry in the memory LRU, evicting the least recently used (lock held).

        The bound counts the audio's bytes (a segment's phones are a few hundred bytes).
        """
        if audio.nbytes > self._max_bytes or key in self._entries:
            return
        audio.setflags(write=False)
        self._entries[key] = (audio, phones)
        self._bytes += audio.nbytes
        while self._bytes > self._max_bytes:
            _, (old, _) = self._entries.popitem(last=False)
            self._bytes -= old.nbytes


__all__ = ['CACHE_FORMAT', 'CachingEngine', 'MAX_CACHE_MB', 'cache_key']
