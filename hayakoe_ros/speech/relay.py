# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speaking an utterance with a remote voice, the engine taking over when it fails (no ROS).

A robot whose own engine is slow (a Raspberry Pi) speaks through a host's voice: the ROS
layer (:mod:`hayakoe_ros.node.offboard`) sends the utterance's text to the host and hands
what comes back to this module as :class:`.remote.RemoteAudio`,
:class:`.remote.RemoteMark` and :class:`.remote.RemoteEnd` events through a
:class:`.remote.RemoteCall`. :func:`speak_attempt` relays the host's audio into the
scheduler's hand-overs, resampled to the robot's rate and at the robot's gain, and the
host's speech marks onto the robot's sample axis, so the publisher sees one stream
whichever voice speaks.

When the host gives no first audio within ``offboard_timeout_s``, its audio stops for
``offboard_stall_s``, or it rejects or aborts the goal, the call is canceled and the
engine speaks the rest in the same attempt, on the same sample axis, from the start of the
sentence that was cut: the sentence of the first word not relayed whole
(:func:`.utterance.resume_index`, from the host's word marks), heard again from its
beginning as after an interruption; no other sentence is repeated or lost. The relayed
audio ends with a short fade (:data:`.track.FADE_S`) instead of a click. When every word
came whole and only the goal's end is missing, the host spoke it all: nothing is said
again, and it is no failure of the host.

Only a whole utterance goes to the host: a streamed reply (its text is not known yet) and
an attempt that resumes a cut utterance are spoken by the engine. :class:`.remote.HostHealth`
decides when the host is tried again after failures. Which voice spoke each utterance,
and why it switched: ``Utterance.spoken_by``.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Callable, Optional

import numpy as np
import soxr

from ..engines.base import Engine
from ..engines.resample import QUALITY
from .audio import apply_gain_and_limit, to_int16
from .growth import Pacing
from .marks import TIMED, Mark, heard_ends
from .remote import (HostHealth, RemoteAudio, RemoteCall, RemoteEnd, RemoteMark,
                     RemoteUnavailable, RemoteVoice)
from .synthesis import Put, SegmentPCM, synthesize_utterance
from .track import FADE_S, fade_ramp
from .utterance import Attempt, Utterance, resume_index

_LOG = logging.getLogger(__name__)

#: How often the relay looks at a cancel while it waits for the host (s, real time).
POLL_S = 0.05

#: After the remote goal succeeded, audio still coming is waited for until none has come
#: for this long (s): its result and its audio travel separately (a service and a topic),
#: so the result may arrive first. The wait overlaps the audio's own playback, about
#: three chunks (:data:`.pacing.MAX_LEAD_CHUNKS`, 0.14 s at 44.1 kHz) behind, so the
#: held tail, handed over only after it, came late: an underrun at the end of every
#: relayed utterance (loopback, the tiny model). An end that gives the audio's length
#: (the host's ``end`` mark) ends the wait as soon as that much audio has come.
END_GRACE_S = 0.25

#: How much of an announced length may be missing when the relay ends on it (s): the
#: ``end`` mark's ``time`` is whole ms, so half a millisecond either way.
LENGTH_TOLERANCE_S = 0.0005


#: Once every word has come, the relay ends this long before the robot's published audio
#: would run out (s) if no more has come by then: time for the last chunk to be released.
#: Until then a late piece of the host's trailing audio is still taken (jitter on the way).
DRY_MARGIN_S = 0.03

#: How far the end of the host's marks may lie past the audio received when it has all
#: come (s): a mark's ``time`` and ``duration`` are each whole ms.
MARK_ROUNDING_S = 0.001


@dataclasses.dataclass
class _Relayed:
    """What a relay did.

    ``done``: the host spoke it all; ``stopped``: the utterance was canceled (or an
    urgent text suspended it); else
    ``reason`` why the engine takes over. ``handed``: samples handed over;
    ``heard_end``: the end offset of the last word handed over whole.
    """

    done: bool = False
    stopped: bool = False
    reason: str = ''
    handed: int = 0
    heard_end: int = 0


def speak_attempt(engine: Engine, remote: Optional[RemoteVoice], health: HostHealth,
                  utt: Utterance, attempt: Attempt, gain: float, put: Put,
                  clock: Callable[[], float], pacing: Pacing, timeout_s: float,
                  stall_s: float) -> None:
    """Speak one attempt at ``utt``: with the remote voice when there is one, else the engine.

    Args:
        engine: The robot's engine (its ``sample_rate`` is the utterance's).
        remote: The remote voice, or None (the engine speaks).
        health: The remote voice's record (backoff, last voice).
        utt: The utterance (its ``sample_rate`` is set here).
        attempt: The attempt this call owns (see ``synthesize_utterance``).
        gain: Linear gain of the utterance, on the relayed audio too.
        put: Hands each :class:`.synthesis.SegmentPCM` to the publisher.
        clock: Monotonic seconds: the timeouts, hand-over times.
        pacing: For the engine (:func:`.synthesis.synthesize_utterance`); its
            ``chunk_frames`` are the publisher's chunk (samples): a first relayed piece
            shorter than that is padded in front with silence to one chunk (see
            :class:`_Stream`).
        timeout_s: ``offboard_timeout_s`` (s).
        stall_s: ``offboard_stall_s`` (s).
    """
    utt.sample_rate = engine.sample_rate
    if remote is None:
        utt.spoken_by = 'onboard'
    elif attempt.number or utt.streaming:
        # A resumed one keeps what spoke it before: its log line names both voices.
        before = f'{utt.spoken_by}; then ' if utt.spoken_by.startswith('host') else ''
        utt.spoken_by = (f'{before}onboard (a streamed reply or a resumed one is spoken '
                         'onboard)')
    elif not health.due():
        utt.spoken_by = f'onboard (the host is retried later; last: {health.last_reason})'
    else:
        relayed = _relay(remote, utt, attempt, gain, put, clock, timeout_s, stall_s,
                         pacing.chunk_frames)
        if relayed.stopped:  # canceled, or suspended by an urgent text (resumed later)
            if relayed.handed:
                utt.spoken_by = f'host {remote.name}'
            return
        if relayed.done:
            health.succeeded()
            utt.spoken_by = f'host {remote.name}'
            health.spoke(utt.spoken_by, False)
            return
        wait = health.failed(relayed.reason)
        first = resume_index(attempt.segments, relayed.heard_end) if relayed.handed else 0
        utt.spoken_by = (f'host {remote.name}, then onboard from segment {first + 1}/'
                         f'{len(attempt.segments)} (the start of the sentence cut): '
                         f'{relayed.reason}' if relayed.handed else
                         f'onboard: {relayed.reason} (host {remote.name})')
        health.spoke(utt.spoken_by, True)
        _LOG.warning('utterance %d: %s%s', utt.id, utt.spoken_by,
                     f' (host tried again in {wait:.0f} s)' if wait else '')
        synthesize_utterance(engine, utt, attempt, gain, put, clock, pacing, first,
                             relayed.handed)
        return
    health.spoke(utt.spoken_by, False)
    synthesize_utterance(engine, utt, attempt, gain, put, clock, pacing)


def _relay(remote: RemoteVoice, utt: Utterance, attempt: Attempt, gain: float, put: Put,
           clock: Callable[[], float], timeout_s: float, stall_s: float,
           chunk_frames: int = 0) -> _Relayed:
    """Relay the remote voice's audio and marks until it ends, fails or is canceled."""
    try:
        call = remote.call(utt.source, 1.0 / utt.voice.length_scale)
    except RemoteUnavailable as exc:
        return _Relayed(reason=str(exc))
    try:
        return _relay_call(call, utt, attempt, gain, put, clock, timeout_s, stall_s,
                           chunk_frames)
    finally:
        call.close()


def _relay_call(call: RemoteCall, utt: Utterance, attempt: Attempt, gain: float, put: Put,
                clock: Callable[[], float], timeout_s: float, stall_s: float,
                chunk_frames: int = 0) -> _Relayed:
    relay = _Stream(utt, attempt, gain, chunk_frames)
    started = clock()
    last_audio: Optional[float] = None
    ended: Optional[float] = None  # when the goal's success came (the last event since)
    length_s: Optional[float] = None  # the remote audio's length, once its end said it
    while True:
        if utt.halted or utt.attempt is not attempt:
            call.cancel()
            return _Relayed(stopped=True, handed=relay.handed)
        now = clock()
        if ended is not None:
            limit, why = ended + END_GRACE_S, ''
            if now >= limit:
                return relay.finish(put, clock)
        elif last_audio is None:
            limit, why = started + timeout_s, (
                f'no audio from the host within {timeout_s:g} s (offboard_timeout_s)')
        else:
            limit, why = last_audio + stall_s, (
                f'the host audio stopped for {stall_s:g} s (offboard_stall_s)')
        if now >= limit:
            if last_audio is not None and relay.heard_all():
                # Every word came whole and only the goal's end is missing: it travels
                # apart from the audio (the action's status, the end mark) and can lag
                # behind it on a loaded host. Nothing is left to say: the host is done.
                _LOG.info('utterance %d: every word came, not the end (%s); done',
                          utt.id, why)
                return relay.finish(put, clock)
            call.cancel()
            return relay.cut(why, put, clock)
        if last_audio is not None and relay.sound_came():
            # The host ends its goal (and sends its end mark) only once its own audio has
            # played, its pacing lead after its last chunk: the rest of a chunk and the
            # fade's held samples, waiting for that, came late on the robot (an underrun
            # before the last chunk of every relayed reply, loopback). Every word has
            # come: what is left is the host's trailing silence, waited for as long as
            # the robot's audio lasts (ending on a quiet spell of a chunk and a half lost
            # the last chunk of a host delayed by 25 ms of jitter).
            dry = relay.dry_at() - DRY_MARGIN_S
            if now >= dry:
                return relay.finish(put, clock, fade=True)
            limit = min(limit, dry)
        event = call.get(min(POLL_S, limit - now))
        if isinstance(event, RemoteMark):
            relay.mark(event)
        elif isinstance(event, RemoteAudio):
            last_audio = clock()
            ended = last_audio if ended is not None else None
            if not relay.audio(event, put, last_audio):
                call.cancel()
                return _Relayed(stopped=True, handed=relay.handed)
            # Handing audio over waits while the robot's audio before it still plays
            # (pacing: an utterance spoken onboard, seconds long); the host's next audio
            # waits in the call's queue meanwhile. The stall is counted from when the
            # relay can take it again: counted from its arrival, every utterance queued
            # behind one spoken onboard gave the host up after its first chunk.
            last_audio = clock()
        elif isinstance(event, RemoteEnd):
            if not event.succeeded:
                return relay.cut(f'the host failed: {event.error}', put, clock)
            ended = clock()
            length_s = event.audio_s if event.audio_s is not None else length_s
        if length_s is not None and relay.has(length_s):
            return relay.finish(put, clock)  # all the announced audio came: nothing to wait for


class _Stream:
    """The relayed audio of one attempt: resampling, gain, the held fade tail, marks.

    The publisher sends whole chunks of ``chunk_frames``, and the host's first piece, less
    the held tail and the resampler's delay, can fall short of one (2048 samples at 44.1
    kHz give 1301 at 48 kHz): the robot's first chunk would then wait for the host's
    next piece, about 100 ms later with the full-size model (its second decoder window).
    So a short first piece is padded in front with silence to one chunk: the robot's
    first audio goes out with the host's, its sound a few ms into the chunk, and every
    later sample (and mark) that much later.
    """

    def __init__(self, utt: Utterance, attempt: Attempt, gain: float,
                 chunk_frames: int = 0) -> None:
        self.utt, self.attempt, self.gain = utt, attempt, gain
        self.rate = utt.sample_rate
        self.resampler: Optional[soxr.ResampleStream] = None
        self.in_rate = 0
        # The newest samples are held back: if the host fails next, they end the relayed
        # audio under a fade instead of a cut at full level.
        self.tail = np.zeros(0, np.float32)
        self.hold = max(1, int(round(FADE_S * self.rate)))
        self.handed = 0
        self.chunk_frames = int(chunk_frames)
        self.lead = 0  # samples of silence put before the host's first sample
        self.received_s = 0.0  # the host's audio received, at its own rate (s)
        self.marks: list = []     # received, not handed over yet
        self.word_ends: list = []  # (sample end, character end) of every word received
        self.sound_end_s = 0.0  # where the host's last timed mark received ends (s)

    def mark(self, event: RemoteMark) -> None:
        """Put a remote mark on the robot's sample axis (start and end marks are ours)."""
        if event.kind in ('start', 'end'):
            return
        mark = Mark(event.kind, self.lead + int(round(event.time_s * self.rate)),
                    int(round(event.duration_s * self.rate)), event.start, event.end,
                    event.value, event.continues)
        self.marks.append(mark)
        self.word_ends.extend(heard_ends([mark]))
        if event.kind in TIMED:
            self.sound_end_s = max(self.sound_end_s, event.time_s + event.duration_s)

    def audio(self, event: RemoteAudio, put: Put, now: float) -> bool:
        """Resample, scale and hand over one piece (all but the held tail)."""
        pcm = np.asarray(event.pcm, np.float32)
        self.received_s += pcm.size / float(event.sample_rate)
        if self.resampler is None or event.sample_rate != self.in_rate:
            if self.resampler is not None:
                self.tail = np.concatenate([self.tail, self.resampler.resample_chunk(
                    np.zeros(0, np.float32), last=True)])
            self.in_rate = int(event.sample_rate)
            self.resampler = (None if self.in_rate == self.rate else soxr.ResampleStream(
                self.in_rate, self.rate, 1, dtype='float32', quality=QUALITY))
        if self.resampler is not None:
            pcm = self.resampler.resample_chunk(pcm, last=False)
        held = np.concatenate([self.tail, pcm])
        cut = max(0, held.size - self.hold)
        self.tail = held[cut:]
        return self._hand(held[:cut], False, now, put)

    def sound_came(self) -> bool:
        """True once every word of the attempt and all the sound the host marked has come.

        Counted at the host's rate, as received (the resampler holds a few samples back),
        up to the marks' whole-ms rounding. What may follow is the host's own trailing
        silence and a chunk's padding. False while no word mark has come (the host's
        marks off: its end is waited for).
        """
        if not self.word_ends or self.received_s < self.sound_end_s - MARK_ROUNDING_S:
            return False
        received = self.lead + int(self.received_s * self.rate)
        return resume_index(self.attempt.segments, self._heard_end(received)) \
            >= len(self.attempt.segments)

    def dry_at(self) -> float:
        """When the robot's published audio runs out (clock s): its last whole chunk's end.

        The publisher sends whole chunks, so the rest of one waits with the held samples;
        the attempt's ``start_at`` is when the first relayed sample plays.
        """
        if not self.handed:
            return float('inf')
        whole = self.handed - self.handed % self.chunk_frames if self.chunk_frames \
            else self.handed
        return self.attempt.start_at + whole / self.rate

    def has(self, length_s: float) -> bool:
        """True once the host's audio received is ``length_s`` long (less the mark's rounding)."""
        return self.received_s >= length_s - LENGTH_TOLERANCE_S

    def _hand(self, pcm: np.ndarray, last: bool, now: float, put: Put) -> bool:
        """Hand ``pcm`` over with the marks that fall in it (all of them when ``last``).

        A mark goes with the audio that holds its first sample, never before: the host
        sends marks ahead of their audio, and a mark of audio that never comes (the host
        failed first) must not reach the publisher.
        """
        if not pcm.size and not last:
            return True
        out = to_int16(apply_gain_and_limit(pcm, self.gain, self.rate))
        if not self.handed and not last and 0 < out.size < self.chunk_frames:
            self.lead = self.chunk_frames - out.size
            out = np.concatenate([np.zeros(self.lead, np.int16), out])
            self.marks = [dataclasses.replace(m, position=m.position + self.lead)
                          for m in self.marks]
            self.word_ends = [(e + self.lead, c) for e, c in self.word_ends]
        end = self.handed + out.size
        marks = tuple(m for m in self.marks if last or m.position < end)
        self.marks = [m for m in self.marks if not (last or m.position < end)]
        if not self.handed:
            self.attempt.start_at = now  # relayed audio plays as it comes
        if not put(SegmentPCM(self.utt, self.attempt, out, last, now, marks), self.utt,
                   self.attempt):
            return False
        self.handed = end
        return True

    def finish(self, put: Put, clock: Callable[[], float], fade: bool = False) -> _Relayed:
        """The host spoke it all: hand over the rest as the utterance's last audio.

        ``fade``: end it under the fade, as the host's end was not waited for (its last
        samples are its trailing silence, unless a late piece is still on its way).
        """
        rest = self.tail
        if self.resampler is not None:
            rest = np.concatenate([rest, self.resampler.resample_chunk(
                np.zeros(0, np.float32), last=True)])
        if fade and rest.size:
            n = min(rest.size, self.hold)
            rest = np.concatenate([rest[:-n], rest[-n:] * fade_ramp(n)]).astype(np.float32)
        if not self.handed and not rest.size:  # no audio at all: let the engine try it
            return _Relayed(reason='the host ended the goal without audio')
        if not self._hand(rest, True, clock(), put):
            return _Relayed(stopped=True)
        return _Relayed(done=True, handed=self.handed)

    def cut(self, reason: str, put: Put, clock: Callable[[], float]) -> _Relayed:
        """The host failed: end the relayed audio under a fade; say where to go on."""
        if self.handed or self.tail.size:
            faded = (self.tail * fade_ramp(self.tail.size)).astype(np.float32)
            if not self._hand(faded, False, clock(), put):
                return _Relayed(stopped=True)
        return _Relayed(reason=reason, handed=self.handed,
                        heard_end=self._heard_end(self.handed))

    def _heard_end(self, samples: int) -> int:
        """End offset (characters) of the last word whole in the first ``samples``."""
        return max((c for s, c in self.word_ends if s <= samples), default=0)

    def heard_all(self) -> bool:
        """True when every word of the attempt came whole (handed over or held)."""
        heard = self._heard_end(self.handed + self.tail.size)
        return bool(heard) and (resume_index(self.attempt.segments, heard)
                                >= len(self.attempt.segments))
