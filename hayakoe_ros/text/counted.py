# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Counted things: ranges, weekday ranges, fractions, and numbers with fixed readings.

Called by :func:`.frontend.normalize` on text that still holds ASCII digits:

* :func:`fractions` (before month/day dates): ``1/4の量`` is a quarter, not January 4th,
  when a quantity word follows (:data:`QUANTITY_AFTER`) or comes before (約, 大さじ); and
  ``N分のM`` always reads ブンノ (Open JTalk says ヨンプンノイチ for 四分の一).
* :func:`ranges` (before the bare-number ranges): ``5〜6日`` -> 5日から6日 (イツカカラムイカ:
  the first number takes the counter, for the counters of :data:`POINT_COUNTERS`, whose
  sound the number changes or which name a point in time; and 2〜3つ, ニからミッツ mixed
  two ways of counting, and 1〜2人, ヒトリからフタリ); ``9時〜18時`` -> から;
  ``500円〜`` -> 500円から; ``土〜日`` -> ドからニチ, ``月〜金曜日`` ゲツからキン曜日; and
  weekdays listed, ``月・水・金`` ゲツ・スイ・キン, ``月水金`` ゲツスイキン.
* :func:`idioms` (before plain numbers): ``110番`` ヒャクトーバン, ``20歳`` はたち,
  ``毎月1日`` ついたち, ``0時`` レージ, ``0度`` レード, ``10分`` ジュップン (never
  ジューブン), ``2分`` ニフン and ``9分`` キューフン (never ニブン, クブ), ``1日(月)``
  ツイタチゲツヨービ, ``1箱`` ヒトハコ, ``1組`` イチクミ and ``1組様`` ヒトクミサマ,
  ``2人部屋`` フタリベヤ (and 人掛け, 人暮らし, 人組), ``R8年`` 令和8年.
"""

from __future__ import annotations

import re

from .numbers import number

_NUM = r'\d+(?:\.\d+)?'

#: Second kana or kanji of common words that start with a counter's kanji (本日, 個人,
#: 回答, 枚方, 通り): there the kanji is no counter (12/1本日 is a date, not 1/12 of a 本).
COMPOUND_AFTER = {'本': '日社番格当人来気物店部体文音館線命', '個': '人展別性室所体',
                  '回': '答収復数路線避覧', '件': '数名', '点': '検数滴灯', '枚': '方数挙',
                  '発': '表生見売電信射', '着': '用信手陸', '通': 'り知常信過勤報'}


def _counter(kanji: str) -> str:
    """A counter's kanji as a pattern: not where it starts a word of COMPOUND_AFTER."""
    after = COMPOUND_AFTER.get(kanji)
    return f'{kanji}(?![{after}])' if after else kanji


#: Counters the first number of a range takes too (``3〜4分`` -> 3分から4分).
POINT_COUNTERS = ('時間', '日間', '週間', 'か月', 'ヶ月', 'カ月', '時', '分', '秒', '日', '月',
                  '年', '割', '歳', '階', '週', '泊',
                  # Counted things whose first number changes its sound (イッポン, サンボン):
                  # a bare イチ before them said "イチカラニホン", heard as "from 1, Japan".
                  # Not the first kanji of a word (1〜2本日, 2〜3個人: COMPOUND_AFTER).
                  *(_counter(c) for c in ('本', '杯', '匹', '回', '個', '件', '冊', '軒', '曲',
                                          '頭', '発', '着', '羽', '点', '歩', '勝', '敗', '通')))
_COUNTER_RANGE_RE = re.compile(r'(?<![\d.])(%s)\s*[〜~]\s*(%s)(%s)' % (
    _NUM, _NUM, '|'.join(POINT_COUNTERS)))
