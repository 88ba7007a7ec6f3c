# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Phoneme timing from every engine: phones that tile the audio, at the right places."""

import logging
from pathlib import Path

import numpy as np
import pytest
import yaml

from hayakoe_ros.engines import AudioWindow, Engine, Phone, VoiceParams
from hayakoe_ros.engines import hts_durations, openjtalk_engine as oj_module, openjtalk_guard
from hayakoe_ros.engines.base import WrappedEngine, tile_phones
from hayakoe_ros.engines.openjtalk_engine import OpenJTalkEngine
from hayakoe_ros.engines.phrase_cache import CachingEngine
from hayakoe_ros.engines.resample import ResampledEngine
from tools import texts

pytestmark = pytest.mark.unit

READINGS = Path(__file__).resolve().parent / 'data' / 'readings.yaml'
SILENT = ('sil', 'pau')
HELLO = ['k', 'o', 'N', 'n', 'i', 'ch', 'i', 'w', 'a']


def assert_tiles(phones, audio):
    """Phones start at 0, follow one another and end at the audio's last sample."""
    assert phones, 'no phones'
    assert all(isinstance(p, Phone) for p in phones)
    assert phones[0].start == 0 and phones[-1].end == len(audio)
    for a, b in zip(phones, phones[1:]):
        assert a.end == b.start and a.start <= a.end, (a, b)


def spoken(phones):
    return [p.symbol for p in phones if p.symbol not in SILENT]


def reading_rows():
    with open(READINGS, encoding='utf-8') as fh:
        table = yaml.safe_load(fh)
    return [row for kind in table for row in table[kind]]


# ---------------------------------------------------------------------------- base
class Plain(Engine):
    """An engine that knows no timing: the defaults of Engine."""

    sample_rate = 16000
    styles = ('Neutral',)

    def synthesize(self, text, voice):
        return np.ones(160 * len(text), np.float32)

    def predict_pause(self, left, right, voice):
        return 0.0


def test_an_engine_without_timing_gives_no_phones_and_wrappers_pass_them_on():
    engine = Plain()
    timed = engine.synthesize_timed('abc', VoiceParams())
    assert timed.phones == () and len(timed.audio) == 480
    (window,) = engine.synthesize_windows('abc', VoiceParams())
    assert window.phones == () and len(window.audio) == 480

    class Timed(Plain):
        def synthesize_timed(self, text, voice):
            audio = self.synthesize(text, voice)
            return AudioWindow(audio, phones=tile_phones([('a', 100)], len(audio)))

    wrapped = WrappedEngine(Timed())
    assert wrapped.synthesize_timed('ab', VoiceParams()).phones == (Phone('a', 0, 320),)
    (window,) = wrapped.synthesize_windows('ab', VoiceParams())
    assert window.phones == (Phone('a', 0, 320),)


def test_tile_phones_makes_the_last_phone_end_at_the_audio_end():
    assert tile_phones([('sil', 10), ('a', 0), ('pau', 5)], 20) == (
        Phone('sil', 0, 10), Phone('a', 10, 10), Phone('pau', 10, 20))
    assert tile_phones([('sil', 10), ('a', 10), ('sil', 10)], 25) == (
        Phone('sil', 0, 10), Phone('a', 10, 20), Phone('sil', 20, 25))
    assert tile_phones([], 100) == ()


# ---------------------------------------------------------------------------- hayakoe
HAYAKOE_TEXTS = ('こんにちは。', 'ちょっと待ってください！？', texts.utterances('announcement')[0],
                 '明日の午前中は、会議室の準備と、来客の受付を行います。')


def test_hayakoe_phones_tile_the_audio_whole_and_in_windows_alike(tiny_engine, det_voice):
    assert tiny_engine.windowed
    for text in HAYAKOE_TEXTS:
        whole = tiny_engine.synthesize_timed(text, det_voice)
        assert_tiles(whole.phones, whole.audio)
        if text == HAYAKOE_TEXTS[0]:  # (once: each synthesis of the long texts takes seconds)
            np.testing.assert_array_equal(whole.audio, tiny_engine.synthesize(text, det_voice))
        # Every phone is a whole number of frames: the model's own durations, not a scaling.
        assert all(p.start % 512 == 0 for p in whole.phones)
        windows = list(tiny_engine.synthesize_windows(text, det_voice))
        assert windows[0].phones == whole.phones
        assert all(w.phones == () for w in windows[1:])
        assert sum(len(w.audio) for w in windows) == len(whole.audio)
        assert whole.phones[0].symbol == whole.phones[-1].symbol == 'sil'
    assert len(windows) > 1  # the long ones really came in windows


