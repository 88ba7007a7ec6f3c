# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Phrase cache: repeated segments cost no synthesis, stay bounded, persist, invalidate."""

import dataclasses
import logging
import os
import shutil

import numpy as np
import pytest

from hayakoe_ros.engines import Engine, VoiceParams
from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler
from hayakoe_ros.engines.phrase_cache import CachingEngine
from hayakoe_ros.engines.preload import preload, read_phrases
from hayakoe_ros.engines.resample import ResampledEngine
from hayakoe_ros.text.pipeline import prepare
from tools.submit import submit_text

pytestmark = pytest.mark.unit

MIB = 1024 * 1024
PHRASES = ('おはようございます。', '了解しました。', '危ないので離れてください。')


class Counting(Engine):
    """A real engine, with its synthesize calls counted (the test's probe)."""

    def __init__(self, engine, model_id=None):
        self.engine, self.calls, self._model_id = engine, [], model_id
        self.name = engine.name

    sample_rate = property(lambda self: self.engine.sample_rate)
    styles = property(lambda self: self.engine.styles)
    voice = property(lambda self: self.engine.voice)

    @property
    def model_id(self):
        return self._model_id or self.engine.model_id

    def synthesize(self, text, voice):
        self.calls.append(text)
        return self.engine.synthesize(text, voice)

    def predict_pause(self, left, right, voice):
        return self.engine.predict_pause(left, right, voice)


@pytest.fixture(params=['openjtalk', 'hayakoe'])
def voice_engine(request, det_voice):
    if request.param == 'hayakoe':
        return request.getfixturevalue('tiny_engine'), det_voice
    return request.getfixturevalue('openjtalk_engine'), VoiceParams()


def test_repeated_phrase_is_the_same_audio_without_synthesis(voice_engine):
    engine, voice = voice_engine
    inner = Counting(engine)
    cache = CachingEngine(inner, 16)
    first = cache.synthesize(PHRASES[0], voice)
    again = cache.synthesize(PHRASES[0], voice)
    assert inner.calls == [PHRASES[0]]
    assert (cache.hits, cache.misses) == (1, 1)
    np.testing.assert_array_equal(again, first)
    np.testing.assert_array_equal(first, engine.synthesize(PHRASES[0], voice))
    assert again.dtype == np.float32 and again.size > engine.sample_rate // 4
    again[:] = 0  # the caller owns its copy: the entry is untouched
    np.testing.assert_array_equal(cache.synthesize(PHRASES[0], voice), first)
    assert cache.predict_pause('今日は。', '明日。', voice) == \
        engine.predict_pause('今日は。', '明日。', voice)
    assert cache.styles == engine.styles and cache.sample_rate == engine.sample_rate


def test_lru_is_bounded_in_megabytes_and_evicts_the_least_recently_used(openjtalk_engine):
    voice = VoiceParams()
    sizes = [openjtalk_engine.synthesize(p, voice).nbytes for p in PHRASES]
    inner = Counting(openjtalk_engine)
    cache = CachingEngine(inner, (sum(sizes) - 1) / MIB)  # any two fit, not all three
    a, b, c = PHRASES
    for text in (a, b, c):  # c pushes a out
        cache.synthesize(text, voice)
        assert cache.size_bytes <= sum(sizes) - 1
    assert cache.entries == 2 and cache.size_bytes == sizes[1] + sizes[2]
    cache.synthesize(b, voice)  # hit: b becomes the most recently used
    cache.synthesize(a, voice)  # miss: a back in, c (least recently used) out
    cache.synthesize(b, voice)  # still there
    cache.synthesize(c, voice)  # gone: synthesised again
    assert inner.calls == [a, b, c, a, c]
    assert (cache.hits, cache.misses) == (2, 5)
    assert cache.size_bytes <= sum(sizes) - 1


def test_entries_persist_across_instances_in_npz_files(openjtalk_engine, tmp_path):
    voice = VoiceParams()
    first = CachingEngine(Counting(openjtalk_engine), 8, str(tmp_path))
    audio = first.synthesize(PHRASES[1], voice)
    files = sorted(os.listdir(tmp_path))
    assert files == [first.key(PHRASES[1], voice) + '.npz']  # no temporary file left
    inner = Counting(openjtalk_engine)
    second = CachingEngine(inner, 8, str(tmp_path))  # as after a restart
    np.testing.assert_array_equal(second.synthesize(PHRASES[1], voice), audio)
    assert inner.calls == [] and (second.hits, second.misses) == (1, 0)


