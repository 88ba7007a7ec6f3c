# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Word marks of dates with a weekday in brackets, readings side by side, English runs.

A schedule (``12/6(土) 10:00から``) reads as several readings in a row: 十二月六日, 土曜日,
十時. Each is a word of its own with the caller's spelling (a caption highlights ``12/6``,
then ``(土)``, then ``10:00``), not ``12/6(`` and ``土) 10:00``.
"""

import pytest

from hayakoe_ros.text.pipeline import prepare

pytestmark = pytest.mark.unit


def _words(text):
    _, segs = prepare(text, 10 ** 6, 60, 0)
    return [(w.value, ''.join(w.phonemes)) for s in segs for w in s.words]


@pytest.mark.parametrize('text, words', [
    ('12/6(土)に会議', [('12/6', 'juunigatsumuika'), ('(土)', 'doyoobi'), ('に', 'ni'),
                     ('会議', 'kaigi')]),
    ('12/6(土) 10:00から', [('12/6', 'juunigatsumuika'), ('(土)', 'doyoobi'),
                          ('10:00', 'juuji'), ('から', 'kara')]),
    ('12/6 10:00から', [('12/6', 'juunigatsumuika'), ('10:00', 'juuji'), ('から', 'kara')]),
    ('3/3（金）の予定', [('3/3', 'saNgatsumiclka'), ('（金）', 'kiNyoobi'), ('の', 'no'),
                     ('予定', 'yotee')]),
    ('12月6日(土)に行く', [('12月', 'juunigatsu'), ('6日', 'muika'), ('(土)', 'doyoobi'),
                       ('に', 'ni'), ('行く', 'iku')]),
    # ツイタチ, a lookahead past the weekday, stays: the weekday is a reading of its own.
    ('1日(月)は休み', [('1日', 'tsuitachi'), ('(月)', 'getsuyoobi'), ('は', 'wa'),
                    ('休み', 'yasumi')]),
    # 日 of ツイタチ's 1日 was matched with the 日 of the next date (2日, 5日), and the first
    # word took everything up to it.
    ('1日(月)と2日(火)', [('1日', 'tsuitachi'), ('(月)', 'getsuyoobi'), ('と', 'to'),
                      ('2日', 'fUtsuka'), ('(火)', 'kayoobi')]),
    ('1日(月)〜5日(金)', [('1日', 'tsuitachi'), ('(月)', 'getsuyoobi'), ('〜', 'kara'),
                      ('5日', 'itsUka'), ('(金)', 'kiNyoobi')]),
    ('2日(火)〜5日(金)', [('2日', 'fUtsuka'), ('(火)', 'kayoobi'), ('〜', 'kara'),
                      ('5日', 'itsUka'), ('(金)', 'kiNyoobi')]),
    # Sunday: the 日 of 日曜日 is not the date's (it was 5日(日 and 曜日)).
    ('8月5日(日曜日)', [('8月', 'hachigatsu'), ('5日', 'itsUka'), ('(日曜日)', 'nichiyoobi')]),
    ('12月5日(日曜日)10:00から', [('12月', 'juunigatsu'), ('5日', 'itsUka'),
                              ('(日曜日)', 'nichiyoobi'), ('10:00', 'juuji'),
                              ('から', 'kara')]),
    # A weekday's characters match nothing in the reading: its 日 is not the 日 of a date
    # after it (8月5日(日曜日) 9月1日 gave 5日(日 and 曜日), nor its 月 a month's.
    ('8月5日(日曜日) 9月1日', [('8月', 'hachigatsu'), ('5日', 'itsUka'),
                           ('(日曜日)', 'nichiyoobi'), ('9月', 'kugatsU'),
                           ('1日', 'tsuitachi')]),
    ('2/3(月) 3月27日', [('2/3', 'nigatsumiclka'), ('(月)', 'getsuyoobi'),
                       ('3月', 'saNgatsu'), ('27日', 'nijuushIchinichi')]),
    ('5日(水曜日)-3日', [('5日', 'itsUka'), ('(水曜日)', 'suiyoobi'),
                     ('-3日', 'mainasumiclka')]),
    ('2025/8/5（月）と9月1日', [('2025/8/5', 'niseNnijuugoneNhachigatsuitsUka'),
                          ('（月）', 'getsuyoobi'), ('と', 'to'), ('9月', 'kugatsU'),
                          ('1日', 'tsuitachi')]),
    # A range of times is one reading: one word after the weekday.
    ('12/6(土) 10:00〜12:00', [('12/6', 'juunigatsumuika'), ('(土)', 'doyoobi'),
                              ('10:00〜12:00', 'juujikarajuuniji')]),
    ('2日(水)〜17日(木)から', [('2日', 'fUtsuka'), ('(水)', 'suiyoobi'), ('〜', 'kara'),
                         ('17日', 'juushIchinichi'), ('(木)', 'mokuyoobi'),
                         ('から', 'kara')]),
])
def test_a_date_its_weekday_and_a_time_are_words_of_their_own(text, words):
    assert _words(text) == words


def test_a_range_of_dates_is_one_reading_and_its_last_weekday_a_word():
    # The range is kept whole (a cut inside it could mark 1/20 heard unsaid).
    assert _words('1/15(月)〜1/20(土)まで') == [
        ('1/15(月)〜1/20', 'ichigatsujuugonichigetsuyoobikaraichigatsuhatsUka'),
        ('(土)', 'doyoobi'), ('まで', 'made')]


@pytest.mark.parametrize('text, words', [
    # Open JTalk cuts the run's katakana where it likes (ア|ーユートゥデイ, アナ|イス): each
    # English word is a word mark of its own all the same, with its own phonemes.
    ('How are you today?', [('How', 'hau'), ('are', 'aa'), ('you', 'yuu'),
                            ('today', 'tudei')]),
    ('Have a nice day', [('Have', 'habu'), ('a', 'a'), ('nice', 'naisu'), ('day', 'dee')]),
    ('USB PD', [('USB', 'yuuesubii'), ('PD', 'piidii')]),
    ('Thank you very much', [('Thank you', 'saNkyuu'), ('very', 'berii'),
                             ('much', 'maclchi')]),
])
def test_english_words_read_as_one_run_are_words_of_their_own(text, words):
    assert _words(text) == words


@pytest.mark.parametrize('text', [
    'ヴァイ\u00adオリン', 'ヴァイ\u200bオリン', 'ヴァイ\x1b[31mオリン', 'ヴァイ オリン',
    '<speak>ヴァイ<mark name="x"/>オリン</speak>',
    '<speak><sub alias="ヴァイ">ヴァイ</sub>オリン</speak>',
])
def test_a_katakana_word_split_by_what_is_not_said_stays_one_word(text):
    # Only a blank beside an English word's reading cuts a word; a copied kana never.
    assert [p for _, p in _words(text)] == ['baioriN']