# 1〜2人: フタリ, a native reading, after a bare イチ mixes two ways of counting (2〜3人,
# ニからサンニン, does not).
# Not 1〜2人前 (portions, イチニンマエ) or 1〜2人称 (persons of grammar, ニニンショー).
_PEOPLE_RANGE_RE = re.compile(r'(?<![\d.])1\s*[〜~]\s*2人(?![前称])')
# 2〜3つ: things counted the native way (ひとつ-とお; 2〜3つ目, 2〜3つ入り), but not a
# pinch or a grain after a number (塩2〜3つまみ, 2〜3つぶ).
_THINGS_RANGE_RE = re.compile(r'(?<![\d.])([1-9])\s*[〜~]\s*([1-9]|10)つ(?!まみ|ぶ)')
# A range whose first number has its counter already: 9時〜18時, 3個〜5個.
_AFTER_COUNTER_RE = re.compile(r'(?<=\d)([一-龥ぁ-ゖァ-ヶ]{1,2})\s*[〜~]\s*(?=\d|午前|午後)')
# After a date's weekday in brackets: 1日(月)〜5日(金).
_AFTER_WEEKDAY_RE = re.compile(r'(?<=[月火水木金土日][）)])\s*[〜~]\s*(?=\d)')
# An open range: 500円〜 (from 500 yen on).
_OPEN_RANGE_RE = re.compile(r'(?<=\d)([円個人回枚台件時分日月年歳階名]|時間)\s*[〜~]'
                            r'(?=\s|$|[、。！？!?）)」])')

#: Weekday kanji and the on-readings they have in ranges (月〜金: ゲツからキン).
WEEKDAYS = {'月': 'ゲツ', '火': 'カ', '水': 'スイ', '木': 'モク', '金': 'キン', '土': 'ド',
            '日': 'ニチ'}
_WD = '[月火水木金土日]'
_WEEKDAY_RANGE_RE = re.compile(
    r'(?<![一-鿿\d])[（(]?(%s)(曜日?)?[）)]?\s*[〜~]\s*[（(]?(%s)(?=曜|[）)]|[^一-鿿]|$)[）)]?'
    % (_WD, _WD))

# Weekdays listed (月・水・金, 土・日・祝, 月水金, 毎週火・金曜日): each its on-reading, as in
# ranges (they were ツキ・ミズ・キン, オマケキン). A list joined by ・ (祝 may be an item) or
# three or more weekdays written together; a last weekday before 曜 stays (金曜日). Not a
# list of things: one going on (水・土・日光, 木・金・銀, お金・土地) or of two with no day
# around it (火・水の取り扱い; 土・日は休み, 月・水曜日 and 日・祝 are days).
_WEEKDAY_LIST_RE = re.compile(r'(?:(?<![一-鿿])|(?<=週))(?:%s(?:・(?:%s|祝))+|%s{3,7})'
                              % (_WD, _WD, _WD))
_KANJI_AFTER_RE = re.compile('[一-鿿](?<![曜祝休定営診開閉限])')
_DAY_AFTER_RE = re.compile('曜|祝|休|定休|営業|診療|開館|閉館|限定|のみ|は休|は定休|は営業|'
                           'は診療|は休み')


def _weekday_list(m: re.Match) -> str:
    items, after = m.group(0), m.string[m.end():m.end() + 2]
    if after[:1] == '・' or _KANJI_AFTER_RE.match(after):
        return items  # a list of things goes on (水・土・日光, 木・金・銀)
    if items.count('・') == 1 and '祝' not in items and not _DAY_AFTER_RE.match(after) \
            and not m.string[max(0, m.start() - 2):m.start()].endswith(
                ('週', '日は', '日:', 'みは')):  # 毎週火・金, 定休日は水・日
        return items  # two with no day around them: 火・水の取り扱い
    last = len(items) - 1 if after[:1] == '曜' else len(items)
    return ''.join(WEEKDAYS.get(c, c) if i < last else c for i, c in enumerate(items))


#: Words after ``a/b`` that make it a quantity (a fraction), not a month/day date.
QUANTITY_AFTER = ('の量', 'の確率', 'の割合', 'の大きさ', 'の長さ', 'の重さ', 'の面積',
                  'の人', 'の時間', 'の距離', 'の値段', 'の価格', 'の速さ', 'の速度', 'の容量',
                  'の力', 'の数', 'の高さ', 'の幅', 'の範囲', 'の部分', 'の程度', 'の分量',
                  '以上', '以下', '未満', '程度', 'くらい', 'ぐらい', 'ほど', 'ずつ', '倍',
                  'カップ', 'サイズ', 'スケール', 'の確率で',
                  # Counters, not the first kanji of a word (12/1本日, 3/1個人情報, 4/15枚方).
                  *(_counter(c) for c in ('個', '杯', '本', '枚')), '切れ')
