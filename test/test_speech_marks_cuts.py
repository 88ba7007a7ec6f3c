# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""What was heard after an urgent text and in a streamed reply (no ROS, no model).

The rig of test_speech_marks.py (test/marks_rig.py): a scheduler on the timed tone engine,
whose marks fall where its bursts are.
"""

import threading
import time

import numpy as np
import pytest

from hayakoe_ros.engines.base import VoiceParams
from hayakoe_ros.speech import CancelReason, Outcome, SchedulerConfig, SpeechScheduler
from hayakoe_ros.text.segment import Boundary, Segment
from marks_rig import SEGMENTS, SR, TEXT, rigs
from speech_fakes import REAL_TIMEOUT_S, ROMAJI, TimedToneEngine, VirtualClock, words_of

pytestmark = pytest.mark.unit


@pytest.fixture
def rig():
    """Rigs on the timed tone engine (test/marks_rig.py), each shut down after the test."""
    yield from rigs()


def test_a_streamed_reply_is_one_utterance_that_waits_for_its_pieces(rig):
    from hayakoe_ros.text.stream import StreamAssembler, shift_segments
    from hayakoe_ros.text.pipeline import prepare

    r = rig(max_lead_s=0.0)
    assembler = StreamAssembler(60)
    utt = None
    fragments = ['かき', 'さ、た', 'なま。', 'あい、', 'うえお。', '']
    for fragment in fragments:
        if not fragment:
            tail = assembler.flush()
            assert tail is None
            utt.close_stream()
            break
        for start, piece in assembler.add(fragment):
            _, segments = prepare(piece, 2000, 60)
            segments = shift_segments(segments, start)
            if utt is None:
                utt = r.sched.submit(segments, VoiceParams(), text=assembler.text,
                                     source=assembler.text, streaming=True)
            else:
                utt.extend(segments, assembler.text)
        # While the reply is open the utterance waits for its next piece: never done.
        assert utt is None or not utt.done
    assert utt.wait(REAL_TIMEOUT_S) and utt.outcome is Outcome.SUCCEEDED
    text = ''.join(fragments)
    words = r.marks('word')
    assert ''.join(w.value for w in words) == 'かきさたなまあいうえお'
    assert all(text[w.start:w.end] == w.value for w in words)
    assert [w.position for w in words] == sorted(w.position for w in words)
    assert len(r.marks('start')) == 1 and utt.heard == text
    # The pieces are joined by predicted pauses, one utterance: its audio covers them all.
    assert len(utt.pauses) == len(utt.segments) - 1 and all(p > 0 for p in utt.pauses)


def test_a_streamed_reply_waiting_for_its_next_piece_lets_its_last_word_play(rig):
    """The end of a sentence is not held back until the next piece comes (a slow LLM).

    Chunks of 4096 samples: the sentence's last word lies in a partial chunk, which
    went out only with the next piece's audio; the pause's start now completes it, so
    the word plays and is heard while the reply waits. Then the pause before the next
    piece is the predicted one: what went out early is part of it.
    """
    from hayakoe_ros.text.pipeline import prepare
    from hayakoe_ros.text.stream import shift_segments

    r = rig(chunk_frames=4096, pacing=False)
    text = 'かきさ、たなま。'
    _, segments = prepare(text, 2000, 60)
    utt = r.sched.submit(segments, VoiceParams(), text=text, source=text, streaming=True)
    deadline = time.monotonic() + REAL_TIMEOUT_S
    while utt.heard_end < len(text) - 1:  # up to ま: the reply is still open
        assert time.monotonic() < deadline, (utt.heard_end, r.marks('word'))
        r.got.wait(0.05)
    assert not utt.done and [m.value for m in r.marks('word')][-1].endswith('ま')
    more = 'あい。'
    _, later = prepare(more, 2000, 60)
    utt.extend(shift_segments(later, len(text)), text + more)
    utt.close_stream()
    assert utt.wait(REAL_TIMEOUT_S) and utt.outcome is Outcome.SUCCEEDED
    pcm = r.pcm(utt)
    # The silence between the two sentences is the pause predicted for it, not longer.
    loud = np.nonzero(np.abs(pcm) > 100)[0]
    gaps = np.diff(loud)
    between = int(gaps.max())
    predicted = utt.pauses[0] * SR
    assert abs(between - predicted) < 0.25 * predicted + 2 * 400, (between, predicted)


def test_an_urgent_text_suspends_the_speaking_one_which_resumes_its_sentence(rig):
    r = rig(max_lead_s=0.0)
    r.engine.window_gate.clear()  # the first window of the first sentence is out
    first = r.sched.submit(SEGMENTS, VoiceParams(), text=TEXT, source=TEXT)
    assert r.engine.at_gate.wait(REAL_TIMEOUT_S)
    r.wait_published(1)
    heard_before = first.heard_end
    urgent = r.sched.submit([Segment('あ。', Boundary.END, words=words_of('あ。'),
                                     sentence=(0, 2))], VoiceParams(), text='あ。',
                            source='あ。', urgent=True)
    r.engine.window_gate.set()
    assert urgent.wait(REAL_TIMEOUT_S) and urgent.outcome is Outcome.SUCCEEDED
    assert first.wait(REAL_TIMEOUT_S) and first.outcome is Outcome.SUCCEEDED
    with r.lock:
        order = [e[2] for e in r.events if e[0] == 'chunk']
    runs = [u for i, u in enumerate(order) if not i or order[i - 1] != u]
    assert runs == [first.id, urgent.id, first.id]
    # The cut sentence is heard again from its beginning, then the rest: every word.
    values = [m.value for m in r.marks('word')]
    assert values[-11:] == [c for c in TEXT if c in ROMAJI]
    assert values[0] == 'か' and 'あ' in values
    assert first.heard == TEXT and heard_before < len(TEXT)
    assert len([m for m in r.marks('start')]) == 2  # one per utterance


def test_an_urgent_text_after_a_sentence_was_released_but_not_played_says_it_again(rig):
    """Released is not heard: players drop what they hold of the suspended one.

    The first sentence is all released ahead of its playback (pacing off: at once) when
    the urgent text comes, at the same instant: none of it has played, so on resuming
    the first sentence is said again from its start, and nothing before it counts as
    heard. (With pacing on the same holds for the lead's worth released ahead.)
    """
    r = rig(pacing=False)
    r.engine.hold('あい')  # the second sentence waits in the engine
    first = r.sched.submit(SEGMENTS, VoiceParams(), text=TEXT, source=TEXT)
    assert r.engine.entered.wait(REAL_TIMEOUT_S)
    deadline = time.monotonic() + REAL_TIMEOUT_S
    while 'ま' not in [m.value for m in r.marks('word')]:  # its last word is out
        assert time.monotonic() < deadline
        r.got.wait(0.05)
    urgent = r.sched.submit([Segment('あ。', Boundary.END, words=words_of('あ。'),
                                     sentence=(0, 2))], VoiceParams(), text='あ。',
                            source='あ。', urgent=True)
    assert first.heard_end == 0
    r.engine.release()
    assert urgent.wait(REAL_TIMEOUT_S) and urgent.outcome is Outcome.SUCCEEDED
    assert first.wait(REAL_TIMEOUT_S) and first.outcome is Outcome.SUCCEEDED
    values = [m.value for m in r.marks('word')]
    # Released before the cut, the urgent text, then the whole reply again.
    assert values == list('かきさたなま') + ['あ'] + [c for c in TEXT if c in ROMAJI]
    assert first.heard == TEXT


def test_an_urgent_text_without_resume_cuts_the_speaking_one(rig):
    r = rig(max_lead_s=0.0)
    r.engine.window_gate.clear()
    first = r.sched.submit(SEGMENTS, VoiceParams(), text=TEXT, source=TEXT)
    assert r.engine.at_gate.wait(REAL_TIMEOUT_S)
    r.wait_published(1)
    urgent = r.sched.submit([Segment('あ。', Boundary.END, words=words_of('あ。'))],
                            VoiceParams(), text='あ。', urgent=True, resume=False)
    r.engine.window_gate.set()
    assert urgent.wait(REAL_TIMEOUT_S) and urgent.outcome is Outcome.SUCCEEDED
    assert first.outcome is Outcome.CANCELED
    # The reason names the urgent text, not a queue policy the node does not have.
    assert first.cancel_reason is CancelReason.URGENT
    assert 'urgent' in first.error and 'queue_policy' not in first.error
    assert first.heard == TEXT[:first.heard_end] and first.heard_end < len(TEXT)


def test_without_on_mark_what_was_heard_is_still_counted():
    """A scheduler nobody takes marks from (``marks: false``) still knows what was heard."""
    clock = VirtualClock()
    engine = TimedToneEngine(clock)
    engine.window_gate.clear()
    chunks = []
    sched = SpeechScheduler(engine, lambda utt, chunk: chunks.append(chunk),
                            SchedulerConfig(chunk_frames=256, max_lead_s=0.0), clock=clock,
                            waiter=clock.wait)
    try:
        utt = sched.submit(SEGMENTS, VoiceParams(), text=TEXT, source=TEXT, key='u1')
        assert engine.at_gate.wait(REAL_TIMEOUT_S)
        deadline = time.monotonic() + REAL_TIMEOUT_S
        while utt.heard_end == 0 and time.monotonic() < deadline:
            threading.Event().wait(0.005)  # a poll: the publisher releases its words
        assert sched.cancel(utt, CancelReason.CLIENT)
        assert 0 < utt.heard_end < len(TEXT) and utt.heard == TEXT[:utt.heard_end]
    finally:
        engine.window_gate.set()
        engine.release()
        sched.shutdown()


def test_a_burst_of_urgent_texts_is_spoken_in_arrival_order(rig):
    r = rig(max_lead_s=0.0)
    r.engine.window_gate.clear()  # the first is taken and decoding when the rest come
    urgent = []
    for i, text in enumerate(('かき。', 'さた。', 'なま。', 'あい。')):
        urgent.append(r.sched.submit([Segment(text, Boundary.END, words=words_of(text),
                                              sentence=(0, 3))], VoiceParams(),
                                     text=text, source=text, urgent=True))
        if not i:
            assert r.engine.at_gate.wait(REAL_TIMEOUT_S)
    r.engine.window_gate.set()
    assert all(u.wait(REAL_TIMEOUT_S) and u.outcome is Outcome.SUCCEEDED for u in urgent)
    with r.lock:
        order = [e[2] for e in r.events if e[0] == 'chunk']
    runs = [u for i, u in enumerate(order) if not i or order[i - 1] != u]
    assert runs == [u.id for u in urgent]


def test_an_urgent_text_between_two_pieces_of_a_stream_lets_the_reply_go_on(rig):
    from hayakoe_ros.text.pipeline import prepare
    from hayakoe_ros.text.stream import shift_segments

    r = rig(max_lead_s=0.0)
    first = 'かきさ。'
    _, segs = prepare(first, 2000, 60)
    reply = r.sched.submit(shift_segments(segs, 0), VoiceParams(), text=first, source=first,
                           streaming=True)
    deadline = time.monotonic() + REAL_TIMEOUT_S
    while reply.heard_end < 3 and time.monotonic() < deadline:  # all of it heard
        threading.Event().wait(0.005)
    urgent = r.sched.submit([Segment('あい。', Boundary.END, words=words_of('あい。'))],
                            VoiceParams(), text='あい。', source='あい。', urgent=True)
    assert urgent.wait(REAL_TIMEOUT_S) and urgent.outcome is Outcome.SUCCEEDED
    text = first + 'たなま。'
    _, more = prepare('たなま。', 2000, 60)
    reply.extend(shift_segments(more, len(first)), text)
    reply.close_stream()
    assert reply.wait(REAL_TIMEOUT_S) and reply.outcome is Outcome.SUCCEEDED
    assert reply.heard == text
    words = [m.value for m in r.marks('word')]
    assert ''.join(words).endswith('たなま')


def _stream_in(reply_limit=None, stand=None):
    """A :class:`StreamIn` over the real front end.

    Returns it, the segments it queued and the refusals it published; ``stand``: a list
    the utterance it queues is put in.
    """
    import logging

    from hayakoe_ros.node.stream_in import StreamIn
    from hayakoe_ros.text.pipeline import prepare

    got: list = []
    refused: list = []

    class Stand:  # the utterance a streamed reply grows
        halted = False

        def extend(self, segments, source):
            got.extend(segments)

        def close_stream(self):
            pass

    def submit(segments, source, key):
        got.extend(segments)
        utt = Stand()
        if stand is not None:
            stand.append(utt)
        return utt

    stream = StreamIn(submit, lambda t, plain: prepare(t, 2000, 60, plain=plain),
                      lambda *a: refused.append(a), logging.getLogger('test'),
                      reply_limit=reply_limit)
    return stream, got, refused


def test_fragments_dropped_after_a_cut_are_warned_of_with_their_count(caplog):
    """A reply cut (``stop``) drops its later fragments until it ends: a WARN says so.

    A caller that took ``stop`` for the reply's end and streamed the next reply at once
    heard nothing of it, and only an INFO line told why.
    """
    import logging

    made: list = []
    stream, got, refused = _stream_in(stand=made)
    stream.fragment('最初の文です。')
    made[0].halted = True  # stop: its utterance was cut
    with caplog.at_level(logging.INFO, logger='test'):
        for fragment in ('次の返事です。', 'はい、わかりました。', ''):
            stream.fragment(fragment)
    assert [s.text for s in got] == ['最初の文です。']
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert "the reply was cut; what comes of it is dropped until it ends ('' on " \
        'text_stream, or stream_timeout_s without a fragment)' in warnings[0]
    assert warnings[1].endswith('reply ended (end of reply); 17 character(s) of it left '
                                'unspoken by its cut (what waited for its sentence end, '
                                'and what came after)')
    stream.fragment('新しい返事です。')  # after the end: a new reply, spoken
    stream.fragment('')
    assert [s.text for s in got][-1] == '新しい返事です。'
    assert not refused  # ended as spoken, not refused as "nothing speakable"


def test_a_stream_line_ending_in_a_newline_starts_the_next_sentence():
    stream, got, _ = _stream_in()
    for fragment in ('一行目です\n', '二行目です\n', '三行目です。', ''):
        stream.fragment(fragment)
    text = '一行目です\n二行目です\n三行目です。'
    sentences = [s.sentence for s in got if s.sentence is not None]
    assert [text[a:b].strip() for a, b in sentences] == ['一行目です', '二行目です',
                                                         '三行目です。']


def test_a_later_piece_of_a_stream_is_plain_text_and_a_long_reply_is_cut():
    """A reply is plain text, and no longer than max_chars.

    A later piece starting with <speak> was parsed as SSML (or dropped as malformed:
    こんにちは was never spoken). A reply past max_chars was spoken whole; now what comes
    after the limit is dropped, and so are later fragments.
    """
    stream, got, _ = _stream_in()
    for fragment in ('はい。', '<speak>こんにちは。', 'おわり。', ''):
        stream.fragment(fragment)
    assert [s.text for s in got] == ['はい。', '<スピーク>こんにちは。', 'おわり。']
    stream, got, refused = _stream_in(reply_limit=lambda: 12)
    for fragment in ('一文目です。', '二文目です。', '三文目です。', '四文目。', ''):
        stream.fragment(fragment)
    assert [s.text for s in got] == ['一文目です。', '二文目です。'] and not refused
    stream, got, refused = _stream_in(reply_limit=lambda: 3)
    for fragment in ('長い一文目です。', ''):
        stream.fragment(fragment)
    assert not got and 'passed max_chars=3' in refused[0][2]
