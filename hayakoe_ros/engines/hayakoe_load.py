# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Loading a hayakoe speaker the node's way, and naming what was loaded (no ROS imports).

:func:`load` checks the device, builds hayakoe's ``TTS`` and speaker with the ONNX
Runtime settings of :class:`~.hayakoe_engine.HayakoeEngine` (threads, spinning, the
optimised model copies, the two-stage synthesizer) and reports every failure as an
:class:`~.base.EngineLoadError`; :func:`model_identity` names the loaded model (its
files: :func:`model_files`) for caches of its audio.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import sys
from typing import Callable

from . import hayakoe_internals as hk
from . import hayakoe_staged, memory, ort_cache, ort_session
from .base import EngineLoadError
from .values import Spinning

_LOG = logging.getLogger(__name__)

#: Default model repository of hayakoe (Hugging Face), used when no source is given.
DEFAULT_SOURCE = 'hf://lemondouble/hayakoe'


def keep_torch_out() -> None:
    """Keep PyTorch out of this process for good, unless something imported it already.

    For a process that owns its imports (the node's, the fleet's) and speaks with
    hayakoe on ONNX Runtime (device ``cpu``), whose path never calls torch: hayakoe
    imports transformers for its BERT tokenizer, and transformers imports torch whenever
    it is installed, which costs the start-up and resident memory of a process that does
    not use it (a tiny model's engine, this machine: load 9.5 s -> 4.6 s, peak RSS 475 MB
    -> 209 MB). ``sys.modules['torch'] = None`` is the import system's own mark for a
    module that must not load: ``import torch`` raises ImportError and
    ``importlib.util.find_spec('torch')`` answers None, so transformers takes torch for
    absent and the process runs as on a Raspberry Pi, which has no torch. Not for a
    library caller's process, which may want torch later for its own use.
    """
    if 'torch' not in sys.modules:
        sys.modules['torch'] = None  # type: ignore[assignment]


def check_cuda(device: str) -> None:
    """Raise :class:`EngineLoadError` unless PyTorch can use ``device`` (``cuda[:N]``)."""
    if 'torch' in sys.modules and sys.modules['torch'] is None:
        raise EngineLoadError(
            f"device '{device}' needs PyTorch, which this process keeps out because its "
            "first engine ran on device 'cpu' (transformers, imported then, took torch "
            f"for absent); restart the node with device '{device}'")
    try:
        import torch
    except ImportError as exc:
        raise EngineLoadError(
            f"device '{device}' needs PyTorch with CUDA, which is not installed "
            "(pip install 'hayakoe[gpu]' and a CUDA build of torch); use device 'cpu' for "
            'ONNX Runtime') from exc
    if not torch.cuda.is_available():
        raise EngineLoadError(
            f"device '{device}' requested but CUDA is not available to torch "
            f'{torch.__version__} (no GPU, driver, or a CPU-only build); use device '
            "'cpu' for ONNX Runtime")
    index = int(device.split(':', 1)[1]) if ':' in device else 0
    if index >= torch.cuda.device_count():
        raise EngineLoadError(f"device '{device}' does not exist: torch sees "
                              f'{torch.cuda.device_count()} CUDA device(s)')


def use_cudnn(enabled: bool) -> None:
    """Let PyTorch run convolutions through cuDNN, or not, for the whole process.

    hayakoe's synthesizer is convolutions over a sequence whose length changes with every
    sentence. With cuDNN, PyTorch builds an execution plan per input shape, cached per
    thread, so each new length pays for its plans again: on an H200 (torch 2.11, cuDNN 9)
    the synthesis of a segment not heard before took 150-190 ms against 50-55 ms for a
    repeated one. PyTorch's own CUDA convolutions have no such cost (70-77 ms for new and
    repeated segments alike), though they are slower per call (the decoder of a 1.1 s
    segment: 38 ms against 9 ms with cuDNN's plan at hand). A dialogue sends new sentences:
    the node's median time to first audio on 8 new sentences was 121 ms with cuDNN off
    and 295 ms with it on (``bench/cuda.py``; BENCHMARKS.md, "The CUDA path"). The flag
    (``torch.backends.cudnn.enabled``) is process-wide: it also applies to other PyTorch
    code in the process.
    """
    import torch

    if torch.backends.cudnn.enabled != bool(enabled):
        torch.backends.cudnn.enabled = bool(enabled)
        _LOG.info('cuDNN %s for this process (PyTorch convolutions)',
                  'enabled' if enabled else 'disabled')


def source_uri(uri: str) -> str:
    """Normalise a source URI: empty -> hayakoe's default repo; ``file://`` kept as is."""
    uri = (uri or '').strip()
    return uri or DEFAULT_SOURCE


def spinning_mode(value) -> Spinning:
    """``value`` (a :class:`.Spinning` or its name) as a :class:`.Spinning`.

    Raises:
        EngineLoadError: ``value`` names no mode; the message lists them.
    """
    try:
        return Spinning(value)
    except ValueError:
        raise EngineLoadError(f'spinning {value!r} is unknown; use one of: '
                              f"{', '.join(m.value for m in Spinning)}") from None


