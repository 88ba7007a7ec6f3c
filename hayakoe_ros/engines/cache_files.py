# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The phrase cache's entries on disk: one file each, bounded in bytes (no ROS imports).

:class:`EntryFiles` indexes a directory of :mod:`.cache_entry` files, least recently
used first, and reads, writes (atomically) and trims them for a
:class:`~.phrase_cache.CachingEngine`. It shares that cache's lock: the lock guards the
memory LRU and this index together, and no file is read or written while it is held.
"""

from __future__ import annotations

import collections
import logging
import os
import tempfile
import threading
from typing import Optional
import zipfile

import numpy as np

from . import cache_entry

_LOG = logging.getLogger(__name__)

_SUFFIX = cache_entry.SUFFIX


class EntryFiles:
    """The entries persisted under one directory, the least recently used first out.

    Args:
        directory: Absolute path of the directory (created if missing); the entries
            already there are indexed, oldest first.
        max_bytes: Bound of the files' total size (bytes).
        lock: The cache's lock, which guards this index (``_files``, ``_file_bytes``)
            with the cache's memory LRU.

    Attributes:
        directory: The directory (absolute).
        write_error: Why entries cannot be written to the directory ('' while they can):
            after the first failure (a read-only directory) none is tried again, and it is
            logged once.

    Raises:
        OSError: ``directory`` cannot be created.
    """

    def __init__(self, directory: str, max_bytes: int, lock: threading.Lock) -> None:
        self.directory = directory
        self._max_bytes = max_bytes
        self._lock = lock
        self._files: collections.OrderedDict = collections.OrderedDict()  # name -> bytes
        self._file_bytes = 0
        self.write_error = ''
        os.makedirs(self.directory, exist_ok=True)
        self._scan()

    def holds(self, key: str) -> bool:
        """True when the entry ``key`` is on disk (the lock held)."""
        return key in self._files

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key + _SUFFIX)

    def _scan(self) -> None:
        """Index the files already in the directory, oldest first.

        Entries of the earlier format (audio alone, ``<key>.npy``: no key of this format
        names them) are removed, where the directory can be written.
        """
        found = []
        with os.scandir(self.directory) as it:
            for entry in it:
                if entry.name.endswith(_SUFFIX) and entry.is_file():
                    st = entry.stat()
                    found.append((st.st_mtime, entry.name[:-len(_SUFFIX)], st.st_size))
                elif cache_entry.FORMAT_1_RE.fullmatch(entry.name):
                    try:
                        os.unlink(entry.path)
                    except OSError:
                        pass
        with self._lock:
            for _, key, size in sorted(found):
                self._files[key] = size
                self._file_bytes += size
            self._trim_files()

    def load(self, key: str) -> Optional[tuple]:
        """The entry's ``(audio, phones)`` from disk, or None (absent; corrupt: removed, WARNING).

        The file is read with no lock held; the disk index (``_files``, ``_file_bytes``)
        is read and changed only under ``_lock``, like the memory LRU.
        """
        with self._lock:
            if key not in self._files:
                return None
        path = self._path(key)
        try:
            entry = cache_entry.read(path)
        except FileNotFoundError:
            with self._lock:
                self._forget_file(key)
            return None
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
            _LOG.warning(f'phrase cache: removing corrupt entry {path}: '
                         f'{type(exc).__name__}: {exc}')
            with self._lock:
                self._forget_file(key, remove=True)
            return None
        try:
            os.utime(path)  # recently used: last out when the directory is trimmed
        except OSError:
            pass
        with self._lock:
            if key in self._files:
                self._files.move_to_end(key)
        return entry

    def store(self, key: str, audio: np.ndarray, phones: tuple) -> None:
        """Write the entry atomically (temporary file + ``os.replace``).

        The first failure is logged as WARNING and ends writing (:attr:`write_error`).
        """
        with self._lock:
            if self.write_error or key in self._files or audio.nbytes > self._max_bytes:
                return
        tmp = ''
        try:
            fd, tmp = tempfile.mkstemp(prefix='.tmp-', suffix=_SUFFIX, dir=self.directory)
            with os.fdopen(fd, 'wb') as f:
                cache_entry.write(f, audio, phones)
            os.replace(tmp, self._path(key))
        except OSError as exc:
            self.write_error = f'{type(exc).__name__}: {exc}'
            _LOG.warning(f'phrase cache: cannot write to {self.directory} ({exc}); new '
                         'segments are kept in memory only, the entries on disk are still '
                         'served')
            if tmp:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            return
        size = os.path.getsize(self._path(key))
        with self._lock:
            if key not in self._files:
                self._files[key] = size
                self._file_bytes += size
            self._trim_files()

    def _forget_file(self, key: str, remove: bool = False) -> None:
        """Drop ``key`` from the disk index (and its file when ``remove``); ``_lock`` held."""
        self._file_bytes -= self._files.pop(key, 0)
        if remove:
            try:
                os.unlink(self._path(key))
            except OSError:
                pass

    def _trim_files(self) -> None:
        """Remove the least recently used files until they fit in the bound (``_lock`` held)."""
        while self._file_bytes > self._max_bytes and self._files:
            self._forget_file(next(iter(self._files)), remove=True)
