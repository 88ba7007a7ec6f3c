# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Rate conversion of one run of contiguous chunks to the device rate (libsoxr, no ROS).

One stream per run, so that there are no seams between its chunks; libsoxr holds back
the last ``~10 ms`` of a run until it is ended (:meth:`RunResampler.finish`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import soxr

#: libsoxr quality recipe of the player's rate conversion.
RESAMPLE_QUALITY = 'HQ'


class RunResampler:
    """The resampler of the current run (none between runs).

    Not thread-safe: :class:`~.playout.Playout` calls it under its producer lock.

    Args:
        device_rate: The rate it converts to (Hz).
    """

    def __init__(self, device_rate: int) -> None:
        self.device_rate = int(device_rate)
        self._stream: Optional['soxr.ResampleStream'] = None

    @property
    def pending(self) -> bool:
        """True while a run is being resampled (its held-back tail not yet emitted)."""
        return self._stream is not None

    def resample(self, samples: np.ndarray, rate: int) -> np.ndarray:
        """The next chunk of the run (float32 ``(frames,)`` at ``rate``) at the device rate.

        Starts a run (a new stream from ``rate``) when none is pending; a run keeps the
        rate it started with.

        Returns:
            float32 ``(frames,)`` at the device rate, short of what libsoxr holds back.
        """
        if self._stream is None:
            self._stream = soxr.ResampleStream(
                rate, self.device_rate, 1, dtype='float32', quality=RESAMPLE_QUALITY)
        return self._stream.resample_chunk(samples, last=False)

    def finish(self) -> Optional[np.ndarray]:
        """End the run: its held-back tail (float32, device rate), or None without a run."""
        if self._stream is None:
            return None
        tail = self._stream.resample_chunk(np.zeros(0, np.float32), last=True)
        self._stream = None
        return tail

    def drop(self) -> None:
        """End the run without its tail (what it holds is never played)."""
        self._stream = None
