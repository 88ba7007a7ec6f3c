# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The shipped correction dictionary: words Open JTalk misreads in context, for both voices.

Open JTalk's dictionary takes the commonest reading of a word whatever surrounds it:
``清掃を行っております`` セイソウヲイッテオリマス, ``そういう風に`` ソウユウカゼニ, ``その間``
ソノカン, ``本日中`` ホンジツナカ. :data:`TABLE` lists each such spelling (with the context
that decides it) and a spelling Open JTalk reads right, usually the same words in
hiragana, which keeps its dictionary's accent for them. :func:`apply` rewrites the text
before any reading is made, so hayakoe (which reads the front end's output) and the Open
JTalk voice say the same.

A row matches only as a whole word: a row that starts with a kanji not right after another
kanji, one that ends with a kanji not right before another (``本日中止`` is 本日 + 中止,
no 本日中). The user dictionary wins: a row whose match overlaps a user dictionary entry's
surface in the text is not applied (:func:`apply`), and :func:`overridden` names the rows an
entry overrides.

Why a list and not a larger analyzer: SudachiPy with SudachiDict-small reads
``を行って``, ``風に``, ``角``, ``手数`` and ``本日中`` right, but adds 50 MB of RSS (core: 97
MB; the budget of a Raspberry Pi 4B node is 30 MB), and fugashi's UniDic (unidic-lite,
+22 MB) ships as a source archive only, with no wheel for aarch64; both still read ``その間``
ソノカン, ``空いた`` アイタ and ``明後日`` ミョウゴニチ. Each row here was checked against
Open JTalk's own reading of the replacement.
"""

from __future__ import annotations

import logging
import re
from typing import Optional

_LOG = logging.getLogger('hayakoe_ros.text')

#: ``written<TAB>replacement`` rows (``#`` comments). Replacements are what Open JTalk reads
#: right; the context (を, という, の...) is in both sides, so nothing else changes.
TABLE = """
# 行う: after を a noun of action takes おこなう (清掃を行っております); Open JTalk reads the
# te- and ta-forms 行って/行った as いって/いった, and 行なって (the same word) right.
# After a way (道を行って) it is 行く: those rows keep the text as written, and win because
# a longer row is matched first.
を行っ	を行なっ
道を行っ	道を行っ
廊下を行っ	廊下を行っ
通路を行っ	通路を行っ
通りを行っ	通りを行っ
坂を行っ	坂を行っ
# 風 (manner) after という/な: ふう, not かぜ
こういう風	こういうふう
そういう風	そういうふう
ああいう風	ああいうふう
どういう風	どういうふう
こんな風	こんなふう
そんな風	そんなふう
あんな風	あんなふう
どんな風	どんなふう
# 間 after この/その: あいだ (Open JTalk: かん)
その間	そのあいだ
この間	このあいだ
あの間	あのあいだ
# 空く of a stomach: すく (Open JTalk: あく)
お腹が空	お腹がす
お腹空	お腹す
小腹が空	小腹がす
# 何の, 何です: なん (Open JTalk: なに)
何の	なんの
何です	なんです
何でしょう	なんでしょう
# 〜中 (within a period): ちゅう (Open JTalk: なか)
本日中	ほんじつちゅう
今週中	こんしゅうちゅう
今月中	こんげつちゅう
来週中	らいしゅうちゅう
来月中	らいげつちゅう
今年度中	こんねんどちゅう
# 角 of a street: かど (Open JTalk: かく)
角を曲が	かどを曲が
つ目の角	つ目のかど
次の角	次のかど
その角	そのかど
# 一目, 何分: ひとめ, なんぷん in these contexts (Open JTalk: いちもく, なにぶん)
一目で	ひと目で
何分かか	なんぷんかか
# 降る of rain and snow: ふり (Open JTalk: おり, of 降りる) in 降りそう, 降りました
雨が降り	雨がふり
雪が降り	雪がふり
# 開く of a door, a window, a shop: あく (Open JTalk: ひらく)
ドアが開	ドアがあ
扉が開	扉があ
窓が開	窓があ
店が開	店があ
# 他 (other) before a particle: ほか (Open JTalk: た, 他に タニ); その他 stays そのた
他に	ほかに
他の	ほかの
他は	ほかは
その他	その他
他の追随	他の追随
# 値 of a measurement: あたい (Open JTalk: ね, the price); 値段, 値下げ are whole words
値を	あたいを
値は	あたいは
の値	のあたい
# 強 after a time: a little more than (1時間強 きょう; Open JTalk: つよ); only where no
# 強い/強く follows (長い時間強く押す)
時間強かか	時間きょうかか
時間強で	時間きょうで
時間強の	時間きょうの
時間強、	時間きょう、
時間強。	時間きょう。
時間強です	時間きょうです
時間強ほど	時間きょうほど
# 空 of a container: から (Open JTalk: そら, the sky)
が空です	がからです
が空になり	がからになり
空の箱	からの箱
# 方 of a person after a description of who (the nouns are in PERSONS), and where a
# reception calls the next person; 次の方へ, 次の方が早い, 該当する方を選ぶ stay ほう
不自由な方	不自由なかた
体調の悪い方	体調の悪いかた
該当する方は	該当するカタは
次の方どうぞ	次のかたどうぞ
次の方、	次のかた、
次の方は	次のカタは
# weather: 一時 雨 (for a while, rain: あめ, Open JTalk: う), 晴れ後曇り (のち: ご)
一時雨	一時あめ
れ後曇り	れのち曇り
れ後雨	れのち雨
り後雨	りのち雨
り後晴れ	りのち晴れ
# 何 before と言う / て言う / 色: なん, なに (Open JTalk: なに, なに, なん)
何と言	なんと言
何て言	なんて言
何色	なにいろ
# a letter before 型 (a blood type) or 組 (a class) voices it, as after A (エーガタ)
B型	ビーがた
O型	オーがた
B組	ビーぐみ
# everyday words with a wrong first reading
明後日	あさって
お手数	おてすう
中央口	ちゅうおうぐち
搭乗口	とうじょうぐち
番搭乗口	番とうじょうぐち
通用口	つうようぐち
番目の角	番目のかど
頓用	とんよう
二人暮らし	二人ぐらし
二人部屋	二人べや
一人部屋	一人べや
二人組み	ふたりぐみ
二人組	ふたりぐみ
更衣	こうい
"""

_KANJI = re.compile('[一-鿿々]')


def parse(table: str) -> dict:
    """``written -> replacement`` from :data:`TABLE`-format text.

    Raises:
        ValueError: a row without exactly two TAB-separated fields, or a duplicate.
    """
    rows: dict = {}
    for number, line in enumerate(table.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        fields = line.split('\t')
        if len(fields) != 2 or not all(fields):
            raise ValueError(f'correction row {number}: expected "written<TAB>replacement"')
        if fields[0] in rows:
            raise ValueError(f'correction row {number}: {fields[0]!r} twice')
        rows[fields[0]] = fields[1]
    return rows


#: Nouns of who a person is, after which の方 is that person (かた), not a side (ほう).
PERSONS = ('御用', 'ご用', '担当', '係', 'ご家族', '関係者', 'ご希望', '初めて', 'お待ち',
           'ご利用', 'お急ぎ', 'お連れ', '該当', 'ご来場', 'ご来店', 'ご予約', 'お持ち', '保護者',
           '車椅子', 'お子様連れ', 'お越し', 'ご参加', 'ご来院', 'お申し込み', 'お困り',
           '高齢', '妊娠中', '外国人', 'スタッフ', '係員',
           # 60歳以上の方, 小学生以下の方 (not a bare 以上の方: 3つ以上の方が安い is ほう);
           # a row does not match after a kanji.
           '歳以上', '歳以下', '歳未満', '才以上', '才以下', '小学生以下', '中学生以下',
           # 15番の方 (a number called), never 順番の方: a row does not match after a kanji.
           '番')


def _person_rows() -> dict:
    # Open JTalk reads the noun かた right (accent 2) except before は, where it takes
    # かたは for one word and says ハ; there the katakana カタ keeps は the particle ワ.
    rows = {}
    for noun in PERSONS:
        rows[noun + 'の方は'] = noun + 'のカタは'
        rows[noun + 'の方'] = noun + 'のかた'
    return rows


ROWS = dict(parse(TABLE), **_person_rows())
_ROWS_RE = re.compile('|'.join(re.escape(w) for w in sorted(ROWS, key=len, reverse=True)))
_USER: list = [None, None]  # the user dictionary last seen, and its surfaces' pattern


def _user_re(user) -> Optional[re.Pattern]:
    if user is None or not user.entries:
        return None
    if _USER[0] is not user:
        surfaces = sorted({e.surface for e in user.entries}, key=len, reverse=True)
        _USER[:] = [user, re.compile('|'.join(re.escape(s) for s in surfaces))]
    return _USER[1]


def apply(text: str, user=None) -> str:
    """Rewrite the misread spellings of :data:`TABLE` in ``text``.

    Args:
        text: Text after compatibility normalisation.
        user: The :class:`~.userdict.UserDictionary` in force, or None. Where one of its
            surfaces occurs in the text and overlaps a row's match, the row is not applied:
            the user's entry decides that word's reading.

    Returns:
        The text with each whole-word match replaced.
    """
    if _ROWS_RE.search(text) is None:
        return text
    user_re = _user_re(user)
    spans = [m.span() for m in user_re.finditer(text)] if user_re is not None else []

    def replace(m: re.Match) -> str:
        word, start, end = m.group(0), m.start(), m.end()
        if _KANJI.match(word[0]) and start and _KANJI.match(text[start - 1]):
            return word
        if _KANJI.match(word[-1]) and end < len(text) and _KANJI.match(text[end]):
            return word
        if any(a < end and start < b for a, b in spans):
            return word
        return ROWS[word]
    return _ROWS_RE.sub(replace, text)


def overridden(user) -> list:
    """``(entry surface, correction row)`` pairs where a user entry overrides a row.

    An entry overrides a row when its surface and the row's written form overlap as
    text (one holds the other). Logged at INFO by :func:`~.userdict.apply`.
    """
    if user is None:
        return []
    return [(e.surface, w) for e in user.entries for w in ROWS
            if e.surface in w or w in e.surface]
