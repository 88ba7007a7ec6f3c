# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""User dictionary: both voices read the entries; bad files name the line."""

import re

import pytest

from hayakoe_ros.text import UserDictionary, UserDictionaryError, reading, userdict
from hayakoe_ros.text.pipeline import prepare

pytestmark = pytest.mark.ros

GOOD = ('# robot names\n'
        '本日\tキョウ\n'
        '\n'
        'hayakoe\tハヤコエ\t0\n'
        '天王洲,テンノーズ,3\n')


@pytest.fixture(autouse=True)
def no_dictionary_after():
    """The process-wide dictionary is removed after each test, whatever it applied.

    ``reading(..., user_dictionary=...)`` leaves its dictionary applied: a test that ended
    so changed the readings of later tests in the same process (本日 read キョウ: a first
    segment and a phrase-cache key elsewhere).
    """
    yield
    userdict.apply(None)


@pytest.fixture
def dictionary(tmp_path):
    path = tmp_path / 'user.tsv'
    path.write_text(GOOD, encoding='utf-8')
    yield path
    userdict.apply(None)


def test_a_good_file_changes_the_reading(dictionary):
    assert reading('本日はhayakoeを使う').startswith('ホンジツワ')
    got = reading('本日はhayakoeを使う', user_dictionary=str(dictionary))
    assert got.startswith('キョウワハヤコエヲ'), got
    userdict.apply(None)
    assert reading('本日').startswith('ホンジツ')


def test_the_hayakoe_voice_reads_the_dictionary_too(dictionary, hayakoe_front_end):
    """Hayakoe's own g2p (through pyopenjtalk) gives the dictionary's phonemes."""
    userdict.apply(UserDictionary.load(str(dictionary)))
    for seg in prepare('本日はhayakoeです', 2000, 60)[1]:
        _, phones = hayakoe_front_end(seg.text)
        assert re.match('kyo[ou]wahayakoe', ''.join(phones)), phones
    userdict.apply(None)
    _, phones = hayakoe_front_end('本日')
    assert ''.join(phones).startswith('hoNjitsu'), phones


@pytest.mark.parametrize('line, problem', [
    ('本日', 'expected "surface<TAB>reading'),
    ('本日\tほんじつ', 'must be katakana'),
    ('本日\tホンジツ\t9', 'accent type'),
    ('本日\tホンジツ\tx', 'accent type'),
    ('本日\tホンジツ\t²', 'accent type'),  # a digit to isdigit(), not to int()
    ('本日\tホンジツ\t①', 'accent type'),
    ('本 日\tホンジツ', 'spaces'),
    ('a\tb\tc\td', '4 field(s)'),
    ('x\x00y\tエックス', 'U+0000'),
    ('"abc\tエービーシー', 'double quote'),
    ('x\u200by\tエックス', 'U+200B'),
    ('長' * 101 + '\tナガ', 'surface has 101 characters; at most 100'),
    ('長\t' + 'ナ' * 101, 'reading has 101 characters'),
])
def test_a_bad_line_is_named(tmp_path, line, problem):
    path = tmp_path / 'bad.tsv'
    path.write_text('# ok\n今日\tキョウ\n' + line + '\n', encoding='utf-8')
    with pytest.raises(UserDictionaryError) as err:
        UserDictionary.load(str(path))
    assert f'{path}:3:' in str(err.value) and problem in str(err.value)


def test_a_byte_order_mark_does_not_hide_the_first_entry(tmp_path):
    path = tmp_path / 'bom.tsv'
    path.write_text('本日\tキョウ\n天王洲\tテンノーズ\n', encoding='utf-8-sig')
    assert path.read_bytes().startswith(b'\xef\xbb\xbf')
    entries = UserDictionary.load(str(path)).entries
    assert [(e.surface, e.reading, e.line) for e in entries] == [
        ('本日', 'キョウ', 1), ('天王洲', 'テンノーズ', 2)]
    try:
        assert reading('本日は晴れ。', str(path)).startswith('キョウ')
    finally:
        userdict.apply(None)


def test_entries_with_digits_variant_kanji_and_capitals_are_read(tmp_path):
    """Entries the front end would have rewritten before the dictionary saw them.

    1号機 was read 一号機 (the number first), 髙橋 was 高橋 by then (and read タカハシ),
    and hayakoe did not match Hayakoe at a sentence's start.
    """
    path = tmp_path / 'robots.tsv'
    path.write_text('1号機\tイチゴーキ\n髙橋\tコウハシ\nhayakoe\tハヤコエ\n'
                    'ROS\tロス\nIT\tアイティー\n', encoding='utf-8')
    try:
        got = reading('1号機と11号機、髙橋さん。Hayakoeです。ROS2とROSA。I think it works.',
                      str(path))
    finally:
        userdict.apply(None)
    # An entry in capitals (an acronym) matches only so: it in English stays イット.
    assert got == ('イチゴーキトジューイチゴーキ、コウハシサン。ハヤコエデス。'
                   'ロスニトアールオーエスエー。アイシンクイットワークス．'), got


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(UserDictionaryError, match='cannot read'):
        UserDictionary.load(str(tmp_path / 'none.tsv'))


def test_print_reading_applies_a_dictionary(dictionary):
    from hayakoe_ros import say

    assert say.main(['--print-reading', '--user-dictionary', str(dictionary),
                     '天王洲で本日']) == 0


@pytest.mark.ros
def test_the_node_reads_the_dictionary_at_configure(ros_client, capfd, tmp_path, dictionary):
    """A bad file fails configure with the line named; a good one is applied."""
    from rclpy.lifecycle import TransitionCallbackReturn
    from ros_utils import in_process_node

    bad = tmp_path / 'bad.tsv'
    bad.write_text('今日\tキョウ\n本日\tほんじつ\n', encoding='utf-8')
    node = in_process_node(dict(engine='openjtalk', autostart=False,
                                 user_dictionary=str(bad)))
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert f'{bad}:2: reading' in capfd.readouterr().err
    finally:
        node.destroy_node()
    node = in_process_node(dict(engine='openjtalk', autostart=False,
                                 user_dictionary=str(dictionary)))
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert reading('本日').startswith('キョウ')
    finally:
        node.destroy_node()


def test_a_surface_given_twice_takes_its_first_row_in_any_script(tmp_path, caplog):
    """Kanji and Latin surfaces alike (a Latin one took its last row), with a WARNING."""
    path = tmp_path / 'twice.tsv'
    path.write_text('本日\tキョウ\n本日\tホンジツ\nROS\tロス\nROS\tアールオーエス\n',
                    encoding='utf-8')
    with caplog.at_level('WARNING', logger='hayakoe_ros.text'):
        words = UserDictionary.load(str(path))
    assert words.replace_latin('ROSです') == 'ロスです'
    assert [r.getMessage() for r in caplog.records] == [
        f"user dictionary {path}:2: '本日' is on line 1 already: that first entry is used",
        f"user dictionary {path}:4: 'ROS' is on line 3 already: that first entry is used"]
    assert reading('本日のROS', user_dictionary=str(path)) == 'キョウノロス'
