# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The synthesizer in two stages, the decoder in windows (tiny random-weight model, no ROS).

Exactness: the windows of a segment, concatenated, are hayakoe's own whole-segment
audio (its unsplit ``synthesizer.onnx``) to within 1e-4 of full scale, same length;
the receptive field the windows rely on is the one the decoder really has (an impulse
in the latent moves exactly the samples it predicts); bad graphs and parameters.
"""

import json
import logging
import shutil

import numpy as np
import pytest

from hayakoe_ros.engines import CancelToken, EngineLoadError, SynthesisCanceledError
from hayakoe_ros.engines import hayakoe_internals as hk
from hayakoe_ros.engines import decoder_receptive
from hayakoe_ros.engines.decoder_receptive import ChainSpec
from hayakoe_ros.engines.decoder_split import SplitError, SplitModelCache, split
from hayakoe_ros.engines.windowed_decoder import (StagedSynthesizer, first_window_frames,
                                                  window_plan)

from decoder_rig import EXACT, random_latent, windowed_engine

pytestmark = pytest.mark.unit

TEXTS = ('こんにちは、今日はいい天気ですね。', '明日の午前中は会議室の準備を行います。', 'はい。')

@pytest.fixture(scope='module')
def engines(tiny_model_root):
    """The windowed engine (first window 1 frame: the most cuts) and hayakoe's own.

    In the default cache: its optimised models and cut are those every other test of
    the run uses (the tests of a fresh cache build their own).
    """
    windowed = windowed_engine(tiny_model_root, None, first_window_s=0.001)
    whole = windowed_engine(tiny_model_root, None, first_window_s=0)
    yield windowed, whole
    windowed.close()
    whole.close()


def test_windows_are_hayakoe_s_whole_segment_audio(engines, det_voice):
    windowed, whole = engines
    assert windowed.windowed and not whole.windowed
    assert any(role.startswith('decoder.') for role in windowed.session_threads())
    for text in TEXTS:
        reference = whole.synthesize(text, det_voice)  # hayakoe's single session
        windows = list(windowed.synthesize_windows(text, det_voice))
        audio = np.concatenate([w.audio for w in windows])
        assert audio.size == reference.size
        assert np.abs(audio - reference).max() <= EXACT, text
        assert len(windows) >= 3  # a 1-frame first window, then doubling
        assert windows[0].audio.size == windowed.staged.hop
        # Each window says how much of the segment is still to come.
        for k, w in enumerate(windows):
            assert w.later_s == pytest.approx([x.audio.size / 44100 for x in windows[k + 1:]])
        # And the whole-segment call on the two stages is hayakoe's too.
        assert np.abs(windowed.synthesize(text, det_voice) - reference).max() <= EXACT


def test_default_first_window_and_growth(engines, det_voice, tiny_model_root, tmp_path):
    windowed, _ = engines
    plan = window_plan(100, 512, 18)
    sizes = [(hi - lo) // 512 for lo, hi in plan]
    assert sizes[:3] == [18, 36, 46] and sum(sizes) == 100  # short tail joined
    assert plan[0][0] == 0 and plan[-1][1] == 100 * 512
    assert all(a[1] == b[0] for a, b in zip(plan, plan[1:]))
    assert first_window_frames(0.2, 44100, 512) == 18  # 0.209 s: whole frames, rounded up
    for bad in (0.0, -0.1, 10.5, float('nan')):
        with pytest.raises(ValueError, match='out of range'):
            first_window_frames(bad, 44100, 512)
    with pytest.raises(ValueError):
        window_plan(100, 512, 0)
    for bad in (-0.2, 11.0):
        with pytest.raises(EngineLoadError, match='first_window_s'):
            windowed_engine(tiny_model_root, tmp_path, first_window_s=bad)
        with pytest.raises(ValueError, match='out of range'):
            windowed.set_first_window(bad)  # refused, and the setting stays
        assert windowed.first_window_s == pytest.approx(512 / 44100)
    windowed.set_first_window(0)  # whole segments, on the same two stages
    try:
        assert len(list(windowed.synthesize_windows(TEXTS[0], det_voice))) == 1
    finally:
        windowed.set_first_window(0.001)


def test_receptive_field_is_the_decoder_s_own(engines, monkeypatch):
    """An impulse in the latent changes exactly the audio the chain says it reaches."""
    windowed, _ = engines
    staged = windowed.staged
    config = hk.model_config(windowed.speaker)
    frames = 60
    z, g = random_latent(config, frames, seed=3)
    n = frames * staged.hop
    base = staged.decode(z, g, 0, n)
    j = 30
    bumped = z.copy()
    bumped[:, :, j] += 5.0
    moved = np.flatnonzero(staged.decode(bumped, g, 0, n) != base)
    left, right = staged.chain.context_frames()
    # Frame f reads latent frames f - left .. f + right: frame j reaches f in j-right..j+left.
    assert moved.min() // staged.hop >= j - right and moved.max() // staged.hop <= j + left
    assert moved.min() // staged.hop <= j - right + 1 and moved.max() // staged.hop >= j + left - 1
    # A chain that reads less than the decoder does is not exact at the cuts.
    config['resblock_kernel_sizes'] = [1, 1, 1]  # as if the residual blocks read nothing
    # (and cut into the same pieces: its first stage now reads 2 frames, not 16)
    monkeypatch.setattr(decoder_receptive, 'FINE_CONTEXT_FRAMES', 1.0)
    short = StagedSynthesizer(staged.stage1, staged.decoders, ChainSpec.from_config(config))
    plan = window_plan(frames, staged.hop, 4)
    wrong = np.concatenate([short.decode(z, g, lo, hi) for lo, hi in plan])
    assert np.abs(wrong - base).max() > 10 * EXACT
    right_plan = np.concatenate([staged.decode(z, g, lo, hi) for lo, hi in plan])
    assert np.abs(right_plan - base).max() <= EXACT


def test_the_full_size_decoder_s_context_comes_from_its_config():
    full = {'upsample_rates': [8, 8, 2, 2, 2], 'upsample_kernel_sizes': [16, 16, 8, 2, 2],
            'resblock': '1', 'resblock_kernel_sizes': [3, 7, 11],
            'resblock_dilation_sizes': [[1, 3, 5]] * 3, 'gin_channels': 512}
    chain = ChainSpec.from_config(full)
    assert chain.hop == 512
    # conv_pre 3 frames + stage 0's widest block ((11 - 1) / 2 x (1 + 3 + 5 + 3) = 60
    # samples at 8 per frame) + the later stages' and the kernels' share: 13 frames.
    assert chain.context_frames() == (13, 13)
    for bad in ({**full, 'upsample_kernel_sizes': [16, 16, 8, 2]},
                {**full, 'upsample_kernel_sizes': [15, 16, 8, 2, 2]},
                {**full, 'resblock': '3'},
                {k: v for k, v in full.items() if k != 'upsample_rates'}):
        with pytest.raises(ValueError):
            ChainSpec.from_config(bad)


def test_a_cancel_stops_between_windows_and_inside_a_window_s_run(engines, det_voice):
    windowed, _ = engines
    token = CancelToken()
    got = []
    with pytest.raises(SynthesisCanceledError):
        with windowed.cancellable(token):
            for w in windowed.synthesize_windows(TEXTS[1], det_voice):
                got.append(w)
                token.cancel()  # between windows: the next one is not decoded
    assert len(got) == 1
    # Inside a run: a cancel that comes as a decoder piece starts reaches its run (the
    # terminate flag), so ONNX Runtime stops it there.
    token = CancelToken()
    decoder = windowed.staged.decoders[-1]
    with pytest.raises(SynthesisCanceledError) as info:
        with windowed.cancellable(token):
            run = decoder.run  # the terminable wrapper cancellable() put there

            def cancel_then_run(names, feed, options=None):
                token.cancel()
                return run(names, feed, options)

            decoder.run = cancel_then_run
            try:
                list(windowed.synthesize_windows(TEXTS[0], det_voice))
            finally:
                decoder.run = run
    assert 'terminate' in str(info.value.__cause__).lower()
    assert 'run' not in vars(decoder)  # the wrapper is gone after the block


def _renamed_model(src, dst):
    """A copy of the tiny model tree whose synthesizer has no node names (unknown graph)."""
    import onnx

    shutil.copytree(src, dst)
    path = dst / 'onnx' / 'speakers' / 'tiny-jp' / 'synthesizer.onnx'
    model = onnx.load(str(path))
    for i, node in enumerate(model.graph.node):
        node.name = f'n{i}'
    onnx.save(model, str(path))
    return dst


def test_a_graph_without_the_decoder_falls_back_to_whole_segments_logged_once(
        tiny_model_root, tmp_path, det_voice, caplog, hayakoe_clean_globals):
    root = _renamed_model(tiny_model_root, tmp_path / 'model')
    config = json.loads((root / 'onnx' / 'speakers' / 'tiny-jp' / 'config.json').read_text())
    with pytest.raises(SplitError, match='no decoder input where expected'):
        split(str(root / 'onnx' / 'speakers' / 'tiny-jp' / 'synthesizer.onnx'),
              str(tmp_path), config['model'])
    caplog.set_level(logging.DEBUG, logger='hayakoe_ros.engines.hayakoe_staged')
    engines = [windowed_engine(root, tmp_path / 'cache') for _ in range(2)]
    try:
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING
                    and 'decoding whole segments' in r.getMessage()]
        assert len(warnings) == 1 and 'no decoder input where expected' in \
            warnings[0].getMessage()
        for engine in engines:
            assert not engine.windowed
            windows = list(engine.synthesize_windows(TEXTS[0], det_voice))
            assert len(windows) == 1 and windows[0].audio.size > 0
        # The failure is remembered beside the cache: not cut again at every start.
        assert list((tmp_path / 'cache' / 'hayakoe_ros' / 'ort-split').glob('*.failed'))
    finally:
        for engine in engines:
            engine.close()


def test_the_cut_is_cached_and_keyed_by_the_source(tiny_model_root, tmp_path):
    src = tmp_path / 'synthesizer.onnx'
    shutil.copy(tiny_model_root / 'onnx' / 'speakers' / 'tiny-jp' / 'synthesizer.onnx', src)
    config = json.loads((tiny_model_root / 'onnx' / 'speakers' / 'tiny-jp' /
                         'config.json').read_text())['model']
    cache = SplitModelCache(tmp_path / 'split')
    first = cache.pieces(str(src), config)
    stamp = (first / 'dec0.onnx').stat().st_mtime_ns
    assert cache.pieces(str(src), config) == first  # a hit: not cut again
    assert (first / 'dec0.onnx').stat().st_mtime_ns == stamp
    with open(src, 'ab') as fh:  # another file at the same path: another key
        fh.write(b'\0')
    with pytest.raises(SplitError):  # (a corrupt graph: its cut fails, with the reason)
        cache.pieces(str(src), config)
    assert list((tmp_path / 'split').glob('*.failed'))  # remembered, not retried


def test_the_cut_is_made_here_when_no_process_can_be_started(tiny_model_root, tmp_path,
                                                             monkeypatch):
    # Under qemu user-mode emulation the interpreter cannot start itself again.
    import subprocess

    def refuse(*args, **kwargs):
        raise OSError(8, 'Exec format error')

    monkeypatch.setattr(subprocess, 'run', refuse)
    config = hk_config(tiny_model_root)
    entry = SplitModelCache(tmp_path).pieces(
        str(tiny_model_root / 'onnx' / 'speakers' / 'tiny-jp' / 'synthesizer.onnx'), config)
    assert (entry / 'stage1.onnx').is_file() and (entry / 'dec0.onnx').is_file()


def hk_config(root):
    """The tiny model's config ``model`` section, read from its file."""
    return json.loads((root / 'onnx' / 'speakers' / 'tiny-jp' / 'config.json')
                      .read_text())['model']


def test_a_decoder_whose_residual_joins_are_not_where_the_config_puts_them_is_not_cut(
        tiny_model_root, tmp_path):
    import onnx

    source = tiny_model_root / 'onnx' / 'speakers' / 'tiny-jp' / 'synthesizer.onnx'
    model = onnx.load(str(source))
    for node in model.graph.node:
        if node.name == '/dec/resblocks.1/Add_1':
            node.name = '/dec/elsewhere/Add_1'  # one residual join fewer in block 1
    path = tmp_path / 'synthesizer.onnx'
    onnx.save(model, str(path))
    with pytest.raises(SplitError, match=r"resblocks.1' has 2 residual adds, the config "
                                         r'gives 3'):
        split(str(path), str(tmp_path), hk_config(tiny_model_root))
