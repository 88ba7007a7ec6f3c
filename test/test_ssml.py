# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""SSML subset: break lengths in real audio, prosody rate, errors, plain text."""

import numpy as np
import pytest

from hayakoe_ros.text import Boundary, InputError
from hayakoe_ros.speech import Outcome, SchedulerConfig, SpeechScheduler
from hayakoe_ros.text.pipeline import prepare
from tools.submit import submit_text

pytestmark = pytest.mark.unit


class Sink:
    def __init__(self):
        self.chunks = []

    def __call__(self, utt, chunk):
        self.chunks.append(chunk.samples[:chunk.valid_frames])


def _speak(engine, voice, text):
    sink = Sink()
    sched = SpeechScheduler(engine, sink, SchedulerConfig(pacing=False))
    try:
        utt = submit_text(sched, text, voice)
        assert utt.wait(120) and utt.outcome is Outcome.SUCCEEDED, utt.error
    finally:
        sched.shutdown()
    return np.concatenate(sink.chunks).astype(np.float64) / 32768.0, utt


def _longest_quiet_s(audio, sr, level):
    """Longest run (s) of samples under ``level`` (full scale 1.0), edges excluded."""
    loud = np.flatnonzero(np.abs(audio) >= level)
    inner = np.diff(loud)
    return (inner.max() - 1) / sr if inner.size else 0.0


@pytest.mark.parametrize('time_attr, seconds', [('500ms', 0.5), ('1s', 1.0), ('1.5s', 1.5)])
def test_break_is_a_silence_of_that_length_open_jtalk(openjtalk_engine, time_attr, seconds):
    """Open JTalk pads each segment with ~0.35 s of near silence; the break is still exact."""
    from hayakoe_ros.engines import VoiceParams

    audio, utt = _speak(openjtalk_engine, VoiceParams(),
                        f'<speak>こんにちは<break time="{time_attr}"/>元気ですか？</speak>')
    assert utt.pauses == [seconds]
    # 2 % of the peak: hayakoe's silence rule, measured on what was published.
    quiet = _longest_quiet_s(audio, openjtalk_engine.sample_rate, 0.02 * np.abs(audio).max())
    assert abs(quiet - seconds) < 0.03, (quiet, seconds)


def test_break_is_exact_zeros_on_the_tiny_model(tiny_engine, det_voice):
    audio, utt = _speak(tiny_engine, det_voice,
                        '<speak>こんにちは<break time="700ms"/>元気ですか？</speak>')
    sr = tiny_engine.sample_rate
    zero = np.concatenate([[False], audio == 0, [False]])
    edges = np.flatnonzero(np.diff(zero.astype(np.int8)))
    longest = max(e - s for s, e in zip(edges[::2], edges[1::2]))
    # The random model is never silent: the whole break is inserted zeros.
    assert abs(longest / sr - 0.7) < 0.003


def test_prosody_rate_changes_the_duration(openjtalk_engine):
    from hayakoe_ros.engines import VoiceParams

    voice = VoiceParams()
    normal, _ = _speak(openjtalk_engine, voice, '<speak>今日はいい天気ですね</speak>')
    slow, utt = _speak(openjtalk_engine, voice,
                       '<speak><prosody rate="50%">今日はいい天気ですね</prosody></speak>')
    assert utt.segments[0].rate == 0.5
    assert slow.size > 1.6 * normal.size


def test_sub_say_as_and_structure():
    _, segs = prepare('<speak><s>詳細は<sub alias="ドキュメント">docs</sub>へ</s>'
                      '<prosody rate="fast">番号は<say-as interpret-as="digits">0120</say-as>'
                      '</prosody><break time="250ms"/>以上</speak>', 2000, 60)
    assert [(s.text, s.boundary, s.break_s, s.rate) for s in segs] == [
        ('詳細はドキュメントへ。', Boundary.SENTENCE, None, 1.0),
        ('番号はゼロイチニーゼロ', Boundary.BREAK, 0.25, 1.25),
        ('以上', Boundary.END, None, 1.0)]


