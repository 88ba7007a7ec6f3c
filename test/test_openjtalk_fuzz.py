# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Bounded fuzzing of every path into Open JTalk, each input in its own process.

Open JTalk crashes the process (SIGSEGV) on some inputs instead of raising
(:mod:`hayakoe_ros.engines.openjtalk_guard` lists what was measured), so each input runs
in a child process: a crash is a non-zero exit and fails the test instead of killing the
test run. Per input the child runs the front end (``prepare``: normalising, segmenting,
Open JTalk's NJD analysis for the cuts), ``reading`` (Open JTalk's g2p per segment), the
Open JTalk voice on the first and the longest segments, hayakoe's own g2p on every segment,
and checks that no segment is
one that Open JTalk cannot take.
"""

import json
import os
import random
import subprocess
import sys
import textwrap

import pytest

from hayakoe_ros.engines import openjtalk_guard

pytestmark = pytest.mark.unit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD_TIMEOUT_S = 120

_HIRA = [chr(c) for c in range(0x3041, 0x3097)]
_KATA = [chr(c) for c in range(0x30A1, 0x30FB)]
_HALF = [chr(c) for c in range(0xFF66, 0xFFA0)]
_MIXED = (_HIRA + _KATA + _HALF + list('日本語文章機械学習時間場所天気々〆〇')
          + list('abcXYZ0123456789、。！？ ・ー〜…「」()#%&@+=') + ['\u3099', '\u309a', '\u200b',
                                                           '\u200d', '\ufe0f', '\U000e0100',
                                                           '😀', '\u0301'])


def _random(pool, n, seed):
    rng = random.Random(seed)
    return ''.join(rng.choice(pool) for _ in range(n))


#: Inputs under the node's default max_chars (2000): runs of every kana class, small kana,
#: sokuon, long vowels, half width, combining marks, mixed scripts, zero-width characters,
#: long "words" with nothing to split on, digit strings, SSML.
CASES = {
    'e x 600': 'え' * 600,
    'a-katakana x 1000': 'ア' * 1000,
    'small a x 500': 'ぁ' * 500,
    'small ya x 700': 'ゃ' * 700,
    'sokuon mixed scripts x 400': 'ッっ' * 400,
    'hiragana/katakana same kana x 300': 'あア' * 300,
    'half-width x 800': 'ｱ' * 800,
    'half-width voiced x 900': 'ｶﾞ' * 900,
    'vu x 1000': 'ヴ' * 1000,
    'long vowel marks': 'ー' * 1500 + 'あ',
    'sokuon x 1500': 'っ' * 1500 + 'あ',
    'combining dakuten x 900': 'ア\u3099' * 900,
    'zero-width joined x 900': 'ア\u200d' * 900,
    'iteration mark x 1000': '人' + '々' * 999,
    'kanji x 1999': '亜' * 1999,
    'distinct katakana word': 'アイウエオカキクケコサシスセソ' * 130,
    'random kana 2000': _random(_HIRA + _KATA, 2000, 1),
    'random mixed 1900': _random(_MIXED, 1900, 2),
    'latin word 1999': 'a' * 1999,
    'digits 1 x 300': '1' * 300,
    'digits 2 x 1999': '2' * 1999,
    'digits with unit': '1' * 300 + '%です。',
    'ssml': '<speak>' + 'え' * 600 + '<break time="200ms"/>' + 'ア' * 600 + '</speak>',
    'normal text': '本日の天気は晴れ、最高気温は25℃です。10:30に出発します。',
    # Distinct kana with no dictionary word: MeCab joins them into one unknown word.
    'archaic kana alternating': 'ヰヱ' * 172,
    'archaic hiragana alternating': 'ゐゑ' * 200,
    'archaic kana triple': 'ヰヱヴ' * 150,
    'archaic kana blocks': ''.join(ch * 50 for ch in 'ヰヱ' * 4),
    'archaic kana inside a sentence': '今日は' + 'ヰヱ' * 300 + 'です。',
    # What the front end reads specially, repeated: symbols (10,000 of each in a row, cut
    # to a few by the input checks), placeholders, ligatures, Roman numerals, laughter,
    # variation selectors, dotted numbers, arithmetic, ranges, the small ワ.
    'symbols x 10000 each': ''.join('数' + s * 10000 for s in '+×÷※#&±≒=°−<>'),
    'placeholders x 1900': '〇' * 1900,
    'masu ligature x 900': '〼' * 900,  # ます each: 1800 characters
    'roman numerals x 1900': 'Ⅱ' * 1900,
    'laughter x 1900': 'ね' + 'w' * 1900,
    'variation selectors after a kanji': '葛' + '\U000e0100' * 1900,
    'dotted numbers x 900': '1.' * 900 + '1',
    'arithmetic chain x 900': '1+' * 900 + '1=1',
    'day ranges x 400': '1日〜' * 400 + '2日',
    'weekday ranges x 600': '月〜' * 600 + '金',
    'small wa alternating': 'ヮヰ' * 200,
}

# One worker takes the inputs in turn and reports each as it ends; when it dies on one (a
# crash), the harness records that input and starts a fresh worker for the rest. So every
# input is isolated from the others' crashes, and the 4 s start-up (hayakoe's tokenizer)
# is paid once, not per input. The worker runs without torch, as the node does on the CPU.
_WORKER = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from hayakoe_ros.engines.hayakoe_load import keep_torch_out
    keep_torch_out()
    from hayakoe_ros.engines import hayakoe_internals, openjtalk_guard
    from hayakoe_ros.engines.base import NothingToSpeakError, VoiceParams
    from hayakoe_ros.engines.openjtalk_engine import OpenJTalkEngine
    from hayakoe_ros.text import pipeline
    from tools import hayakoe_probe

    hayakoe_internals.ensure_tokenizer(sys.argv[2])
    engine = OpenJTalkEngine()
    for line in sys.stdin:
        name, text = json.loads(line)
        print('START', flush=True)
        if name.startswith('raw:'):  # Open JTalk unguarded: what the harness must catch
            import pyopenjtalk
            pyopenjtalk.run_frontend(text)
        _, segments = pipeline.prepare(text, 2000, 60, 8)
        bad = [s.text[:20] for s in segments if openjtalk_guard.unsafe(s.text)]
        reading = pipeline.reading(text)
        samples = 0
        # The voice on the first segments and the longest (every segment's text went
        # through Open JTalk's g2p above): bounded time whatever the input.
        for s in segments[:3] + [max(segments, key=lambda s: len(s.text))]:
            try:
                samples += engine.synthesize(s.text, VoiceParams()).size
            except NothingToSpeakError:  # skipped by the scheduler as well
                pass
        for s in segments:
            hayakoe_probe.front_end(s.text)
        print('DONE ' + json.dumps({
            'segments': len(segments), 'longest': max(len(s.text) for s in segments),
            'unsafe': bad, 'reading': len(reading), 'samples': samples}), flush=True)
""")


