# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""English words to katakana for the text front end (no ROS imports).

The same order as hayakoe's own normaliser (``hayakoe.nlp.japanese.normalizer``): a word
that Open JTalk's dictionary knows (``Hello`` -> ハロー, ``AI`` -> エーアイ) takes that
reading; any other word goes to ``e2k`` (PyPI, public domain; a small RNN on numpy whose
weights ship inside the wheel, so it runs offline on any platform), where hayakoe would
use a fixed word list bundled inside its package. Short all-capital words that neither
knows (``GPU``) are acronyms and are spelled (ジーピーユー). Used for both voices, so the
hayakoe voice and the Open JTalk fallback say the same thing.
"""

from __future__ import annotations

import functools
import re
import threading

from ..engines import openjtalk_guard

#: Letter names as Japanese announcers say them.
LETTERS = {
    'a': 'エー', 'b': 'ビー', 'c': 'シー', 'd': 'ディー', 'e': 'イー', 'f': 'エフ',
    'g': 'ジー', 'h': 'エイチ', 'i': 'アイ', 'j': 'ジェー', 'k': 'ケー', 'l': 'エル',
    'm': 'エム', 'n': 'エヌ', 'o': 'オー', 'p': 'ピー', 'q': 'キュー', 'r': 'アール',
    's': 'エス', 't': 'ティー', 'u': 'ユー', 'v': 'ブイ', 'w': 'ダブリュー',
    'x': 'エックス', 'y': 'ワイ', 'z': 'ゼット'}

#: One-letter words not read as the letter's name: C, whose シー Open JTalk takes on its
#: own for "sea" (スィー: ビタミンC, C棟); シイ is the letter's sound (in a longer
#: spelling, CSV, ABC, it reads シー right). The article a: :func:`run_words`.
ALONE = {'C': 'シイ', 'c': 'シイ'}

#: Acronym length: an unknown all-capital word up to this long is spelled.
MAX_ACRONYM = 5

#: Shortest all-capital word looked up capitalised (EXIT エグジット, not spelled; IT, US
#: and ID, which are acronyms, and a capitalised word too, are shorter).
MIN_CAPITAL_WORD = 4

#: Longest lower-case word looked up capitalised in Open JTalk's dictionary (letters).
MAX_CAPITALISED = 5

#: Longest word looked up or read by e2k (letters; the longest English dictionary word has
#: 45): longer runs of letters are no word and are spelled, in time linear in their length.
MAX_WORD_LETTERS = 48

WORD_RE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
# Every English word but a few interjections (hmm, shh, psst) has a vowel letter or y.
_VOWEL_RE = re.compile('[aeiouyAEIOUY]')

#: Frequent short words that Open JTalk's dictionary lacks and e2k reads poorly.
COMMON = {'are': 'アー', 'today': 'トゥデイ', 'an': 'アン', 'is': 'イズ',
          'was': 'ワズ', 'were': 'ワー', 'of': 'オブ', 'to': 'トゥー', 'and': 'アンド',
          'or': 'オア', 'for': 'フォー', 'with': 'ウィズ', 'from': 'フロム', 'at': 'アット',
          'on': 'オン', 'in': 'イン', 'by': 'バイ', 'be': 'ビー', 'do': 'ドゥー',
          'does': 'ダズ', 'have': 'ハブ', 'has': 'ハズ', 'will': 'ウィル', 'can': 'キャン',
          'what': 'ホワット', 'where': 'ホエア', 'when': 'ホエン', 'who': 'フー',
          'why': 'ホワイ', 'please': 'プリーズ', 'thank': 'サンク', 'thanks': 'サンクス',
          "i'm": 'アイム', "it's": 'イッツ', "don't": 'ドント', "can't": 'キャント',
          'python': 'パイソン', 'github': 'ギットハブ', 'that': 'ザット', "that's": 'ザッツ',
          'yeah': 'イエー', 'hmm': 'フーム', 'okay': 'オーケー', 'shh': 'シーッ',
          'zzz': 'グーグー', 'brr': 'ブルル', 'psst': 'プスッ', 'mr': 'ミスター',
          'mrs': 'ミセス', 'ms': 'ミズ', 'dr': 'ドクター', 'mt': 'マウント'}

#: Names and terms a robot's replies carry that no rule reads right, in any case (chatgpt
#: and CHATGPT as ChatGPT: none of them is also a word read otherwise), hyphen included;
#: a user dictionary entry wins over them. ChatGPT was チャットプト,
#: OpenAI オペナイ, IoT イオット, Wi-Fi ウィ・ファイ, JSON spelled out, Toyota トイオタ.
TERMS = {'ChatGPT': 'チャットジーピーティー', 'OpenAI': 'オープンエーアイ',
         'IoT': 'アイオーティー', 'Wi-Fi': 'ワイファイ', 'WiFi': 'ワイファイ',
         'JSON': 'ジェイソン', 'SLAM': 'スラム', 'SIM': 'シム', 'LiDAR': 'ライダー',
         'USB-C': 'ユーエスビーシー', 'Raspberry Pi': 'ラズベリーパイ',
         'localhost': 'ローカルホスト', 'Toyota': 'トヨタ', 'Honda': 'ホンダ',
         'Sony': 'ソニー', 'YouTube': 'ユーチューブ', 'iPhone': 'アイフォーン',
         'Android': 'アンドロイド', 'Bluetooth': 'ブルートゥース', 'macOS': 'マックオーエス',
         'ROS': 'ロス', 'ROS 2': 'ロスツー', 'ROS2': 'ロスツー', 'YAML': 'ヤムル',
         'microSD': 'マイクロエスディー', 'Gmail': 'ジーメール'}
#: Terms read so only as written: in lower case they are quantities (5g grams, 4k thousand);
#: PC, which Open JTalk's dictionary reads ピースィー (the sound of "sea"; see :data:`ALONE`).
CASED_TERMS = {'PC': 'ピーシイ', '5G': 'ファイブジー', '4G': 'フォージー', '4K': 'ヨンケー',
               '8K': 'ハチケー'}
#: English ordinals 1st-10th (1st アルバム, as said in Japanese).
ORDINALS = {'1st': 'ファースト', '2nd': 'セカンド', '3rd': 'サード', '4th': 'フォース',
            '5th': 'フィフス', '6th': 'シックス', '7th': 'セブンス', '8th': 'エイス',
            '9th': 'ナインス', '10th': 'テンス'}
# Not before an apostrophe: iPhone's is read as one English word (アイフォンズ).
_TERMS_RE = re.compile(r"(?<![A-Za-z0-9])(%s)(?![A-Za-z0-9'’])" % '|'.join(
    re.escape(t) for t in sorted({**TERMS, **ORDINALS}, key=len, reverse=True)),
    re.IGNORECASE)
_READING = {term.lower(): reading for term, reading in {**TERMS, **ORDINALS}.items()}
_CASED_RE = re.compile(r"(?<![A-Za-z0-9.,$€£¥＄￥])(%s)(?![A-Za-z0-9'’])" % '|'.join(CASED_TERMS))


def terms(text: str, keep) -> str:
    """Replace terms with their readings, whole words only.

    :data:`TERMS` and :data:`ORDINALS` in any case, :data:`CASED_TERMS` as written.
    """
    if not any(ch.isascii() and ch.isalnum() for ch in text):
        return text
    text = _TERMS_RE.sub(lambda m: keep(_READING[m.group(1).lower()]), text)
    return _CASED_RE.sub(lambda m: keep(CASED_TERMS[m.group(1)]), text)


_E2K_LOCK = threading.Lock()
_E2K = None


def spell(word: str) -> str:
    """Letter names of the ASCII letters in ``word`` (``GPU`` -> ジーピーユー)."""
    return ''.join(LETTERS.get(ch, '') for ch in word.lower())


def _c2k():
    global _E2K
    with _E2K_LOCK:
        if _E2K is None:
            from e2k import C2K  # about 0.1 s the first time: loaded on first use only

            _E2K = C2K()
        return _E2K


@functools.lru_cache(maxsize=8192)
def _native(word: str):
    feats = openjtalk_guard.run_frontend(word)
    if not feats or any(f['pos'] in ('フィラー', '記号') for f in feats):
        return None
    pron = ''.join(f['pron'] for f in feats).replace('’', '')
    return pron or None


@functools.lru_cache(maxsize=8192)
def to_katakana(word: str, in_capitals: bool = False) -> str:
    """Katakana reading of one English word (letters and an optional apostrophe).

    A few frequent function words (:data:`COMMON`), Open JTalk's dictionary (a lower-case
    word also capitalised; an all-capital word of :data:`MIN_CAPITAL_WORD` letters or
    more, or of 3 in a run of capitals, ``in_capitals``, also capitalised: signs write
    EXIT, HELP, TAKE OUT), then spelling for short all-capital words and words with no
    vowel letter, then ``e2k``'s character model; a word longer
    than :data:`MAX_WORD_LETTERS` is spelled. Results are
    cached (8192 words); the dictionary lookup uses the user dictionary in force then.
    """
    if word.lower() in COMMON and not word.isupper():
        return COMMON[word.lower()]
    if len(word) == 1 or len(word) > MAX_WORD_LETTERS:
        return ALONE.get(word) or spell(word)
    # Open JTalk's dictionary holds English words capitalised (Hello, Yes, Great): typed
    # in lower case they went to e2k, which read hello ヘロ (said エロ), yes イーズ. Short
    # words only, and not as letters: longer ones match other entries (clearing was read
    # クリーニング, supplies サプライズ) and bin, alt are spelled there.
    native = _native(word)
    if not native and word.islower() and len(word) <= MAX_CAPITALISED:
        native = _native(word.capitalize())
        native = None if native == spell(word) else native
    if not native and word.isupper() and len(word) >= (3 if in_capitals else MIN_CAPITAL_WORD):
        native = _native(word.capitalize())
        native = None if native == spell(word) else native
    if native:
        return native
    if word.isupper() and len(word) <= MAX_ACRONYM or not _VOWEL_RE.search(word):
        return spell(word)  # an acronym, or letters no English word has (pdf, csv)
    return _c2k()(word.lower().replace("'", '')) or spell(word)


def clear_cache() -> None:
    """Forget cached dictionary lookups (call after the user dictionary changes)."""
    _native.cache_clear()
    to_katakana.cache_clear()


def join_thank_you(run: str) -> str:
    """``run`` with every "thank you" made one word, ``thank-you`` (same length)."""
    return re.sub(r'(?i)\bthank you\b', 'thank-you', run)


def run_words(run: str) -> list:
    """The reading of each word of a run of English words (``thank you`` is one word).

    ``''.join`` of it is what :func:`.frontend.normalize` puts in the run's place. Among
    other words ``a`` before another is the article, ア (Have a nice day; the letter エー
    alone, as in a=b, last, as in Plan a, or among letters: a or b, a b c).
    """
    words = join_thank_you(run).split()
    caps = len(words) > 1 and all(w.isupper() for w in words)  # a sign: TAKE OUT
    return ['サンキュー' if w.lower() == 'thank-you' else 'ア' if _article(words, i)
            else to_katakana(w, caps) for i, w in enumerate(words)]


def _article(words: list, i: int) -> bool:
    """Whether ``words[i]`` is the article a: before a word, not a letter (a or b, a b c)."""
    after = words[i + 1].lower() if i + 1 < len(words) else ''
    return words[i] == 'a' and len(after) > 1 and after not in ('or', 'and', 'to') \
        and not (i and len(words[i - 1]) == 1)