@pytest.mark.parametrize('text, problem', [
    ('<speak>こんにちは<break time="1s"></speak>', 'mismatched tag'),
    ('<speak>こんにちは', 'no element found'),
    ('<speak><audio src="x.wav"/>はい</speak>', '<audio> is not supported'),
    ('<speak><break time="abc"/>はい</speak>', 'time="abc"'),
    ('<speak><break time="60s"/>はい</speak>', 'longer than 10 s'),
    ('<speak><say-as interpret-as="currency">5</say-as></speak>', 'currency'),
    ('<speak><sub>x</sub></speak>', 'alias'),
    ('<speak><say-as interpret-as="date">9999/99/99</say-as></speak>',
     "'9999/99/99' is not a date (year 9999, month 99, day 99)"),
    # There is no year 0 (it read ゼロ年一月一日).
    ('<speak><say-as interpret-as="date">0000/1/1</say-as></speak>', 'year 0,'),
    # Day and month order is unknown with the year last: ask, do not guess.
    ('<speak><say-as interpret-as="date">12/06/2026</say-as></speak>',
     'give format="dmy" or format="mdy"'),
    ('<speak><say-as interpret-as="date" format="dmy">2026/12/6</say-as></speak>',
     'not a date (year 6, month 12, day 2026)'),
    ('<speak><say-as interpret-as="date" format="dmy">1/2</say-as></speak>',
     'does not have 3 number(s)'),
    ('<speak><say-as interpret-as="date" format="iso">1/2</say-as></speak>',
     'use one of ymd, ydm'),
    ('<speak><say-as interpret-as="digits" format="ymd">12</say-as></speak>',
     'format is taken by date and time only'),
    ('<speak><say-as interpret-as="time">25:00</say-as></speak>', "cannot read '25:00'"),
    # Nothing to read is an error, not silence; a number too long for a cardinal is
    # bad_ssml naming its length (it was a ValueError echoing every digit).
    ('<speak>番号は<say-as interpret-as="digits">abc</say-as></speak>',
     "cannot read 'abc' as digits"),
    ('<speak><say-as interpret-as="cardinal">' + '9' * 25 + '</say-as></speak>',
     '25 digits, more than 20'),
    ('<speak><say-as interpret-as="date">2025/2/29</say-as></speak>', 'not a date'),
    # What is not a number is an error, not dropped: it read 電話はです。
    ('<speak>電話は<say-as interpret-as="telephone">abc</say-as>です。</speak>',
     "cannot read 'abc' as a telephone"),
    ('<speak><prosody rate="9">はい</prosody></speak>', 'outside'),
    ('<speak><prosody pitch="high">はい</prosody></speak>', 'rate'),
    # An attribute not supported is refused with a rate too (it was dropped unheard), and
    # so is markup inside <sub> or <say-as> (a break, a mark, an unknown tag there were
    # flattened away); a cardinal is a number (',' read ゼロ, '1,2,3' ヒャクニジューサン).
    ('<speak><prosody rate="medium" pitch="high">はい</prosody></speak>',
     '<prosody pitch> is not supported (rate only)'),
    ('<speak><sub alias="エー">A<break time="2s"/>B</sub></speak>',
     '<sub> takes text only, not <break>'),
    ('<speak><say-as interpret-as="characters">ab<foo/>cd</say-as></speak>',
     '<say-as> takes text only, not <foo>'),
    ('<speak><say-as interpret-as="digits">12<mark name="x"/>34</say-as></speak>',
     'not <mark>'),
    ('<speak><say-as interpret-as="cardinal">,</say-as>個です</speak>',
     "cannot read ',' as a cardinal"),
    ('<speak><say-as interpret-as="cardinal">1,2,3</say-as></speak>', "cannot read '1,2,3'"),
    ('<!DOCTYPE speak [<!ENTITY a "aaaa">]><speak>&a;</speak>', 'refused'),
    ('<speak>&lt;&gt;<break time="1s"/></speak>', 'nothing speakable'),
    # Nested rates multiply (here to 1/8): the product stays within one tag's range.
    ('<speak>' + '<prosody rate="x-slow">' * 3 + 'あ' + '</prosody>' * 3 + '</speak>',
     'nested <prosody> rates combine to 0.125, outside 0.25..4'),
    ('<speak><prosody rate="4"><prosody rate="2">はい</prosody></prosody></speak>',
     'combine to 8'),
    # Breaks in a row add up, blanks between them or not; past 10 s it is an error.
    ('<speak>はい' + '<break time="10s"/>' * 100 + 'いいえ</speak>', 'add up to 1000 s'),
    ('<speak>はい<break time="6s"/>\n <break time="6s"/>いいえ</speak>', 'add up to 12 s'),
])
def test_malformed_ssml_is_an_error_naming_the_problem(text, problem):
    with pytest.raises(InputError) as err:
        prepare(text, 2000, 60)
    assert problem in str(err.value)
    assert err.value.code in ('bad_ssml', 'nothing_speakable')


def test_relative_rates_and_breaks_after_the_last_word():
    """``+50%`` is 1.5 times as fast (SSML 1.1; it was half as fast), ``-20%`` 0.8.

    Breaks after the last word are not heard, so they are ignored whatever they add up to
    (they were refused past 10 s, as between words).
    """
    rates = [prepare(f'<speak><prosody rate="{r}">はい</prosody></speak>', 99, 60)[1][0].rate
             for r in ('+50%', '-20%', '150%', '1.5')]
    assert rates == pytest.approx([1.5, 0.8, 1.5, 1.5])
    _, segs = prepare('<speak>はい<break time="6s"/><break time="6s"/></speak>', 99, 60)
    assert [(s.text, s.boundary) for s in segs] == [('はい', Boundary.END)]
    # xml:lang is no prosody attribute; -0 is zero; a sentence's own 。 is not doubled.
    assert prepare('<speak><prosody xml:lang="ja" rate="fast">はい</prosody></speak>',
                   99, 60)[1][0].rate == 1.25
    assert prepare('<speak><say-as interpret-as="cardinal">-0</say-as></speak>',
                   99, 60)[0] == 'ゼロ'
    assert prepare('<speak><p><s>おはようございます。</s><s>暑いです</s></p></speak>',
                   99, 60)[0] == 'おはようございます。暑いです。'


