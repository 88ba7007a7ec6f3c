# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A benchmark worker process: raw hayakoe (or pyopenjtalk), no ROS, driven over a pipe.

``python bench/raw_worker.py MODE [--root DIR --speaker NAME --threads N]`` loads one
engine, prints ``{"ready": ...}`` and then answers one JSON request per stdin line with
one JSON line on stdout. The ``hayakoe`` mode imports hayakoe, numpy and (for the ONNX
thread patch only) hayakoe_ros.engines.hayakoe_internals, no ROS, so its
peak RSS is what an application using hayakoe directly would need; ``engine`` mode
loads hayakoe_ros' :class:`HayakoeEngine` (for the per-boundary micro-measurements);
``openjtalk`` mode loads pyopenjtalk.

Requests: ``generate`` (hayakoe ``Speaker.generate()``, or pyopenjtalk.tts for the whole
text), ``stream_first`` (time to the first chunk of ``Speaker.stream()``), ``micro``
(where the node's compute differs from ``generate()``'s), ``phoneme_rate`` and ``quit``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np

# Run as a script (``python bench/raw_worker.py``), its own folder is first on the path;
# the repository's top-level ``tools`` package (not installed) is needed too.
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

#: Deterministic voice settings used by every benchmark (raw and node alike).
VOICE: dict[str, Any] = {'noise': 0.0, 'noise_w': 0.0, 'sdp_ratio': 0.0}
#: Speaker name of each random-weight recipe (tools/random_model/).
SPEAKER = {'full': 'full-jp', 'tiny': 'tiny-jp'}


def model_root(recipe: str, override=None, **build):
    """Directory of the recipe's random-weight model (``override`` if given), as a Path.

    Built on first use under ``$HAYAKOE_ROS_CACHE/models`` (default ``.cache/models`` of
    the repository): minutes for the full recipe. ``build``: ``pytorch``/``onnx`` of
    :func:`tools.random_model.cached_model` (e.g. the CUDA path's PyTorch tree alone).
    """
    from pathlib import Path

    if override:
        return Path(override)
    from tools.random_model import cached_model

    repo = Path(__file__).resolve().parents[1]
    cache = Path(os.environ.get('HAYAKOE_ROS_CACHE', repo / '.cache')) / 'models'
    return Path(cached_model(cache, recipe, SPEAKER[recipe], **build))


def warm_engine(root, speaker: str, threads: int, **options) -> tuple:
    """hayakoe_ros' engine on the model at ``root``, warmed up; ``(engine, VoiceParams)``.

    The voice is the benchmark's deterministic one (:data:`VOICE`, the first style);
    ``options`` go to :class:`HayakoeEngine` (e.g. ``spinning``).
    """
    from hayakoe_ros.engines.base import VoiceParams
    from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine

    uri = f'file://{root}'
    engine = HayakoeEngine(speaker, speaker_source=uri, bert_source=uri, num_threads=threads,
                           **options)
    engine.warmup()
    return engine, VoiceParams(style=engine.styles[0], **VOICE)


class HayakoeWorker:
    """hayakoe's public API, as an application would use it."""

    def __init__(self, root: str, speaker: str, threads: int) -> None:
        from hayakoe import TTS

        from hayakoe_ros.engines import ort_session

        uri = f'file://{root}'
        # The same thread patch as the node's engine (restored when the block ends);
        # nothing else of hayakoe_ros: no allocator settings, no trim.
        with ort_session.onnx_session_hooks(threads):
            self.tts = TTS(device='cpu', bert_source=uri).load(speaker, source=uri).prepare()
        self.speaker = self.tts.speakers[speaker]
        self.sample_rate = int(self.speaker.sampling_rate)

    def generate(self, text: str) -> dict:
        """Time ``Speaker.generate()``; return compute and audio seconds."""
        t0 = time.perf_counter()
        result = self.speaker.generate(text, **VOICE)
        compute = time.perf_counter() - t0
        return {'compute_s': compute, 'audio_s': len(result.data) / self.sample_rate}

    def stream_first(self, text: str) -> dict:
        """Time from calling ``Speaker.stream()`` to its first chunk; then close it."""
        t0 = time.perf_counter()
        gen = self.speaker.stream(text, **VOICE)
        try:
            first = next(gen)
            ttfa = time.perf_counter() - t0
        finally:
            gen.close()
        return {'ttfa_s': ttfa, 'first_audio_s': len(first.data) / self.sample_rate}


