# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A segment's decoder windows in a stream (tiny random-weight model, no ROS).

What a :class:`~hayakoe_ros.engines.windowed_decoder.DecoderStream` computes between
windows: each piece's own context only, what it keeps, the first stage computed ahead
for a last window, and streams of one synthesizer decoding at once; every time the
audio equals the whole decode.
"""

import numpy as np
import pytest

from hayakoe_ros.engines import hayakoe_internals as hk
from hayakoe_ros.engines.windowed_decoder import window_plan

from decoder_rig import EXACT, random_latent, windowed_engine

pytestmark = pytest.mark.unit


@pytest.fixture(scope='module')
def engine(tiny_model_root):
    """The windowed engine on the tiny model (in the run's shared cache)."""
    windowed = windowed_engine(tiny_model_root, None, first_window_s=0.001)
    yield windowed
    windowed.close()


def test_windows_in_a_row_recompute_only_each_piece_s_own_context(engine):
    """Windows in a stream re-read at a cut only each piece's own receptive field.

    Each piece runs on its whole signal once, plus at each cut its own context: never
    the whole decoder's (13 frames each side).
    """
    windowed = engine
    staged = windowed.staged
    frames = 50
    z, g = random_latent(hk.model_config(windowed.speaker), frames, seed=5)
    runs: list = []
    originals = [s.run for s in staged.decoders]
    for n, session in enumerate(staged.decoders):
        def counted(names, feed, options=None, _n=n, _run=originals[n]):
            first = next(iter(feed.values()))
            runs.append((_n, first.shape[2]))
            return _run(names, feed, options)
        session.run = counted
    try:
        whole = staged.decode(z, g, 0, frames * staged.hop)
        whole_len = dict(runs)
        runs.clear()
        plan = window_plan(frames, staged.hop, 1)
        stream = staged.stream(z, g)
        audio = np.concatenate([stream.decode(lo, hi) for lo, hi in plan])
        streamed = list(runs)
        runs.clear()
        for lo, hi in plan:  # each window on its own, from the latent
            staged.decode(z, g, lo, hi)
        alone = list(runs)
        runs = streamed
    finally:
        for session in staged.decoders:
            del session.run
    assert np.abs(audio - whole).max() <= EXACT
    cuts = len(plan) - 1
    assert cuts >= 4
    for n, spec in enumerate(staged.pieces):
        read = sum(length for k, length in runs if k == n)
        lo, hi = spec.needs(10 ** 6, 10 ** 6)  # one interior sample's own context
        context = (10 ** 6 - lo) + (hi - 10 ** 6)
        assert whole_len[n] <= read <= whole_len[n] + cuts * (context + 2), spec.name
    # Windows on their own re-read, at the first pieces, the whole decoder's context.
    first = [length for k, length in alone if k == 0]
    left, right = staged.chain.context_frames()
    assert sum(first) >= frames + cuts * min(left, right)


def test_between_windows_a_stream_keeps_only_what_the_next_window_reads(engine):
    """Memory between windows is the pieces' context at the cut, not the windows decoded.

    Windows double, so a stream that kept each run's output would hold half a segment of
    every signal; it keeps, per signal, at most what audio sample ``hi`` reads. The
    exception is the first stage's signals after the window that computed them ahead
    for the last window: up to the segment's end, which that last window reads.
    """
    windowed = engine
    staged = windowed.staged
    frames = 80
    z, g = random_latent(hk.model_config(windowed.speaker), frames, seed=7)
    plan = window_plan(frames, staged.hop, 2)
    assert len(plan) >= 4
    assert staged.lead_keys
    stream = staged.stream(z, g)
    pieces = []
    for lo, hi in plan[:-1]:
        pieces.append(stream.decode(lo, hi))
        needed = stream.context_at(hi)
        to_end = stream.context_at(stream.samples - 1)
        led = hi == plan[-2][1]
        for key, count in stream.held.items():
            if key == 'z':
                continue
            a, b = needed[key]
            if led and key in staged.lead_keys:
                b = to_end[key][1]
            assert count <= b - a + 1, (key, count, (a, b), (lo, hi))
    pieces.append(stream.decode(*plan[-1]))
    whole = staged.decode(z, g, 0, frames * staged.hop)
    assert np.abs(np.concatenate(pieces) - whole).max() <= EXACT


def test_the_last_window_runs_no_first_stage_piece(engine):
    """The window before a last, no longer one computes the first stage to the end.

    The first upsampling stage's pieces run on few samples per frame, where a run's fixed
    cost weighs most: the window before the last computes their signals to the segment's
    end (not a first window: first audio waits on it), and the audio is still the whole
    decode's.
    """
    windowed = engine
    staged = windowed.staged
    frames = 33  # windows of 3, 6, 12 and 12 frames
    z, g = random_latent(hk.model_config(windowed.speaker), frames, seed=11)
    plan = window_plan(frames, staged.hop, 3)
    assert len(plan) >= 3 and plan[-1][1] - plan[-1][0] <= plan[-2][1] - plan[-2][0]
    lead = {n for n, spec in enumerate(staged.pieces) if spec.output in staged.lead_keys}
    assert lead and len(lead) < len(staged.pieces)
    runs: list = []
    originals = [s.run for s in staged.decoders]
    for n, session in enumerate(staged.decoders):
        def counted(names, feed, options=None, _n=n, _run=originals[n]):
            runs.append(_n)
            return _run(names, feed, options)
        session.run = counted
    try:
        stream = staged.stream(z, g)
        audio = []
        per_window = []
        for lo, hi in plan:
            runs.clear()
            audio.append(stream.decode(lo, hi))
            per_window.append(set(runs))
    finally:
        for session in staged.decoders:
            del session.run
    assert lead <= per_window[0] and lead <= per_window[-2]
    assert not lead & per_window[-1]
    assert per_window[-1] == set(range(len(staged.pieces))) - lead
    whole = staged.decode(z, g, 0, frames * staged.hop)
    assert np.abs(np.concatenate(audio) - whole).max() <= EXACT


def test_streams_of_one_synthesizer_decoding_at_once_stay_exact(engine):
    """Two threads decoding segments in windows at once: each gets its whole decode.

    The streams share the synthesizer's input buffers (a decode holds its lock), so one
    stream's run never reads what the other's gathered.
    """
    import threading

    windowed = engine
    staged = windowed.staged
    config = hk.model_config(windowed.speaker)
    latents = [random_latent(config, 33 + 7 * i, seed=20 + i) for i in range(2)]
    wholes = [staged.decode(z, g, 0, int(z.shape[2]) * staged.hop) for z, g in latents]
    worst = [0.0, 0.0]
    start = threading.Barrier(2)

    def decode(i):
        z, g = latents[i]
        plan = window_plan(int(z.shape[2]), staged.hop, 1)
        start.wait()
        for _ in range(6):
            stream = staged.stream(z, g)
            audio = np.concatenate([stream.decode(lo, hi) for lo, hi in plan])
            worst[i] = max(worst[i], float(np.abs(audio - wholes[i]).max()))

    threads = [threading.Thread(target=decode, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    assert max(worst) <= EXACT, worst