def test_hayakoe_phones_start_where_the_duration_predictor_puts_them(tiny_engine, det_voice):
    """Each phoneme starts at the frames of everything before it, its own blank after it."""
    from hayakoe_ros.engines.hayakoe_phonemes import punctuation_ids
    from tools import hayakoe_probe

    punct = punctuation_ids()
    text = 'はい、ちょっと待ってください！？'
    ids, frames = hayakoe_probe.predict_durations(tiny_engine.speaker, text, det_voice)
    starts = np.concatenate([[0], np.cumsum(np.rint(frames).astype(int))]) * 512
    timed = tiny_engine.synthesize_timed(text, det_voice)
    assert timed.phones[-1].end == starts[-1] == len(timed.audio)
    # ids: blank, pad, blank, p1, blank, ... pn, blank, pad, blank; "!?" is one pau.
    expected = [0] + [int(starts[i]) for i in range(3, len(ids) - 2, 2)
                      if not (ids[i] in punct and ids[i - 2] in punct)]
    assert [p.start for p in timed.phones] == expected + [int(starts[len(ids) - 2])]


def test_hayakoe_names_open_jtalk_phonemes(tiny_engine, det_voice, openjtalk_engine):
    hayakoe = tiny_engine.synthesize_timed('こんにちは', det_voice).phones
    assert spoken(hayakoe) == HELLO
    assert spoken(openjtalk_engine.synthesize_timed('こんにちは', VoiceParams()).phones) == HELLO
    # Sokuon, pauses, a long vowel: the same phonemes both ways (hayakoe marks no devoicing).
    # hayakoe also times the final 。 (a pau before the closing sil); Open JTalk does not.
    for text in ('ちょっと、待って。', 'コーヒーを、ください。', 'はい、承知しました。'):
        ours = [p.symbol for p in tiny_engine.synthesize_timed(text, det_voice).phones]
        hts = [p.symbol for p in openjtalk_engine.synthesize_timed(text, VoiceParams()).phones]
        assert [s.lower() for s in hts[:-1]] == ours[:-2] and ours[-2:] == ['pau', 'sil'], text
        assert ours.count('pau') == 2 and 'q' not in ours, text
    assert ours[:4] == ['sil', 'h', 'a', 'i'] and 'cl' in spoken(
        tiny_engine.synthesize_timed('ちょっと', det_voice).phones)


def test_hayakoe_phones_scale_with_the_speaking_rate(tiny_engine, det_voice):
    import dataclasses

    slow = dataclasses.replace(det_voice, length_scale=2.0)
    normal = tiny_engine.synthesize_timed('こんにちは。', det_voice)
    slower = tiny_engine.synthesize_timed('こんにちは。', slow)
    assert [p.symbol for p in slower.phones] == [p.symbol for p in normal.phones]
    assert_tiles(slower.phones, slower.audio)
    assert slower.phones[-1].end > 1.8 * normal.phones[-1].end