class EngineWorker:
    """hayakoe_ros' engine, for measuring what the node does per segment and boundary."""

    def __init__(self, root: str, speaker: str, threads: int) -> None:
        self.engine, self.voice = warm_engine(root, speaker, threads)
        self.sample_rate = self.engine.sample_rate

    def micro(self, text: str, reps: int) -> dict:
        """Break down the node's compute on ``text`` and ``generate()``'s, by ONNX session.

        Per repetition, hayakoe ``generate()`` and the node's pipeline (its scheduler with
        pacing off and the chunks dropped: everything but ROS) run on ``text`` one after
        the other, with the ``run`` method of each ONNX Runtime session (BERT, duration
        predictor, synthesizer) timed and counted; ``other`` is the rest (text front end,
        gain and limiter, thread hand-offs). Only public engine methods are used, so this
        measures the engine as it is. Returns medians over ``reps`` (seconds, counts) and,
        per boundary, the pause predicted from the pair (the node) and from the left
        segment alone (what the synthesizer's own ``durations`` output gives).
        """
        from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler
        from hayakoe_ros.text.pipeline import prepare
        from hayakoe_ros.text.segment import prepare_text, segment

        eng, voice = self.engine, self.voice
        spk = eng.speaker
        segs = [s.text for s in segment(prepare_text(text, 100000), 60)]
        pairs = list(zip(segs, segs[1:]))
        synth = spk._synth_session
        # The two-stage synthesizer (the node's CPU default): its stages' sessions are
        # what runs, whole segments and windows alike.
        synth = getattr(synth, 'sessions', synth)
        timers = _SessionTimers({'bert': spk._bert_session, 'dp': spk._dp_session,
                                 'synth': synth})

        def node_pipeline() -> None:
            sched = SpeechScheduler(eng, lambda utt, chunk: None,
                                    SchedulerConfig(pacing=False))
            try:
                sched.submit(prepare(text, 100000, 60)[1], voice).wait(3600)
            finally:
                sched.shutdown()

        rows: dict = {}
        try:
            for _ in range(reps):
                for side, run in (('hk', lambda: spk.generate(text, **VOICE)),
                                  ('node', node_pipeline)):
                    timers.reset()
                    total = _timed(run)[1]
                    rows.setdefault(f'{side}_total', []).append(total)
                    for role, (seconds, count) in timers.totals().items():
                        rows.setdefault(f'{side}_{role}', []).append(seconds)
                        rows.setdefault(f'{side}_{role}_runs', []).append(count)
                    rows.setdefault(f'{side}_other', []).append(total - timers.seconds())
        finally:
            timers.restore()
        med: dict[str, Any] = {k: float(np.median(v)) for k, v in rows.items()}
        med['ratio'] = float(np.median([h / n for h, n in zip(rows['hk_total'],
                                                               rows['node_total'])]))
        med['pause_pair_s'] = [eng.predict_pause(a, b, voice) for a, b in pairs]
        med['pause_left_only_s'] = [self._left_only_pause(a) for a, _ in pairs]
        med['segments'] = len(segs)
        med['boundaries'] = len(pairs)
        return med

    def _left_only_pause(self, left: str) -> float:
        """Pause after ``left`` from the duration predictor run on ``left`` alone (s)."""
        from hayakoe_ros.engines import hayakoe_internals as hk

        spk = self.engine.speaker
        hk.ensure_tokenizer(self.engine._tokenizer_dir)
        ids, frames = _durations(spk, left, self.voice)
        runs = hk.punctuation_runs(ids, hk.punctuation_ids())
        if not runs:
            return 0.0
        pos = runs[-1]
        total = float(frames[pos])
        if pos > 0 and ids[pos - 1] == 0:
            total += float(frames[pos - 1])
        if pos + 1 < len(ids) and ids[pos + 1] == 0:
            total += float(frames[pos + 1])
        return total * hk.hop_length(spk) / self.sample_rate

    def phoneme_rate(self, texts: list) -> dict:
        """Phonemes per second the duration predictor gives (deterministic settings).

        Counts real phonemes (not blanks, pauses or punctuation). ``overall`` divides by
        the whole predicted duration; ``articulation`` leaves out the punctuation
        phonemes, the blanks next to them and the leading/trailing blanks (pauses).
        """
        from hayakoe.nlp.symbols import SYMBOLS
        from hayakoe_ros.engines import hayakoe_internals as hk

        punct = hk.punctuation_ids()
        hop = hk.hop_length(self.engine.speaker)
        phonemes = frames_all = frames_speech = 0.0
        for text in texts:
            hk.ensure_tokenizer(self.engine._tokenizer_dir)
            ids, frames = _durations(self.engine.speaker, text, self.voice)
            speech = np.ones(len(ids), bool)
            speech[0] = speech[-1] = False
            for k, p in enumerate(ids):
                if p in punct:
                    speech[max(k - 1, 0):k + 2] = False
            phonemes += sum(1 for p in ids if p != 0 and p not in punct
                            and SYMBOLS[p] not in ('_', 'SP', 'UNK'))
            frames_all += float(frames.sum())
            frames_speech += float(frames[speech].sum())
        sec = hop / self.sample_rate
        return {'sentences': len(texts), 'phonemes': int(phonemes),
                'audio_s': frames_all * sec,
                'overall': phonemes / (frames_all * sec),
                'articulation': phonemes / (frames_speech * sec)}