def test_breaks_in_a_row_add_up_and_say_as_marks_stay_out_of_the_text():
    text, segs = prepare('<speak>電話は<say-as interpret-as="telephone">03-1234</say-as>'
                         '<break time="1s"/>\n  <break time="2s"/>です。</speak>', 2000, 60)
    assert [(s.text, s.break_s) for s in segs] == [
        ('電話はゼロサンのイチニーサンヨン', 3.0), ('です。', None)]
    # A date without a year may be Feb 29; with one, its month has that many days.
    assert [prepare(f'<speak><say-as interpret-as="date">{d}</say-as></speak>', 99, 60)[0]
            for d in ('2/29', '2024/2/29', '2026/12')] == [
        '二月二十九日', '二千二十四年二月二十九日', '二千二十六年十二月']
    # A date's fields in the order format gives (Amazon Polly's and Azure's values).
    date = '<speak><say-as interpret-as="date" format="{}">{}</say-as></speak>'
    assert [prepare(date.format(f, d), 99, 60)[0] for f, d in (
        ('dmy', '06/12/2026'), ('mdy', '12/06/2026'), ('yyyymmdd', '20261206'),
        ('dm', '6/12'), ('y', '2026'), ('d', '31'))] == [
        '二千二十六年十二月六日'] * 3 + ['十二月六日', '二千二十六年', '三十一日']
    # A time's own 午前/午後/a.m./p.m. is read, as in plain text (it was dropped).
    time = '<speak><say-as interpret-as="time"{}>{}</say-as></speak>'
    assert [prepare(time.format(f, t), 99, 60)[0] for f, t in (
        ('', '午後2:30'), ('', '4:00pm'), (' format="hms12"', '9:00 a.m.'),
        (' format="hms24"', '14:30:05'), ('', '午後2時30分'))] == [
        '午後二時三十分', '午後四時', '午前九時', '十四時三十分五秒', '午後二時三十分']
    # A number with Japan's country code is read as dialled in Japan (it lost +81 and the
    # 0 before); another country code is read out.
    phone = '<speak><say-as interpret-as="telephone">{}</say-as></speak>'
    assert [prepare(phone.format(n), 99, 60)[0] for n in (
        '+81 3 1234 5678', '+81-(0)3-1234-5678', '+1 555 123 4567')] == [
        'ゼロサンのイチニーサンヨンのゴーロクナナハチ'] * 2 + [
        'プラスイチのゴーゴーゴーのイチニーサンのヨンゴーロクナナ']
    # The cleaned text (a say goal's result) is text: no private-use no-cut marks.
    assert text == '電話はゼロサンのイチニーサンヨンです。'


def test_entity_bombs_are_refused():
    bomb = ('<?xml version="1.0"?><!DOCTYPE speak [<!ENTITY a "ああああ">'
            '<!ENTITY b "&a;&a;&a;&a;">]><speak>&b;</speak>')
    with pytest.raises(InputError) as err:
        prepare(bomb, 2000, 60)
    assert err.value.code == 'bad_ssml'


def test_plain_text_with_angle_brackets_is_not_ssml():
    _, segs = prepare('温度<30かつ湿度>50なら<送風>する', 2000, 60)
    assert segs[0].text == '温度<三十かつ湿度>五十なら<送風>する'


def test_w3c_namespace_and_a_byte_order_mark_are_ssml():
    """What SSML writers emit: the W3C namespace on <speak>, a file saved with a BOM.

    The namespace was refused ("the root element must be <speak>, not <{...}speak>"), and
    markup after a BOM was spoken as text (スピーク…ブレークタイムイコール…).
    """
    ns = ('<speak xmlns="http://www.w3.org/2001/10/synthesis" version="1.0" '
          'xml:lang="ja-JP">はい<break time="300ms"/>'
          '<say-as interpret-as="date">12/6</say-as>です</speak>')
    text, segs = prepare(ns, 2000, 60)
    assert [(s.text, s.break_s) for s in segs] == [('はい', 0.3), ('十二月六日です', None)]
    assert [ns[w.start:w.end] for s in segs for w in s.words] == ['はい', '12/6', 'です']
    bom = '\ufeff<speak>はい<break time="300ms"/>いいえ</speak>'
    text, segs = prepare(bom, 2000, 60)
    assert text == 'はいいいえ'
    assert [(s.text, s.break_s) for s in segs] == [('はい', 0.3), ('いいえ', None)]
    assert [bom[w.start:w.end] for s in segs for w in s.words] == ['はい', 'いいえ']
    # Another namespace's elements are not SSML's: named, refused.
    with pytest.raises(InputError, match='effect> is not supported'):
        prepare('<speak xmlns:amazon="urn:x"><amazon:effect>はい</amazon:effect></speak>',
                2000, 60)