#: Words before ``a/b`` that make it a quantity: 約, and a recipe's spoons (大さじ1/2).
QUANTITY_BEFORE = ('約', 'およそ', '全体の', '大さじ', '小さじ')
_FRACTION_CONTEXT_RE = re.compile(
    r'(?<![\d/.:-])(\d{1,3})/(\d{1,3})(?![\d/])'
    r'(?=(%s))?' % '|'.join(QUANTITY_AFTER))
# A blood pressure, upper over lower: 120/80 is ヒャクニジューのハチジュー.
_PRESSURE_RE = re.compile(r'(血圧(?:は|が|[:：])?\s*)(\d{2,3})\s*/\s*(\d{2,3})(?![\d/])')
_BUN_NO_RE = re.compile(r'(?<![\d.])(\d+)\s*分の\s*(\d+(?:\.\d+)?)')
_KANJI_BUN_NO_RE = re.compile('([一二三四五六七八九十百千]+)分の(?=[一二三四五六七八九十百千])')

_EMERGENCY = {'110': 'ヒャクトー', '119': 'ヒャクジューキュー'}
_EMERGENCY_RE = re.compile(r'(?<![\d.,])(110|119)(?=番)')
_HATACHI_RE = re.compile(r'(?<![\d.,])(?:20|二十)歳(?!から)')  # not the start of a range
_TSUITACHI_RE = re.compile(r'(?:(?<=毎月)|(?<=今月)|(?<=来月)|(?<=先月)|(?<=翌月)|(?<=毎月の))1日'
                           r'|(?<![\d.,])1日(?=\ue000?%s曜日|付)' % _WD)
_ZERO_RE = re.compile(r'(?<![\d.,])0(?=時(?!間)|度)')
# Ten minutes: Open JTalk takes 十分 for じゅうぶん (enough) before most words (十分です,
# 十分前); written 一〇 the same numeral is split from 分 and read ジュップン everywhere.
# A fraction is 分の and a number (10分の1); 10分の遅れ is minutes.
_NOT_FRACTION = '(?!の[\\d一二三四五六七八九十百千])'
_TEN_MINUTES_RE = re.compile(r'(?<![\d.,])10(?=分%s)' % _NOT_FRACTION)
# Two and nine minutes: Open JTalk reads 二分 ニブン (halving) and 九分 クブ (九分九厘)
# wherever they stand (2分後, 約9分, 2分の遅れ); the other minutes it reads right. Not
# 2分の1, not the 分 of a 割 (_BU_RE, applied first), and not the start of a word other
# than 後 前 間 半 以内 程度 頃 (2分割 ニブンカツ, 9分咲き クブザキ, 2分木).
_TWO_NINE_MINUTES_RE = re.compile(r'(?<![\d.,])([29])分%s(?!(?![後前間半以程頃])[一-龥々])'
                                  % _NOT_FRACTION)
_TWO_NINE_MINUTES = {'2': 'ニフン', '9': 'キューフン'}
# 分 of a tenth of a 割 (打率3割5分, 5分5厘) is ブ; Open JTalk reads the time's フン.
# Only after a rate (3割, 三割): 役割5分, 時間割5分前 are minutes.
_BU_RE = re.compile(r'(?:(?<=[\d一二三四五六七八九十]割)|(?<=[\d一二三四五六七八九十]割\ue001))'
                    r'(\d)分|(?<![\d.,])(\d)分(?=\d厘)')
