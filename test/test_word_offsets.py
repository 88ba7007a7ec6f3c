# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Words, sentences and SSML marks of prepared segments, with offsets into the caller's text.

Every row of the readings table (``test/data/readings.yaml``) and targeted cases: each
word's ``value`` is the caller's ``text[start:end]`` (less SSML tags), words come in order
without overlap, cover every speakable character once, and never cut inside a front-end
reading; their phonemes are what Open JTalk says for the segment. Then random text:
nothing raises, the same invariants hold.
"""

import random
import re
import time
from pathlib import Path

import pyopenjtalk
import pytest
import yaml

from hayakoe_ros.text import InputError, frontend, offsets, wordmarks
from hayakoe_ros.text.checks import SPEAKABLE_RE, prepare_text
from hayakoe_ros.text.pipeline import prepare
from hayakoe_ros.text.segment import SsmlMark, Word

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]
with open(REPO / 'test' / 'data' / 'readings.yaml', encoding='utf-8') as _fh:
    TABLE = yaml.safe_load(_fh)
ROWS = [text for rows in TABLE.values() for text, _ in rows]
_TAG_RE = re.compile(r'<[^>]*>|&#?\w+;')


def _words(text, max_segment_chars=60, first_morae=0):
    _, segs = prepare(text, 10 ** 6, max_segment_chars, first_morae)
    return segs, [w for s in segs for w in s.words]


def _values(text):
    return [w.value for w in _words(text)[1]]


def _check(text, segs):
    """The invariants every utterance's words keep; returns the words."""
    words = [w for s in segs for w in s.words]
    end = 0
    for w in words:
        assert isinstance(w, Word)
        # The text it spans, less any SSML tag inside it (1234567</say-as>個: 1234567個).
        assert w.value == re.sub(r'<[^>]*>', '', text[w.start:w.end]), (text, w)
        assert end <= w.start <= w.end, (text, words)
        assert all(isinstance(p, str) and p not in ('pau', 'sil') for p in w.phonemes)
        end = w.end
    for s in segs:
        for m in s.marks:
            assert isinstance(m, SsmlMark) and 0 <= m.before <= len(s.words)
        if s.sentence is not None:
            a, b = s.sentence
            assert 0 <= a <= b <= len(text)
    return words


def _uncovered(text, words):
    """Speakable characters of ``text`` (outside SSML tags and entities) in no word."""
    masked = text
    if text.lstrip().startswith('<'):
        masked = _TAG_RE.sub(lambda m: ' ' * len(m.group(0)), text)
    covered = set()
    for w in words:
        covered.update(range(w.start, w.end))
    return [(i, ch) for i, ch in enumerate(masked)
            if SPEAKABLE_RE.match(ch) and i not in covered]


def _kept_spans(text):
    """Source spans the front end replaced by one reading (plain text): no word may cut them."""
    source, spans = offsets.plain_source(text)
    out = frontend.normalize(prepare_text(frontend.compat_normalize(text), 10 ** 6))
    _, char_spans = offsets.align(source, spans, out)
    kept = []
    for m in re.finditer('\ue000[^\ue001]+\ue001', out):
        before = out[:m.start()]
        kept.append(char_spans[m.start() - before.count('\ue000') - before.count('\ue001')])
    return kept


@pytest.mark.parametrize('text', ROWS)
def test_every_row_of_the_readings_table(text):
    segs, words = _words(text)
    _check(text, segs)
    assert words, text
    assert not _uncovered(text, words), (text, _uncovered(text, words), words)
    if not text.startswith('<'):
        for a, b in _kept_spans(text):
            # (a word starts after or ends before a blank the reading spans: blanks
            # belong to no word)
            assert not any(a < w.start < b and text[a:w.start].strip()
                           or a < w.end < b and text[w.end:b].strip()
                           for w in words), (text, words)


def test_ten_thirty_is_one_word_with_its_reading():
    segs, words = _words('10:30に出発')
    assert [(w.start, w.end, w.value) for w in words] == [(0, 5, '10:30'), (5, 6, 'に'),
                                                          (6, 8, '出発')]
    assert words[0].phonemes == tuple('j u u j i s a N j u cl p u N'.split())
    assert words[1].phonemes == ('n', 'i')


