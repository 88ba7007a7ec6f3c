# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""hayakoe_ros: a ROS 2 Japanese text-to-speech node.

Layers (imports point one way only):

* :mod:`hayakoe_ros.engines` -- text in, float PCM and pause lengths out (no ROS).
* :mod:`hayakoe_ros.speech` -- segmenting, pauses, loudness, chunking, pacing, queue and
  cancel (no ROS).
* :mod:`hayakoe_ros.tts_node` -- the ROS 2 node (parameters, topics, action, lifecycle,
  diagnostics).
"""

__version__ = '0.1.0'