def _env():
    return dict(os.environ, HF_HUB_OFFLINE='1', TRANSFORMERS_OFFLINE='1')


def _run_child(code, text, *args):
    proc = subprocess.run([sys.executable, '-c', code, ROOT, *args], input=text.encode(
        'utf-8', 'surrogatepass'), capture_output=True, timeout=CHILD_TIMEOUT_S, env=_env())
    return proc.returncode, proc.stdout.decode(errors='replace'), \
        proc.stderr.decode(errors='replace')


def fuzz(cases: dict, tokenizer_dir: str) -> dict:
    """Run every case; ``{name: result dict, or 'exit <code>: <stderr tail>'}``."""
    results: dict = {}
    todo = list(cases)
    while todo:
        feed = ''.join(json.dumps([n, cases[n]]) + '\n' for n in todo)
        proc = subprocess.run([sys.executable, '-c', _WORKER, ROOT, tokenizer_dir],
                              input=feed.encode('utf-8', 'surrogatepass'),
                              capture_output=True, timeout=CHILD_TIMEOUT_S * len(todo),
                              env=_env())
        lines = proc.stdout.decode(errors='replace').splitlines()
        done = [json.loads(line[5:]) for line in lines if line.startswith('DONE ')]
        results.update(zip(todo, done))
        todo = todo[len(done):]
        if todo:  # the worker died on todo[0]
            err = proc.stderr.decode(errors='replace')[-2000:]
            results[todo.pop(0)] = f'exit {proc.returncode}: {err}'
    return results


