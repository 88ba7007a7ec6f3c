# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The tiny model's windowed engine and random latents, for the decoder-window tests."""

import numpy as np

from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine

#: Exactness bound (full scale), and what the windows really reach (float rounding).
EXACT = 1e-4


def windowed_engine(root, cache, **kwargs):
    """The tiny model's engine; ``cache`` None: hayakoe's default cache, shared by the run."""
    if cache is not None:
        kwargs['cache_dir'] = str(cache)
    return HayakoeEngine('tiny-jp', speaker_source=f'file://{root}',
                         bert_source=f'file://{root}', num_threads=1, **kwargs)


def random_latent(config: dict, frames: int, seed: int) -> tuple:
    """A latent ``z`` [1, inter_channels, frames] and a speaker embedding ``g`` (float32)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((1, config['inter_channels'], frames)).astype(np.float32)
    g = rng.standard_normal((1, config['gin_channels'], 1)).astype(np.float32) * 0.1
    return z, g
