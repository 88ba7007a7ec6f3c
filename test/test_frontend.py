# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Readings of everyday robot text, segment cuts, and what hayakoe receives.

Every expected reading below is written by hand, the way a Japanese announcer reads the
input. The reading under test is :func:`hayakoe_ros.speech.reading`: the node's front end
and segmenting, then Open JTalk's g2p on each segment (what the Open JTalk voice says).
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hayakoe_ros.text import Boundary, reading, segment
from hayakoe_ros.text.frontend import normalize
from hayakoe_ros.text.pipeline import prepare

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]

_ROWS = {'a': 'アカサタナハマヤラワガザダバパァャヮ', 'i': 'イキシチニヒミリギジヂビピィ',
         'u': 'ウクスツヌフムユルグズヅブプゥュヴ', 'e': 'エケセテネヘメレゲゼデベペェ',
         'o': 'オコソトノホモヨロヲゴゾドボポォョ'}
_VOWEL = {ch: v for v, chars in _ROWS.items() for ch in chars}


def canon(kana: str) -> str:
    """Katakana compared loosely.

    Long vowels spelled out (ー, エイ/エー, オウ/オー), ヂ/ジ, ヅ/ズ, ヲ/オ, and anything that is
    not katakana (pauses, punctuation) dropped.
    """
    out: list = []
    for ch in kana:
        if not ('ァ' <= ch <= 'ヴ' or ch == 'ー'):
            continue
        ch = {'ヂ': 'ジ', 'ヅ': 'ズ', 'ヲ': 'オ'}.get(ch, ch)
        prev = _VOWEL.get(out[-1]) if out else None
        if ch == 'ー' and prev:
            ch = {'a': 'ア', 'i': 'イ', 'u': 'ウ', 'e': 'エ', 'o': 'オ'}[prev]
        elif ch == 'イ' and prev == 'e':
            ch = 'エ'
        elif ch == 'ウ' and prev == 'o':
            ch = 'オ'
        out.append(ch)
    return ''.join(out)