@pytest.mark.parametrize('text, values', [
    ('3〜5個', ['3〜5個']),
    ('1,234台', ['1,234台']),
    ('https://example.com/docs', ['https://example.com/docs']),
    ('Hello, how are you?', ['Hello', 'how', 'are', 'you']),  # NJD: ア|ーユー, cut at the blank
    ('〒100-0001', ['〒100-0001']),
    ('５０％', ['５０％']),
    ('5kmを走った', ['5km', 'を', '走っ', 'た']),
    ('電話は090-1234-5678です', ['電話', 'は', '090-1234-5678', 'です']),
    ('㍻', ['㍻']),
    ('Battery残量は80%', ['Battery', '残量', 'は', '80%']),
    ('清掃を行っております', ['清掃', 'を', '行っ', 'て', 'おり', 'ます']),
])
def test_readings_are_single_words_with_the_callers_spelling(text, values):
    assert _values(text) == values


@pytest.mark.parametrize('text, values', [
    # 九時から十七時: the range mark is the から between two counted numbers, as written
    # out (it was 9時 and 〜17時: the mark went with the number after it).
    ('会議は9時〜17時です', ['会議', 'は', '9時', '〜', '17時', 'です']),
    ('会議は9時から17時です', ['会議', 'は', '9時', 'から', '17時', 'です']),
    ('5分~10分待って', ['5分', '~', '10分', '待っ', 'て']),
    ('気温は10度〜20度です', ['気温', 'は', '10度', '〜', '20度', 'です']),
    # A counter written once for both numbers stays with them; readings stay whole.
    ('2〜3日かかります', ['2〜3日', 'かかり', 'ます']),
    ('10:30〜11:00に会議', ['10:30〜11:00', 'に', '会議']),
])
def test_a_range_mark_between_counted_numbers_is_its_own_word(text, values):
    assert _values(text) == values
    segs, words = _words(text)
    _check(text, segs)
    mark = next((w for w in words if w.value in ('〜', '~')), None)
    assert mark is None or mark.phonemes == ('k', 'a', 'r', 'a')


def test_a_control_character_inside_keeps_offsets_into_the_original():
    text = '\x1b[31m今日は\x07晴れ\u200b です。'
    segs, words = _words(text)
    _check(text, segs)
    assert [w.value for w in words] == ['今日', 'は', '晴れ', 'です']
    assert words[2].start == text.index('晴')
    assert not _uncovered(text.replace('31m', '   '), words)


def test_phonemes_of_each_segment_are_open_jtalks():
    text = 'お腹が空いた。特急です、明日は雨でしょう。ヴァイオリンをちょっと弾く'
    segs, _ = _words(text)
    for s in segs:
        said = [p for w in s.words for p in w.phonemes]
        assert said == [p for p in pyopenjtalk.g2p(s.text).split() if p != 'pau'], s.text


def test_pron_phonemes():
    assert wordmarks.pron_phonemes('トッキュー') == tuple('t o cl ky u u'.split())
    assert wordmarks.pron_phonemes('デス’') == ('d', 'e', 's', 'U')
    assert wordmarks.pron_phonemes('ー', 'o') == ('o',)
    assert wordmarks.pron_phonemes('、') == ()


def test_sentences_are_marked_on_their_first_segment():
    text = '今日は晴れです。明日は雨でしょう！  それでは、また。'
    segs, _ = _words(text, max_segment_chars=6)
    starts = [s.sentence for s in segs if s.sentence is not None]
    assert starts == [(0, 8), (8, 17), (19, 27)]
    assert segs[0].sentence == (0, 8)
    assert sum(s.sentence is not None for s in segs) == 3 < len(segs)
    for (a, b) in starts:
        assert text[a:b].strip() == text[a:b]


