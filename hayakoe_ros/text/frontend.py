# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Japanese text front end: what the voice should *say* for robot text (no ROS imports).

:func:`normalize` rewrites numbers, times, dates, phone numbers, units, URLs, e-mail
addresses, abbreviations and English words into kanji numerals and katakana, which both
voices (hayakoe, whose own normaliser then leaves them alone, and Open JTalk) read right.
Order matters and is fixed: Unicode compatibility forms first (NFKC: ㍻ -> 平成,
full-width digits -> ASCII; Japanese punctuation 、。「」 is kept, and ．～ stay Japanese
but ． between digits), Markdown's layout marks, then URLs and e-mail addresses, leading
zeros of counted dates and times, user-dictionary Latin words, abbreviations, dates, times,
phone numbers, speeds, temperatures, ranges, money, percent and units (:mod:`.quantities`),
signed and plain numbers, and English words last.

Readings that must never be cut (a number, a date, a URL's reading) are wrapped in
:data:`KEEP_OPEN` / :data:`KEEP_CLOSE` (private-use characters); :mod:`.segment`'s segmenter
never cuts inside them and removes the marks. :func:`strip_marks` removes them too.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Callable, Optional

from . import chars, corrections, counted, english, phones, quantities, symbols, userdict
from .numbers import MAX_CARDINAL_DIGITS, cardinal, digits, number
from .quantities import NUM as _NUM, SIGN as _SIGN, signed as _signed

KEEP_OPEN = '\ue000'
KEEP_CLOSE = '\ue001'
_MARKS_RE = re.compile('[\ue000\ue001]')

# NFKC except for these, which stay as written (Japanese full stop and wave dash: NFKC
# would make them ASCII '.' and '~', which mean something else in Latin text).
# ™ and ℹ are pictographs (chars.pictographs), which NFKC would make letters (TM, i).
_KEEP_WIDTH = {'．': '\ue010', '～': '\ue011', '〜': '\ue011', '™': '\ue012', 'ℹ': '\ue013'}
_RESTORE_WIDTH = {'\ue010': '．', '\ue011': '〜', '\ue012': '™', '\ue013': 'ℹ'}

_WIDE_POINT_RE = re.compile(r'(?<=\d)．(?=\d)')
# Latin letters with diacritics (café, Pokémon): their base letter, which the English
# readings know (é was dropped: カフ).
_ACCENTED_RE = re.compile('[\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f]')
_CURLY_RE = re.compile(r'(?<=[A-Za-z])[’‘](?=[A-Za-z])')

# Leading zeros that strftime and counters write (03月09日, 10時05分, 第01回) are not
# read: 03月 was ゼロサンツキ; nor zero minutes or seconds after them (10時00分 ジュージ).
_PADDED_RE = re.compile(r'(?<=\d時)00?分(?:00?秒)?|(?<=\d分)00?秒'
                        r'|(?<![\d.,:/-])0(?=\d[月日時分秒])|(?<![\d.,:/-])0(?=0[時分秒])'
                        r'|(?<=第)0+(?=\d)')


_URL_CHARS = r'[A-Za-z0-9\-._~:/?#@!$&*+,;=%]'
_URL_RE = re.compile(r'(?<![A-Za-z0-9])(?:https?|ftp)://%s+|(?<![A-Za-z0-9.])www\.%s+'
                     % (_URL_CHARS, _URL_CHARS))
# A bare host name with a well-known top-level domain (example.com, ros.org, foo.co.jp).
_DOMAIN_RE = re.compile(r'(?<![A-Za-z0-9.@/-])(?:[A-Za-z0-9-]+\.)+(?:com|net|org|jp|io|dev|info)'
                        r'(?![A-Za-z0-9-])(?:/%s*)?' % _URL_CHARS)
_EMAIL_RE = re.compile(
    r'(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+')
#: Label readings used in host names.
_HOST_WORDS = {'com': 'コム', 'net': 'ネット', 'org': 'オルグ', 'jp': 'ジェーピー',
               'co': 'シーオー', 'io': 'アイオー', 'ne': 'エヌイー', 'or': 'オーアール',
               'ac': 'エーシー', 'go': 'ジーオー', 'ai': 'エーアイ', 'dev': 'デブ',
               'www': 'ダブリューダブリューダブリュー', 'gmail': 'ジーメール',
               'yahoo': 'ヤフー', 'icloud': 'アイクラウド', 'hotmail': 'ホットメール',
               'outlook': 'アウトルック', 'openai': 'オープンエーアイ'}
#: What an e-mail address's local part holds besides letters and digits, as it is said
#: for someone to write the address down (taro.yamada: タロウドットヤマダ).
_LOCAL_MARKS = {'.': 'ドット', '_': 'アンダーバー', '-': 'ハイフン', '+': 'プラス'}

#: Abbreviations with a full stop that do not end a sentence, and their readings.
ABBREVIATIONS = {
    'Dr.': 'ドクター', 'Mr.': 'ミスター', 'Mrs.': 'ミセス', 'Ms.': 'ミズ',
    'Prof.': 'プロフェッサー', 'St.': 'セント', 'Jr.': 'ジュニア', 'Sr.': 'シニア',
    'No.': 'ナンバー', 'Vol.': 'ボリューム', 'Fig.': 'フィギュア', 'vs.': 'バーサス',
    'e.g.': 'たとえば', 'i.e.': 'すなわち', 'etc.': 'エトセトラ', 'approx.': 'およそ',
    'Inc.': 'インク', 'Ltd.': 'リミテッド', 'Co.': 'カンパニー', 'Corp.': 'コーポレーション',
}
_ABBREV_RE = re.compile(r'(?<![A-Za-z.])(%s)' % '|'.join(
    re.escape(a) for a in sorted(ABBREVIATIONS, key=len, reverse=True)))

_DATE_YMD_RE = re.compile(r'(?<![\d/.-])(\d{4})([/.-])(\d{1,2})\2(\d{1,2})(?![\d/.-])')
# A year and month (2026/12: it was read as the fraction 12分の2026).
_DATE_YM_RE = re.compile(r'(?<![\d/.-])((?:19|20)\d\d)/(1[0-2]|0?[1-9])(?![\d/])')
# Floors as signs write them: 3F 三階, B1F 地下一階 (they were サンエフ, ビーイチエフ).
_FLOOR_RE = re.compile(r'(?<![A-Za-z0-9.])(B)?(\d{1,3})F(?![A-Za-z0-9])'
                       r'|(?<![A-Za-z0-9.])(B)(\d{1,2})(?=階)')  # B1階: 地下一階
# Not after a hyphen but one after a date or a weekday (12/6-12/8, 12/6(土)-12/8), nor
# after a colon but a date's label's (期限:3/31; 確率:1/3 is a fraction).
_DATE_LABELS = ('期限', '締切', '締め切り', '日時', '日付', '日程', '期間', '開催日', '予約日',
                '発売日', '予定日', '開催', '受付')
_DATE_MD_RE = re.compile(r'(?:(?<![\d/.:])|%s)(?:(?<!-)|(?<=[)）]-)|(?<=/\d-)|(?<=/\d\d-))'
                         r'(\d{1,2})/(\d{1,2})(?![\d/])' % '|'.join(
                             f'(?<={w}:)' for w in _DATE_LABELS))
_TIME_RE = re.compile(r'(午前|午後|AM|PM|am|pm)?\s*(?<!\d)(?<!\d:)(\d{1,2}):(\d{2})'
                      r'(?::(\d{2}))?(?![\d:])'
                      r'(?:\s*([AaPp])\.?[Mm]\.?(?![A-Za-z]))?')
_AMPM = {'a': '午前', 'p': '午後'}
# An hour with am/pm and no minutes (10am, 3 PM, 5 p.m.): 午前十時; a range of hours
# (10-11am) takes it once. Not PM2.5 (2 PM2.5).
_HOUR = r'(1[0-2]|0?[1-9])'
_HOUR_AMPM_RE = re.compile(r'(?<![\d.])(?<!\d:)(?:%s\s*[-–~〜]\s*)?%s\s?([AaPp])\.?[Mm]\.?'
                           r'(?![A-Za-z0-9])' % (_HOUR, _HOUR))
# After times and dates: a range between two kept readings (10:30〜11:00, 12/6(土)〜12/8);
# a hyphen or en dash too, after a time's or a date's reading (10:00-18:00); a hyphen or
# en dash between numbers left after phones and dates (10-20枚, 2020–2025年), after a
# percentage or a counted number (10%-20%, 9時-17時: it was マイナス) or before a price
# ($5-$10). Not an em dash or a spaced hyphen after a count: 5% — 2年連続, 5分 - 3分.
_WEEKDAY_PAREN = r'((?:\s*[(（][^()（）]{1,4}[)）])?)'
_KEPT_RANGE_RE = re.compile(r'(\ue001)%s\s*[~〜]\s*(?:(\ue000)|(?=\d))'
                            r'|(?<=[時分秒日月年])(\ue001)%s\s*[-–]\s*(?:(\ue000)|(?=\d))'
                            % (_WEEKDAY_PAREN, _WEEKDAY_PAREN))
# 〜 after a reading with no number after it is "from" (受付は10:00〜, 1000円〜: it was
# silent).
_KEPT_FROM_RE = re.compile(r'(?<=\ue001)\s*[~〜](?![~〜])')
# A hyphen between two numbers is the range's 〜, so that its counter is read as in
# 2〜3日 (2-3日 was ニカラミッカ): counted.ranges, then _RANGE_RE, read it.
_HYPHEN_NUMBERS_RE = re.compile(r'(?<=\d)[-–](?=\d)')
# Three or four numbers joined by hyphens are an address (六本木6-10-1), read with の;
# phone numbers and dates are read before.
_ADDRESS_RE = re.compile(r'(?<![\d-])[1-9]\d{0,3}(?:-\d{1,4}){2,3}(?![\d-])'
                         r'|(?<=丁目)\d{1,4}(?:-\d{1,4}){1,2}(?![\d-])')  # 1丁目2-3
_HYPHEN_RANGE_RE = re.compile(r'(?<=\d[%時分秒日月年階人個回円])[-–](?=\d)'
                              r'|(?:(?<=\d時間)|(?<=\dヶ月)|(?<=\dか月))[-–](?=\d)'
                              r'|(?<=\d)\s?[-–]\s?(?=[¥$€£₩]\d)')
_FRACTION_RE = re.compile(r'(?<![\d/.])(\d+)/(\d+)(?![\d/])')
_RANGE_RE = re.compile(r'(%s)\s*[~〜]\s*(?=[-−]?\d|\ue000)' % _NUM)
_SIGNED_RE = re.compile(r'%s(%s)' % (_SIGN, _NUM))
_NUMBER_RE = re.compile(_NUM)
# A ratio or score: a colon with one digit after it is no clock time (3:1, 16:9).
_RATIO_RE = re.compile(r'(?<![\d:.])(\d{1,3}):(\d)(?![\d:])')
# After a word that names one, any colon is a ratio or score (アスペクト比16:10, スコアは10:12).
_NAMED_RATIO_RE = re.compile(r'((?:比|比率|割合|スコア|得点)(?:は|が|を|で|[:：])?\s*)'
                             r'(?<![\d.])(?<!\d:)(\d{1,3}):(\d{1,3})(?![\d:])')
# After a decimal, counters that Open JTalk reads as after a whole day count: 1.5日 was
# イッテンゴビ, 1.5分 ゴブン, 1.5歳 ゴトシ.
# Not in a compound (3.5分野, 1.5日間: Open JTalk reads those) but before 後, 前, 以内...
_DECIMAL_COUNTER_RE = re.compile(r'(%s)?(\d+\.\d+)(日|分|歳)(?!(?![後前以程頃])[\u4e00-\u9fff])'
                                 % _SIGN)
_DECIMAL_COUNTER = {'日': 'ニチ', '分': 'フン', '歳': 'サイ'}
# Numbers between blanks are a list, read with a pause: 1 2 3 was 一二三, ヒャクニジューサン;
# so are numbers between nakaguro before a counter (1・2階, 5・6年生, 1・3・5番) or after 第
# (第1・3土曜日), which Open JTalk read as a decimal point; 3・11 (a date's name) stays.
_NUMBERS_SPACE_RE = re.compile(r'(?<=\d)(?:[ \u3000]+|・(?=\d{1,3}(?:・\d{1,3})*%s)'
                               r'|・(?=\d{1,3}・\d)|(?:(?<=第\d)|(?<=第\d\d)|(?<=\d・\d)'
                               r'|(?<=\d・\d\d))・)(?=\d)'
                               % '[階年人回個本枚日月号番位歳組章時分]')
_JA_SPACE_RE = re.compile(r'(?<=[^\x00-\x7f])[ \u3000]+(?=[^\x00-\x7f])')
# A number's reading, a blank, then a word that starts with a kanji numeral (Room 5 一番奥,
# 1 六本木ヒルズ): a pause, since without the blank Open JTalk read one number (五一).
# Not before 十百千万億 (約 1,400 万人: one number written with blanks).
_NUMBER_BLANK_NUMERAL_RE = re.compile('(?<=%s)[ \u3000]+(?=[一二三四五六七八九〇])'
                                      % KEEP_CLOSE)
_ENGLISH_RUN_RE = re.compile(r'%s(?:[ ]+%s)*' % (english.WORD_RE.pattern,
                                                 english.WORD_RE.pattern))


def keep(reading: str) -> str:
    """Wrap a reading so that the segmenter never cuts inside it."""
    return KEEP_OPEN + reading + KEEP_CLOSE


def strip_marks(text: str) -> str:
    """Remove the no-cut marks of :func:`keep`."""
    return _MARKS_RE.sub('', text)


def compat_normalize(text: str) -> str:
    """NFKC (compatibility forms: ㍻ -> 平成, ① -> 1, ｶﾅ -> カナ, Ａ -> A, ℃ -> °C).

    Before it, :func:`.chars.before_nfkc` (variation selectors dropped, Roman numerals to
    digits, rare kanji variants and ligatures replaced); after it, :func:`.chars.fix_kana`.

    Japanese punctuation survives: 、。「」・ are not compatibility characters, and ．～〜
    are kept as they are (``～`` becomes ``〜``).
    """
    text = chars.before_nfkc(text)
    text = ''.join(_KEEP_WIDTH.get(ch, ch) for ch in text)
    text = unicodedata.normalize('NFKC', text)
    text = ''.join(_RESTORE_WIDTH.get(ch, ch) for ch in text)
    # Between digits ． is a decimal point (２５．５℃ was read as two sentences), and a
    # curly apostrophe inside an English word is one (Let’s was レット、エス).
    text = _WIDE_POINT_RE.sub('.', straight_apostrophes(_ACCENTED_RE.sub(_plain_latin, text)))
    # The Unicode hyphen (NFKC's form of the no-break one) is the ASCII one: Wi‑Fi, USB‑C
    # and 3‑4 were read as two words and no range.
    return chars.fix_kana(text.replace('\u2010', '-'))


def _plain_latin(m: re.Match) -> str:
    base = ''.join(c for c in unicodedata.normalize('NFD', m.group(0))
                   if not unicodedata.combining(c))
    return base if len(base) == 1 and base.isascii() else m.group(0)


def straight_apostrophes(text: str) -> str:
    """``text`` with each curly apostrophe inside a Latin word straight (same length)."""
    return _CURLY_RE.sub("'", text)


def host_reading(host: str) -> str:
    """Read a host name label by label with ドット between.

    ``example.com`` -> エグザンプルドットコム.

    ``www.`` is dropped; words go through :func:`english.to_katakana`, digit runs are read
    digit by digit, short unknown labels are spelled.
    """
    labels = [lab for lab in host.lower().split('.') if lab]
    if len(labels) > 1 and labels[0] == 'www':
        labels = labels[1:]
    out = []
    for label in labels:
        parts = []
        for piece in re.findall(r'[a-z]+|\d+', label):
            if piece.isdigit():
                parts.append(digits(piece))
            elif piece in _HOST_WORDS:
                parts.append(_HOST_WORDS[piece])
            elif len(piece) <= 3:
                parts.append(english.spell(piece))
            else:
                parts.append(english.to_katakana(piece))
        out.append(''.join(parts))
    return 'ドット'.join(out)


def _ratio(a: str, b: str) -> str:
    """A ratio or score ``a:b`` read with 対 (サンタイイチ), kept whole."""
    return keep(number(a) + '対' + number(b))


def _url(m: re.Match) -> str:
    url = m.group(0)
    trail = ''
    while url and url[-1] in '.,!?:;':
        url, trail = url[:-1], url[-1] + trail
    host = re.sub(r'^[a-z]+://', '', url, flags=re.I).split('/')[0].split('?')[0]
    host = host.split('#')[0].split('@')[-1].split(':')[0]
    return keep(host_reading(host)) + trail


def _email(m: re.Match) -> str:
    local, host = m.group(0).split('@', 1)
    words = [english.to_katakana(w) if w.isalpha() and len(w) > 3 else
             (digits(w) if w.isdigit() else _LOCAL_MARKS.get(w) or english.spell(w))
             for w in re.findall(r'[A-Za-z]+|\d+|[._+-]', local)]
    return keep(''.join(words) + 'アット' + host_reading(host))


def _date_ymd(m: re.Match) -> str:
    y, mo, d = int(m.group(1)), int(m.group(3)), int(m.group(4))
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return m.group(0)
    return keep(f'{cardinal(y)}年{cardinal(mo)}月{cardinal(d)}日')


def _date_md(m: re.Match) -> str:
    mo, d = int(m.group(1)), int(m.group(2))
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return m.group(0)
    return keep(f'{cardinal(mo)}月{cardinal(d)}日')


def time_reading(h: int, mi: int, s: Optional[int] = None, prefix: str = '') -> Optional[str]:
    """``十時三十分`` style reading of a clock time, or None when out of range."""
    if h > 24 or mi > 59 or (s is not None and s > 59):
        return None
    out = prefix + ('零' if h == 0 else cardinal(h)) + '時'
    if mi or s:
        out += cardinal(mi) + '分' if mi else ''
    if s:
        out += cardinal(s) + '秒'
    return out


def _clock(m: re.Match) -> Optional[str]:
    sec = int(m.group(4)) if m.group(4) else None
    prefix = m.group(1) or ''
    if (prefix and prefix.isascii()) or m.group(5):  # AM9:00, 9:00 a.m., 6:00 PM
        prefix = _AMPM[(prefix or m.group(5))[0].lower()]
    return time_reading(int(m.group(2)), int(m.group(3)), sec, prefix)


def _hours_ampm(m: re.Match) -> str:
    # Said once: after 午前/午後 already (午後3 PM), and before a range's first hour only
    # when both hours lie in the same half of the day (10-11am; 9-5pm is nine to 5 p.m.).
    before = m.string[:m.start()].rstrip()
    half = '' if before.endswith(('午前', '午後')) else _AMPM[m.group(3).lower()]
    end = int(m.group(2))
    if m.group(1) is None:
        return keep(time_reading(end, 0, None, half) or m.group(0))
    start = int(m.group(1))
    same = start % 12 < end % 12
    first = time_reading(start, 0, None, half if same else '')
    second = time_reading(end, 0, None, '' if same else half)
    return keep(f'{first}から{second}') if first and second else m.group(0)


#: Labels whose colon comes before a duration or a score, not a clock time (所要時間:1:30,
#: 対戦成績:2:10): left as they were written (a label in Latin letters too: Note:3:16).
_NO_CLOCK_LABEL_RE = re.compile(r'(?:(?:所要|再生|残り|持ち|待ち|制限|経過|録画|通話|使用|稼働'
                                r'|充電)時間|タイム|記録|成績|結果|[A-Za-z]):$')


def _time(m: re.Match) -> str:
    if _NO_CLOCK_LABEL_RE.search(m.string, max(0, m.start(2) - 8), m.start(2)):
        return m.group(0)
    reading = _clock(m)
    return m.group(0) if reading is None else keep(reading)


def clock_reading(text: str) -> Optional[str]:
    """The reading of ``text`` when it is one clock time as plain text reads it, else None.

    ``H:MM`` or ``H:MM:SS`` with an optional 午前/午後/AM/PM before or a.m./p.m. after
    (``午後2:30`` -> ``午後二時三十分``); None for anything else or an impossible time.
    """
    m = _TIME_RE.fullmatch(text.strip())
    return None if m is None else _clock(m)


#: Digits per group when a long digit string (a code, more than MAX_CARDINAL_DIGITS) is
#: read digit by digit: groups of four with a short pause between, as such codes are read
#: aloud, so that segments are cut between groups and never inside a digit's reading.
DIGIT_GROUP = 4


def _number(m: re.Match) -> str:
    text = m.group(0)
    if text.isdigit() and len(text) > MAX_CARDINAL_DIGITS:
        return '、'.join(keep(digits(text[i:i + DIGIT_GROUP]))
                        for i in range(0, len(text), DIGIT_GROUP))
    reading = number(text)
    if reading.startswith('千') and m.string[m.end():m.end() + 1] in ('万', '億', '兆'):
        reading = '一' + reading  # 1000万: イッセンマン
    return keep(reading)


def english_run_match(text: str) -> bool:
    """Whether ``text`` is one run of English words as :func:`normalize` reads them."""
    return _ENGLISH_RUN_RE.fullmatch(text) is not None


def _kept_range(m: re.Match) -> str:
    """から for a range after a kept reading; between two, one kept reading (marks go).

    Else the segmenter cut 10:30〜11:00 after から: "heard" could claim 11:00 unsaid.
    """
    close = m.group(1) or m.group(4)
    weekday = m.group(2) or m.group(5) or ''
    joined = m.group(3) or m.group(6)
    return weekday + 'から' if joined else close + weekday + 'から'


def _english_run(m: re.Match) -> str:
    return ''.join(english.run_words(m.group(0)))


def normalize(text: str, latin_words: Optional[Callable[[str], str]] = None) -> str:
    """Rewrite ``text`` into what the voice should read (see the module docstring).

    Args:
        text: Cleaned text (see :func:`~.segment.prepare_text`).
        latin_words: Optional function that replaces user-dictionary words written in
            Latin letters with their readings (applied before abbreviations and English).

    Returns:
        Text with no ASCII digits left where they form numbers, English words in katakana,
        and no-cut marks around the readings of numbers, dates, times, URLs.
    """
    text = compat_normalize(chars.pictographs(text))
    text = corrections.apply(chars.rewrite(symbols.markdown(text)), userdict.active())
    text = quantities.durations(phones.dashes(text))
    text = _URL_RE.sub(_url, text)
    text = _EMAIL_RE.sub(_email, text)
    text = _PADDED_RE.sub('', text)
    text = _DOMAIN_RE.sub(_url, text)
    if latin_words is not None:
        text = latin_words(text)
    text = symbols.idioms(text)
    text = _ABBREV_RE.sub(lambda m: ABBREVIATIONS[m.group(1)], text)
    text = english.terms(text, keep)
    text = symbols.equations(text)
    text = _DATE_YMD_RE.sub(_date_ymd, text)
    text = symbols.dotted(text, keep)
    text = _NAMED_RATIO_RE.sub(lambda m: m.group(1) + _ratio(m.group(2), m.group(3)), text)
    text = _TIME_RE.sub(_time, text)
    text = _HOUR_AMPM_RE.sub(_hours_ampm, text)
    text = _RATIO_RE.sub(lambda m: _ratio(m.group(1), m.group(2)), text)
    text = _DECIMAL_COUNTER_RE.sub(
        lambda m: keep(_signed(m.group(1), m.group(2)) + _DECIMAL_COUNTER[m.group(3)]), text)
    text = phones.PHONE_RE.sub(lambda m: keep(phones.phone_reading(m.group(0))), text)
    text = counted.fractions(text, keep)
    text = _DATE_YM_RE.sub(lambda m: keep(f'{cardinal(int(m.group(1)))}年'
                                          f'{cardinal(int(m.group(2)))}月'), text)
    text = _DATE_MD_RE.sub(_date_md, text)
    text = _FRACTION_RE.sub(lambda m: keep(number(m.group(2)) + 'ブンノ' + number(m.group(1))),
                            text)
    text = _FLOOR_RE.sub(lambda m: '地下' + m.group(4) if m.group(3) else
                         ('地下' if m.group(1) else '') + m.group(2) + '階', text)
    text = _KEPT_RANGE_RE.sub(_kept_range, text)
    text = _ADDRESS_RE.sub(lambda m: m.group(0).replace('-', 'の'), text)
    text = _HYPHEN_RANGE_RE.sub('から', _HYPHEN_NUMBERS_RE.sub('〜', text))
    text = counted.ranges(text)
    text = quantities.measures(text, keep)
    text = _RANGE_RE.sub(lambda m: m.group(1) + 'から', text)
    text = quantities.amounts(text, keep)
    text = _NUMBERS_SPACE_RE.sub('、', text)
    text = _SIGNED_RE.sub(lambda m: keep(_signed('-', m.group(1))), text)
    text = counted.idioms(text, keep)
    text = symbols.operators(text)
    text = _NUMBER_RE.sub(_number, text)
    text = _KEPT_FROM_RE.sub('から', text)
    text = _ENGLISH_RUN_RE.sub(_english_run, text)
    # Spaces between Japanese characters are not read (hayakoe deletes them; Open JTalk
    # would pause): drop them, keep those next to ASCII.
    text = _JA_SPACE_RE.sub('', _NUMBER_BLANK_NUMERAL_RE.sub('、', text))
    chars.log_unreadable(text)
    return text
