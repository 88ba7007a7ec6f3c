# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""tts_node's memory across reloads: a real node process driven through lifecycle cycles.

The full-size figures (and peak vs raw hayakoe) are measured by ``make bench`` and
``bench/memory_levers.py``, not asserted here.
"""

import pytest
from lifecycle_msgs.msg import Transition

from hayakoe_ros.engines.memory import vm_kib
from ros_utils import NodeProcess
from test_node_lifecycle import speak_text
from test_node_driver import change_state
from test_node_speech import tiny_params

pytestmark = pytest.mark.ros

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
                assert speak_text(ros_client, node, 'こんにちは。').samples().any()
            rss.append(vm_kib('VmRSS', pid))
        growth = (max(rss) - rss[0]) / rss[0]
        mb = [round(kib / 1024) for kib in rss]
        print(f'tts_node RSS after each of {CYCLES} cycles (MiB): {mb}')
        assert growth <= 0.05, f'RSS after each cycle (MB): {mb}'
    finally:
        assert node.stop() == 0, node.log()
