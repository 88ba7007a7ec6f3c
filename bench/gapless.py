# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Gapless starts: underruns and TTFA with ``gapless`` off and on, no ROS.

``python bench/gapless.py [--recipe full] [--threads 1] [--reps 2] [--sizes 3 10]
[--morae N] [--slowdown S] [--json FILE] [--markdown FILE]``

The node's speech pipeline (the speech scheduler on hayakoe_ros' engine, pacing on, real
time, ``first_segment_morae`` as the node's default) speaks the benchmark's 3- and
10-sentence texts (bench/texts.py) with ``gapless`` off, on, and on with every later
segment decoded whole (:class:`WholeLater`: as before the planner could decode a long later
segment in windows), one scheduler per setting kept across repetitions (its rate estimate
carries over, as in the node), the settings taking turns (reversed every other
repetition). The sink plays nothing: it reads each chunk's playback time, so the figures
are what a player that follows the stamps would do. With ``num_threads`` 1 the full-size
model is slower than real time on this machine while other jobs load it (and about as
fast as real time when they do not; see ``--slowdown``).

Per utterance: underruns (times playback ran dry, the scheduler's count), silence they
added (sum of the gaps between consecutive chunks' playback times beyond a chunk), TTFA
(submit to first chunk), the start delay chosen, the RTF (synthesis s / audio s) and the
estimate after it. Printed as a Markdown table (medians, min-max), written with
``--json`` / ``--markdown``.

``--slowdown S`` simulates a board S times slower: the scheduler's clock (and so its
playback clock, its pacing waits and its synthesis timings) runs S times faster than real
time, so the engine's every second counts as S; all figures are then simulated seconds.
On this machine the full-size model at one thread is 0.75-0.9 x real time when the other
jobs leave it the cores; S = 4 puts it at about a Raspberry Pi 4B's 3 x.

ROS adds nothing to these figures: pacing and the planning run in the speech layer; a
full ROS run of 10 sentences at 1 thread would take minutes per utterance for the same
numbers.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import statistics
import sys
import threading
import time

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from hayakoe_ros.engines.base import WrappedEngine  # noqa: E402
from tools.submit import submit_text  # noqa: E402

from bench.raw_worker import SPEAKER, model_root, warm_engine  # noqa: E402
from bench.texts import benchmark_texts  # noqa: E402

UTTERANCE_TIMEOUT_S = 900.0

#: ``gapless`` off, on, and on with every later segment decoded whole (as before the
#: planner could window a long later segment): what the windows change, in one run.
WHOLE_LATER = 'on, later segments whole'
SETTINGS = ('off', 'on', WHOLE_LATER)


class WholeLater(WrappedEngine):
    """The engine, saying that a segment comes whole: no later segment in windows.

    A first segment still comes in the engine's windows (the scheduler asks for them).
    """

    def window_seconds(self, audio_s, voice):
        """One window: a later segment is never planned or decoded in windows."""
        return (float(audio_s),)


class Sink:
    """Keeps each chunk's playback time and frames; sums the gaps (underrun silence)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.chunks: list = []

    def __call__(self, utt, chunk) -> None:
        """The scheduler's sink: note the chunk's playback time, frames and rate."""
        with self.lock:
            self.chunks.append((chunk.play_time, len(chunk.samples), chunk.sample_rate))

    def late_s(self) -> float:
        """Seconds of silence the underruns added (playback gaps between chunks)."""
        with self.lock:
            chunks = list(self.chunks)
        late = 0.0
        for (t0, n, sr), (t1, _, _) in zip(chunks, chunks[1:]):
            late += max(0.0, t1 - (t0 + n / sr))
        return late


def speak(sched, sink: Sink, key: str, text: str, voice) -> dict:
    """Speak ``text`` through ``sched`` (whose sink is ``sink``) in real time.

    ``key``: the engine's rate-estimate key (``name/voice``). Returns the figures.
    """
    with sink.lock:
        sink.chunks.clear()
    utt = submit_text(sched, text, voice)
    if not utt.wait(UTTERANCE_TIMEOUT_S):
        raise RuntimeError('utterance did not finish')
    estimate = sched.rates.estimate(key)
    return {'outcome': utt.outcome.value, 'segments': len(utt.segments),
            'underruns': utt.underruns, 'late_s': sink.late_s(), 'ttfa_s': utt.ttfa_s,
            'start_delay_s': utt.start_delay_s, 'audio_s': utt.audio_s, 'rtf': utt.rtf,
            'rtf_estimate_after': estimate.rtf if estimate else None}


def _stat(values: list, fmt: str) -> str:
    if not values:
        return '–'
    med = statistics.median(values)
    if len(values) == 1 or min(values) == max(values):
        return fmt.format(med)
    return f'{fmt.format(med)} ({fmt.format(min(values))}–{fmt.format(max(values))})'


def table(runs: dict) -> str:
    """Markdown table of the runs: per text and setting, medians (min-max)."""
    lines = ['| text | gapless | underruns per utterance | silence they added | TTFA '
             '| start delay | RTF (synthesis s / audio s) |', '|---|---|---|---|---|---|---|']
    for name, settings in runs.items():
        for setting, rows in settings.items():
            lines.append(
                f"| {name} | {setting} | {_stat([r['underruns'] for r in rows], '{:.0f}')} "
                f"| {_stat([r['late_s'] for r in rows], '{:.2f} s')} "
                f"| {_stat([r['ttfa_s'] for r in rows], '{:.2f} s')} "
                f"| {_stat([r['start_delay_s'] for r in rows], '{:.2f} s')} "
                f"| {_stat([r['rtf'] for r in rows], '{:.2f}')} |")
    return '\n'.join(lines)


def main(argv=None) -> int:
    """Measure, print the table, write JSON / Markdown when asked."""
    from hayakoe_ros.text.segment import FIRST_SEGMENT_MORAE

    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--recipe', default='full', choices=tuple(SPEAKER))
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--reps', type=int, default=2)
    parser.add_argument('--sizes', type=int, nargs='+', default=[3, 10])
    parser.add_argument('--morae', type=int, default=FIRST_SEGMENT_MORAE)
    parser.add_argument('--slowdown', type=float, default=1.0)
    parser.add_argument('--json', default=None)
    parser.add_argument('--markdown', default=None)
    parser.add_argument('--model-root', default=None)
    args = parser.parse_args(argv)
    from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler

    speaker = SPEAKER[args.recipe]
    root = model_root(args.recipe, args.model_root)
    t0 = time.perf_counter()
    engine, voice = warm_engine(root, speaker, args.threads)
    texts = benchmark_texts()
    sinks = {setting: Sink() for setting in SETTINGS}
    scale = args.slowdown

    def clock() -> float:
        return time.monotonic() * scale

    def waiter(event: threading.Event, timeout: float) -> bool:
        return event.wait(max(0.0, timeout / scale))

    scheds = {setting: SpeechScheduler(
        WholeLater(engine) if setting == WHOLE_LATER else engine, sink,
        SchedulerConfig(first_segment_morae=args.morae, gapless=setting != 'off'),
        clock=clock, waiter=waiter) for setting, sink in sinks.items()}
    key = f'{engine.name}/{engine.voice}'
    out: dict = {'recipe': args.recipe, 'threads': args.threads, 'morae': args.morae,
                 'slowdown': scale,
                 'load_avg_start': os.getloadavg(), 'runs': {}}
    try:
        for rep in range(args.reps):
            order = SETTINGS if rep % 2 == 0 else SETTINGS[::-1]
            for n in args.sizes:
                name = f'{n} sentences'
                for setting in order:
                    engine.forget_features()
                    row = speak(scheds[setting], sinks[setting], key, texts[n], voice)
                    out['runs'].setdefault(name, {}).setdefault(setting, []).append(row)
                    print(f'[{time.perf_counter() - t0:.0f} s] rep {rep} {name} gapless '
                          f'{setting}: {row}', file=sys.stderr, flush=True)
    finally:
        for sched in scheds.values():
            sched.shutdown(timeout=60.0)
        engine.close()
    out['load_avg_end'] = os.getloadavg()
    md = table(out['runs'])
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding='utf-8')
    if args.markdown:
        Path(args.markdown).write_text(md + '\n', encoding='utf-8')
    print(md)
    return 0


if __name__ == '__main__':
    sys.exit(main())