READINGS = [
    # the table
    ('10:30', 'ジュージサンジュップン'),
    ('2024/1/15', 'ニセンニジューヨネンイチガツジューゴニチ'),
    ('090-1234-5678', 'ゼロキューゼロノイチニーサンヨンノゴーロクナナハチ'),
    ('50%', 'ゴジュッパーセント'),
    ('-5℃', 'マイナスゴド'),
    ('https://example.com/docs?id=42', 'エグザンプルドットコム'),
    ('<speak>こんにちは<break time="1s"/>元気？</speak>', 'コンニチワゲンキ'),
    ('Dr. Smithに会いました。', 'ドクタースミスニアイマシタ'),
    ('Hello, how are you today?', 'ハローハウアーユートゥデイ'),
    ('㍻', 'ヘーセー'),
    # numbers
    ('1,234,567台', 'ヒャクニジューサンマンヨンセンゴヒャクロクジューナナダイ'),
    ('3.14', 'サンテンイチヨン'),
    ('-12.5', 'マイナスジューニテンゴ'),
    ('0.5', 'レーテンゴ'),
    ('10,000歩', 'イチマンポ'),
    ('1000万円', 'イッセンマンエン'),
    ('1億2000万人', 'イチオクニセンマンニン'),
    ('12345', 'イチマンニセンサンビャクヨンジューゴ'),
    ('3〜5個', 'サンコカラゴコ'),
    ('2～3人', 'ニカラサンニン'),
    ('007', 'ゼロゼロナナ'),
    ('2.5倍', 'ニテンゴバイ'),
    ('100人', 'ヒャクニン'),
    # times
    ('午後3:05', 'ゴゴサンジゴフン'),
    ('12:34:56', 'ジューニジサンジューヨンプンゴジューロクビョー'),
    ('9:00に出発', 'クジニシュッパツ'),
    ('午前0:15', 'ゴゼンレージジューゴフン'),
    ('23:59', 'ニジューサンジゴジューキューフン'),
    # dates
    ('2024-03-09', 'ニセンニジューヨネンサンガツココノカ'),
    ('12/25', 'ジューニガツニジューゴニチ'),
    ('4/1', 'シガツツイタチ'),
    ('2025/7/20', 'ニセンニジューゴネンシチガツハツカ'),
    ('1999/9/9', 'センキューヒャクキュージューキューネンクガツココノカ'),
    # phone numbers
    ('03-1234-5678', 'ゼロサンノイチニーサンヨンノゴーロクナナハチ'),
    ('0120-123-456', 'ゼロイチニーゼロノイチニーサンノヨンゴーロク'),
    ('電話は011-222-3333です', 'デンワワゼロイチイチノニーニーニーノサンサンサンサンデス'),
    # percent
    ('8%', 'ハチパーセント'),
    ('100%', 'ヒャクパーセント'),
    ('12.5%', 'ジューニテンゴパーセント'),
    ('10%', 'ジュッパーセント'),
    # temperatures
    ('36.5℃', 'サンジューロクテンゴド'),
    ('気温は-3度', 'キオンワマイナスサンド'),
    ('25°C', 'ニジューゴド'),
    ('-10℃', 'マイナスジュード'),
    # units and currency
    ('5km', 'ゴキロメートル'),
    ('100mL', 'ヒャクミリリットル'),
    ('3kg', 'サンキログラム'),
    ('2GB', 'ニギガバイト'),
    ('500mAh', 'ゴヒャクミリアンペアアワー'),
    ('¥1,500', 'センゴヒャクエン'),
    ('$30', 'サンジュードル'),
    ('€20', 'ニジューユーロ'),
    # URLs and e-mail addresses: the host name, never spelled out whole
    ('www.google.com', 'グーグルドットコム'),
    ('詳細はexample.comで', 'ショーサイワエグザンプルドットコムデ'),
    ('info@example.co.jp', 'インフォアットエグザンプルドットシーオードットジェーピー'),
    ('詳しくはhttps://www.ros.org/を見てください',
     'クワシクワアールオーエスドットオルグヲミテクダサイ'),
    # abbreviations with a full stop
    ('No. 5', 'ナンバーゴ'),
    ('e.g. りんご', 'タトエバリンゴ'),
    ('vs. 巨人', 'バーサスキョジン'),
    ('Mr. Brownです。', 'ミスターブラウンデス'),
    # English words (Open JTalk's dictionary, acronyms, e2k)
    ('robot', 'ロボット'),
    ('ROSのノード', 'ロスノノード'),
    ('USB', 'ユーエスビー'),
    ('battery', 'バッテリー'),
    ('Good morning', 'グッドモーニング'),
    # Unicode compatibility forms
    ('①', 'イチ'),
    ('ｶﾀｶﾅ', 'カタカナ'),
    ('１２３', 'ヒャクニジューサン'),
    ('５０％', 'ゴジュッパーセント'),
    ('本日は晴天なり', 'ホンジツワセーテンナリ'),
    # SSML
    ('<speak><sub alias="ハヤコエ">hayakoe</sub>です</speak>', 'ハヤコエデス'),
    ('<speak><say-as interpret-as="characters">ABC</say-as></speak>', 'エービーシー'),
    ('<speak><say-as interpret-as="digits">2024</say-as></speak>', 'ニーゼロニーヨン'),
    ('<speak><say-as interpret-as="cardinal">1234</say-as></speak>',
     'センニヒャクサンジューヨン'),
    ('<speak><say-as interpret-as="date">2024-05-03</say-as></speak>',
     'ニセンニジューヨネンゴガツミッカ'),
    ('<speak><say-as interpret-as="time">7:45</say-as></speak>', 'シチジヨンジューゴフン'),
    ('<speak><say-as interpret-as="telephone">03-1234-5678</say-as></speak>',
     'ゼロサンノイチニーサンヨンノゴーロクナナハチ'),
    # Cross-checked by an independent table: each reading written by hand.
    ('10-20枚', 'ジューカラニジューマイ'),
    ('9:15 a.m.', 'ゴゼンクジジューゴフン'),
    ('6:00 PM', 'ゴゴロクジ'),
    ('AM9:00', 'ゴゼンクジ'),
    ('10:30〜11:00', 'ジュージサンジュップンカラジューイチジ'),
    ('5/32', 'サンジューニブンノゴ'),
    ('09012345678', 'ゼロキューゼロイチニーサンヨンゴーロクナナハチ'),
    ('〒100-0001', 'イチゼロゼロノゼロゼロゼロイチ'),
    ('60km/h', 'ジソクロクジュッキロ'),
    ('時速60km/h', 'ジソクロクジュッキロ'),
    ('3m/s', 'ビョーソクサンメートル'),
    ('Thank you', 'サンキュー'),
    ('Pythonで書く', 'パイソンデカク'),
    ('http://github.com/ros2', 'ギットハブドットコム'),
]


def test_the_table_is_large_enough():
    assert len(READINGS) >= 60


@pytest.mark.parametrize('text, expected', READINGS)
def test_reading(text, expected):
    got = reading(text)
    assert canon(got) == canon(expected), (text, got)


def test_plain_text_with_angle_brackets_stays_text():
    _, segs = prepare('a < b かつ c > d', 2000, 60)
    assert [s.text for s in segs] == ['エー < ビーかつシイ > ディー']


def test_url_and_abbreviation_are_one_sentence():
    _, segs = prepare('Dr. Smithに会いました。https://example.com/docs?id=42 を見て', 2000, 60)
    assert [s.boundary for s in segs] == [Boundary.SENTENCE, Boundary.END]
    assert segs[0].text == 'ドクタースミスに会いました。'


NUMERIC_TEXT = ('本日の出荷数は1,234,567台で、前年比12.5%増、倉庫の気温は-5℃、'
                '問い合わせは090-1234-5678またはhttps://example.com/docs?id=42まで。'
                '次回は2024/1/15の10:30から、東京特許許可局長今日急遽休暇許可拒否の件を'
                '午後3:05までに3〜5個ずつ処理します。')


