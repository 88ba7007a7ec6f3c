# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""tts_node's memory across reloads: a real node process driven through lifecycle cycles.

The full-size figures (and peak vs raw hayakoe) are measured by ``make bench`` and
``bench/memory_levers.py``, not asserted here.
"""

import pytest
from action_msgs.msg import GoalStatus
from lifecycle_msgs.msg import Transition

from hayakoe_ros.engines.memory import vm_kib
from ros_utils import NodeProcess, change_state, send_goal, tiny_params, wait_future

# Long (about 45 s here): a soak of 20 cycles; test_memory.py is the quick check.
pytestmark = [pytest.mark.ros, pytest.mark.long]

CYCLES = 20


def test_rss_stays_flat_over_20_cleanup_configure_cycles(tiny_model_root, ros_client):
    node = NodeProcess(tiny_params(tiny_model_root))
    pid = node.proc.pid
    rss = []
    try:
        for cycle in range(CYCLES):
            for transition in (Transition.TRANSITION_DEACTIVATE, Transition.TRANSITION_CLEANUP,
                               Transition.TRANSITION_CONFIGURE,
                               Transition.TRANSITION_ACTIVATE):
                assert change_state(ros_client, node, transition), (cycle, transition)
            if cycle in (0, CYCLES - 1):  # the reloaded voice really speaks
                action = ros_client.action_client(node.topic('say'))
                handle, feedback = send_goal(ros_client, action, 'こんにちは。')
                result = wait_future(handle.get_result_async(), 60)
                assert result.status == GoalStatus.STATUS_SUCCEEDED, node.log()
                assert feedback, 'no audio feedback'
            rss.append(vm_kib('VmRSS', pid))
        growth = (max(rss) - rss[0]) / rss[0]
        mb = [round(kib / 1024) for kib in rss]
        print(f'tts_node RSS after each of {CYCLES} cycles (MiB): {mb}')
        assert growth <= 0.05, f'RSS after each cycle (MB): {mb}'
    finally:
        assert node.stop() == 0, node.log()
