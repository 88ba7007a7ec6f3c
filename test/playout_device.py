# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The sound card's side of the player's timeline tests (test_playout*.py).

Not a test module. :class:`Device` calls :meth:`Playout.render` the way PortAudio's
callback does: blocks of frames with their DAC time.
"""

import numpy as np


class Device:
    """Renders a Playout block by block; ``t`` is the DAC time of the next block."""

    def __init__(self, playout, t0=100.0, latency=0.02):
        self.playout, self.t, self.latency = playout, t0, latency
        self.rate = playout.device_rate
        self.block = self.rate // 100  # 10 ms buffers
        self.out = []

    def run(self, seconds):
        for _ in range(int(round(seconds * 100))):
            buf = np.zeros(self.block, np.float32)
            self.playout.render(buf, self.t, self.t - self.latency)
            self.out.append(buf)
            self.t += self.block / self.rate

    @property
    def now(self):  # wall time of the next callback
        return self.t - self.latency

    def heard(self):
        return np.concatenate(self.out)