@pytest.mark.parametrize('max_chars', [20, 60])
def test_cuts_never_fall_inside_a_number_word_or_url(max_chars):
    """Cut points are word boundaries; every front-end reading stays in one segment."""
    import pyopenjtalk

    normalized = normalize(NUMERIC_TEXT)
    _, segs = prepare(NUMERIC_TEXT, 2000, max_chars)
    joined = ''.join(s.text for s in segs)
    # Every protected reading (number, date, time, phone, URL) is inside one segment.
    for chunk in normalized.split('\ue000')[1:]:
        kept = chunk.split('\ue001')[0]
        assert any(kept in s.text for s in segs), (kept, [s.text for s in segs])
    for word in ('本日', '東京', '特許', '許可', '急遽', '休暇', '拒否', '処理'):
        assert any(word in s.text for s in segs), word
    # Cutting changes no reading: the segments read as the whole text does.
    whole = pyopenjtalk.g2p(joined.replace('\ue000', ''), kana=True)
    assert canon(''.join(pyopenjtalk.g2p(s.text, kana=True) for s in segs)) == canon(whole)
    # Segments respect the bound unless a single word or reading is longer.
    for s in segs:
        assert len(s.text) <= max_chars or s.boundary in (Boundary.SENTENCE, Boundary.END) \
            or not any(c in s.text[:-1] for c in '、。'), s
    if max_chars == 20:
        assert len(segs) >= 6 and any(s.boundary is Boundary.WORD for s in segs)


@pytest.mark.parametrize('max_chars', [20, 60])
def test_a_counter_stays_with_its_number(max_chars):
    # 三百 / 本 would read サンビャク / ホン instead of サンビャッポン.
    text = '本日の販売台数は1,234,567台、在庫は第3倉庫に300本、売上は12,345,678円です。'
    _, segs = prepare(text, 10000, max_chars)
    pieces = [s.text for s in segs]
    for whole in ('百二十三万四千五百六十七台', '第三倉庫', '三百本',
                  '千二百三十四万五千六百七十八円'):
        assert any(whole in p for p in pieces), pieces
    assert all(len(p) <= max_chars for p in pieces), pieces


def test_old_splitter_failures_are_gone():
    """1,234,567台 was cut after 1,234, and 本日 into 本 / 日 at max_segment_chars 20."""
    text = 'これはとても長い一文でありまして本日は合計で1,234,567台のロボットが稼働しています'
    for max_chars in (20, 60):
        segs = segment(normalize(text), max_chars)
        assert any('百二十三万四千五百六十七台' in s.text for s in segs)
        assert any('本日' in s.text for s in segs)
    digits_only = segment('売上は1,234,567台と10:30の記録です' * 3, 20)
    assert not any(s.text.endswith(('1,', '234,', '10:')) for s in digits_only)


def test_hayakoe_reads_the_front_end_output_the_same(hayakoe_front_end):
    """What the node passes to hayakoe reads the same after hayakoe's own normaliser."""
    import pyopenjtalk

    for text, _ in READINGS:
        for seg in prepare(text, 2000, 60)[1]:
            normalized, phones = hayakoe_front_end(seg.text)
            # Open JTalk marks devoiced vowels in capitals (U, I); hayakoe does not.
            ours = [p if p == 'N' else p.lower() for p in pyopenjtalk.g2p(seg.text).split()
                    if p not in ('pau', 'sil')]
            # hayakoe writes the geminate (ッ) as 'q' where Open JTalk writes 'cl'.
            theirs = ['cl' if p == 'q' else p for p in phones if p.isalpha()]
            assert theirs == ours, (text, seg.text, normalized)


def test_print_reading_cli_needs_no_node():
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, '-m', 'hayakoe_ros.say', '--print-reading',
                          '10:30に集合、気温は-5℃です。'], capture_output=True, text=True,
                         env=env, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count('\n') == 1
    expected = 'ジュージサンジュップンニシューゴー、キオンワマイナスゴドデス'
    assert canon(out.stdout) == canon(expected)
    assert time.monotonic() - t0 < 120
    probe = subprocess.run([sys.executable, '-c', 'import sys, hayakoe_ros.say as s; '
                            's.main(["--print-reading", "はい"]); '
                            'print("rclpy" in sys.modules)'],
                           capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert probe.stdout.split() == ['ハイ', 'False'], probe.stderr


def test_words_open_jtalk_lacks_come_from_e2k_offline(no_network):
    """'battery', 'robot', 'navigation' are spelled letter by letter by Open JTalk alone."""
    import pyopenjtalk

    from hayakoe_ros.text import english

    english.clear_cache()
    for word, expected in (('battery', 'バッテリー'), ('robot', 'ロボット'),
                           ('navigation', 'ナビゲーション'), ('charging', 'チャージング')):
        assert canon(pyopenjtalk.g2p(word, kana=True)) != canon(expected)  # spelled
        assert canon(english.to_katakana(word)) == canon(expected)
