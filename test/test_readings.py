# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The readings table (``test/data/readings.yaml``), exactly, and the front end's bad input.

Every row's katakana must be what ``say --print-reading`` prints for its text, character
for character (real Open JTalk, offline). The table has every kind of text the front end
reads specially; the tests after it are what a user notices when the input is hostile or
when their dictionary and the shipped corrections disagree.
"""

import contextlib
import io
import logging
import os
from pathlib import Path
import subprocess
import sys

import pytest
import yaml

from hayakoe_ros import say
from hayakoe_ros.text import InputError, UserDictionary, chars, corrections, reading, userdict
from hayakoe_ros.text.pipeline import prepare

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]
with open(REPO / 'test' / 'data' / 'readings.yaml', encoding='utf-8') as _fh:
    TABLE = yaml.safe_load(_fh)
ROWS = [(kind, text, kana) for kind, rows in TABLE.items() for text, kana in rows]
KINDS = ('earlier', 'symbols', 'ranges', 'idioms', 'fractions', 'characters', 'corrections')


def _print_reading(text: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert say.main(['--print-reading', '--', text]) == 0
    return out.getvalue().rstrip('\n')


def test_the_table_has_every_kind_and_250_cases():
    assert set(TABLE) == set(KINDS)
    assert len(ROWS) >= 250
    assert all(len(TABLE[k]) >= 10 for k in KINDS), {k: len(TABLE[k]) for k in KINDS}
    assert len({text for _, text, _ in ROWS}) == len(ROWS)  # no text twice


@pytest.mark.parametrize('kind, text, kana', ROWS, ids=[f'{k}-{i}' for i, (k, _, _) in
                                                       enumerate(ROWS)])
def test_print_reading_gives_the_tables_katakana(kind, text, kana):
    assert _print_reading(text) == kana, (kind, text)


def test_the_command_line_gives_them_too():
    """One row of each kind through ``python -m hayakoe_ros.say`` (the CLI users run)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for kind in KINDS:
        text, kana = TABLE[kind][-1]
        try:
            out = subprocess.run(
                [sys.executable, '-m', 'hayakoe_ros.say', '--print-reading', '--', text],
                capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
        except OSError as exc:  # make test-aarch64: qemu user mode, no binfmt_misc
            pytest.skip(f'this interpreter cannot start a child of itself: {exc}')
        assert out.returncode == 0, out.stderr
        assert out.stdout.rstrip('\n') == kana, (kind, text)


def test_ten_thousand_symbols_in_a_row_are_cut_or_refused_at_once():
    for symbol in '+×÷※#&±≒=°−<>♪★→':
        _, segs = prepare('合計' + symbol * 10000 + 'です。', 2000, 60)
        assert sum(len(s.text) for s in segs) < 60, (symbol, segs)
    for symbol in ('〇', '々', 'Ⅱ', '〼', 'w', 'ヮ'):
        with pytest.raises(InputError) as info:
            prepare('合計' + symbol * 10000, 2000, 60)
        assert info.value.code == 'too_long', symbol
    # Variation selectors are no characters of their own: removed before the length check.
    assert prepare('合計' + '\U000e0100' * 10000, 2000, 60)[1][0].text == '合計'


def test_a_text_of_only_variation_selectors_is_empty():
    for text in ('\U000e0100' * 50, '\ufe0f\ufe00', ' \U000e01ef '):
        with pytest.raises(InputError) as info:
            prepare(text, 2000, 60)
        assert info.value.code == 'empty', text
    assert reading('葛\U000e0100飾区') == reading('葛飾区') == 'カツシカク'


def test_invalid_surrogates_are_dropped_and_the_rest_read():
    assert reading('あ\ud800い\udfffう') == 'アイウ'
    with pytest.raises(InputError) as info:
        prepare('\ud83d\ud83d', 2000, 60)
    assert info.value.code == 'empty'


def test_what_nobody_reads_is_logged_once_with_its_code_point(caplog):
    caplog.set_level(logging.DEBUG, logger='hayakoe_ros.text')
    chars._LOGGED.discard('∮')
    chars._LOGGED.discard('\U0002000b')
    # Left as they are in the reading (Open JTalk gives them no phoneme), and logged.
    assert reading('了解∮です\U0002000b') == 'リョーカイ∮デス\U0002000b'
    lines = [r.getMessage() for r in caplog.records if r.name == 'hayakoe_ros.text']
    assert any('U+222E' in line for line in lines), lines
    assert any('U+2000B' in line for line in lines), lines
    caplog.clear()
    reading('了解∮です')
    assert not [r for r in caplog.records if 'U+222E' in r.getMessage()]
    # Pictographs are silent by design (a space: the next word is read as a word).
    assert reading('了解😀です') == 'リョーカイデス'
    assert not [r for r in caplog.records if 'U+1F600' in r.getMessage()]
    # Read characters are not logged: kana, kanji Open JTalk knows, punctuation.
    assert chars.unreadable('今日は「晴れ」、気温ー。！？') == []
    assert chars.unreadable('以上、乃至') == []  # kanji Open JTalk reads only inside words


@pytest.fixture
def colliding(tmp_path):
    path = tmp_path / 'words.tsv'
    path.write_text('明後日\tミョウゴニチ\t3\n風\tフウ\t1\n', encoding='utf-8')
    dictionary = UserDictionary.load(str(path))
    yield dictionary
    userdict.apply(None)


def test_a_user_entry_wins_over_the_shipped_correction(colliding, caplog):
    assert reading('明後日の予定') == 'アサッテノヨテー'
    assert reading('そういう風に') == 'ソーユウフーニ'
    caplog.set_level(logging.INFO, logger='hayakoe_ros.text')
    userdict.apply(colliding)
    assert reading('明後日の予定') == 'ミョウゴニチノヨテー'
    # 風 (the user's) overlaps the row そういう風: the user's entry decides it.
    assert reading('そういう風に') == 'ソーユウフウニ'
    assert ('明後日', '明後日') in corrections.overridden(colliding)
    assert any("'明後日' overrides" in r.getMessage() for r in caplog.records)
    # Rows the user has no entry for still apply.
    assert reading('本日中に') == 'ホンジツチューニ'
    userdict.apply(None)
    assert reading('明後日の予定') == 'アサッテノヨテー'


def test_a_correction_applies_only_to_a_whole_word():
    assert reading('本日中止') == 'ホンジツチューシ'  # 本日 + 中止, no 本日中
    assert reading('ご利用の方法') == 'ゴリヨーノホーホー'
    assert reading('この道を行って右です') == 'コノミチヲイッテミギデス'


def test_a_long_run_of_small_wa_loses_none():
    """``ヮヰ`` x 200 lost every ヮ (Open JTalk drops a small ワ after no ク/グ)."""
    got = reading('ヮヰ' * 200)
    assert got.count('ワ') == 200 and got.count('ヰ') == 200, got[:40]
    assert reading('クヮ') == 'クヮ'  # kwa, joined to the ク before it, stays small


def test_hayakoe_reads_every_rows_front_end_output_the_same(hayakoe_front_end):
    """What the node hands hayakoe reads the same after hayakoe's own normaliser and g2p.

    So each reading of the table reaches the hayakoe voice as it reaches Open JTalk.
    """
    import pyopenjtalk

    for kind, text, _ in ROWS:
        for seg in prepare(text, 10 ** 6, 60)[1]:
            normalized, phones = hayakoe_front_end(seg.text)
            # Open JTalk marks devoiced vowels in capitals (U, I); hayakoe does not.
            ours = [p if p == 'N' else p.lower() for p in pyopenjtalk.g2p(seg.text).split()
                    if p not in ('pau', 'sil')]
            # hayakoe writes the geminate (ッ) as 'q' where Open JTalk writes 'cl'.
            theirs = ['cl' if p == 'q' else p for p in phones if p.isalpha()]
            assert theirs == ours, (kind, text, seg.text, normalized)