def test_new_voice_settings_or_model_never_use_old_entries(openjtalk_engine, tmp_path):
    voice = VoiceParams()
    CachingEngine(Counting(openjtalk_engine), 8, str(tmp_path)).synthesize(PHRASES[0], voice)
    slower = dataclasses.replace(voice, length_scale=1.25)
    inner = Counting(openjtalk_engine)
    cache = CachingEngine(inner, 8, str(tmp_path))
    audio = cache.synthesize(PHRASES[0], slower)
    assert inner.calls == [PHRASES[0]]  # a setting changed: synthesised, not reused
    np.testing.assert_array_equal(audio, openjtalk_engine.synthesize(PHRASES[0], slower))
    assert audio.size > 1.15 * openjtalk_engine.synthesize(PHRASES[0], voice).size
    new_model = Counting(openjtalk_engine, model_id='another HTS voice')
    CachingEngine(new_model, 8, str(tmp_path)).synthesize(PHRASES[0], voice)
    assert new_model.calls == [PHRASES[0]]  # the model changed: old files are not used
    rate = Counting(openjtalk_engine)
    CachingEngine(ResampledEngine(rate, 16000), 8, str(tmp_path)).synthesize(
        PHRASES[0], voice)
    assert rate.calls == [PHRASES[0]]  # another output rate: another entry


def test_a_corrupt_file_is_a_miss_removed_with_a_warning(openjtalk_engine, tmp_path,
                                                         caplog):
    voice = VoiceParams()
    good = CachingEngine(Counting(openjtalk_engine), 8, str(tmp_path)).synthesize(
        PHRASES[2], voice)
    (path,) = tmp_path.iterdir()
    path.write_bytes(path.read_bytes()[:100])  # truncated, as by a full disk
    inner = Counting(openjtalk_engine)
    cache = CachingEngine(inner, 8, str(tmp_path))
    with caplog.at_level(logging.WARNING):
        audio = cache.synthesize(PHRASES[2], voice)
    np.testing.assert_array_equal(audio, good)
    assert inner.calls == [PHRASES[2]] and (cache.hits, cache.misses) == (0, 1)
    assert any('corrupt' in r.message and r.levelno == logging.WARNING
               for r in caplog.records)
    again = CachingEngine(Counting(openjtalk_engine), 8, str(tmp_path))  # rewritten whole
    np.testing.assert_array_equal(again.synthesize(PHRASES[2], voice), good)
    assert again.hits == 1


def test_files_stay_within_the_bound(openjtalk_engine, tmp_path):
    voice = VoiceParams()
    size = openjtalk_engine.synthesize(PHRASES[2], voice).nbytes
    cache = CachingEngine(openjtalk_engine, 1.5 * size / MIB, str(tmp_path))
    for text in PHRASES:
        cache.synthesize(text, voice)
    total = sum(p.stat().st_size for p in tmp_path.iterdir())
    assert 0 < total <= 1.5 * size


def test_hayakoe_model_identity_follows_the_model_files(tiny_model_root, tmp_path,
                                                        hayakoe_clean_globals):
    from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine

    root = tmp_path / 'model'
    for dirpath, _, files in os.walk(tiny_model_root):
        rel = os.path.relpath(dirpath, tiny_model_root)
        os.makedirs(root / rel, exist_ok=True)
        for f in files:  # links to the shared model, except the file we will change
            if f == 'style_vectors.npy':
                shutil.copy(os.path.join(dirpath, f), root / rel / f)
            else:
                os.symlink(os.path.join(dirpath, f), root / rel / f)

    def load():
        engine = HayakoeEngine('tiny-jp', speaker_source=f'file://{root}',
                               bert_source=f'file://{root}', num_threads=1)
        engine.close()
        return engine.model_id

    first = load()
    assert load() == first  # stable across loads: persisted entries stay valid
    (vectors,) = root.rglob('style_vectors.npy')
    np.save(vectors, np.load(vectors) * 1.5)  # another voice
    assert load() != first


def test_preload_makes_the_scheduler_speak_the_phrase_without_synthesis(openjtalk_engine):
    voice = VoiceParams()
    text = '了解しました、すぐに向かいます。充電してください。'
    inner = Counting(openjtalk_engine)
    cache = CachingEngine(inner, 16)
    result = preload(cache, [text, ''], voice,  # '' is refused, not fatal
                     lambda phrase: prepare(phrase, 2000, 8)[1])
    assert result.segments >= 2 and result.synthesised == result.segments
    assert len(result.errors) == 1 and (cache.hits, cache.misses) == (0, 0)
    preloaded = len(inner.calls)

    def speak(engine):
        chunks: list = []
        sched = SpeechScheduler(engine,
                                lambda u, c: chunks.append(c.samples[:c.valid_frames].copy()),
                                SchedulerConfig(pacing=False, max_segment_chars=8))
        try:
            utt = submit_text(sched, text, voice)
            assert utt.wait(60)
        finally:
            sched.shutdown()
        return np.concatenate(chunks)

    cached = speak(cache)
    assert len(inner.calls) == preloaded  # every segment came from the cache
    assert cache.hits == result.segments and cache.misses == 0
    np.testing.assert_array_equal(cached, speak(openjtalk_engine))


