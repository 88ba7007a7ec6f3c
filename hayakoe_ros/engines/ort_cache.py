# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""ONNX models optimised once, offline, then loaded with ONNX Runtime's optimiser off.

Building a session from a plain ``.onnx`` file holds the parsed protobuf, the unpacked
initializers and the graph optimiser's rewritten copies at once: on the full-size INT8
BERT (495 MB) that is a 1.09 GB peak for a session that keeps 0.47 GB. ONNX Runtime can
write the graph it optimised (``SessionOptions.optimized_model_filepath``); loading that
file with ``ORT_DISABLE_ALL`` skips the optimiser, runs the very same graph (the same
kernels, bit-identical output) and peaks at about what the session keeps (BENCHMARKS.md,
"Memory levers").

:class:`OptimizedModelCache` does that once per model file: the optimisation runs in a
separate, short-lived Python process (``python -m hayakoe_ros.engines.ort_cache``), so its
peak is never the caller's, and its output is kept under a cache directory, keyed by the
source file's SHA-256, the ONNX Runtime version, the optimisation level and the CPU (a
graph optimised at ``ORT_ENABLE_ALL`` may hold hardware-specific layouts). When the model
file or ONNX Runtime changes, the key changes; the entry of the old key for the same
source file is deleted when the new one is written. Whatever fails (a read-only cache
directory, the conversion process killed for memory, a timeout), the caller gets the
plain ``.onnx`` back and loads it as before; a failed conversion leaves a ``.failed``
marker so that it is not retried at every start (delete the marker to retry).

No ROS imports; needs onnxruntime only (no ``onnx`` package, no torch).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from pathlib import Path
import platform
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Optional

_LOG = logging.getLogger(__name__)
# Causes already warned about in this process: a read-only cache directory is one cause,
# however many model files it keeps from being optimised (later ones log at DEBUG).
_WARNED: set = set()


def _warn_once(cause: tuple, message: str, *args) -> None:
    level = logging.DEBUG if cause in _WARNED else logging.WARNING
    _WARNED.add(cause)
    _LOG.log(level, message, *args)

#: Seconds one conversion may take before the plain model is used (the full-size BERT
#: takes 10-15 s on this repository's 2-core x86 machine; a Raspberry Pi 4B is slower).
CONVERT_TIMEOUT_S = 600.0

#: File name of the optimised model inside an entry directory.
MODEL_NAME = 'model.onnx'
_META_NAME = 'meta.json'


@functools.lru_cache(maxsize=1)
def cpu_signature() -> str:
    """Machine name and a hash of the CPU feature flags (``/proc/cpuinfo``).

    E.g. ``x86_64-3f2a9c01``; the hash is of an empty string where ``/proc`` is not
    available.
    """
    flags = ''
    try:
        with open('/proc/cpuinfo', encoding='utf-8', errors='replace') as fh:
            for line in fh:
                if line.split(':', 1)[0].strip() in ('flags', 'Features'):
                    flags = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    digest = hashlib.sha256(flags.encode('utf-8')).hexdigest()[:8]
    return f'{platform.machine()}-{digest}'


def _umask() -> int:
    """Return the process umask, read from ``/proc``; 0o022 where that is not available.

    (Setting the umask in order to read it is not thread-safe.)
    """
    try:
        with open('/proc/self/status', encoding='ascii') as fh:
            for line in fh:
                if line.startswith('Umask:'):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


