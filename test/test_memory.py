# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Allocator controls and the ONNX session hooks (no ROS)."""

import subprocess
import sys
import textwrap

import onnxruntime as ort
import pytest

from hayakoe_ros.engines import ort_session
from hayakoe_ros.engines import memory
from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine

pytestmark = pytest.mark.unit

GLIBC = memory._libc() is not None


def _run(code: str) -> str:
    """Run ``code`` in a fresh interpreter (allocator state is process-wide); its stdout."""
    proc = subprocess.run([sys.executable, '-c', textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, check=True)
    return proc.stdout


@pytest.mark.skipif(not GLIBC, reason='glibc only')
def test_trim_returns_freed_heap_memory_to_the_system():
    # 300 MB in 64 KiB blocks (below glibc's mmap threshold: heap memory), freed while a
    # block allocated last pins the top of the heap: resident until malloc_trim.
    out = _run("""
        from hayakoe_ros.engines import memory
        blocks = [bytearray(64 * 1024) for _ in range(4800)]
        pin = bytearray(64 * 1024)
        before = memory.vm_kib('VmRSS')
        del blocks
        freed = memory.vm_kib('VmRSS')
        released = memory.release_free_memory()
        after = memory.vm_kib('VmRSS')
        print(before, freed, after, released)
    """)
    before, freed, after, released = out.split()
    before, freed, after = int(before), int(freed), int(after)
    assert released == 'True'
    assert freed > before - 50 * 1024, 'glibc kept the freed blocks resident'
    assert after < freed - 250 * 1024, (before, freed, after)


@pytest.mark.skipif(not GLIBC, reason='glibc only')
def test_mmap_threshold_makes_large_frees_go_back_at_once():
    # With glibc's dynamic threshold a freed 8 MiB block raises the mmap threshold, so
    # later 4 MiB blocks land in the heap and stay resident after free; at 1 MiB they
    # are unmapped on free.
    code = """
        from hayakoe_ros.engines import memory
        {setup}
        big = bytearray(8 << 20)
        del big
        blocks = [bytearray(4 << 20) for _ in range(50)]
        pin = bytearray(1024)
        before = memory.vm_kib('VmRSS')
        del blocks
        print(before - memory.vm_kib('VmRSS'))
    """
    default = int(_run(code.format(setup='')))
    tuned = int(_run(code.format(
        setup='assert memory.configure_allocator(memory.NODE_ALLOCATOR)')))
    assert tuned > 150 * 1024, tuned   # ~200 MB back at once
    assert default < tuned


def test_allocator_settings_describe_themselves():
    assert memory.NODE_ALLOCATOR.describe() == 'trim 1 MiB, mmap 1 MiB'
    assert memory.AllocatorSettings().is_default
    assert memory.AllocatorSettings().describe() == 'glibc default'
    assert memory.AllocatorSettings(arena_max=2).describe() == 'arenas 2'


def test_non_glibc_is_a_quiet_no_op(monkeypatch):
    monkeypatch.setattr(memory, '_libc', lambda: None)
    assert memory.release_free_memory() is False
    assert memory.configure_allocator(memory.NODE_ALLOCATOR) is False


def test_vm_kib_reads_proc_and_is_zero_for_no_process():
    assert memory.vm_kib('VmHWM') >= memory.vm_kib('VmRSS') > 0
    assert memory.vm_kib('VmRSS', pid=2 ** 30) == 0


def test_session_hooks_patch_only_inside_the_block_and_restore_on_error():
    original = (ort.SessionOptions, ort.InferenceSession)
    with pytest.raises(ValueError):
        with ort_session.onnx_session_hooks(1, after_session=lambda: None):
            assert ort.SessionOptions().intra_op_num_threads == 1
            assert ort.InferenceSession is not original[1]
            raise ValueError('boom')
    assert (ort.SessionOptions, ort.InferenceSession) == original
    with ort_session.onnx_session_hooks(0):
        assert (ort.SessionOptions, ort.InferenceSession) == original


def test_engine_trims_after_each_of_its_sessions(tiny_model_root, monkeypatch):
    calls = []
    real = memory.release_free_memory
    monkeypatch.setattr(memory, 'release_free_memory', lambda: calls.append(1) or real())
    original = (ort.SessionOptions, ort.InferenceSession)
    engine = HayakoeEngine('tiny-jp', speaker_source=f'file://{tiny_model_root}',
                           bert_source=f'file://{tiny_model_root}', num_threads=1)
    try:
        # After each session is built (BERT, duration predictor, hayakoe's synthesizer,
        # then the two-stage synthesizer's first stage and decoder pieces that replace
        # it), then once after the whole load.
        sessions = engine.session_threads()
        assert len(calls) >= len(sessions) + 1, (len(calls), sorted(sessions))
        assert (ort.SessionOptions, ort.InferenceSession) == original
        assert set(sessions.values()) == {1}
        loaded = len(calls)
    finally:
        engine.close()
    assert len(calls) == loaded + 1  # and once after the close
