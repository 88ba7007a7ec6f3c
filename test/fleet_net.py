# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""What the network tests share: the discovery profile's environment, goal results.

Not a test module. The ``spawn`` fixture (an observer in a namespace) is in conftest.py.
"""

from __future__ import annotations

from pathlib import Path

from action_msgs.msg import GoalStatus

from netns_observer import Observer
from ros_utils import FLEET_READY_S as READY_S  # noqa: F401 (the network tests' import)

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / 'config' / 'fastdds_fleet_peers.xml'
#: Seconds a goal may take, from sending to its result (a few seconds of speech).
GOAL_S = 90.0


def profile_env(peer: str) -> dict:
    """The environment README gives a machine whose fleet peer is ``peer``."""
    return {'FASTDDS_DEFAULT_PROFILES_FILE': str(PROFILE),
            'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SYSTEM_DEFAULT', 'HAYAKOE_FLEET_PEER': peer}


def succeeded(obs: Observer, action: str) -> None:
    """Wait for the result of ``obs``'s goal on ``action``; it must have succeeded."""
    obs.wait(lambda o: o.of('result', action=action), GOAL_S, f'the result of {action}')
    result = obs.of('result', action=action)[0]
    assert result['status'] == GoalStatus.STATUS_SUCCEEDED, result
