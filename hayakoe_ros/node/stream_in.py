# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``text_stream`` topic: a reply that arrives in fragments, spoken as one utterance.

Fragments (``std_msgs/String``, in order; an LLM's tokens at 10-50 per second) are put
together by :class:`~hayakoe_ros.text.stream.StreamAssembler`, which hands out each
sentence (or clause, once long enough) as soon as its end has arrived. The first piece is
queued as a streamed utterance (by ``queue_policy``, like any other), each later one is
added to it, so the reply has one ``start`` and one ``end`` mark, the predicted pauses
between its sentences and one loudness. An empty message ends the reply (the tail without
an end is spoken); so does ``stream_timeout_s`` without a fragment. A reply whose
utterance was cut (a cancel, ``stop``, an interrupting text) takes no more: its later
fragments are dropped until it ends.

Threads: every method runs on the node's executor, under this object's lock (the
subscription and the timeout timer may run at once on the reentrant group).
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Callable, Optional, Union

from ..speech import Utterance
from ..text import InputError
from ..text import ssml
from ..text.stream import StreamAssembler, shift_segments

_SENTENCE_END = tuple('。．.！!？?\n」』）)')


class StreamIn:
    """One streamed reply at a time, from fragments to a growing utterance.

    Args:
        submit: ``submit(segments, source, key) -> Utterance``: queue the reply's first
            piece as a streamed utterance (raises what the node's submit raises).
        prepare: ``prepare(text, plain) -> (cleaned, segments)``: the front end of one
            piece (``plain`` True: a later piece is text even if it starts with
            ``<speak>``; such a piece was parsed as SSML, or dropped as malformed).
        refused: ``refused(key, text, error)``: publish a refused reply's end mark.
        log: The node's logger.
        max_chars: ``max_segment_chars`` (a piece with no mark is cut past it): a number,
            or a function that gives it, read as each reply starts (a live change then
            applies to the next reply).
        clock: Monotonic seconds (the timeout).
        reply_limit: ``reply_limit() -> int``: the longest reply spoken (characters, the
            node's ``max_chars``, read at each fragment); what comes after is dropped
            with one WARN, as a text over it is refused (a runaway reply was spoken
            whole), and a reply cut so takes no more fragments in memory.
    """

    def __init__(self, submit: Callable, prepare: Callable, refused: Callable, log,
                 max_chars: Union[int, Callable[[], int]] = 60,
                 clock: Callable[[], float] = time.monotonic,
                 reply_limit: Optional[Callable[[], int]] = None) -> None:
        self._submit = submit
        self._prepare = prepare
        self._refused = refused
        self._log = log
        self._max_chars = max_chars if callable(max_chars) else lambda: max_chars
        self._clock = clock
        self._reply_limit = reply_limit
        self._lock = threading.Lock()
        self._assembler: Optional[StreamAssembler] = None
        self._utt: Optional[Utterance] = None
        self._key = ''
        self._last = 0.0
        self._cut = False          # its utterance was cut: later fragments are dropped
        self._dropped = 0          # characters dropped after the cut
        self._continues = False    # the last piece ended at a clause: a sentence goes on
        self._errors: list = []

    @property
    def open(self) -> bool:
        """True while a reply is being received."""
        return self._assembler is not None

    def fragment(self, data: str) -> None:
        """One ``text_stream`` message: a fragment, or '' (the reply ends)."""
        with self._lock:
            if not data:
                self._finish('end of reply')
                return
            if self._assembler is None:
                self._assembler = StreamAssembler(self._max_chars())
                self._key, self._cut, self._continues = uuid.uuid4().hex, False, False
                self._dropped = 0
                self._errors = []
            self._last = self._clock()
            if self._cut:
                self._dropped += len(data)
                return  # dropped (the reply was cut): not even kept
            limit = self._reply_limit() if self._reply_limit is not None else None
            for start, piece in self._assembler.feed(data):
                if limit is not None and start + len(piece) > limit:
                    self._too_long(start, limit)
                    break
                self._speak(start, piece)

    def _too_long(self, start: int, limit: int) -> None:
        """The reply passed ``limit`` characters at ``start``: speak no more of it."""
        error = (f'the reply passed max_chars={limit} characters; not speaking it from '
                 f'character {start} on')
        self._log.warning(f'text_stream [{self._key}]: {error}')
        if self._utt is None:
            assert self._assembler is not None
            self._refused(self._key, self._assembler.text, error)
        self._cut = True

    def check_timeout(self, timeout_s: float) -> None:
        """End the reply if no fragment came for ``timeout_s`` seconds (a timer's tick)."""
        with self._lock:
            if self._assembler is not None and self._clock() - self._last >= timeout_s:
                self._finish(f'no fragment for {timeout_s:g} s (stream_timeout_s)')

    def close(self) -> None:
        """End any reply at once (deactivation): its utterance ends with what it has."""
        with self._lock:
            self._finish('the node stops serving')

    def _speak(self, start: int, piece: str) -> None:
        """Queue or add one piece (under the lock)."""
        assembler = self._assembler
        assert assembler is not None
        utt = self._utt
        if self._cut or (utt is not None and utt.halted):
            if not self._cut:
                # A caller that took the cut for the reply's end and streams the next reply
                # at once hears nothing of it: say so where it looks.
                self._log.warning(f'text_stream [{self._key}]: the reply was cut; what '
                                  "comes of it is dropped until it ends ('' on text_stream, "
                                  'or stream_timeout_s without a fragment)')
            self._cut = True
            self._dropped += len(piece)
            return
        starts = not self._continues
        # A newline ends a sentence too (a line of a reply), before the blanks are stripped.
        self._continues = not (piece.rstrip(' \t\u3000').endswith('\n')
                               or piece.rstrip().endswith(_SENTENCE_END))
        if utt is None and ssml.is_ssml(assembler.text):
            # Markup split over fragments cannot be parsed piece by piece: refused whole.
            error = ('text_stream takes plain text: SSML (a reply starting with <speak>) '
                     'is refused; send it whole on text')
            self._log.warning(f'text_stream [{self._key}]: reply not spoken: {error}')
            self._refused(self._key, assembler.text, error)
            self._cut = True
            return
        try:
            _, segments = self._prepare(piece, True)  # SSML at the start was refused above
        except InputError as exc:
            if exc.code in ('nothing_speakable', 'empty'):  # emoji, blanks: nothing to say
                self._log.debug(f'text_stream [{self._key}]: nothing speakable in '
                                f'{piece[:40]!r}')
            else:
                self._log.warning(f'text_stream [{self._key}]: not speaking {piece[:40]!r}: '
                                  f'{exc}')
            self._errors.append(str(exc))
            return
        segments = shift_segments(segments, start, starts)
        if utt is None:
            try:
                self._utt = self._submit(segments, assembler.text, self._key)
            except (ValueError, RuntimeError) as exc:
                self._log.warning(f'text_stream [{self._key}]: reply not spoken: {exc}')
                self._refused(self._key, assembler.text, str(exc))
                self._cut = True
            return
        try:
            utt.extend(segments, assembler.text)
        except RuntimeError:  # it ended meanwhile (canceled)
            self._cut = True

    def _finish(self, why: str) -> None:
        """End the reply (under the lock): speak the tail, close the utterance."""
        assembler = self._assembler
        if assembler is None:
            return
        tail = assembler.flush()
        if tail is not None:
            self._speak(*tail)
        if self._cut and self._dropped:
            self._log.warning(f'text_stream [{self._key}]: reply ended ({why}); '
                              f'{self._dropped} character(s) of it left unspoken by its '
                              'cut (what waited for its sentence end, and what came after)')
        if self._utt is not None:
            self._utt.close_stream()
            self._log.debug(f'text_stream [{self._key}]: reply ended ({why})')
        elif not self._cut:
            error = '; '.join(self._errors) or 'nothing speakable in the reply'
            self._log.warning(f'text_stream [{self._key}]: nothing spoken of '
                              f'{assembler.text[:40]!r}: {error}')
            self._refused(self._key, assembler.text, error)
        self._assembler, self._utt = None, None
