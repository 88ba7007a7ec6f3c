# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Accent phrases and accent types of text without the newer reading kinds stay as they were.

``test/fixtures/accent_before.json`` holds, for every earlier reading-table text
(``test/data/readings.yaml``, kind ``earlier``) and every text of ``test/data/texts.yaml``,
the accent phrases Open JTalk gave for the front end's segments before the symbol, range,
idiom, rare-character and correction readings were added (written by this module's
``--write`` from that code). Each phrase is ``phonemes:morae_accent`` from Open JTalk's
full-context labels (the ``/F:`` field: morae in the accent phrase and its accent type),
so a changed phrase cut, a changed accent nucleus or a changed phoneme fails the test.

Regenerate only on purpose: ``PYTHONPATH=. .venv/bin/python test/test_accent_unchanged.py
--write``.
"""

import json
from pathlib import Path
import re
import sys

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / 'test' / 'fixtures' / 'accent_before.json'
READINGS_FILE = REPO / 'test' / 'data' / 'readings.yaml'

pytestmark = pytest.mark.unit

_F_RE = re.compile(r'/F:(\d+)_(\d+)#')
_PHONE_RE = re.compile(r'\^[^-]+-([^+]+)\+')


def accent_phrases(text: str) -> list:
    """The node's segments of ``text`` as Open JTalk's accent phrases.

    Returns:
        One list per segment (front end and segmenting as the node runs them, at
        ``max_segment_chars`` 60) of ``'phonemes:morae_accent'`` strings.
    """
    import pyopenjtalk

    from hayakoe_ros.text.pipeline import prepare

    out = []
    for seg in prepare(text, 10 ** 6, 60)[1]:
        phrases: list = []
        key = None
        for label in pyopenjtalk.make_label(pyopenjtalk.run_frontend(seg.text)):
            found = _PHONE_RE.search(label)
            phone = found.group(1) if found else ''
            accent = _F_RE.search(label)
            if phone in ('', 'sil', 'pau') or accent is None:
                key = None
                continue
            pos = label.split('/F:')[1].split('/')[0]  # unique per accent phrase
            if pos != key:
                phrases.append([[], f'{accent.group(1)}_{accent.group(2)}'])
                key = pos
            phrases[-1][0].append(phone)
        out.append([' '.join(p) + ':' + a for p, a in phrases])
    return out


def texts() -> list:
    """Every earlier reading-table text and every text of ``texts.yaml``, in order."""
    from tools.texts import load_texts, utterances

    with open(READINGS_FILE, encoding='utf-8') as fh:
        table = yaml.safe_load(fh)
    loaded = load_texts()
    found = [row[0] for row in table['earlier']] + utterances() + list(loaded['benchmark']) \
        + list(loaded['phoneme_rate'])
    return list(dict.fromkeys(found))


#: Words of the earlier texts that Open JTalk misread and the correction layer now reads
#: right, and the accent phrase each changes (before, after): ほう -> かた for a person
#: (accent 2 of かた), いって -> おこなって. Every other phrase must stay as it was.
CORRECTED = {
    '清掃作業を行って': ('i cl t e:3_3', 'o k o n a cl t e:5_5'),
    '担当の方に': ('h o o n i:3_1', 'k a t a n i:3_2'),
    'お急ぎの方は': ('h o o w a:3_1', 'k a t a w a:3_2'),
    'お連れの方は': ('h o o w a:3_1', 'k a t a w a:3_2'),
    '保護者の方と': ('h o o t o:3_1', 'k a t a t o:3_2'),
}


#: Words the term readings read right now, and the phrases they change (before, after):
#: Wi-Fi was ウィ・ファイ, two phrases; ワイファイ is one. ROS was spelled out, アール
#: オーエス; it is ロス, as its users say it.
REREAD = {
    'Wi-Fi': (['w i:1_1', 'f a i n o:3_1'], ['w a i f a i n o:5_5']),
    'ROS 2': (['a a r u o o e s u n i n o:9_7'], ['r o s U ts u u n o:5_3']),
    'ROSの': (['a a r u o o e s u n o:8_3'], ['r o s u n o:3_1']),
    '3〜5個': (['s a N k a r a:4_4'], ['s a N k o k a r a:5_5']),
}


def _before() -> dict:
    with open(FIXTURE, encoding='utf-8') as fh:
        return json.load(fh)


def test_the_fixture_covers_every_earlier_text():
    assert set(texts()) <= set(_before()['phrases'])
    assert len(_before()['phrases']) >= 150


@pytest.mark.parametrize('text', sorted(_before()['phrases']) if FIXTURE.is_file() else [])
def test_accent_phrases_are_unchanged(text):
    expected = [list(seg) for seg in _before()['phrases'][text]]
    for word, (old, new) in CORRECTED.items():
        if word in text:  # the first phrase still as before is the word's
            where = next(((i, j) for i, seg in enumerate(expected)
                          for j, p in enumerate(seg) if p == old), None)
            assert where is not None, (word, 'no such phrase in the fixture')
            expected[where[0]][where[1]] = new
    for word, (old_run, new_run) in REREAD.items():
        if word in text:
            where = next(((i, j) for i, seg in enumerate(expected) for j in range(len(seg))
                          if seg[j:j + len(old_run)] == old_run), None)
            assert where is not None, (word, 'no such phrases in the fixture')
            i, j = where
            expected[i][j:j + len(old_run)] = new_run
    assert accent_phrases(text) == expected, text


if __name__ == '__main__':
    if sys.argv[1:] != ['--write']:
        sys.exit('usage: test_accent_unchanged.py --write')
    sys.path.insert(0, str(REPO))
    import subprocess

    commit = subprocess.run(['git', 'rev-parse', 'HEAD'], capture_output=True, text=True,
                            cwd=REPO).stdout.strip()
    data = {'commit': commit, 'phrases': {t: accent_phrases(t) for t in texts()}}
    FIXTURE.write_text(json.dumps(data, ensure_ascii=False, indent=1) + '\n', encoding='utf-8')
    print(f'{len(data["phrases"])} texts written to {FIXTURE}')