SSML = ('<speak><mark name="a"/>今日は<mark name="mid"/><sub alias="ハヤコエ">hayakoe</sub>'
        'で<say-as interpret-as="telephone">03-1234-5678</say-as>に電話、'
        'A&amp;Bです。<break time="500ms"/><s>次の文</s><mark name="z"/></speak>')


def test_a_mark_before_a_break_stands_before_the_pause():
    """<mark/><break/>: the mark ends the words before the pause.

    It was stamped after the pause, with the next word; <break/><mark/> stays with the
    word after it.
    """
    def placed(markup):
        segs = _words(markup)[0]
        return [(i, m.name, m.before, len(s.words)) for i, s in enumerate(segs)
                for m in s.marks]

    assert placed('<speak>はい<mark name="x"/><break time="3s"/>どうぞ</speak>') == [
        (0, 'x', 1, 1)]
    assert placed('<speak>はい<break time="3s"/><mark name="x"/>どうぞ</speak>') == [
        (1, 'x', 0, 1)]


def test_ssml_words_and_marks_point_into_the_markup():
    segs, words = _words(SSML)
    _check(SSML, segs)
    by_value = {w.value: w for w in words}
    assert by_value['今日'].start == SSML.index('今日')
    assert 'hayakoe' in by_value and by_value['hayakoe'].start == SSML.index('hayakoe')
    assert '03-1234-5678' in by_value
    assert any('&amp;' in w.value for w in words)
    marks = [(m.name, m.start, m.end, m.before, i) for i, s in enumerate(segs)
             for m in s.marks]
    assert [m[0] for m in marks] == ['a', 'mid', 'z']
    assert SSML[marks[0][1]:marks[0][2]] == '<mark name="a"/>'
    a_seg = segs[marks[0][4]]
    assert marks[0][3] == 0 and a_seg.words[0].value == '今日'
    mid_seg = segs[marks[1][4]]
    assert mid_seg.words[marks[1][3]].value == 'hayakoe'
    z_seg = segs[marks[2][4]]
    assert marks[2][4] == len(segs) - 1 and marks[2][3] == len(z_seg.words)
    assert not _uncovered(SSML, words)
    sentences = [s.sentence for s in segs if s.sentence is not None]
    assert SSML[sentences[-1][0]:sentences[-1][1]] == '次の文'


@pytest.mark.parametrize('kind, value', [('telephone', '03-1234-5678'),
                                         ('digits', '0312345678901234'),
                                         ('characters', 'ABCDEFGHIJ')])
def test_a_say_as_reading_is_one_word_in_one_segment(kind, value):
    # Its no-cut marks were dropped with the markup's control characters: the first
    # segment's cut (8 morae) fell inside the reading, and the words after the cut were
    # empty ('', start == end).
    markup = f'<speak>番号は<say-as interpret-as="{kind}">{value}</say-as>です。</speak>'
    segs, words = _words(markup, first_morae=8)
    assert [w.value for w in words] == ['番号', 'は', value, 'です']
    assert all(w.start < w.end for w in words)
    assert len(segs) == 1


def test_a_word_across_a_closing_tag_has_no_markup_in_its_value():
    markup = '<speak>全部で<say-as interpret-as="cardinal">1234567</say-as>個です。</speak>'
    _, words = _words(markup)
    word = next(w for w in words if '1234567' in w.value)
    assert word.value == '1234567個'
    assert markup[word.start:word.end] == '1234567</say-as>個'


@pytest.mark.parametrize('text, values', [
    ('123 です', ['123', 'です']),
    ('Hello, world です', ['Hello', 'world', 'です']),
    ('ROS 2 です', ['ROS 2', 'です']),
    ('<speak>番号は<say-as interpret-as="digits">123</say-as> です。</speak>',
     ['番号', 'は', '123', 'です']),
])
def test_a_word_ends_before_the_blank_after_it(text, values):
    """Blanks belong to no word: a caption showed ``'123 '`` (in SSML ``123</say-as> ``)."""
    _, words = _words(text)
    assert [w.value for w in words] == values
    for w in words:
        assert text[w.start:w.end] == text[w.start:w.end].strip(), (text, w)
        assert not text[w.start:w.end].endswith('>'), (text, w)


