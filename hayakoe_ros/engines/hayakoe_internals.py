# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Every access to hayakoe's private internals, in one place.

hayakoe's public API (``Speaker.generate()``/``stream()``) peak-normalises each result to
full scale, predicts pauses over the whole text before the first sentence, cannot set the
ONNX Runtime thread count and cannot be interrupted. The node needs the model's raw float
output per segment, the duration predictor's per-phoneme frames for a pair of segments, and
thread control, so it reaches inside here. :func:`check_compatible` lists what is relied on
(what :mod:`.ort_session`'s hooks expect of the sessions hayakoe builds included);
``test/test_engines.py`` calls it so that a hayakoe release that changes any of it
fails loudly instead of misbehaving. Tested against hayakoe 1.3.1.
"""

from __future__ import annotations

import os
import inspect
from typing import Optional

import numpy as np

from . import hayakoe_features
from .base import VoiceParams
# A segment's features and the inputs built from them (no private API) live in
# hayakoe_features; SegmentFeatures is still found here.
from .hayakoe_features import SYNTH_FEED, SegmentFeatures
# Symbol-table helpers (no private API): they live in hayakoe_phonemes, and are still
# found here by the callers that always looked for them here.
from .hayakoe_phonemes import punctuation_ids, punctuation_runs  # noqa: F401

#: hayakoe versions this module was written and tested against (``major.minor``).
TESTED_VERSIONS = ('1.3',)

def check_compatible() -> None:
    """Verify that the hayakoe internals used by this module exist with the expected shape.

    Raises:
        RuntimeError: naming every missing or changed internal.
    """
    problems = []
    try:
        from hayakoe.api import speaker as speaker_mod
        from hayakoe.api import tts as tts_mod
        from hayakoe.models import boundary_pauses, text_preprocess
        from hayakoe.nlp import bert_models, symbols
    except ImportError as exc:  # pragma: no cover - exercised only by a broken install
        raise RuntimeError(f'hayakoe internals moved: {exc}') from exc

    def need(obj, attr: str, where: str) -> None:
        if not hasattr(obj, attr):
            problems.append(f'{where}.{attr} is missing')

    need(speaker_mod, '_SynthesisParams', 'hayakoe.api.speaker')
    need(speaker_mod.Speaker, '_synthesize_one', 'Speaker')
    need(speaker_mod.Speaker, '_get_style_vector', 'Speaker')
    for attr in ('_preprocess_nlp', '_batch_bert_onnx', '_batch_bert_pytorch',
                 '_synthesize_one_with_features', '_build_timings'):
        need(speaker_mod.Speaker, attr, 'Speaker')
    if 'duration=frames * hop_length / sr' not in inspect.getsource(speaker_mod.Speaker):
        problems.append('Speaker._build_timings no longer times phonemes as frames x hop')
    need(tts_mod.TTS, '_init_bert', 'TTS')
    need(text_preprocess, 'prepare_phone_sequences', 'hayakoe.models.text_preprocess')
    need(boundary_pauses, 'find_boundary_punct_positions', 'hayakoe.models.boundary_pauses')
    need(bert_models, 'unload_tokenizer', 'hayakoe.nlp.bert_models')
    need(bert_models, 'is_tokenizer_loaded', 'hayakoe.nlp.bert_models')
    need(tts_mod, '_TOKENIZER_PREFIX', 'hayakoe.api.tts')
    need(tts_mod, '_BERT_PREFIX', 'hayakoe.api.tts')
    need(symbols, 'SYMBOLS', 'hayakoe.nlp.symbols')
    need(symbols, 'PUNCTUATIONS', 'hayakoe.nlp.symbols')
    from hayakoe.nlp.japanese import g2p as g2p_mod
    from hayakoe.nlp.japanese import normalizer
    need(normalizer, 'normalize_text', 'hayakoe.nlp.japanese.normalizer')
    need(g2p_mod, 'g2p', 'hayakoe.nlp.japanese.g2p')
    if hasattr(speaker_mod, '_SynthesisParams'):
        fields = set(speaker_mod._SynthesisParams.__dataclass_fields__)
        expected = {'lang', 'style', 'speaker_id', 'speed', 'sdp_ratio', 'noise', 'noise_w',
                    'pitch_scale', 'intonation_scale', 'style_weight'}
        if not expected <= fields:
            problems.append(f'_SynthesisParams lacks {sorted(expected - fields)}')
    if hasattr(speaker_mod.Speaker, '_synthesize_one'):
        params = list(inspect.signature(speaker_mod.Speaker._synthesize_one).parameters)
        if params[:3] != ['self', 'text', 'params']:
            problems.append(f'Speaker._synthesize_one signature changed: {params}')
    src = inspect.getsource(speaker_mod.Speaker.__init__)
    for attr in ('_hps', '_gen_lock', '_synth_session', '_dp_session', '_bert_session',
                 '_style2id', '_backend', '_model_dir', '_device'):
        if attr not in src:
            problems.append(f'Speaker.{attr} is no longer set in Speaker.__init__')
    need(speaker_mod.Speaker, '_ensure_pytorch_model', 'Speaker')
    tts_src = inspect.getsource(tts_mod.TTS)
    for attr in ('_cache_dir', '_bert_source', '_backend', '_bert_session'):
        if f'self.{attr}' not in tts_src:
            problems.append(f'TTS.{attr} is no longer set by TTS')
    if not _source_has_fetch():
        problems.append('hayakoe.api.sources: the sources (TTS._bert_source) have no fetch()')
    # onnx_session_hooks() patches what these call to build the ONNX Runtime sessions.
    for owner, attr in ((speaker_mod.Speaker, '_init_onnx_synth'),
                        (speaker_mod.Speaker, '_init_onnx_duration_predictor'),
                        (tts_mod.TTS, '_init_bert')):
        func = getattr(owner, attr, None)
        if func is None:
            problems.append(f'{owner.__name__}.{attr} is missing')
            continue
        src = inspect.getsource(func)
        for call in ('ort.SessionOptions()', 'ort.InferenceSession('):
            if call not in src:
                problems.append(f'{owner.__name__}.{attr} no longer calls {call!r}')
    problems += _terminable_run_problems(speaker_mod)
    problems += _staged_problems(speaker_mod)
    if problems:
        raise RuntimeError('hayakoe internals changed: ' + '; '.join(problems))


def _staged_problems(speaker_mod) -> list:
    """What the two-stage synthesizer relies on: the feed, the file, the session slot."""
    problems = []
    func = getattr(speaker_mod.Speaker, '_synth_with_features_onnx', None)
    if func is None:
        return ['Speaker._synth_with_features_onnx is missing']
    src = inspect.getsource(func)
    for name in SYNTH_FEED:
        if f'"{name}"' not in src:
            problems.append(f'Speaker._synth_with_features_onnx no longer feeds {name!r}')
    if 'output[0][0, 0]' not in src:
        problems.append('Speaker._synth_with_features_onnx reads its audio otherwise')
    src = inspect.getsource(speaker_mod.Speaker._init_onnx_synth)
    for needle in ('"synthesizer.onnx"', '"synthesizer_q8.onnx"', 'self._synth_session ='):
        if needle not in src:
            problems.append(f'Speaker._init_onnx_synth no longer has {needle}')
    return problems


def synthesizer_file(speaker) -> Optional[str]:
    """Path of the synthesizer graph hayakoe's ONNX backend loads; None on PyTorch.

    ``synthesizer.onnx``, else ``synthesizer_q8.onnx`` (``Speaker._init_onnx_synth``).
    """
    if getattr(speaker, '_backend', None) != 'onnx':
        return None
    for name in ('synthesizer.onnx', 'synthesizer_q8.onnx'):
        path = os.path.join(os.fspath(speaker._model_dir), name)
        if os.path.isfile(path):
            return path
    return None


def model_config(speaker) -> dict:
    """The model config's ``model`` section (``HyperParameters.model``) as a plain dict."""
    return dict(speaker._hps.model.model_dump())


def synthesizer_session(speaker):
    """The session hayakoe synthesises with (``Speaker._synth_session``), or None."""
    return getattr(speaker, '_synth_session', None)


def replace_synthesizer(speaker, session) -> None:
    """Make hayakoe synthesise with ``session`` (``run(None, feed) -> [audio, durations]``).

    The session hayakoe built is dropped here, so that its memory can be freed before
    the caller builds the next one.
    """
    speaker._synth_session = session


def restore_synthesizer(speaker) -> None:
    """Build hayakoe's own synthesizer session again (``Speaker._init_onnx_synth``)."""
    speaker._init_onnx_synth()


def synthesizer_feed(speaker, features: SegmentFeatures, voice: VoiceParams) -> dict:
    """The synthesizer's inputs for a segment, as ``Speaker._synth_with_features_onnx``.

    Returns:
        ``{name: array}`` for :data:`~.hayakoe_features.SYNTH_FEED`, with the speaker's
        style vector for ``voice`` (shapes and dtypes:
        :func:`~.hayakoe_features.synthesizer_inputs`).
    """
    style_vec = speaker._get_style_vector(voice.style, voice.style_weight)
    return hayakoe_features.synthesizer_inputs(features, style_vec, voice)


def synthesis_lock(speaker):
    """The speaker's lock around a model run (hayakoe's ``Speaker._gen_lock``)."""
    return speaker._gen_lock


def _source_has_fetch() -> bool:
    """Whether hayakoe's model sources (what ``TTS._bert_source`` is) offer ``fetch``."""
    try:
        from hayakoe.api import sources
    except ImportError:
        return False
    return callable(getattr(sources, 'parse_source', None)) and any(
        callable(getattr(obj, 'fetch', None)) for obj in vars(sources).values()
        if inspect.isclass(obj))


def speaker_count(speaker) -> int:
    """Speakers of a loaded model (its config's ``data.n_speakers``; 1 when absent)."""
    return int(getattr(speaker._hps.data, 'n_speakers', 1))


def style_names(speaker) -> list:
    """Style names of a loaded model, in its own order (``Speaker._style2id``)."""
    return list(speaker._style2id.keys())


def _terminable_run_problems(speaker_mod) -> list:
    """What :func:`terminable_runs` relies on: sessions run as ``run(None, feed)``."""
    import onnxruntime as ort

    problems = []
    if 'terminate' not in dir(ort.RunOptions()):
        problems.append('onnxruntime.RunOptions has no terminate flag')
    src = inspect.getsource(speaker_mod.Speaker)
    for attr in ('_bert_session', '_synth_session', '_dp_session'):
        if f'{attr}.run(None, ' not in src:
            problems.append(f'Speaker no longer calls {attr}.run(None, feed)')
    return problems


def terminable_sessions(tts, speaker) -> list:
    """ONNX Runtime sessions a synthesis may run (BERT, duration predictor, decoder).

    Empty on the PyTorch (CUDA) backend or for a closed engine.
    """
    if speaker is None or getattr(speaker, '_backend', None) != 'onnx':
        return []
    found = list(onnx_sessions(tts, speaker).values())
    found.append(getattr(speaker, '_bert_session', None))
    return [s for s in found if s is not None]


def onnx_sessions(tts, speaker) -> dict:
    """Return the ONNX Runtime sessions synthesis runs, by role (absent ones omitted).

    With the two-stage synthesizer in hayakoe's place (:mod:`.windowed_decoder`), its
    first stage is the ``synthesizer`` and its decoder pieces ``decoder.0``, ``decoder.1``...
    """
    from .windowed_decoder import StagedSynthesizer

    synth = getattr(speaker, '_synth_session', None)
    found = {'bert': getattr(tts, '_bert_session', None), 'synthesizer': synth,
             'duration_predictor': getattr(speaker, '_dp_session', None)}
    if isinstance(synth, StagedSynthesizer):
        found['synthesizer'] = synth.stage1
        found.update({f'decoder.{i}': s for i, s in enumerate(synth.decoders)})
    return {k: v for k, v in found.items() if v is not None}


def model_dirs(tts, speaker) -> list:
    """Return the directories the loaded model was read from (files: ``hayakoe_load``).

    The speaker's directory (config, style vectors, synthesizer, duration predictor) and
    the BERT directories (model and tokenizer) of its backend; a BERT directory that
    cannot be fetched is left out.
    """
    from hayakoe.api.tts import _BERT_PREFIX, _TOKENIZER_PREFIX

    dirs = [speaker._model_dir]
    for prefix in (_BERT_PREFIX.get(tts._backend or '', ''), _TOKENIZER_PREFIX):
        try:
            dirs.append(tts._bert_source.fetch(prefix))  # already local: fetched at load
        except Exception:  # identity is best effort for remote sources
            continue
    return dirs


def cache_dir(tts) -> str:
    """Return the download cache root of hayakoe's ``tts``, whether or not it exists yet.

    That is its ``cache_dir``, else ``$HAYAKOE_CACHE``, else ``./hayakoe_cache``.
    """
    return os.fspath(tts._cache_dir)


def synthesis_params(voice: VoiceParams):
    """The ``_SynthesisParams`` of hayakoe for ``voice``, as ``generate()`` builds them."""
    from hayakoe.api.speaker import _SynthesisParams

    return _SynthesisParams(
        style=voice.style, speaker_id=voice.speaker_id, speed=voice.length_scale,
        sdp_ratio=voice.sdp_ratio, noise=voice.noise, noise_w=voice.noise_w,
        pitch_scale=voice.pitch_scale, intonation_scale=voice.intonation_scale,
        style_weight=voice.style_weight)


def segment_features(speaker, text: str) -> SegmentFeatures:
    """Run hayakoe's front end (g2p) and BERT on one segment, as ``generate()`` does.

    Uses ``Speaker._preprocess_nlp`` and the batched-BERT helpers with a batch of one,
    which compute exactly what hayakoe's single-sentence path computes.
    """
    nlp = speaker._preprocess_nlp(text)
    if speaker._backend == 'onnx':
        bert = speaker._batch_bert_onnx([nlp])[0]
    else:
        bert = speaker._batch_bert_pytorch([nlp])[0]
    return SegmentFeatures(nlp, bert)


def synthesize_features(speaker, features: SegmentFeatures, voice: VoiceParams
                        ) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """Synthesise a segment from its :class:`SegmentFeatures`, with frames per phoneme.

    Same computation as ``Speaker._synthesize_one`` (here ``_synthesize_one_with_features``,
    hayakoe's multi-sentence path), without computing BERT again.

    Returns:
        ``(audio, frames)``: float32 ``(samples,)``, and float64 ``(len(phones),)``
        frames of ``hop_length`` samples per phoneme id (read back from the timings
        hayakoe builds from the model's durations, in seconds), or None when the model
        gave no durations (an old ``synthesizer.onnx``).
    """
    style_vec = speaker._get_style_vector(voice.style, voice.style_weight)
    with speaker._gen_lock:
        audio, timings = speaker._synthesize_one_with_features(
            features.nlp, features.bert, style_vec, synthesis_params(voice))
    frames = None
    if timings:
        per_second = speaker._hps.data.sampling_rate / speaker._hps.data.hop_length
        frames = np.rint([t.duration * per_second for t in timings])
    return np.asarray(audio, dtype=np.float32).reshape(-1), frames


def pair_durations(speaker, left: SegmentFeatures, right: SegmentFeatures,
                   voice: VoiceParams) -> Optional[tuple[list, np.ndarray]]:
    """Duration predictor over two adjacent segments, from their own features.

    The pair's input is :func:`~.hayakoe_features.join_pair`'s: the phoneme sequence
    hayakoe's front end produces for the joined text, with each segment's own BERT
    features (no BERT runs here).

    Returns:
        ``(phone_ids, frames)`` for the pair, or None when the model has no duration
        predictor or a sequence does not have the expected pad/blank ends.
    """
    joined = hayakoe_features.join_pair(left, right, onnx=speaker._backend == 'onnx')
    if joined is None:
        return None
    return run_duration_predictor(speaker, *joined, voice)


def run_duration_predictor(speaker, ids: list, tones: list, langs: list, bert,
                            voice: VoiceParams) -> Optional[tuple[list, np.ndarray]]:
    """Text encoder + duration predictor (no decoder) on one phoneme sequence.

    ``bert`` is ``(1024, len(ids))``: numpy (ONNX) or torch (PyTorch). Returns
    ``(ids, frames)``, or None when an ONNX model has no ``duration_predictor.onnx``.
    """
    style_vec = speaker._get_style_vector(voice.style, voice.style_weight)
    if speaker._backend == 'onnx':
        if speaker._dp_session is None:
            return None
        with speaker._gen_lock:
            frames = speaker._dp_session.run(None, hayakoe_features.duration_feed(
                ids, tones, langs, bert, style_vec, voice))[0][0]
        return list(ids), np.asarray(frames, dtype=np.float64).reshape(-1)

    import torch

    device = speaker._device
    with speaker._gen_lock, torch.no_grad():
        net_g = speaker._ensure_pytorch_model()
        frames = net_g.predict_durations(
            *hayakoe_features.duration_tensors(ids, tones, langs, bert, style_vec, voice,
                                               device),
            length_scale=voice.length_scale, sdp_ratio=voice.sdp_ratio,
            noise_scale_w=voice.noise_w,
        ).cpu().numpy()
    return list(ids), np.asarray(frames, dtype=np.float64).reshape(-1)


def hop_length(speaker) -> int:
    """Samples per duration frame (``data.hop_length`` of the model config)."""
    return int(speaker._hps.data.hop_length)


def tokenizer_dir(tts):
    """Local directory of the BERT tokenizer the ``tts`` instance was prepared with."""
    from hayakoe.api.tts import _TOKENIZER_PREFIX

    return tts._bert_source.fetch(_TOKENIZER_PREFIX)


def ensure_tokenizer(path) -> None:
    """Load hayakoe's process-wide tokenizer from ``path`` if none is loaded.

    hayakoe keeps one tokenizer per process and, when none is loaded, fetches it from its
    default Hugging Face repository; an engine re-loads its own instead.
    """
    from hayakoe.nlp import bert_models

    if not bert_models.is_tokenizer_loaded():
        bert_models.load_tokenizer(pretrained_model_name_or_path=str(path))


def unload_globals() -> None:
    """Drop hayakoe's module-level tokenizer (and torch BERT) singletons.

    hayakoe keeps them for the process lifetime; a second model tree, or a clean-up of the
    engine, must unload them first.
    """
    from hayakoe.nlp import bert_models

    bert_models.unload_tokenizer()
    if bert_models.is_model_loaded():
        bert_models.unload_model()
