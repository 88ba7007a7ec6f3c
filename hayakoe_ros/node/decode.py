# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""An ``AudioStamped`` message's samples as float PCM (no ROS imports: any such object)."""

from __future__ import annotations

from typing import Any

import numpy as np

#: AudioInfo.format values (PortAudio sample formats) -> (AudioData field, full scale).
FORMATS = {1: ('float32_data', 1.0), 2: ('int32_data', 2.0 ** 31),
           8: ('int16_data', 32768.0), 16: ('int8_data', 128.0)}


def decode(msg: Any) -> np.ndarray:
    """Mono float32 samples of an ``AudioStamped`` message (+-1.0 full scale).

    Multi-channel audio (interleaved) is averaged to mono.

    Raises:
        ValueError: unsupported format, no channels, no rate, or a length that is not a
            whole number of frames.
    """
    info = msg.audio.info
    if info.format not in FORMATS:
        raise ValueError(f'unsupported audio format {info.format}; supported: paFloat32 (1), '
                         'paInt32 (2), paInt16 (8), paInt8 (16)')
    if info.channels < 1 or info.rate < 1:
        raise ValueError(f'invalid audio info: channels={info.channels}, rate={info.rate}')
    field, scale = FORMATS[info.format]
    data = np.asarray(getattr(msg.audio.audio_data, field), dtype=np.float32) / scale
    if data.size % info.channels:
        raise ValueError(f'{data.size} samples is not a whole number of '
                         f'{info.channels}-channel frames')
    if info.channels > 1:
        data = data.reshape(-1, info.channels).mean(axis=1)
    return data.astype(np.float32, copy=False)
