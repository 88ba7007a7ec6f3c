# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ROS layer of ``tts_node``, one module per concern (the node itself wires them).

* :mod:`.parameters`: the typed parameter specs, validation, README table;
* :mod:`.engine_loader`: engine load, fallback voice, warm-up, close;
* :mod:`.say_action`: the ``say`` action server (coroutine execute callbacks);
* :mod:`.messages`: chunk -> ``AudioStamped`` conversion and stamps;
* :mod:`.diagnostics`: ``/diagnostics`` status building;
* :mod:`.log_bridge`: Python ``logging`` of the ROS-free layers -> the node's logger.
"""
