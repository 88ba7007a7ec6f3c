# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speech marks and a cut's fade, in the scheduler (no ROS, no model).

A timed tone engine (:class:`TimedToneEngine`, test/speech_fakes.py) speaks each kana as
a burst of tone (one phoneme, its romaji) and each clause mark as silence (``pau``),
inside edge silence (``sil``), and reports that timing as the real engines do. The marks
the scheduler releases must fall where the bursts are in the published PCM, before the
chunk that holds them. What was heard after an urgent text and in a streamed reply is in
test_speech_marks_cuts.py; the alignment functions and the real voices' marks in
test_speech_marks_alignment.py.
"""

import numpy as np
import pytest

from hayakoe_ros.engines.base import VoiceParams
from hayakoe_ros.speech import CancelReason, Outcome
from marks_rig import SEGMENTS, SR, TEXT, rigs
from speech_fakes import BURST, REAL_TIMEOUT_S, ROMAJI, ToneEngine

pytestmark = pytest.mark.unit


@pytest.fixture
def rig():
    """Rigs on the timed tone engine (test/marks_rig.py), each shut down after the test."""
    yield from rigs()


def test_word_marks_lie_on_their_sound_and_come_before_its_chunk(rig):
    r = rig()
    utt = r.sched.submit(SEGMENTS, VoiceParams(), text=TEXT, source=TEXT, key='u1')
    assert utt.wait(REAL_TIMEOUT_S) and utt.outcome is Outcome.SUCCEEDED
    pcm = r.pcm(utt).astype(np.float64)
    words = r.marks('word')
    assert [w.value for w in words] == [c for c in TEXT if c in ROMAJI]
    assert all(TEXT[w.start:w.end] == w.value for w in words)
    for w in words:  # a burst's first sample is a zero crossing: heard from the next
        assert BURST - 2 <= w.duration <= BURST
        burst = pcm[w.position:w.position + w.duration]
        assert np.abs(burst).min(initial=1) >= 0 and np.abs(burst).max() > 1000
    # A word after a pause starts where its sound does: silence just before it.
    for w in (words[3], words[8]):  # た, う follow a 、
        before = pcm[w.position - int(0.02 * SR):w.position]
        assert np.abs(before).max() < 50, w
        assert np.abs(pcm[w.position:w.position + 40]).max() > 100
    # Each mark is released before the chunk holding its first sample.
    seen = 0
    with r.lock:
        events = list(r.events)
    for event in events:
        if event[0] == 'chunk':
            seen += event[1].valid_frames
        else:
            assert event[1].position >= seen or event[1].kind == 'ssml', event
    # Play times: the first chunk's plus the position.
    t0 = r.chunks()[0].play_time
    with r.lock:
        timed = [(e[1], e[2]) for e in r.events if e[0] == 'mark']
    for mark, play_time in timed:
        assert play_time == pytest.approx(t0 + mark.position / SR, abs=1e-6)
    assert r.marks('start')[0].position == 0 and r.marks('start')[0].end == len(TEXT)
    sentences = r.marks('sentence')
    assert [(s.start, s.end) for s in sentences] == [(0, 8), (8, 15)]
    assert sentences[0].position == words[0].position
    assert sentences[1].position == words[6].position
    (ssml,) = r.marks('ssml')
    assert ssml.value == 'm1' and ssml.position == words[3].position
    assert utt.heard == TEXT


def test_visemes_and_phonemes_tile_the_speech(rig):
    r = rig()
    utt = r.sched.submit(SEGMENTS[:1], VoiceParams(), text=TEXT[:8], source=TEXT[:8])
    assert utt.wait(REAL_TIMEOUT_S)
    phonemes = r.marks('phoneme')
    assert [p.value for p in phonemes] == ['k', 'a', 'k', 'i', 's', 'a', 'pau', 't', 'a',
                                           'n', 'a', 'm', 'a', 'pau']
    for a, b in zip(phonemes, phonemes[1:]):
        assert a.position + a.duration == b.position
    visemes = r.marks('viseme')
    # ka ki sa -> a i a (each consonant takes its vowel's); pau -> sil; ta na -> one a
    # (equal visemes merge); ma -> closed lips, then a.
    assert [v.value for v in visemes] == ['a', 'i', 'a', 'sil', 'a', 'closed', 'a', 'sil']
    assert visemes[0].position == phonemes[0].position
    for a, b in zip(visemes, visemes[1:]):
        assert a.position + a.duration == b.position


def test_a_cancel_reports_the_words_heard_and_fades_out(rig):
    r = rig(max_lead_s=0.0)
    r.engine.window_gate.clear()  # the first window is out, the rest still decoding
    utt = r.sched.submit(SEGMENTS, VoiceParams(), text=TEXT, source=TEXT)
    assert r.engine.at_gate.wait(REAL_TIMEOUT_S)
    r.wait_published(1)
    assert r.sched.cancel(utt, CancelReason.CLIENT)
    r.engine.window_gate.set()
    assert utt.wait(REAL_TIMEOUT_S) and utt.outcome is Outcome.CANCELED
    chunks = r.chunks()
    with r.lock:
        threads = list(r.threads)
    # The fade comes from the canceling thread, before the cancel returned; nothing after.
    fades = [c for c, name in zip(chunks, threads) if not name.startswith('tts-')]
    spoken = [c for c, name in zip(chunks, threads) if name.startswith('tts-')]
    assert fades and chunks[-len(fades):] == fades
    published = sum(c.valid_frames for c in spoken)
    words = r.marks('word')
    heard = [w for w in words if w.position + w.duration <= published]
    assert heard and len(heard) < len(words)
    assert utt.heard_end == heard[-1].end
    assert utt.heard == TEXT[:heard[-1].end]
    # At most 10 ms that fall to zero without a step larger than the tone's own.
    assert sum(c.valid_frames for c in fades) <= int(0.010 * SR)
    tail = np.concatenate([c.samples[:c.valid_frames] for c in chunks]).astype(np.float64)
    fade_len = sum(c.valid_frames for c in fades)
    tone_step = np.abs(np.diff(ToneEngine.tone(BURST) * 32767)).max()
    assert np.abs(tail[-fade_len - 1]) > 1000, 'the cut came in the middle of a sound'
    assert np.abs(np.diff(tail[-fade_len - 2:])).max() <= tone_step + 2
    assert abs(tail[-1]) <= tone_step
    assert utt.end_play_time == pytest.approx(
        chunks[0].play_time + utt.audio_samples / SR, abs=1e-6)