def test_ssml_offsets_survive_control_characters_in_the_markup():
    text = ' \r\n<speak>今日\x07は<mark name="m"/>晴れ\r\n</speak>'
    segs, words = _words(text)
    _check(text, segs)
    assert [w.value for w in words] == ['今日', 'は', '晴れ']
    (mark,) = segs[0].marks
    assert text[mark.start:mark.end] == '<mark name="m"/>' and mark.before == 2


@pytest.mark.parametrize('markup, problem', [
    ('<mark/>', 'non-empty name'),
    ('<mark name=""/>', 'non-empty name'),
    ('<mark name="a">x</mark>', 'must be empty'),
    ('<mark name="a"><break/></mark>', 'must be empty'),
    ('<mark name="a" time="1s"/>', 'only a name'),
])
def test_bad_marks_are_refused(markup, problem):
    with pytest.raises(InputError) as info:
        prepare(f'<speak>こんにちは{markup}</speak>', 1000, 60)
    assert info.value.code == 'bad_ssml' and problem in str(info.value)


def test_words_cover_long_text_cut_into_many_segments():
    text = ('本日の最高気温は25℃、降水確率は30%です。9時〜18時の間、3階の会議室で点検を行って'
            'おります。お問い合わせは03-1234-5678、またはhttps://example.com/helpまで。') * 3
    for first_morae in (0, 8):
        segs, words = _words(text, 20, first_morae)
        _check(text, segs)
        assert not _uncovered(text, words)


_ALPHABET = ('あいうえおかがきゃっーんアイウカタナヴァ漢字東京都日本語行' '0123456789０１'
             'abcXYZ ' ',.!?、。！？「」〜~-:/%℃°¥$&+=#@()' '😀🤖\u200b\x07\t\n\r'
             '㍻①ｶﾞⅡ髙〼々〇ゝ' '\ue000\ue001')
_SSML_BITS = ['<break time="100ms"/>', '<mark name="m"/>', '<sub alias="エー">a</sub>',
              '<say-as interpret-as="characters">ab</say-as>', '&amp;', '<s>文</s>',
              '<prosody rate="slow">遅く</prosody>']


@pytest.mark.parametrize('text', ['1/' * 999 + '1', 'a@' * 999, 'あ1' * 999,
                                  '、'.join(str(i * 137) for i in range(300))])
def test_repetitive_text_is_aligned_with_bounded_work(monkeypatch, text):
    """A short copy between readings over and over, no sentence end (2,000 characters).

    Every match is one character long there, and the matcher searched about as many
    times as there are characters, over nearly the whole text each time: ``prepare``
    took 30 s. The work is counted, not timed: characters compared in the searches.
    """
    import difflib
    work = [0]
    search = difflib.SequenceMatcher.find_longest_match

    def counted(self, alo=0, ahi=None, blo=0, bhi=None):
        ahi = len(self.a) if ahi is None else ahi
        bhi = len(self.b) if bhi is None else bhi
        work[0] += (ahi - alo) * (bhi - blo)
        return search(self, alo, ahi, blo, bhi)

    monkeypatch.setattr(difflib.SequenceMatcher, 'find_longest_match', counted)
    segs, words = _words(text)
    _check(text, segs)
    assert work[0] < 10 ** 7, work[0]  # about 10**9 without a bound
    if text.startswith('0、'):  # a list of numbers: each its own word, exactly
        assert [w.value for w in words] == text.split('、')


def _random_text(rng):
    text = ''.join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 40)))
    if rng.random() < 0.25:
        escaped = text.replace('&', '&amp;').replace('<', '&lt;')
        body = ''.join(rng.choice([escaped[:5], escaped[5:], rng.choice(_SSML_BITS)])
                       for _ in range(4))
        text = '<speak>' + body + '</speak>'
    return text


# 1,000 texts take about 4 s here; make test-long runs 4,000 more of another seed.
@pytest.mark.parametrize('seed, count', [(25, 1000),
                                         pytest.param(26, 4000, marks=pytest.mark.long)])