@pytest.fixture(scope='module')
def fuzzed(tiny_model_root):
    return fuzz(CASES, str(tiny_model_root / 'bert' / 'tokenizer'))


@pytest.mark.long  # about 55 s here; the harness test below stays quick
@pytest.mark.parametrize('name', sorted(CASES))
def test_no_input_crashes_any_path_into_open_jtalk(name, fuzzed):
    result = fuzzed[name]
    assert isinstance(result, dict), f'{name}: {result}'
    assert result['unsafe'] == []
    assert result['samples'] > 0 and result['reading'] > 0
    # No engine call grows with the input: every segment is within the segment bound
    # (60) or a word or reading up to the whole-word limit (80).
    assert result['longest'] <= 80, result


def test_the_harness_names_a_crash_and_goes_on_and_the_measured_limit_holds(
        tiny_model_root):
    """Open JTalk unguarded still dies on 400 kana (else the guard's notes are stale)."""
    results = fuzz({'fine': 'こんにちは。', 'raw: 400 kana': 'ア' * 400, 'after': 'またね。'},
                   str(tiny_model_root / 'bert' / 'tokenizer'))
    assert isinstance(results['fine'], dict) and isinstance(results['after'], dict)
    assert results['raw: 400 kana'].startswith('exit -11'), results['raw: 400 kana']
    code, _, err = _run_child(
        'import sys; sys.path.insert(0, sys.argv[1]); '
        'from hayakoe_ros.engines import openjtalk_guard; '
        'openjtalk_guard.run_frontend(sys.stdin.read())', 'ア' * 400 + '亜' * 2900)
    assert code == 0, err[-2000:]


def test_pieces_keep_every_call_within_the_limits():
    for text in CASES.values():
        pieces = openjtalk_guard.pieces(text)
        assert ''.join(pieces) == text
        assert all(openjtalk_guard.unsafe(p) is None for p in pieces)
    assert openjtalk_guard.pieces('今日はいい天気ですね。') == ['今日はいい天気ですね。']


def test_shortening_names_what_it_cut_and_leaves_real_text_alone():
    text = '本日は晴れ。' + 'え' * 600 + 'ですね。'
    short, runs = openjtalk_guard.shorten_repeats(text)
    assert runs == [(6, 600, 'え')]
    assert short == '本日は晴れ。' + 'え' * openjtalk_guard.MAX_REPEAT + 'ですね。'
    assert openjtalk_guard.describe_runs(runs) == "600 x 'え'"
    real = 'すごーーーーい！ああああ、わかった。ｗｗｗ'
    assert openjtalk_guard.shorten_repeats(real) == (real, [])


def test_a_user_dictionary_line_with_a_nul_is_refused_not_compiled(tmp_path):
    path = tmp_path / 'dict.tsv'
    path.write_text('x\x00y\tエックス\n', encoding='utf-8')
    code, out, err = _run_child(textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        from hayakoe_ros.text import userdict
        try:
            userdict.apply(userdict.UserDictionary.load(sys.argv[2]))
        except userdict.UserDictionaryError as exc:
            print('refused:', exc)
    """), '', str(path))
    assert code == 0, err[-2000:]
    assert f'refused: user dictionary {path}:1: surface' in out and 'U+0000' in out
