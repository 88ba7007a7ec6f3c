# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ROS layer of ``tts_node``, one module per concern (the node itself wires them).

* :mod:`.parameters`: ``tts_node``'s parameters (specs of :mod:`.param_spec`), README table;
* :mod:`.param_spec`: typed parameter specs and their declaration (both nodes);
* :mod:`.status`: publishing ``/diagnostics`` (both nodes);
* :mod:`.restarts`: the count of restarts after the process died;
* :mod:`.engine_loader`: engine load, fallback voice, warm-up, close;
* :mod:`.say_action`: the ``say`` action server (coroutine execute callbacks);
* :mod:`.messages`: chunk -> ``AudioStamped`` conversion and stamps;
* :mod:`.diagnostics`: ``/diagnostics`` status building;
* :mod:`.log_bridge`: Python ``logging`` of the ROS-free layers -> the node's logger;
* :mod:`.task_executor`: the executor of both nodes' processes (a waiting goal kept once);
* :mod:`.upkeep`: ``player_node``'s timer that queues a resampled run's held tail when due.
"""
