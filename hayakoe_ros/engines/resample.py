# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""An engine wrapper that speaks at a chosen output sample rate (no ROS imports).

``tts_node``'s ``output_rate`` parameter wraps whichever engine speaks (hayakoe at
44100 Hz, the Open JTalk fallback at 48000 Hz) in :class:`ResampledEngine`, so consumers
see one rate whichever voice is loaded. Resampling uses libsoxr (``soxr`` on PyPI) at its
"HQ" quality (20-bit precision, 95 % band-width: the speech band is untouched). Each
segment is resampled on its own (the resampler is flushed at its end, so no sample is
lost): segments end at sentence and clause marks, where the voice itself is quiet, so the
filter's edges fall in quiet audio; the pauses between segments are in seconds, so they
do not change with the rate. A segment that comes in windows (the decoder in windows)
goes through one libsoxr stream window by window: the same samples as resampling it
whole (bit for bit: libsoxr's one-shot call is that stream with one chunk), its first
window out before the rest is decoded (less the filter's delay, about 1 ms at HQ).
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import soxr

from .base import AudioWindow, Engine, VoiceParams, WrappedEngine, tile_phones

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


def scale_phones(phones: Sequence, in_rate: int, out_rate: int, length: int) -> tuple:
    """Phones timed at ``in_rate``, moved to the resampled audio of ``length`` samples.

    Each boundary ``b`` becomes ``round(b * out_rate / in_rate)`` and the last phone ends
    at ``length`` (the resampler's own rounding of the length), so the phones still tile
    the resampled audio exactly.

    Args:
        phones: :class:`~.base.Phone` tuple tiling the audio at ``in_rate`` (may be empty).
        in_rate: Sample rate the phones were timed at (Hz).
        out_rate: Sample rate of the resampled audio (Hz).
        length: Samples of the resampled audio.

    Returns:
        A :class:`~.base.Phone` tuple (empty for empty ``phones``).
    """
    if in_rate == out_rate:
        return tuple(phones)
    bounds = [round(p.start * out_rate / in_rate) for p in phones]
    bounds.append(length)
    return tile_phones([(p.symbol, bounds[i + 1] - bounds[i]) for i, p in enumerate(phones)],
                       length)


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

    def synthesize_timed(self, text: str, voice: VoiceParams) -> AudioWindow:
        """The wrapped engine's timed segment, resampled, its phones moved to the new rate.

        Returns:
            An :class:`~.base.AudioWindow`: float32 audio as :meth:`synthesize` returns
            it, and phones that tile it (:func:`scale_phones`). Raises what the wrapped
            engine raises.
        """
        timed = self._engine.synthesize_timed(text, voice)
        audio = resample(timed.audio, self._engine.sample_rate, self._rate)
        return AudioWindow(audio, phones=scale_phones(timed.phones, self._engine.sample_rate,
                                                      self._rate, len(audio)))

    def synthesize_windows(self, text: str, voice: VoiceParams,
                           first_audio: bool = True) -> Iterator[AudioWindow]:
        """The wrapped engine's windows, each resampled as it comes (one libsoxr stream).

        The concatenation equals :meth:`synthesize`'s output sample for sample; the first
        window carries the phones, moved to the new rate (the whole segment's length is
        known from them: the inner phones tile its audio). Closing this iterator closes
        the wrapped engine's (a cancel between windows).
        """
        in_rate = self._engine.sample_rate
        windows = self._engine.synthesize_windows(text, voice, first_audio)
        if in_rate == self._rate:
            yield from windows
            return
        stream = soxr.ResampleStream(in_rate, self._rate, 1, dtype='float32',
                                     quality=QUALITY)
        first = True
        try:
            for window in windows:
                audio = stream.resample_chunk(np.asarray(window.audio, np.float32),
                                              last=not window.later_s)
                phones: tuple = ()
                if first and window.phones:
                    phones = scale_phones(window.phones, in_rate, self._rate,
                                          round(window.phones[-1].end * self._rate / in_rate))
                first = False
                yield AudioWindow(np.asarray(audio, np.float32), window.later_s, phones)
        finally:
            close = getattr(windows, 'close', None)
            if close is not None:
                close()

    def warmup(self) -> None:
        """Warm up the wrapped engine and the resampler."""
        self._engine.warmup()
        resample(np.zeros(self._engine.sample_rate // 10, np.float32),
                 self._engine.sample_rate, self._rate)
