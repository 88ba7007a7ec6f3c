# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Input checks and segmenting of the speech pipeline (no engine, no ROS)."""

import re

import pytest

from hayakoe_ros.text import corrections
from hayakoe_ros.text.pipeline import prepare
from hayakoe_ros.text.segment import InputError, prepare_text, segment, strip_control
from tools.texts import load_texts, shared_dialogue_lines, utterances

pytestmark = pytest.mark.unit


def test_sentences_split_at_terminators_and_keep_them():
    segs = segment('こんにちは。元気ですか？はい！「行こう。」と言った。', 60)
    assert [s.text for s in segs] == ['こんにちは。', '元気ですか？', 'はい！',
                                      '「行こう。」と言った。'] or \
        [s.text for s in segs] == ['こんにちは。', '元気ですか？', 'はい！', '「行こう。」',
                                   'と言った。']
    assert [s.boundary for s in segs][:-1] == ['sentence'] * (len(segs) - 1)
    assert segs[-1].boundary == 'end'


def test_long_comma_only_sentence_is_cut_at_clauses_within_bound():
    text = ('私は、昨日の朝、駅前の小さなパン屋で、焼きたてのクロワッサンと、甘いメロンパンと、'
            '少し苦いコーヒーを買って、公園のベンチに座りながら、ゆっくりと朝ごはんを食べました。')
    segs = segment(text, 30)
    assert len(segs) >= 3
    assert all(len(s.text) <= 30 for s in segs)
    assert ''.join(s.text for s in segs) == text
    assert all(s.text.endswith('、') and s.boundary == 'clause' for s in segs[:-1])


def test_unpunctuated_run_is_cut_at_word_boundaries_within_bound():
    text = '東京特許許可局長今日急遽休暇許可拒否本日晴天東京特許許可局長今日急遽休暇許可拒否。'
    segs = segment(text, 20)
    assert ''.join(s.text for s in segs) == text
    assert all(len(s.text) <= 20 for s in segs)
    assert [s.boundary for s in segs] == ['word'] * (len(segs) - 1) + ['end']
    # Cuts fall between words, never inside one.
    for a, b in zip(segs, segs[1:]):
        assert (a.text[-1] + b.text[0]) not in ('本日', '東京', '特許', '許可', '急遽', '休暇')


def test_short_sentences_are_not_cut():
    text = '今日は、いい天気ですね。'
    assert [s.text for s in segment(text, 60)] == [text]


def test_punctuation_only_fragments_join_a_neighbour():
    segs = segment('こんにちは。。。！元気？', 60)
    assert [s.text for s in segs] == ['こんにちは。。。！', '元気？']


@pytest.mark.parametrize('text, code', [
    ('', 'empty'), ('   \n\t ', 'empty'), ('\x00\x07', 'empty'),
    ('。、！？…', 'nothing_speakable'), ('😀🎉👍', 'nothing_speakable'),
    ('👨‍👩‍👧', 'nothing_speakable'), ('あ' * 101, 'too_long'),
])
def test_bad_input_is_named(text, code):
    with pytest.raises(InputError) as info:
        prepare_text(text, max_chars=100)
    assert info.value.code == code
    assert str(info.value)


def test_control_characters_are_stripped_and_the_rest_kept():
    assert prepare_text('\x1bこん\x00にち\u200bは\x7f', 100) == 'こんにちは'
    assert strip_control('a\r\nb\tc') == 'a\nb c'


def test_mixed_latin_text_is_speakable():
    assert prepare_text('ROSのnodeを起動します', 100) == 'ROSのnodeを起動します'


def _robot_texts() -> list:
    """The repository's utterances and benchmark texts, plus the shared corpus if present."""
    texts = load_texts()
    return (utterances() + [''.join(texts['benchmark'])] + list(texts['phoneme_rate'])
            + shared_dialogue_lines())


