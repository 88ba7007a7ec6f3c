# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""What decoding a segment in windows costs over decoding it whole (no ROS).

:func:`overlap` times the first segment's windows (a :class:`~hayakoe_ros.engines.
windowed_decoder.DecoderStream`) against its whole decode, and counts the decoder
pieces' multiply-adds for both, and for each window decoded on its own from the latent:
the count does not change with the machine's load, the time does (a shared 2-core
machine swings it by tens of percent). Used by ``bench/windowed.py``.
"""

from __future__ import annotations

import time


def piece_macs(staged, model: dict) -> list:
    """Multiply-adds per output sample of each decoder piece, from the model config.

    Channels: ``upsample_initial_channel`` halved at each stage; a convolution costs
    ``C_in x C_out x kernel`` per output sample (a transposed one ``/ stride``).
    """
    from hayakoe_ros.engines.decoder_receptive import signatures

    channels = [int(model['upsample_initial_channel'])]
    for _ in staged.chain.stages[1:]:
        channels.append(channels[-1] // 2)
    out = []
    for spec in staged.pieces:
        stage = int(spec.output[1:].split('.')[0]) if spec.output != 'audio' else \
            len(channels) - 1
        c = channels[stage]
        macs = 0.0
        sigs = signatures(spec.layers)
        for n, (op, k, stride, _, _) in enumerate(sigs):
            if op == 'ConvTranspose':
                macs += channels[stage - 1] * c * k / stride
            elif spec.name == 'pre':
                macs += int(model['inter_channels']) * c * k
            elif spec.output == 'audio' and n == len(sigs) - 1:
                macs += c * k  # conv_post: one output channel
            else:
                macs += c * c * k
        out.append(macs)
    return out


def _work(staged, macs: list, decode) -> float:
    """Multiply-adds the decoder pieces spend in ``decode()`` (their runs' outputs)."""
    runs: list = []
    for n, session in enumerate(staged.decoders):
        def counted(names, feed, options=None, _n=n, _run=session.run):
            runs.append((_n, next(iter(feed.values())).shape[2]))
            return _run(names, feed, options)
        session.run = counted
    try:
        decode()
    finally:
        for session in staged.decoders:
            del session.run
    return sum(macs[n] * length * staged.pieces[n].up for n, length in runs)


def overlap(engine, voice, text: str, first_text: str, reps: int) -> dict:
    """Decoder seconds of the first segment in windows vs whole, over ``reps`` pairs.

    Each repetition decodes the segment whole and in windows, in alternating order; the
    extra time (wall, and the process's CPU) is the median of the pairs' differences (on
    a shared 2-core machine a single pair swings by +-10 % of the segment, more than the
    effect measured), over the median of three whole decodes of the 1-sentence
    utterance.
    """
    import statistics

    from hayakoe_ros.engines import hayakoe_internals as hk
    from hayakoe_ros.engines.windowed_decoder import window_plan

    staged = engine.staged
    feats = engine._features(first_text)  # noqa: SLF001 - the bench measures the stages
    z, g, _ = staged.first_stage(hk.synthesizer_feed(engine.speaker, feats, voice))
    frames = int(z.shape[2])
    plan = window_plan(frames, staged.hop, engine._first_frames)  # noqa: SLF001
    whole_t, win_t, whole_cpu, win_cpu = [], [], [], []

    def timed_whole() -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        staged.decode(z, g, 0, frames * staged.hop)
        whole_t.append(time.perf_counter() - t0)
        whole_cpu.append(time.process_time() - c0)

    def timed_windows() -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        stream = staged.stream(z, g)
        for lo, hi in plan:
            stream.decode(lo, hi)
        win_t.append(time.perf_counter() - t0)
        win_cpu.append(time.process_time() - c0)

    for rep in range(reps):
        for step in ((timed_whole, timed_windows) if rep % 2 == 0
                     else (timed_windows, timed_whole)):
            step()
    macs = piece_macs(staged, hk.model_config(engine.speaker))
    work_whole = _work(staged, macs, lambda: staged.decode(z, g, 0, frames * staged.hop))

    def streamed():
        stream = staged.stream(z, g)
        for lo, hi in plan:
            stream.decode(lo, hi)

    def alone():
        for lo, hi in plan:
            staged.decode(z, g, lo, hi)

    work_windows, work_alone = _work(staged, macs, streamed), _work(staged, macs, alone)
    full = engine._features(text)  # noqa: SLF001
    zt, gt, _ = staged.first_stage(hk.synthesizer_feed(engine.speaker, full, voice))
    work_utt = _work(staged, macs, lambda: staged.decode(zt, gt, 0,
                                                         int(zt.shape[2]) * staged.hop))
    utt_t, utt_cpu = [], []
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        staged.decode(zt, gt, 0, int(zt.shape[2]) * staged.hop)
        utt_t.append(time.perf_counter() - t0)
        utt_cpu.append(time.process_time() - c0)
    utt_dec = statistics.median(utt_t)
    cpu_extra = statistics.median(w - h for w, h in zip(win_cpu, whole_cpu))
    extra = statistics.median(w - h for w, h in zip(win_t, whole_t))
    whole_s = statistics.median(whole_t)
    return {'frames': frames, 'windows': [(hi - lo) // staged.hop for lo, hi in plan],
            'reps': reps, 'whole_s': whole_s, 'windows_s': statistics.median(win_t),
            'whole_all_s': whole_t, 'windows_all_s': win_t,
            'extra_of_segment': extra / whole_s, 'utterance_decoder_s': utt_dec,
            'extra_of_utterance': extra / utt_dec,
            # The same pairs in the process's CPU time (every thread): the second thread
            # idles through the windows' short runs, which costs wall time, not CPU.
            'cpu_extra_of_utterance': cpu_extra / statistics.median(utt_cpu),
            # The estimate this replaced (best of each side): kept to compare.
            'extra_of_utterance_best': (min(win_t) - min(whole_t)) / utt_dec,
            # Load-independent: the pieces' multiply-adds, windows in a stream and each
            # window on its own from the latent, over the 1-sentence utterance's decode.
            'work_extra_of_utterance': (work_windows - work_whole) / work_utt,
            'work_extra_alone_of_utterance': (work_alone - work_whole) / work_utt,
            'utterance_decoder_gmac': work_utt / 1e9}