def _durations(speaker, text: str, voice) -> tuple:
    """``tools.hayakoe_probe.predict_durations``; raise if the model has no duration predictor."""
    from tools import hayakoe_probe

    out = hayakoe_probe.predict_durations(speaker, text, voice)
    if out is None:
        raise RuntimeError('the model has no duration predictor (duration_predictor.onnx)')
    return out


class _SessionTimers:
    """Wraps the ``run`` method of ONNX Runtime sessions to time and count the calls."""

    def __init__(self, sessions: dict) -> None:
        # role -> one session, or a list of sessions counted together
        self._sessions = {k: (v if isinstance(v, list) else [v])
                          for k, v in sessions.items() if v is not None}
        self._acc = {k: [0.0, 0] for k in self._sessions}
        for role, group in self._sessions.items():
            for sess in group:
                sess.run = self._wrap(role, sess.run)

    def _wrap(self, role: str, run):
        def timed_run(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return run(*args, **kwargs)
            finally:
                acc = self._acc[role]
                acc[0] += time.perf_counter() - t0
                acc[1] += 1
        return timed_run

    def reset(self) -> None:
        for acc in self._acc.values():
            acc[0], acc[1] = 0.0, 0

    def totals(self) -> dict:
        return {k: (v[0], v[1]) for k, v in self._acc.items()}

    def seconds(self) -> float:
        return sum(v[0] for v in self._acc.values())

    def restore(self) -> None:
        for group in self._sessions.values():
            for sess in group:
                del sess.run  # the class's method shows again


def _timed(fn, *args, **kwargs):
    """Call ``fn``; return ``(result, seconds)``."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


class OpenJTalkWorker:
    """pyopenjtalk, the Open JTalk engine's library, on whole texts."""

    def __init__(self) -> None:
        import pyopenjtalk

        self.pyopenjtalk = pyopenjtalk
        pyopenjtalk.tts('こんにちは。')  # loads the dictionary and the HTS voice

    def generate(self, text: str) -> dict:
        """Time ``pyopenjtalk.tts()`` on the whole text."""
        t0 = time.perf_counter()
        audio, sr = self.pyopenjtalk.tts(text)
        compute = time.perf_counter() - t0
        return {'compute_s': compute, 'audio_s': len(audio) / sr}


def main(argv=None) -> int:
    """Serve requests until ``quit`` or end of input."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('mode', choices=('hayakoe', 'engine', 'openjtalk'))
    parser.add_argument('--root', default='')
    parser.add_argument('--speaker', default='')
    parser.add_argument('--threads', type=int, default=0)
    args = parser.parse_args(argv)
    # Replies go to the original stdout; anything libraries print goes to stderr.
    reply = os.fdopen(os.dup(1), 'w', encoding='utf-8', buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    t0 = time.perf_counter()
    worker: HayakoeWorker | EngineWorker | OpenJTalkWorker
    if args.mode == 'hayakoe':
        worker = HayakoeWorker(args.root, args.speaker, args.threads)
    elif args.mode == 'engine':
        worker = EngineWorker(args.root, args.speaker, args.threads)
    else:
        worker = OpenJTalkWorker()
    reply.write(json.dumps({'ready': True, 'load_s': time.perf_counter() - t0,
                            'pid': os.getpid()}) + '\n')
    for line in sys.stdin:
        request = json.loads(line)
        op = request.pop('op')
        if op == 'quit':
            break
        try:
            result = getattr(worker, op)(**request)
        except Exception as exc:  # report to the driver, keep serving
            result = {'error': f'{type(exc).__name__}: {exc}'}
        reply.write(json.dumps(result) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