_KANJI_BU_RE = re.compile('(?<=[一二三四五六七八九十]割)([一二三四五六七八九])分')
# Guests counted politely: Open JTalk reads 2名様 ニミョーサマ (1名様, 3名様 right).
_MEI_RE = re.compile(r'(?<![\d.,])(\d+)名(?=様)')
# The Nth sentence: Open JTalk reads 文目 as アヤメ (綾目) after most numbers.
_BUNME_RE = re.compile(r'(?<![\d.,])(\d+)文目(?!標)')
# 件 never voices, but Open JTalk says サンゲン, センゲン after a number ending in ン.
_KEN_RE = re.compile(r'(?<![\d.,])(\d{1,3}(?:,\d{3})+|\d+)件')
_KANJI_KEN_RE = re.compile('(?<=[三千万])件')
# Boxes and groups: Open JTalk voices and doubles the counter after some numbers (1箱
# ヒトパコ, 1組 イックミ, 8組 ハックミ, 10組 ジュックミ, 21組 ニジューイックミ); a numeral
# before くみ is read right. A party at a restaurant counts the native way (1組様
# ひとくみさま, 2組様 ふたくみさま); a class or a group otherwise イチクミ (1年1組). Not the
# first kanji of a word (組合, 組織, 組み立て, 組長, 箱根).
_HAKO_RE = re.compile(r'(?<![\d.,])1(?=箱(?!根))')
_KUMI_RE = re.compile(r'(?<![\d.,])(\d+)組(?![合織み長])(様?)')
_KUMI_PARTY = {'1': 'ひと', '2': 'ふた'}
# People counted into a room, a seat, a household or a group: the counter voices (2人部屋
# ふたりべや, 4人掛け よにんがけ, 2人暮らし ふたりぐらし, 2人組 ふたりぐみ; Open JTalk: ヘヤ,
# カケ, クラシ, ニニングミ), and 2人1組 counts the group the native way (ひとくみ).
_PEOPLE_COMPOUND_RE = re.compile(r'(?<![\d.,])(\d+)人(部屋|掛け|掛(?![かり])|暮らし|組み|'
                                 r'組(?![合織み長]))')
_VOICED = {'部屋': 'べや', '掛け': 'がけ', '掛': 'がけ', '暮らし': 'ぐらし', '組': 'ぐみ',
           '組み': 'ぐみ'}
# An era's initial before a year, as forms write it: R8年 令和8年 (it was アールハチネン).
_ERA_RE = re.compile(r'(?<![A-Za-z0-9-])([RHS])(?=\d{1,2}年(?!齢))')  # not R18年齢認証
_ERAS = {'R': '令和', 'H': '平成', 'S': '昭和'}
# A weekday in brackets after a date: 1日(月) ツイタチゲツヨービ, not ツキ.
# After 日, or after a date's reading (12/6(土): 十二月六日 between no-cut marks).
_WEEKDAY_PAREN_RE = re.compile(r'(?:(?<=日)|(?<=日\ue001))\s*[（(]([月火水木金土日])'
                               r'(?:曜日?)?[）)]')


def _weekday_paren(m: re.Match, keep) -> str:
    """``(土)`` after a date -> 土曜日, a kept reading of its own unless inside one.

    Kept, the word marks' aligner pairs it with ``(土)`` as the date's reading with the
    date (``12/6(土)``: ``12/6`` and ``(土)``, not ``12/6(`` and ``土)``). Inside a kept
    reading (a range of dates, ``1/15(月)〜1/20(土)``) it stays plain: a mark nested in
    another would end the outer reading at the weekday.
    """
    before = m.string[:m.start()]
    reading = m.group(1) + '曜日'
    return reading if before.rfind('\ue000') > before.rfind('\ue001') else keep(reading)


def fractions(text: str, keep) -> str:
    """``1/4の量`` -> 四ブンノ一 (a quarter) and ``3分の2`` -> 三ブンノ二.

    Args:
        text: Front-end text.
        keep: The front end's no-cut wrapper (:func:`.frontend.keep`).

    ``a/b`` with no quantity word after it (:data:`QUANTITY_AFTER`) and none before it
    (:data:`QUANTITY_BEFORE`, or a whole number and と: 1と1/2) is left to the date step
    (``4/1`` is April 1st); after 血圧 it is upper over lower (``120/80``
    ヒャクニジューのハチジュー).
    """
    if '/' in text and '血圧' in text:
        text = _PRESSURE_RE.sub(
            lambda m: m.group(1) + keep(number(m.group(2)) + 'の' + number(m.group(3))), text)
    if '/' in text:
        def frac(m: re.Match) -> str:
            before = m.string[max(0, m.start() - 3):m.start()]
            mixed = len(before) > 1 and before[-1] == 'と' and before[-2].isdigit()  # 1と1/2
            if m.group(3) is None and not before.endswith(QUANTITY_BEFORE) and not mixed:
                return m.group(0)
            return keep(number(m.group(2)) + 'ブンノ' + number(m.group(1)))
        text = _FRACTION_CONTEXT_RE.sub(frac, text)
    if '分の' in text:
        text = _BUN_NO_RE.sub(lambda m: keep(number(m.group(1)) + 'ブンノ' + number(m.group(2))),
                              text)
        text = _KANJI_BUN_NO_RE.sub(r'\1ブンノ', text)
    return text


