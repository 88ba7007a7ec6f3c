# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speech marks from an engine's phoneme timing: word alignment, visemes, both real voices.

The alignment functions (``align_words``, ``segment_marks``, ``viseme``) on hand-made
phones, then the tiny hayakoe model and Open JTalk through a real scheduler, plain,
cached and resampled. The scheduler's marks on a timed tone engine are in
test_speech_marks.py.
"""

import numpy as np
import pytest

from hayakoe_ros.engines.base import AudioWindow, Phone, VoiceParams
from hayakoe_ros.speech import Outcome, SchedulerConfig, SpeechScheduler
from hayakoe_ros.speech.marks import align_words, segment_marks, viseme
from hayakoe_ros.text.segment import Boundary, Segment, Word
from speech_fakes import REAL_TIMEOUT_S, TimedToneEngine, words_of

pytestmark = pytest.mark.unit


def test_align_words_skips_what_the_engine_said_otherwise():
    words = (Word(0, 2, '今日', ('ky', 'o', 'o')), Word(2, 3, 'は', ('w', 'a')),
             Word(3, 4, '😀', ()))
    phones = [Phone('sil', 0, 10), Phone('ky', 10, 20), Phone('o', 20, 30),
              Phone('O', 30, 40), Phone('w', 40, 50), Phone('a', 50, 60), Phone('sil', 60, 70)]
    assert align_words(words, phones) == [(1, 3), (4, 5), None]
    marks = segment_marks(Segment('今日は😀', Boundary.END, words=words), phones, 100, 105)
    word_marks = [m for m in marks if m.kind == 'word']
    assert [(m.position, m.duration) for m in word_marks] == [(110, 30), (140, 20), (160, 0)]
    assert all(m.position >= 105 for m in marks)


def test_a_word_after_silence_starts_at_its_first_sound_its_phonemes_do_not_move():
    sr = 8000
    words = (Word(0, 2, 'かさ', ('k', 'a', 's', 'a')),)
    # pau, then /k/: 400 samples of silent closure and a 100-sample burst, then a s a.
    phones = [Phone('pau', 0, 800), Phone('k', 800, 1300), Phone('a', 1300, 1700),
              Phone('s', 1700, 1900), Phone('a', 1900, 2300)]
    audio = np.zeros(2300, np.float32)
    audio[1200:] = 0.3 * np.sin(2 * np.pi * 440 * np.arange(1100) / sr + 0.5)
    marks = segment_marks(Segment('かさ', Boundary.END, words=words, sentence=(0, 2)),
                          phones, 0, 0, audio)
    (word,) = [m for m in marks if m.kind == 'word']
    (sentence,) = [m for m in marks if m.kind == 'sentence']
    assert word.position == 1200 and word.position + word.duration == 2300
    assert sentence.position == 1200
    k = [m for m in marks if m.kind == 'phoneme'][1]
    assert (k.value, k.position) == ('k', 800)  # the engine's own timing
    # Without the audio (a later window of the segment): the phoneme's start.
    no_audio = segment_marks(Segment('かさ', Boundary.END, words=words), phones, 0, 0)
    assert [m.position for m in no_audio if m.kind == 'word'] == [800]


@pytest.mark.parametrize('symbol,expected', [
    ('a', 'a'), ('I', 'i'), ('N', 'N'), ('m', 'closed'), ('by', 'closed'), ('pau', 'sil'),
    ('k', None), ('cl', None)])
def test_viseme_table(symbol, expected):
    assert viseme(symbol) == expected


def _marks_of(engine, text, voice, **config):
    """(marks, utterance) of ``text`` through a real scheduler on ``engine`` (pacing off)."""
    from hayakoe_ros.text.pipeline import prepare

    got = []
    sched = SpeechScheduler(engine, lambda u, c: None,
                            SchedulerConfig(pacing=False, **config),
                            on_mark=lambda u, m, t: got.append(m))
    try:
        cleaned, segments = prepare(text, 2000, 60, 8)
        utt = sched.submit(segments, voice, text=cleaned, source=text)
        assert utt.wait(60) and utt.outcome is Outcome.SUCCEEDED
        return got, utt
    finally:
        sched.shutdown()


@pytest.mark.parametrize('wrap', ['plain', 'cache', 'resample'])
def test_both_voices_mark_every_word_through_cache_and_resampling(
        tiny_engine, openjtalk_engine, det_voice, tmp_path, wrap):
    from hayakoe_ros.engines.phrase_cache import CachingEngine
    from hayakoe_ros.engines.resample import ResampledEngine

    text = '10:30に出発します。今日は、いい天気ですね。'
    for engine, voice in ((tiny_engine, det_voice), (openjtalk_engine, VoiceParams())):
        if wrap == 'resample':
            engine = ResampledEngine(engine, 16000)
        elif wrap == 'cache':
            engine = CachingEngine(engine, 16, str(tmp_path / engine.name))
        marks, utt = _marks_of(engine, text, voice)
        words = [m for m in marks if m.kind == 'word']
        assert words[0].value == '10:30' and (words[0].start, words[0].end) == (0, 5)
        assert [text[w.start:w.end] for w in words] == [w.value for w in words]
        assert all(w.duration > 0 for w in words), engine.name
        phonemes = [m for m in marks if m.kind == 'phoneme']
        assert phonemes and max(p.position + p.duration for p in phonemes) <= \
            utt.audio_samples + engine.sample_rate * 0.05
        if wrap == 'cache':  # a hit: the same marks as the miss
            again, _ = _marks_of(engine, text, voice)
            assert [(m.kind, m.value, m.start) for m in again] == \
                [(m.kind, m.value, m.start) for m in marks]


def test_marks_end_with_the_audio_of_a_devoiced_ending(openjtalk_engine):
    """です/ます end on a devoiced vowel whose quiet tail the trailing trim cuts.

    The engine's durations still counted it: the last word, phoneme and viseme marks ran
    34-60 ms past the utterance's audio.
    """
    from tools.submit import submit_text

    marks = []
    sched = SpeechScheduler(openjtalk_engine, lambda utt, chunk: None,
                            SchedulerConfig(pacing=False),
                            on_mark=lambda utt, mark, play_time: marks.append(mark))
    try:
        utt = submit_text(sched, '今日は良い天気ですね。駅前の図書館までご案内します。',
                          VoiceParams())
        assert utt.wait(120) and utt.outcome is Outcome.SUCCEEDED, utt.error
    finally:
        sched.shutdown()
    timed = [m for m in marks if m.kind in ('word', 'phoneme', 'viseme')]
    assert [m.value for m in timed if m.kind == 'word'][-2:] == ['し', 'ます']
    assert max(m.position + m.duration for m in timed) <= utt.audio_samples


class _QuietEnding(TimedToneEngine):
    """The timed tone engine, its last kana's burst quiet after 5 ms (under -60 dBFS).

    As a devoiced ending: the durations count all of it, the trailing trim cuts its quiet
    part. Its segments come in two windows (:meth:`TimedToneEngine.synthesize_windows`).
    """

    def synthesize_timed(self, text, voice):
        out = super().synthesize_timed(text, voice)
        last = [p for p in out.phones if p.symbol not in ('sil', 'pau')][-1]
        audio = out.audio.copy()
        audio[last.start + 40:last.end] *= 1e-3
        return AudioWindow(audio, phones=out.phones)


def test_marks_of_a_segment_in_windows_end_with_its_audio():
    """The marks made at the first window are held to the end the last window's trim sets.

    They ran 10 ms past the audio (the last word, phoneme and viseme).
    """
    engine, marks = _QuietEnding(), []
    sched = SpeechScheduler(engine, lambda utt, chunk: None,
                            SchedulerConfig(pacing=False, chunk_frames=256),
                            on_mark=lambda utt, mark, play_time: marks.append(mark))
    try:
        text = 'かきさたなまお。'
        utt = sched.submit([Segment(text, Boundary.END, words=words_of(text))],
                           VoiceParams(), text=text, source=text)
        assert utt.wait(REAL_TIMEOUT_S) and utt.outcome is Outcome.SUCCEEDED, utt.error
    finally:
        sched.shutdown()
    assert engine.at_gate.is_set()  # it came in windows
    assert [m.value for m in marks if m.kind == 'word'] == list(text[:-1])
    timed = [m for m in marks if m.kind in ('word', 'phoneme', 'viseme')]
    assert max(m.position + m.duration for m in timed) <= utt.audio_samples
    last = [m for m in timed if m.kind == 'word'][-1]
    assert last.value == 'お' and last.position + last.duration == utt.audio_samples