def load(speaker: str, device: str, *, speaker_source: str, bert_source: str,
         cache_dir: str, num_threads: int, compile: bool, cudnn: bool,
         allocator: memory.AllocatorSettings, trim: bool, optimized_models: bool,
         spinning: Spinning, first_window_s: float,
         release: Callable[[], None]) -> tuple:
    """Load the hayakoe speaker ``speaker`` on ``device``, its sessions built the node's way.

    The arguments are :class:`~.hayakoe_engine.HayakoeEngine`'s (``num_threads`` an int,
    ``trim`` already off on CUDA); ``release`` gives freed heap memory back to the system
    and is called by the two-stage synthesizer's build.

    Returns:
        ``(tts, speaker, staged)``: hayakoe's ``TTS`` and ``Speaker``, and the two-stage
        synthesizer in hayakoe's place (:class:`~.windowed_decoder.StagedSynthesizer`), or
        None for whole segments (CUDA, ``first_window_s`` 0, or a graph that cannot be
        cut).

    Raises:
        EngineLoadError: hayakoe is not installed, the device is not supported or not
            available, or the model cannot be loaded; the message names the cause.
        RuntimeError: the installed hayakoe's internals changed
            (:func:`~.hayakoe_internals.check_compatible`).
    """
    try:
        from hayakoe import TTS
    except ImportError as exc:
        raise EngineLoadError(f'hayakoe is not installed: {exc}') from exc
    hk.check_compatible()
    if not device.startswith('cuda') and device != 'cpu':
        raise EngineLoadError(f"device '{device}' is not supported; use 'cpu' or 'cuda'")
    if device.startswith('cuda'):
        check_cuda(device)
        use_cudnn(cudnn)
    elif not allocator.is_default:
        # Before anything big is allocated: glibc has no env var we could still set.
        applied = memory.configure_allocator(allocator)
        _LOG.debug('allocator %s: %s', allocator.describe(),
                   'set' if applied else 'not set (not glibc)')
    kwargs = {'device': device, 'bert_source': source_uri(bert_source)}
    if cache_dir:
        kwargs['cache_dir'] = os.path.expanduser(cache_dir)
    try:
        if device.startswith('cuda') and num_threads > 0:
            import torch

            torch.set_num_threads(num_threads)
        # A tokenizer left by an earlier engine in this process would be reused.
        hk.unload_globals()
        tts = TTS(**kwargs).load(speaker, source=source_uri(speaker_source))
        after = memory.release_free_memory if trim else None
        source = None
        if optimized_models and device == 'cpu':
            cache = ort_cache.OptimizedModelCache(
                os.path.join(hk.cache_dir(tts), 'hayakoe_ros', 'ort-optimized'))
            source = cache.session_source
        hooks: dict = {'num_threads': num_threads, 'after_session': after,
                       'model_source': source, 'allow_spinning': spinning != Spinning.NONE}
        with ort_session.onnx_session_hooks(**hooks):
            tts.prepare(warmup=device.startswith('cuda'), compile=bool(compile))
        loaded = tts.speakers[speaker]
        staged = None
        if device == 'cpu' and first_window_s:
            staged = hayakoe_staged.stage_synthesizer(
                tts, loaded, hooks, release, decoder_spinning=spinning == Spinning.ALL)
    except Exception as exc:  # hayakoe raises many types: report them all the same way
        cause = ' '.join(str(exc).split())  # hayakoe's messages span several lines
        raise EngineLoadError(
            f"cannot load hayakoe speaker '{speaker}' from "
            f"'{source_uri(speaker_source)}' (BERT from '{source_uri(bert_source)}') "
            f'on {device}: {type(exc).__name__}: {cause}') from exc
    return tts, loaded, staged


def model_files(tts, speaker) -> list:
    """Return the paths of the files the loaded model was read from.

    Those under :func:`~.hayakoe_internals.model_dirs`: the speaker's directory (config,
    style vectors, synthesizer, duration predictor) and the BERT directories (model and
    tokenizer) of its backend. Sorted, absolute; files that cannot be listed are left out.
    """
    found: set = set()
    for d in hk.model_dirs(tts, speaker):
        try:
            found.update(os.path.abspath(os.path.join(root, f))
                         for root, _, files in os.walk(os.fspath(d)) for f in files)
        except OSError:
            continue
    return sorted(found)


def model_identity(tts, speaker, device: str, speaker_name: str) -> str:
    """Device, hayakoe version and the model files (name, size, mtime), hashed.

    Returns:
        ``<speaker_name>@<device>:<16 hex digits>``.
    """
    try:
        version = importlib.metadata.version('hayakoe')
    except importlib.metadata.PackageNotFoundError:
        version = '?'
    parts = [device, version]
    for path in model_files(tts, speaker):
        try:
            st = os.stat(path)
        except OSError:
            continue
        parts.append(f'{path}:{st.st_size}:{st.st_mtime_ns}')
    digest = hashlib.sha256('\n'.join(parts).encode('utf-8')).hexdigest()[:16]
    return f'{speaker_name}@{device}:{digest}'
