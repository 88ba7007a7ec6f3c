# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A short first segment and joins inside speech (no ROS).

Segmenting with ``first_segment_morae`` (Open JTalk's front end), then what the joins sound
like: on the tone engine (pauses, steps between segments), on Open JTalk (a real voice
with 0.3 s of silence around each call) and on the tiny hayakoe model.
"""

import numpy as np
import pytest

from hayakoe_ros.engines import VoiceParams
from hayakoe_ros.speech import Outcome, SchedulerConfig, SpeechScheduler
from hayakoe_ros.speech.audio import apply_gain_and_limit
from hayakoe_ros.speech.joins import JOIN_FADE_S, Joiner
from hayakoe_ros.speech.pauses import trim_own_silence
from hayakoe_ros.text.pipeline import prepare
from hayakoe_ros.text.segment import Boundary, SegmentRamp, segment, word_boundaries
from speech_fakes import REAL_TIMEOUT_S, ThreadClock, ToneEngine, VirtualClock
from tools.texts import load_texts, utterances
from tools.submit import submit_text

pytestmark = pytest.mark.unit

#: One sentence without a clause mark: every cut in it is a word cut.
PLAIN = '明日の午前中は会議室の準備と来客の受付を順番に行う予定です。'


def _morae(text: str) -> int:
    # Imported here: a module-level import, with Open JTalk synthesising in the same run,
    # makes the interpreter's exit print "Error in sys.excepthook" (pyopenjtalk's teardown).
    import pyopenjtalk

    return sum(int(f['mora_size']) for f in pyopenjtalk.run_frontend(text))


# ------------------------------------------------------------------ segmenting
@pytest.mark.parametrize('morae', [4, 8, 12])
def test_first_segment_ends_at_the_first_boundary_after_n_morae(morae):
    half = (morae + 1) // 2
    for text in utterances('long_clause') + [PLAIN]:
        segs = segment(text, 60, SegmentRamp(60, morae))
        first = segs[0].text
        clause = first.endswith('、')
        assert segs[0].boundary is (Boundary.CLAUSE if clause else Boundary.WORD)
        # At least n morae before a word cut, half as many before a clause mark...
        assert _morae(first) >= (half if clause else morae)
        assert ''.join(s.text for s in segs) == text
        # ... and no earlier accent phrase or clause mark would have done.
        phrases = [c for c, accent in word_boundaries(first) if accent]
        marks = [i + 1 for i, ch in enumerate(first[:-1]) if ch == '、']
        assert all(_morae(first[:c]) < morae for c in phrases), (first, phrases)
        assert all(_morae(first[:c]) < half for c in marks), (first, marks)


def test_known_first_segments():
    clause, plain = utterances('long_clause')[0], PLAIN
    assert segment(clause, 60, SegmentRamp(60, 8))[0].text == '明日の午前中は、'
    # ホンジツワ: 5 morae, a clause mark after at least half of 8.
    assert segment(utterances('long_clause')[1], 60, SegmentRamp(60, 8))[0].text == '本日は、'
    assert segment(plain, 60, SegmentRamp(60, 8))[0].text == '明日の午前中は'
    bench = ''.join(load_texts()['benchmark'][:3])
    assert [s.text for s in segment(bench, 60, SegmentRamp(60, 8))][:3] == [
        'これから二階の', '特別展示室まで', 'ご案内します。']


def test_later_segments_grow_at_most_to_all_before_them_then_to_the_bound():
    for text in utterances('long_clause'):
        segs = segment(text, 60, SegmentRamp(60, 8))
        lengths = [len(s.text) for s in segs]
        for k in range(1, len(segs)):
            bound = min(60, max(sum(lengths[:k]), 8))
            assert lengths[k] <= bound + min(bound, 60 - bound) // 2, (k, lengths)
        assert max(lengths) > 2 * lengths[0]  # it does grow
        assert ''.join(s.text for s in segs) == text


def test_off_short_or_unsplittable_first_sentences_are_as_before():
    for text in utterances() + [''.join(load_texts()['benchmark'])]:
        assert segment(text, 60, SegmentRamp(60, 0)) == segment(text, 60)
    # A cut that would not halve the first synthesis is not made.
    assert [s.text for s in segment('今日は、いい天気ですね。', 60, SegmentRamp(60, 8))] == \
        ['今日は、いい天気ですね。']
    assert len(segment('かしこまりました。少々お待ちください。', 60, SegmentRamp(60, 8))) == 2


@pytest.mark.parametrize('morae', [1, 2, 4])
def test_no_cut_inside_a_front_end_reading(morae):
    # 十時 alone has 3 morae: the accent phrase 三十分 would start a first segment there.
    _, segs = prepare('10:30から2階の会議室で、新しいロボットの説明会を始めます。', 2000, 60,
                      morae)
    assert segs[0].text == '十時三十分から'
    _, segs = prepare('090-1234-5678までお電話ください。', 2000, 60, morae)
    assert segs[0].text.startswith('ゼロキューゼロのイチニーサンヨンのゴーロクナナハチ')


@pytest.mark.parametrize('text, word', [
    ('10:30〜11:00の件を確認してください', '10:30〜11:00'),
    ('明日の10:30〜11:00に会議室で会いましょう。', '10:30〜11:00'),
    ('2024/1/15〜2024/1/20の予定を確認してください', '2024/1/15〜2024/1/20'),
])
def test_no_cut_inside_a_range_of_two_readings(text, word):
    """A range is one word, its から no cut: the first segment ended after から.

    The range's word mark then covered its first half only, the second segment began
    with an empty word, and a cut there counted the whole range as heard.
    """
    _, segs = prepare(text, 2000, 60, 8)
    words = [(w.start, w.end) for seg in segs for w in seg.words]
    assert all(end > start for start, end in words), words
    (start, end), = [(a, b) for a, b in words if text[a:b] == word]
    owners = [n for n, seg in enumerate(segs) for w in seg.words if w.start < end
              and w.end > start]
    assert len(set(owners)) == 1, [seg.text for seg in segs]


def test_a_number_read_in_several_segments_is_heard_only_with_its_last():
    """A number of more than 20 digits is read in groups, a segment each: one word.

    Its word is in the first segment, an empty word goes on in each later one; a cut after
    the first group counted the whole number heard (4 of 4 cancels, 1.6 s of its 7.8 s
    out). The first pieces go on (``continues``) and count with the last.
    """
    from hayakoe_ros.speech.marks import Mark, heard_ends

    text = '番号は123456789012345678901234です。'
    _, segs = prepare(text, 2000, 60, 8)
    words = [w for seg in segs for w in seg.words]
    number = text.index('1'), text.index('で')
    pieces = [w for w in words if number[0] <= w.start <= w.end == number[1]]
    assert len(segs) > 2 and len(pieces) == len(segs), \
        [(seg.text, [(w.start, w.end) for w in seg.words]) for seg in segs]
    assert [w.continues for w in pieces] == [True] * (len(pieces) - 1) + [False]
    assert not any(w.continues for w in words if w not in pieces)
    # What the publisher counts: the first piece's samples out, the number is not heard.
    marks = [Mark('word', 100 * n, 90, w.start, w.end, w.value, w.continues)
             for n, w in enumerate(pieces)]
    assert heard_ends(marks) == [(100 * (len(pieces) - 1) + 90, number[1])]


# ------------------------------------------------------------------ joins on the tone engine
def _speak(engine, text, morae, **config):
    chunks = []
    sched = SpeechScheduler(engine, lambda utt, chunk: chunks.append(chunk),
                            SchedulerConfig(pacing=False, first_segment_morae=morae, **config),
                            clock=VirtualClock())
    try:
        utt = submit_text(sched, text, VoiceParams(style=engine.styles[0], noise=0.0, noise_w=0.0,
                                             sdp_ratio=0.0))
        assert utt.wait(REAL_TIMEOUT_S) and utt.outcome is Outcome.SUCCEEDED
    finally:
        sched.shutdown()
    pcm = np.concatenate([c.samples for c in chunks])[:utt.audio_samples]
    return utt, pcm.astype(np.float64) / 32767.0


def test_word_joins_get_no_pause_and_punctuation_joins_their_predicted_one():
    engine = ToneEngine()
    text = utterances('long_clause')[0]  # first cut after 、, then 、-clauses
    utt, audio = _speak(engine, '明日の午前中は会議室の準備と、来客の受付を順番に行います。'
                        + text, 4)
    smooth = [s.boundary is Boundary.WORD for s in utt.segments[:-1]]
    assert any(smooth) and not all(smooth)
    expected = [0.0 if sm else max(ToneEngine.pause_for(s.text), 0.08) if
                s.boundary is Boundary.SENTENCE else ToneEngine.pause_for(s.text)
                for s, sm in zip(utt.segments, smooth)]
    assert utt.pauses == pytest.approx(expected)
    assert len(engine.pause_calls) == smooth.count(False)  # none asked at a word join
    fade = round(JOIN_FADE_S * ToneEngine.RATE)
    speech = sum(ToneEngine.samples_for(s.text) for s in utt.segments)
    # Each tone starts with one zero sample (sin 0): the pause before it counts it as
    # that segment's lead-in (.speech.pauses).
    assert len(audio) == speech - fade * smooth.count(True) + sum(
        round(p * ToneEngine.RATE) - 1 for p in utt.pauses if p)


def test_segments_that_stop_mid_cycle_join_without_a_step():
    """465 Hz: each call stops a quarter cycle past a whole one, at up to full amplitude."""
    utt, audio = _speak(ToneEngine(frequency=465.0), PLAIN, 4)
    assert [s.boundary for s in utt.segments[:-1]] == [Boundary.WORD] * (len(utt.segments) - 1)
    own = np.abs(np.diff(ToneEngine.tone(4000, 465.0))).max()  # the tone's own steepest
    # A 5 ms crossfade between two phases adds at most amplitude * pi / (2 * 40) a sample.
    assert np.abs(np.diff(audio)).max() <= own + ToneEngine.AMPLITUDE * np.pi / 80 + 1e-3
    # Concatenated as the engine gives them, the joins would step by up to the amplitude.
    raw = np.concatenate([ToneEngine.tone(ToneEngine.samples_for(s.text), 465.0)
                          for s in utt.segments])
    assert np.abs(np.diff(raw)).max() > 2 * own


# ------------------------------------------------------------------ joins on real voices
def _silent_runs(audio, sample_rate):
    """Lengths (s) of the silent runs inside ``audio`` (10 ms windows under 2 % of peak)."""
    w = int(sample_rate * 0.01)
    peaks = np.abs(audio[:audio.size // w * w]).reshape(-1, w).max(axis=1)
    silent = np.concatenate([[False], peaks < 0.02 * np.abs(audio).max(), [False]])
    edges = np.flatnonzero(np.diff(silent.astype(np.int8)))
    runs = list(zip(edges[::2], edges[1::2]))
    inner = [(a, b) for a, b in runs if a > 0 and b < peaks.size]  # not the two ends
    return [(b - a) * 0.01 for a, b in inner], [(b - a) * 0.01 for a, b in runs]


def _join_study(engine, morae):
    voice = VoiceParams(style=engine.styles[0], noise=0.0, noise_w=0.0, sdp_ratio=0.0)
    sr = engine.sample_rate
    utt, joined = _speak(engine, PLAIN, morae)
    first = utt.segments[0]
    assert first.boundary is Boundary.WORD and first.text == '明日の午前中は'
    # Unsplit, as the pipeline hands it over: the voice's own edge silence trimmed.
    whole = apply_gain_and_limit(trim_own_silence(engine.synthesize(PLAIN, voice), sr),
                                 1.0, sr)
    # Where the join is: after the first segment as the joiner hands it over.
    at = Joiner(sr).join(engine.synthesize(first.text, voice), False, True).size
    near = slice(at - int(0.01 * sr), at + int(0.01 * sr))
    return utt, joined, whole, at, near


def test_openjtalk_word_join_adds_no_silence_and_no_click(openjtalk_engine):
    sr = openjtalk_engine.sample_rate
    utt, joined, whole, at, near = _join_study(openjtalk_engine, 6)
    inner_joined, _ = _silent_runs(joined, sr)
    inner_whole, _ = _silent_runs(whole, sr)
    # Open JTalk pads each call with ~0.3 s of silence at both ends: 0.6 s at a plain join.
    assert max(inner_joined) <= max(inner_whole) + 0.02
    assert abs(joined.size - whole.size) / sr < 0.15
    assert utt.pauses[0] == 0.0
    assert np.abs(np.diff(joined[near])).max() <= np.abs(np.diff(whole)).max()


def test_tiny_model_word_join_inserts_nothing_and_no_click(tiny_engine):
    sr = tiny_engine.sample_rate
    utt, joined, whole, at, near = _join_study(tiny_engine, 6)
    voice = VoiceParams(style='Neutral', noise=0.0, noise_w=0.0, sdp_ratio=0.0)
    parts = [tiny_engine.synthesize(s.text, voice).size for s in utt.segments]
    smooth = sum(s.boundary is Boundary.WORD for s in utt.segments[:-1])
    # Nothing between the segments: their samples less one crossfade per word join.
    assert joined.size == sum(parts) - smooth * round(JOIN_FADE_S * sr)
    assert np.abs(np.diff(joined[near])).max() <= np.abs(np.diff(whole)).max()


# ------------------------------------------------------------------ later segments grow
def _ramp_cuts(text, morae):
    return [s.text for s in segment(text, 60, SegmentRamp(60, morae))]


def test_without_pacing_the_pieces_after_the_first_are_one_call():
    """Nothing plays in real time: the pieces after the short first segment are joined.

    The word-cut pieces the ramp made are spoken as one engine call (fewer calls, the
    same text).
    """
    ramp = _ramp_cuts(PLAIN, 4)
    assert len(ramp) >= 3
    engine = ToneEngine()
    utt, audio = _speak(engine, PLAIN, 4)
    assert engine.calls == [ramp[0], ''.join(ramp[1:])]
    assert [s.text for s in utt.segments] == engine.calls
    fade = round(JOIN_FADE_S * ToneEngine.RATE)
    assert len(audio) == ToneEngine.samples_for(PLAIN) - fade  # one word join left
    assert utt.pauses == [0.0]


def test_a_fast_engine_grows_segments_a_slow_one_keeps_the_ramp():
    """Paced, pieces are joined only while the audio ahead covers their synthesis.

    At the measured rate; either way no boundary underruns (gapless on, as the node).
    """
    text = PLAIN * 3
    ramp = _ramp_cuts(text, 4)
    for rtf, joins in ((0.05, True), (2.0, False)):
        clock = ThreadClock()
        engine = ToneEngine(clock, rtf=rtf)
        sched = SpeechScheduler(engine, lambda utt, chunk: None,
                                SchedulerConfig(first_segment_morae=4, gapless=True,
                                                chunk_frames=256),
                                clock=clock, waiter=clock.wait)
        try:
            utts = [submit_text(sched, text, VoiceParams()) for _ in range(2)]
            assert all(u.wait(REAL_TIMEOUT_S) and u.outcome is Outcome.SUCCEEDED
                       for u in utts)
        finally:
            sched.shutdown()
        # From the first segment's measured rate on, the fast engine's pieces are joined.
        for utt in utts:
            grown = [s.text for s in utt.segments]
            assert ''.join(grown) == text and grown[0] == ramp[0]
            assert (grown == ramp) is not joins, (rtf, grown)
        assert [u.underruns for u in utts] == [0, 0]


def test_grow_segment_joins_exactly_what_the_audio_ahead_covers():
    from hayakoe_ros.speech.gapless import (SAFETY, SETTLED_SEGMENTS, RateEstimator,
                                            speakable_chars)
    from hayakoe_ros.speech.synthesis import Pacing, grow_segment
    from hayakoe_ros.speech.utterance import Utterance

    engine = ToneEngine()
    rates = RateEstimator()
    for _ in range(SETTLED_SEGMENTS):  # a settled estimate: planned with SAFETY
        rates.update('tone/tone', synth_s=0.5, audio_s=1.0, chars=20)  # RTF 0.5, 0.05 s/char
    segs = segment(PLAIN, 60, SegmentRamp(60, 4))
    assert len(segs) >= 3 and all(s.boundary is Boundary.WORD for s in segs[:2])
    need = 0.5 * SAFETY * 0.05 * speakable_chars(segs[1].text + segs[2].text)

    def grow(ahead_s, paced=True, max_chars=60, estimate=True):
        utt = Utterance(1, PLAIN, list(segs), VoiceParams(), 1.0, 0.0)
        pacing = Pacing(rates if estimate else RateEstimator(), paced=paced,
                        max_chars=max_chars)
        return grow_segment(engine, utt, 1, pacing, ahead_s, 'tone/tone'), utt.segments

    joined, grown = grow(need + 1e-6)
    assert joined >= 1 and grown[1].text.startswith(segs[1].text + segs[2].text)
    assert ''.join(s.text for s in grown) == PLAIN
    assert grow(need - 1e-3)[0] == 0                       # not quite enough audio ahead
    assert grow(need + 1e-6, estimate=False)[0] == 0       # nothing measured yet
    assert grow(0.0, paced=False)[0] == len(segs) - 2      # unpaced: all of them
    assert grow(100.0, max_chars=len(segs[1].text) + 1)[0] == 0  # max_segment_chars