# ---------------------------------------------------------------------------- Open JTalk
@pytest.mark.long  # about 11 s here; the Open JTalk phones stay quick
def test_hts_durations_are_the_frames_hts_engine_synthesises():
    """Each label gets the frames synthesising it alone gives (speed 1).

    And every whole call its exact length, at every speed.
    """
    import pyopenjtalk

    model = hts_durations.load(pyopenjtalk.DEFAULT_HTS_VOICE)
    rows = reading_rows()
    inputs = texts.utterances() + [kana for _, kana in rows[::3]]
    for i, text in enumerate(inputs):
        labels = pyopenjtalk.extract_fullcontext(text)
        if i % 6 == 0:  # per label, every sixth text (the costly check)
            alone = [len(pyopenjtalk.synthesize([label])[0]) // 240 for label in labels]
            assert list(model.label_frames(labels)) == alone, text
        speed = (1.0, 0.8, 1.25, 1 / 1.1)[i % 4]
        audio, _ = pyopenjtalk.synthesize(labels, speed=speed)
        assert int(model.label_frames(labels, speed).sum()) * 240 == len(audio), (text, speed)


# Rates other than 1: about 10 s together here, left to make test-long.
@pytest.mark.parametrize('length_scale', [1.0, pytest.param(0.7, marks=pytest.mark.long),
                                          pytest.param(1.5, marks=pytest.mark.long)])
def test_openjtalk_phones_tile_the_audio(openjtalk_engine, length_scale):
    voice = VoiceParams(length_scale=length_scale)
    for text in texts.utterances('short_reply') + texts.utterances('question'):
        timed = openjtalk_engine.synthesize_timed(text, voice)
        assert_tiles(timed.phones, timed.audio)
        np.testing.assert_array_equal(timed.audio, openjtalk_engine.synthesize(text, voice))
        assert timed.phones[0].symbol == timed.phones[-1].symbol == 'sil'
        assert all(p.end - p.start >= 5 * 240 for p in timed.phones)  # 5 states, >= 1 frame
        (window,) = openjtalk_engine.synthesize_windows(text, voice)
        assert window.phones == timed.phones


def test_openjtalk_pieces_follow_one_another(openjtalk_engine, monkeypatch):
    voice = VoiceParams()
    first = openjtalk_engine.synthesize_timed('こんにちは。', voice)
    second = openjtalk_engine.synthesize_timed('さようなら。', voice)
    monkeypatch.setattr(openjtalk_guard, 'pieces', lambda text: text.split('|'))
    both = openjtalk_engine.synthesize_timed('こんにちは。|さようなら。', voice)
    assert_tiles(both.phones, both.audio)
    assert len(both.audio) == len(first.audio) + len(second.audio)
    # The silences where the two calls meet are one sil.
    assert [p.symbol for p in both.phones] == ([p.symbol for p in first.phones]
                                               + [p.symbol for p in second.phones[1:]])
    joint = both.phones[len(first.phones) - 1]
    assert joint == Phone('sil', first.phones[-1].start,
                          len(first.audio) + second.phones[0].end)


def test_openjtalk_word_after_a_pause_starts_at_the_sound(openjtalk_engine):
    """The pause is silent, and the next word's sound starts in its first phone's attack.

    HTS's first state of a phoneme after a pause is its rise: the sound crosses -40 dBFS
    34-43 ms after the phone starts (measured); before the pause it likewise fades out
    40-55 ms before the pause starts. A phone off by a neighbour's length falls outside.
    """
    loud = 10 ** (-40 / 20)
    found = 0
    for text in ('はい、ありがとうございます。', 'こんにちは、元気ですか。',
                 'すみません、もう一度お願いします。', '三番乗り場から、バスが出ます。',
                 'まもなく、まいります。'):
        timed = openjtalk_engine.synthesize_timed(text, VoiceParams())
        level = np.abs(timed.audio)
        for i, pau in enumerate(timed.phones):
            if pau.symbol != 'pau':
                continue
            found += 1
            word = timed.phones[i + 1]
            assert level[pau.start + 60 * 48:pau.end].max() < loud, text  # a quiet pause
            onset = pau.start + int(np.argmax(level[pau.start:] > loud))
            assert 0 <= onset - word.start <= 50 * 48, (text, word, onset)
            before = np.nonzero(level[:pau.start] > loud)[0][-1]
            assert 0 < pau.start - before <= 60 * 48, (text, pau, before)
    assert found >= 5


def test_an_unreadable_hts_voice_means_no_phones_and_one_warning(monkeypatch, caplog):
    def broken(path):
        raise hts_durations.HtsVoiceError('not a voice')

    monkeypatch.setattr(oj_module.hts_durations, 'load', broken)
    with caplog.at_level(logging.WARNING):
        engine = OpenJTalkEngine()
        timed = engine.synthesize_timed('こんにちは。', VoiceParams())
        engine.synthesize_timed('こんばんは。', VoiceParams())
    assert timed.phones == () and len(timed.audio) > 48000 * 0.5
    assert len([r for r in caplog.records if 'without phoneme timing' in r.message]) == 1


def test_hts_voice_errors_are_reported(tmp_path):
    bad = tmp_path / 'bad.htsvoice'
    bad.write_bytes(b'[GLOBAL]\nNUM_STATES:5\n[DATA]\n')
    with pytest.raises(hts_durations.HtsVoiceError):
        hts_durations.load(str(bad))


# ---------------------------------------------------------------------------- wrappers
def test_resampled_phones_tile_the_resampled_audio(openjtalk_engine, tiny_engine, det_voice):
    for engine, voice in ((openjtalk_engine, VoiceParams()), (tiny_engine, det_voice)):
        resampled = ResampledEngine(engine, 16000)
        own = engine.synthesize_timed('はい、承知しました。', voice)
        timed = resampled.synthesize_timed('はい、承知しました。', voice)
        assert_tiles(timed.phones, timed.audio)
        ratio = 16000 / engine.sample_rate
        assert [p.symbol for p in timed.phones] == [p.symbol for p in own.phones]
        assert all(abs(p.start - q.start * ratio) <= 0.5 for p, q in zip(timed.phones,
                                                                         own.phones))
        # In windows (hayakoe's decoder), each resampled as it comes: the samples of the
        # whole (to the decoder windows' own 3e-7), the phones on the first.
        windows = list(resampled.synthesize_windows('はい、承知しました。', voice))
        assert windows[0].phones == timed.phones
        assert all(not w.phones for w in windows[1:])
        joined = np.concatenate([w.audio for w in windows])
        assert joined.size == timed.audio.size
        assert np.max(np.abs(joined - timed.audio)) <= 1e-5
        if engine is tiny_engine:
            assert len(windows) > 1 and windows[0].later_s


@pytest.mark.parametrize('which', ['openjtalk', 'hayakoe'])
def test_a_phrase_cache_hit_has_the_phones_of_the_miss(which, request, det_voice, tmp_path):
    if which == 'hayakoe':
        engine, voice = request.getfixturevalue('tiny_engine'), det_voice
    else:
        engine, voice = request.getfixturevalue('openjtalk_engine'), VoiceParams()
    text = 'ありがとうございました、またどうぞ。'
    cache = CachingEngine(engine, 16, str(tmp_path))
    windows = list(cache.synthesize_windows(text, voice))  # a miss, in windows
    miss = engine.synthesize_timed(text, voice)
    assert windows[0].phones == miss.phones and cache.misses == 1
    hit = cache.synthesize_timed(text, voice)  # from memory
    assert cache.hits == 1 and hit.phones == miss.phones
    np.testing.assert_allclose(hit.audio, miss.audio, atol=1e-4)
    (window,) = cache.synthesize_windows(text, voice)
    assert window.phones == miss.phones
    again = CachingEngine(engine, 16, str(tmp_path))  # as after a restart: from the file
    from_disk = again.synthesize_timed(text, voice)
    assert (again.hits, again.misses) == (1, 0) and from_disk.phones == miss.phones
    np.testing.assert_array_equal(from_disk.audio, hit.audio)
    assert_tiles(from_disk.phones, from_disk.audio)


def test_a_phrase_cache_entry_of_the_earlier_format_is_a_miss(openjtalk_engine, tmp_path):
    voice = VoiceParams()
    cache = CachingEngine(openjtalk_engine, 8, str(tmp_path))
    old = tmp_path / (cache.key('はい。', voice) + '.npy')
    np.save(old, np.zeros(100, np.float32))  # audio alone: written before phones were kept
    fresh = CachingEngine(openjtalk_engine, 8, str(tmp_path))
    assert not old.exists()
    timed = fresh.synthesize_timed('はい。', voice)
    assert fresh.misses == 1 and timed.phones
    (entry,) = tmp_path.iterdir()
    assert entry.suffix == '.npz'