def test_read_phrases_from_a_list_or_a_file(tmp_path):
    assert read_phrases(' おはよう| 了解。 ||') == ['おはよう', '了解。']
    path = tmp_path / 'phrases.txt'
    path.write_text('# greetings\nおはよう\n\n止まります。\n', encoding='utf-8')
    assert read_phrases(str(path)) == ['おはよう', '止まります。']
    path.write_bytes(b'\xff\xfe\x00bad')
    with pytest.raises(ValueError, match='phrases.txt'):
        read_phrases(str(path))
    assert read_phrases('') == []
    # A mistyped path is an error, not a phrase to say (it was spoken and cached).
    for missing in (str(tmp_path / 'phrase.txt'), '~/no/such/phrases', './phrases',
                    'config/phrases', 'phrases.yaml'):
        with pytest.raises(ValueError, match='does not exist'):
            read_phrases(missing)
    assert read_phrases('/etc/robot|') == ['/etc/robot']  # said on purpose
    assert read_phrases('1/2です') == ['1/2です']


def test_size_out_of_range_is_refused(openjtalk_engine):
    with pytest.raises(ValueError, match='phrase cache size 0 MiB is out of range'):
        CachingEngine(openjtalk_engine, 0)


def test_a_cancel_through_the_wrappers_terminates_the_run_and_caches_nothing(tiny_engine,
                                                                            det_voice):
    from hayakoe_ros.engines import CancelToken, SynthesisCanceledError

    inner = Counting(tiny_engine)
    cache = CachingEngine(ResampledEngine(tiny_engine, 16000), 8)
    token = CancelToken()
    with pytest.raises(SynthesisCanceledError) as info:
        with cache.cancellable(token):
            token.cancel()  # as the scheduler's cancel does, from another thread
            cache.synthesize(PHRASES[0], det_voice)
    assert 'terminate' in str(info.value.__cause__).lower()  # ONNX Runtime's own flag
    assert cache.entries == 0 and cache.misses == 0
    with cache.cancellable(CancelToken()):
        audio = cache.synthesize(PHRASES[0], det_voice)
    expected = ResampledEngine(inner, 16000).synthesize(PHRASES[0], det_voice)
    np.testing.assert_array_equal(audio, expected)
    assert cache.misses == 1


def test_a_user_dictionary_changes_the_key(openjtalk_engine, tmp_path):
    """Same segment text, other reading (本日 read キョウ): not served from the cache."""
    from hayakoe_ros.text import userdict

    path = tmp_path / 'user.tsv'
    path.write_text('本日\tキョウ\n', encoding='utf-8')
    voice = VoiceParams()
    inner = Counting(openjtalk_engine)
    cache = CachingEngine(inner, 8, dictionary=userdict.digest)  # as the node makes it
    plain = cache.synthesize('本日は晴れです。', voice)
    try:
        userdict.apply(userdict.UserDictionary.load(str(path)))
        read_kyou = cache.synthesize('本日は晴れです。', voice)
    finally:
        userdict.apply(None)
    assert len(inner.calls) == 2 and read_kyou.size != plain.size  # キョウ: fewer morae
    np.testing.assert_array_equal(cache.synthesize('本日は晴れです。', voice), plain)
    assert len(inner.calls) == 2 and cache.hits == 1


def test_a_read_only_directory_serves_its_entries_and_warns_once(openjtalk_engine, tmp_path,
                                                                  read_only_view, caplog):
    voice = VoiceParams()
    rw = tmp_path / 'cache'
    rw.mkdir()
    stored = CachingEngine(Counting(openjtalk_engine), 8, str(rw)).synthesize(PHRASES[0], voice)
    inner = Counting(openjtalk_engine)
    cache = CachingEngine(inner, 8, str(read_only_view(rw)))
    with caplog.at_level(logging.WARNING, logger='hayakoe_ros'):
        np.testing.assert_array_equal(cache.synthesize(PHRASES[0], voice), stored)
        for text in PHRASES[1:] + ('新しい文です。', 'もう一つの文です。'):
            assert cache.synthesize(text, voice).size > 0
    assert inner.calls == list(PHRASES[1:]) + ['新しい文です。', 'もう一つの文です。']
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and 'cannot write to' in warned[0], warned
    assert 'Read-only file system' in cache.write_error
    np.testing.assert_array_equal(cache.synthesize(PHRASES[2], voice),
                                  cache.synthesize(PHRASES[2], voice))  # memory still caches