def test_random_text_never_raises_and_keeps_the_invariants(seed, count):
    rng = random.Random(seed)
    deadline = time.monotonic() + 40.0 * count / 1000
    done = 0
    while done < count and time.monotonic() < deadline:
        text = _random_text(rng)
        try:
            _, segs = prepare(text, 10 ** 4, rng.choice([4, 10, 60]), rng.choice([0, 8]))
        except InputError:
            done += 1
            continue
        _check(text, segs)
        done += 1
    assert done >= count // 3


@pytest.mark.parametrize('text', [
    'URLはhttps://example.com/a?b=1です。詳しくはそちらへ。',
    'Yahoo!で検索してね。本当?はい!',
    '値は3.14です。1,000円と2,500円、それと10:30です。',
    '気温は3．5度です。ちょうど1，234円です。',  # full-width points and commas
    # Forced word cuts (a piece with no mark, over 16 characters) never split a URL.
    'こちらのページhttps://example.com/path/to/the/page/index.htmlをご覧ください',
    '詳しくはwww.example.jp/a/b/c/d/e/f/g/h/i/j/zとご案内しますのでよろしくお願いします',
    # ... nor a number, a phone number, a range of times or dates, an English word: Open
    # JTalk's word boundaries inside them are not the front end's words (09|0-1234-5678
    # was read ゼロキュー | ゼロカラセンニヒャク..., H|ave エイチ | エーブ).
    '私たちはこれから皆さんと一緒に説明会を開きますので090-1234-5678の件を確認してください',
    '私たちはこれから皆さんと一緒に説明会を開きますのでKubernetesとDockerの件を確認してください',
    '明日の会議は皆さんと一緒に大きな会議室で10:30〜11:00に開きますのでよろしくお願いします',
    '私たちはこれから皆さんと一緒に説明会を開きますので2024/1/15〜2024/1/20の予定です',
    '私たちはこれから皆さんと一緒に説明会を開きますので1,234,567,890円と3.14159です'])
def test_a_streamed_reply_is_never_cut_inside_a_word(text):
    """Fragments of 1-3 characters: no piece ends inside a word of the whole text.

    A URL with a query (``a?b=1``) is one word; a cut at its ``?`` spoke it as two.
    """
    from hayakoe_ros.text.stream import StreamAssembler

    inside = {offset for w in _words(text)[1] for offset in range(w.start + 1, w.end)}
    for size in (1, 2, 3):
        assembler = StreamAssembler(16)
        cuts = []
        for i in range(0, len(text), size):
            cuts += [start + len(piece) for start, piece in assembler.add(text[i:i + size])]
        assert not inside & set(cuts), (size, sorted(inside & set(cuts)))


def test_a_streamed_url_glued_to_japanese_is_cut_after_its_last_ascii_character():
    """The Japanese after a URL is no part of it: a word cut may fall right after it."""
    from hayakoe_ros.text.stream import StreamAssembler

    text = '詳しくはwww.example.jp/a/b/c/d/e/f/g/h/i/j/zとご案内しますのでよろしくお願いします'
    assembler = StreamAssembler(16)
    cuts = []
    for ch in text:
        cuts += [start + len(piece) for start, piece in assembler.add(ch)]
    assert text.index('と') in cuts, cuts  # not held for four pieces' worth of text


def test_one_message_holding_a_whole_reply_hands_out_its_first_piece_at_once():
    """The first piece is handed out before the rest of the message is cut.

    Cutting 6,000 sentences first, then speaking, let a goal sent a millisecond after
    the message be spoken before it (10 runs of 11); the pieces are the same.
    """
    from hayakoe_ros.text.stream import StreamAssembler

    reply = 'これはテストです。' * 6000
    lazy = StreamAssembler(80)
    pieces = lazy.feed(reply)
    assert next(pieces) == (0, 'これはテストです。')
    assert lazy.spoken == 9  # the rest not cut yet
    assert [(0, 'これはテストです。')] + list(pieces) == StreamAssembler(80).add(reply)
    assert lazy.spoken == len(reply)
