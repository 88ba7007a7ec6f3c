# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Loudness, silence measurement and chunking of PCM (no ROS imports).

What is done with the silence measured here (edge trims, pauses) is decided in
:mod:`.pauses`.

Loudness policy: the voice gets one fixed linear gain (node ``volume`` x goal ``volume``)
and a peak limiter, never a per-chunk or per-sentence normalisation, so quiet sentences
stay quiet and levels match across segments and across requests.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

#: Limiter ceiling: -1 dBFS, the usual true-peak headroom for PCM delivery (EBU R 128).
LIMIT_CEILING = 10.0 ** (-1.0 / 20.0)

#: Silence detection as hayakoe does it: 10 ms windows, threshold 2 % of the peak.
SILENCE_WINDOW_S = 0.010
SILENCE_REL_THRESHOLD = 0.02


def _running_min(x: np.ndarray, width: int) -> np.ndarray:
    """Centered running minimum over ``width`` (odd) samples, O(n) (van Herk/Gil-Werman)."""
    half = width // 2
    n = x.size
    padded = np.concatenate([np.ones(half, x.dtype), x, np.ones(half, x.dtype)])
    blocks = -(-padded.size // width)
    padded = np.concatenate([padded, np.ones(blocks * width - padded.size, x.dtype)])
    rows = padded.reshape(blocks, width)
    prefix = np.minimum.accumulate(rows, axis=1).reshape(-1)
    suffix = np.minimum.accumulate(rows[:, ::-1], axis=1)[:, ::-1].reshape(-1)
    idx = np.arange(n)
    return np.minimum(suffix[idx], prefix[idx + width - 1])


def apply_gain_and_limit(audio: np.ndarray, gain: float, sample_rate: int,
                         ceiling: float = LIMIT_CEILING, attack_s: float = 0.002,
                         release_s: float = 0.020) -> np.ndarray:
    """Scale by ``gain`` and limit peaks to ``ceiling`` without clipping.

    The gain reduction needed at each sample is spread over a centered window (a running
    minimum of ``attack_s + release_s``, then a moving average of ``2 * attack_s``), so the
    gain curve is smooth and never lets a sample exceed the ceiling: every averaged value
    is a minimum over a window that contains the sample itself.

    Args:
        audio: Mono float PCM, shape ``(samples,)``.
        gain: Linear gain (1.0 = unchanged), >= 0.
        sample_rate: Hz.
        ceiling: Peak bound, linear full scale.
        attack_s: Half-width of the gain smoothing (s): how early the gain starts to fall.
        release_s: Extra hold of the gain reduction after a peak (s).

    Returns:
        float32 array, same shape, ``max(abs) <= ceiling``.
    """
    out = np.asarray(audio, dtype=np.float32) * np.float32(gain)
    peak = float(np.max(np.abs(out))) if out.size else 0.0
    if peak <= ceiling:
        return out
    need = np.minimum(1.0, ceiling / np.maximum(np.abs(out), 1e-12)).astype(np.float64)
    avg_half = max(1, int(attack_s * sample_rate))
    min_half = max(avg_half, int((attack_s + release_s) * sample_rate))
    envelope = _running_min(need, 2 * min_half + 1)
    kernel = np.full(2 * avg_half + 1, 1.0 / (2 * avg_half + 1))
    padded = np.concatenate([np.full(avg_half, envelope[0]), envelope,
                             np.full(avg_half, envelope[-1])])
    smooth = np.convolve(padded, kernel, mode='valid')
    limited = (out * smooth).astype(np.float32)
    # Float rounding guard: the construction bounds peaks by the ceiling already.
    return np.clip(limited, -ceiling, ceiling)


def trailing_silence_s(audio: np.ndarray, sample_rate: int) -> float:
    """Length (s) of the silence at the end of ``audio``.

    hayakoe's rule: scan 10 ms windows backwards while their peak stays under 2 % of the
    whole segment's peak. An all-zero segment is silent throughout.
    """
    window = max(1, int(sample_rate * SILENCE_WINDOW_S))
    if audio.size < window:
        return 0.0
    mags = np.abs(audio)
    peak = float(mags.max())
    if peak == 0.0:
        return audio.size / sample_rate
    threshold = peak * SILENCE_REL_THRESHOLD
    n_windows = audio.size // window
    tail = mags[audio.size - n_windows * window:].reshape(n_windows, window).max(axis=1)
    loud = np.nonzero(tail > threshold)[0]
    silent_windows = n_windows - 1 - loud[-1] if loud.size else n_windows
    return silent_windows * window / sample_rate


def to_int16(audio: np.ndarray) -> np.ndarray:
    """Float PCM (+-1.0 full scale) to int16, rounding and saturating."""
    return np.clip(np.rint(np.asarray(audio, dtype=np.float64) * 32767.0),
                   -32768, 32767).astype(np.int16)


class Chunker:
    """Cut a stream of int16 samples into messages of exactly ``frames`` frames.

    Chunks span segment boundaries; only the utterance's last chunk is zero-padded
    (mgonzs13's ``audio_player`` drops messages shorter than its chunk size).
    """

    def __init__(self, frames: int) -> None:
        if frames < 1:
            raise ValueError('chunk frames must be >= 1')
        self.frames = int(frames)
        self._pending = np.zeros(0, dtype=np.int16)

    def add(self, samples: np.ndarray) -> list:
        """Append samples; return the full chunks now available (int16 ``(frames,)``)."""
        data = np.concatenate([self._pending, np.asarray(samples, dtype=np.int16)])
        n_full = data.size // self.frames
        chunks = [data[i * self.frames:(i + 1) * self.frames] for i in range(n_full)]
        self._pending = data[n_full * self.frames:]
        return chunks

    @property
    def pending(self) -> np.ndarray:
        """Samples added that no full chunk has taken yet (int16, read-only use)."""
        return self._pending

    def flush(self) -> Optional[tuple]:
        """Return ``(chunk, valid_frames)`` for the zero-padded remainder, or None."""
        if self._pending.size == 0:
            return None
        valid = int(self._pending.size)
        chunk = np.zeros(self.frames, dtype=np.int16)
        chunk[:valid] = self._pending
        self._pending = np.zeros(0, dtype=np.int16)
        return chunk, valid


class StreamLimiter:
    """:func:`apply_gain_and_limit` on audio that arrives in pieces, to the same samples.

    A limited sample depends on the gain reduction needed within ``attack_s + release_s
    + attack_s`` of it on both sides (the running minimum, then the moving average), so
    each piece's last that-many samples are held back until the next piece (or
    :meth:`finish`) gives them their right-hand context, and that many already handed
    over are kept as the next piece's left-hand context. The concatenated output equals
    ``apply_gain_and_limit(whole, gain, sample_rate)`` sample for sample.

    Args:
        gain: Linear gain, >= 0.
        sample_rate: Hz.
    """

    def __init__(self, gain: float, sample_rate: int, attack_s: float = 0.002,
                 release_s: float = 0.020) -> None:
        self._gain = float(gain)
        self._sr = int(sample_rate)
        self._args = {'attack_s': attack_s, 'release_s': release_s}
        avg_half = max(1, int(attack_s * sample_rate))
        self._reach = max(avg_half, int((attack_s + release_s) * sample_rate)) + avg_half
        self._buf = np.zeros(0, np.float32)  # left context, then what is not handed yet
        self._left = 0                       # samples of context at the start of _buf

    def push(self, audio: np.ndarray) -> np.ndarray:
        """Add float32 ``(samples,)``; return the limited samples now final (float32)."""
        self._buf = np.concatenate([self._buf, np.asarray(audio, np.float32)])
        ready = self._buf.size - self._reach
        if ready <= self._left:
            return np.zeros(0, np.float32)
        out = apply_gain_and_limit(self._buf, self._gain, self._sr, **self._args)
        out = out[self._left:ready]
        keep_from = max(0, ready - self._reach)
        self._buf = self._buf[keep_from:]
        self._left = ready - keep_from
        return out

    def finish(self) -> np.ndarray:
        """The held-back rest, limited (float32); the limiter is empty afterwards."""
        out = apply_gain_and_limit(self._buf, self._gain, self._sr, **self._args)
        out = out[self._left:]
        self._buf, self._left = np.zeros(0, np.float32), 0
        return out