class OptimizedModelCache:
    """Offline-optimised copies of ONNX models, made on first use, under ``root``.

    Args:
        root: Cache directory (created when needed). The hayakoe engine uses
            ``<hayakoe cache>/hayakoe_ros/ort-optimized``.
        timeout_s: Seconds a conversion process may run (:data:`CONVERT_TIMEOUT_S`).

    Entries are ``root/<model stem>-<key>/model.onnx`` plus a ``meta.json`` naming the
    source; the SHA-256 of each source file is remembered with its size, mtime and inode
    in ``root/sources/`` so that it is recomputed only when the file changes on disk.
    """

    def __init__(self, root: os.PathLike | str, timeout_s: float = CONVERT_TIMEOUT_S) -> None:
        self.root = Path(root)
        self.timeout_s = float(timeout_s)

    def session_source(self, source: str, options: Any) -> str:
        """The model file a session built with ``options`` should load instead of ``source``.

        Args:
            source: Path of a ``.onnx`` file.
            options: The ``onnxruntime.SessionOptions`` the session will be built with. When
                an optimised copy is returned, its ``graph_optimization_level`` is set to
                ``ORT_DISABLE_ALL`` (the copy is already optimised at the level it asked).

        Returns:
            The optimised copy's path, or ``source`` unchanged (with ``options``
            untouched) when the options ask for no optimisation or the copy cannot be
            had; the reason is logged (WARNING for a failure, once per marker).
        """
        import onnxruntime as ort

        level = options.graph_optimization_level
        if level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL:
            return source
        path = self.optimized(source, level.name)
        if path is None:
            return source
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        return str(path)

    def entry_dir(self, source: str, level: str) -> Path:
        """Directory of ``source``'s entry for optimisation level ``level`` (may not exist).

        Raises:
            OSError: ``source`` cannot be read.
        """
        import onnxruntime as ort

        parts = (self.source_sha256(source), ort.__version__, level, cpu_signature())
        key = hashlib.sha256('|'.join(parts).encode('utf-8')).hexdigest()[:16]
        return self.root / f'{Path(source).stem}-{key}'

    def optimized(self, source: str, level: str) -> Optional[Path]:
        """Path of ``source`` optimised at ``level`` (an ``ORT_ENABLE_*`` name).

        Converts it now, in a separate process, when it is not cached. Returns None when
        that fails (logged as WARNING, and a ``.failed`` marker is left).
        """
        try:
            entry = self.entry_dir(source, level)
        except OSError as exc:
            _LOG.warning('cannot read %s to key its optimised copy (%s); loading it as is',
                         source, exc)
            return None
        model = entry / MODEL_NAME
        if model.is_file():
            return model
        failed = entry.with_name(entry.name + '.failed')
        if failed.exists():
            _LOG.info('optimising %s failed before (%s); loading it as is', source, failed)
            return None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix='.tmp-', dir=self.root))
            os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp's 0700 hides it from other users
        except OSError as exc:
            _warn_once(('unwritable', str(self.root), exc.errno),
                       'cache directory %s is not writable (%s); loading %s and any other '
                       'model unoptimised offline', self.root, exc, source)
            return None
        try:
            error = self._convert(source, tmp / MODEL_NAME, level)
            if error:
                _LOG.warning('optimising %s offline failed: %s; loading it as is', source,
                             error)
                failed.write_text(error + '\n', encoding='utf-8')
                return None
            (tmp / _META_NAME).write_text(json.dumps(
                {'source': os.path.abspath(source), 'level': level}), encoding='utf-8')
            try:
                os.replace(tmp, entry)
            except OSError:  # another process finished the same entry first
                if not model.is_file():
                    raise
            self._drop_stale(source, keep=entry)
            _LOG.info('optimised %s offline into %s', source, model)
            return model
        except OSError as exc:
            _warn_once(('store', str(self.root), exc.errno),
                       'cannot store the optimised copy of %s (%s); loading it as is',
                       source, exc)
            return None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _convert(self, source: str, target: Path, level: str) -> str:
        """Run the conversion process; '' on success, else what went wrong."""
        cmd = [sys.executable, '-m', __name__, source, str(target), level]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=self.timeout_s, check=False)
        except subprocess.TimeoutExpired:
            return f'no result within {self.timeout_s:.0f} s'
        except OSError as exc:
            return f'cannot start {sys.executable}: {exc}'
        if proc.returncode != 0 or not target.is_file():
            lines = proc.stderr.strip().splitlines()
            tail = lines[-1][-500:] if lines else 'no message (killed for memory?)'
            return f'conversion process exited with status {proc.returncode}: {tail}'
        return ''

    def _drop_stale(self, source: str, keep: Path) -> None:
        """Delete other entries made from the same source path (an older file or runtime)."""
        drop_stale_entries(self.root, source, keep, _META_NAME)

    def source_sha256(self, source: str) -> str:
        """SHA-256 of ``source`` (hex), remembered while its size, mtime and inode stay.

        Raises:
            OSError: ``source`` cannot be read.
        """
        st = os.stat(source)
        stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
        src = os.path.abspath(source)
        memo = self.root / 'sources' / (hashlib.sha256(src.encode('utf-8')).hexdigest()[:16]
                                        + '.json')
        try:
            known = json.loads(memo.read_text(encoding='utf-8'))
            if known.get('path') == src and known.get('stat') == stamp:
                return str(known['sha256'])
        except (OSError, ValueError, KeyError):
            pass
        with open(source, 'rb') as fh:
            digest = hashlib.file_digest(fh, 'sha256').hexdigest()
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo.with_suffix(f'.{os.getpid()}.tmp')
            tmp.write_text(json.dumps({'path': src, 'stat': stamp, 'sha256': digest}),
                           encoding='utf-8')
            os.replace(tmp, memo)
        except OSError:
            pass  # read-only cache: the hash is just not remembered
        return digest


def convert(source: str, target: str, level: str) -> None:
    """Optimise ``source`` at ``level`` into ``target``, then check that it loads.

    Runs in the conversion process, with the node's allocator settings
    (:data:`memory.NODE_ALLOCATOR`) and one intra-op thread (the threads do not change the
    optimised graph). Raises whatever ONNX Runtime raises.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    options.intra_op_num_threads = 1
    options.optimized_model_filepath = target
    options.log_severity_level = 3  # not the hardware-specific-layout warning: keyed by CPU
    session = ort.InferenceSession(source, options, providers=['CPUExecutionProvider'])
    del session
    check = ort.SessionOptions()
    check.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    check.intra_op_num_threads = 1
    ort.InferenceSession(target, check, providers=['CPUExecutionProvider'])


if __name__ == '__main__':
    from hayakoe_ros.engines import memory

    memory.configure_allocator()  # the node's settings: a lower peak here too
    convert(*sys.argv[1:4])


def drop_stale_entries(root: Path, source: str, keep: Path, meta_name: str) -> None:
    """Delete the cache entries under ``root`` made from ``source``'s path, except ``keep``.

    An entry is a directory ``<source stem>-<key>`` whose ``meta_name`` JSON file records
    ``source`` (absolute path); an unreadable one is left alone. Shared by this cache and
    the synthesizer cut's (:mod:`.decoder_split`), which key their entries the same way.
    """
    src = os.path.abspath(source)
    for meta in Path(root).glob(f'{Path(source).stem}-*/{meta_name}'):
        if meta.parent == keep:
            continue
        try:
            if json.loads(meta.read_text(encoding='utf-8')).get('source') == src:
                shutil.rmtree(meta.parent, ignore_errors=True)
        except (OSError, ValueError):
            continue
