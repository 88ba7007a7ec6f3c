# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Sound output for ``player_node``: stamped chunks to a PortAudio device (no ROS imports)."""

from .device import DeviceError, Player, PlayerConfig
from .playout import Playout, PlayoutStats

__all__ = ['DeviceError', 'Player', 'PlayerConfig', 'Playout', 'PlayoutStats']