def test_repository_texts_cover_every_kind():
    kinds = load_texts()['utterances']
    assert {'short_reply', 'announcement', 'long_clause', 'question', 'exclamation',
            'mixed_latin'} <= set(kinds)
    assert all(kinds.values())
    long_clause = kinds['long_clause'][0]
    assert len(long_clause) > 60 and '、' in long_clause
    assert not any(mark in long_clause[:-1] for mark in '。！？!?')
    assert all(t.endswith(('？', '?')) for t in kinds['question'])
    assert all('！' in t for t in kinds['exclamation'])
    assert all(any('A' <= c <= 'Z' or 'a' <= c <= 'z' for c in t)
               for t in kinds['mixed_latin'])
    assert len(load_texts()['benchmark']) >= 10


@pytest.mark.parametrize('max_chars', [20, 40, 60])
def test_robot_texts_segment_within_bound_and_cover_the_text(max_chars):
    for line in _robot_texts():
        # As the node does: the front end first (Latin words become katakana), then cuts.
        _, segs = prepare(line, 2000, max_chars)
        # A terminator right after a cut joins the segment before it (never spoken alone).
        assert all(len(s.text.rstrip('。、！？!?')) <= max_chars for s in segs), line
        # Every kana and kanji of the line is spoken, in order (nothing dropped), once the
        # correction layer has respelled what Open JTalk misreads (担当の方 -> 担当のかた).
        joined = iter(''.join(s.text for s in segs))
        spelled = corrections.apply(line)
        assert all(ch in joined for ch in spelled if re.match('[ぁ-ゖ一-鿿]', ch)), line


def test_long_clause_text_is_cut_only_at_clause_marks():
    text = utterances('long_clause')[0]
    segs = segment(text, 30)
    assert len(segs) >= 3
    assert all(s.text.endswith('、') for s in segs[:-1])
    assert ''.join(s.text for s in segs) == text


def test_escape_sequences_go_whole():
    assert prepare_text('\x1b[31mこんにちは\x1b[0m。', 100) == 'こんにちは。'


def test_runs_of_unreadable_characters_are_capped_so_segments_stay_bounded():
    text = prepare_text('あ' + '、' * 1500 + 'い' + '！' * 600 + '😀' * 900, 5000)
    assert text == 'あ、、、、い！！！！'  # '！' x 600 and the emoji are one run
    assert all(len(s.text) <= 10 + 4
               for s in segment(prepare_text('か' * 9 + '。' * 100, 1000), 10))
    # Ordinary punctuation is kept as written.
    assert prepare_text('えっ！？……本当？', 100) == 'えっ！？……本当？'


@pytest.mark.parametrize('text', ['1' * 300, '今日は' + '1' * 300 + '%です。'])
def test_a_long_digit_string_is_cut_like_any_long_segment(text):
    """Read digit by digit, it was one no-cut reading: one engine call of 70 s of audio."""
    import pyopenjtalk

    from hayakoe_ros.text.frontend import normalize, strip_marks
    from hayakoe_ros.text.pipeline import prepare

    _, segs = prepare(text, 2000, 60, 8)
    assert len(segs) > 5 and max(len(s.text) for s in segs) <= 60
    whole = strip_marks(normalize(text))
    assert ''.join(s.text for s in segs) == whole  # nothing lost, nothing added
    assert whole.count('イチ') == 300
    assert all(pyopenjtalk.g2p(s.text, kana=True) for s in segs)
    if text.isdigit():  # a code: groups of four digits, cut between groups only
        assert all(s.text.replace('イチ', '').strip('、') == '' for s in segs), \
            [s.text for s in segs]


def test_a_long_digit_code_is_read_in_groups_of_four():
    from hayakoe_ros.text.pipeline import reading

    assert reading('コードは123456789012345678901です。') == (
        'コードワイチニサンヨン、ゴロクナナハチ、キューゼロイチニ、サンヨンゴロク、'
        'ナナハチキューゼロ、イチデス。')
    twenty = reading('12345678901234567890')  # 20 digits: still read as one number
    assert '、' not in twenty and twenty.startswith('センニヒャクサンジューヨンキョー')
