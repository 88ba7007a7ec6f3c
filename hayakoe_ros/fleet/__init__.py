# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``tts_fleet``: one process, one model, a ``tts_node`` per robot (ROS layer).

* :mod:`.node`: the fleet's lifecycle node, which loads the engine once and drives a
  :class:`~hayakoe_ros.tts_node.TTSNode` per robot;
* :mod:`.robots`: the ``robots`` parameter and the robot nodes' command line.

The fair sharing of the engine itself knows no ROS: :mod:`hayakoe_ros.engines.shared`.
"""