def _weekday(m: re.Match) -> str:
    first = m.group(1) + m.group(2) if m.group(2) else WEEKDAYS[m.group(1)]
    following = m.string[m.end(3):m.end(3) + 1]
    second = m.group(3) if following == '曜' else WEEKDAYS[m.group(3)]
    return first + 'から' + second


def ranges(text: str) -> str:
    """Ranges read with から, and weekdays listed (see the module docstring)."""
    if '〜' in text or '~' in text:
        text = _ranges(text)
    return _WEEKDAY_LIST_RE.sub(_weekday_list, text)


def _ranges(text: str) -> str:
    text = _COUNTER_RANGE_RE.sub(r'\1\3から\2\3', text)
    text = _PEOPLE_RANGE_RE.sub('1人から2人', text)
    text = _THINGS_RANGE_RE.sub(r'\1つから\2つ', text)
    text = _AFTER_COUNTER_RE.sub(r'\1から', text)
    text = _AFTER_WEEKDAY_RE.sub('から', text)
    text = _OPEN_RANGE_RE.sub(r'\1から', text)
    return _WEEKDAY_RANGE_RE.sub(_weekday, text)


def _ken(m: re.Match) -> str:
    read = number(m.group(1))
    return read + 'ケン' if read.endswith(('三', '千', '万')) else m.group(0)


def _kumi(m: re.Match, keep) -> str:
    native = m.group(2) or m.string[m.start() - 1:m.start()] == '人'  # 1組様, 2人1組
    count = (_KUMI_PARTY.get(m.group(1)) if native else None) or number(m.group(1))
    return keep(count + 'くみ') + m.group(2)


def idioms(text: str, keep) -> str:
    """Numbers with fixed readings (see the module docstring).

    Emergency numbers, はたち, ついたち, zero as レー, 10分, 分 of a 割 (ブ), 文目
    (ブンメ), 件 (ケン, never ゲン), 名様 (メー), 1箱 (ひとはこ) and 組 (1組 いちくみ,
    1組様 ひとくみさま), people in a room or a group (2人部屋 ふたりべや) and an era's
    initial before a year (R8年 令和8年).
    """
    if '箱' in text:
        text = _HAKO_RE.sub(lambda m: keep('ひと'), text)
    if '年' in text:
        text = _ERA_RE.sub(lambda m: _ERAS[m.group(1)], text)
    if '人' in text:
        text = _PEOPLE_COMPOUND_RE.sub(
            lambda m: keep(number(m.group(1)) + '人') + _VOICED[m.group(2)], text)
    if '組' in text:
        text = _KUMI_RE.sub(lambda m: _kumi(m, keep), text)
    if '番' in text:
        text = _EMERGENCY_RE.sub(lambda m: keep(_EMERGENCY[m.group(1)]), text)
    if '歳' in text:
        text = _HATACHI_RE.sub('はたち', text)
    if '(' in text or '（' in text:
        text = _WEEKDAY_PAREN_RE.sub(lambda m: _weekday_paren(m, keep), text)
    if '1日' in text:
        text = _TSUITACHI_RE.sub(lambda m: keep('ツイタチ'), text)
    if '分' in text:
        text = _BU_RE.sub(lambda m: keep(number(m.group(1) or m.group(2)) + 'ブ'), text)
        text = _KANJI_BU_RE.sub(r'\1ブ', text)
        text = _TWO_NINE_MINUTES_RE.sub(lambda m: keep(_TWO_NINE_MINUTES[m.group(1)]), text)
    if '名様' in text:
        text = _MEI_RE.sub(lambda m: keep(number(m.group(1)) + 'メー'), text)
    if '文目' in text:
        text = _BUNME_RE.sub(lambda m: keep(number(m.group(1)) + 'ブンメ'), text)
    if '件' in text:
        text = _KANJI_KEN_RE.sub('ケン', _KEN_RE.sub(_ken, text))
    if '0' in text:
        text = _ZERO_RE.sub(lambda m: keep('零'), text)
        text = _TEN_MINUTES_RE.sub(lambda m: keep('一〇'), text)
    return text
