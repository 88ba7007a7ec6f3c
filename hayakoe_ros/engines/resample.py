# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""An engine wrapper that speaks at a chosen output sample rate (no ROS imports).

``tts_node``'s ``output_rate`` parameter wraps whichever engine speaks (hayakoe at
44100 Hz, the Open JTalk fallback at 48000 Hz) in :class:`ResampledEngine`, so consumers
see one rate whichever voice is loaded. Resampling uses libsoxr (``soxr`` on PyPI) at its
"HQ" quality (20-bit precision, 95 % band-width: the speech band is untouched). Each
segment is resampled on its own, whole (the resampler is flushed, so no sample is lost
at its ends): segments end at sentence and clause marks, where the voice itself is
quiet, so the filter's edges fall in quiet audio; the pauses between segments are in
seconds, so they do not change with the rate.
"""

from __future__ import annotations


import numpy as np
import soxr

from .base import Engine, VoiceParams, WrappedEngine

#: Output rates accepted (Hz): telephone-band 8 kHz up to 192 kHz studio rates.
MIN_OUTPUT_RATE = 8000
MAX_OUTPUT_RATE = 192000

#: libsoxr quality recipe used (see ``soxr.resample``).
QUALITY = 'HQ'


def resample(audio: np.ndarray, in_rate: int, out_rate: int) -> np.ndarray:
    """Resample mono float PCM with libsoxr.

    Args:
        audio: Mono PCM, shape ``(samples,)``, float.
        in_rate: Its sample rate (Hz).
        out_rate: Wanted sample rate (Hz).

    Returns:
        float32 ``(round(samples * out_rate / in_rate),)`` (soxr's length rule); the input
        itself (as float32) when the rates are equal.
    """
    audio = np.asarray(audio, dtype=np.float32)
    if in_rate == out_rate or audio.size == 0:
        return audio
    return soxr.resample(audio, in_rate, out_rate, quality=QUALITY).astype(np.float32,
                                                                           copy=False)


class ResampledEngine(WrappedEngine):
    """``engine`` speaking at ``rate`` Hz: :meth:`synthesize` output is resampled.

    Everything else (styles, voice checks, pause prediction, device, close) is the wrapped
    engine's. Pauses are in seconds and need no conversion.

    Args:
        engine: A loaded engine.
        rate: Output sample rate (Hz), in [:data:`MIN_OUTPUT_RATE`, :data:`MAX_OUTPUT_RATE`].

    Raises:
        ValueError: ``rate`` is out of that range.
    """

    def __init__(self, engine: Engine, rate: int) -> None:
        if not MIN_OUTPUT_RATE <= int(rate) <= MAX_OUTPUT_RATE:
            raise ValueError(f"output_rate {rate} Hz is out of range: use 0 (the engine's "
                             f'own rate) or {MIN_OUTPUT_RATE}..{MAX_OUTPUT_RATE} Hz')
        super().__init__(engine)
        self._rate = int(rate)

    @property
    def engine_rate(self) -> int:
        """The wrapped engine's own sample rate (Hz)."""
        return self._engine.sample_rate

    @property
    def sample_rate(self) -> int:
        """The output sample rate (Hz)."""
        return self._rate

    def synthesize(self, text: str, voice: VoiceParams) -> np.ndarray:
        """Synthesise with the wrapped engine, then resample to :attr:`sample_rate`.

        Returns:
            float32 ``(samples,)`` at :attr:`sample_rate`, about ``engine samples *
            rate / engine rate`` long. Raises what the wrapped engine raises.
        """
        return resample(self._engine.synthesize(text, voice), self._engine.sample_rate,
                        self._rate)

    def warmup(self) -> None:
        """Warm up the wrapped engine and the resampler."""
        self._engine.warmup()
        resample(np.zeros(self._engine.sample_rate // 10, np.float32),
                 self._engine.sample_rate, self._rate)
