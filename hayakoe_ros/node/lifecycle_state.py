# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The lifecycle state a node is in right now, transitions included (rclpy's own view).

rclpy's ``LifecycleNode`` keeps it in its private state machine only; the nodes' own state
words (``lifecycle_label``) change at the end of a transition's callback, not at its start,
and a transition requested as a ``change_state`` call runs on an executor thread. This
module is the one place that reads rclpy's private attribute (Humble to Kilted).
"""

from __future__ import annotations

from typing import Optional

from lifecycle_msgs.msg import State

__all__ = ['current_state', 'destroy_state_machine', 'transition_running']


def current_state(node) -> Optional[tuple]:
    """``(id, label)`` of ``node``'s lifecycle state, or None (no rclpy state machine).

    Ids and labels are ``lifecycle_msgs/State``'s: ``configuring`` is id 10.
    """
    machine = getattr(node, '_state_machine', None)
    return None if machine is None else tuple(machine.current_state)


def transition_running(node) -> Optional[str]:
    """Label of the transition ``node`` is in the middle of (``configuring``, ...), or None."""
    state = current_state(node)
    if state is None or state[0] < State.TRANSITION_STATE_CONFIGURING:
        return None
    return state[1]


def destroy_state_machine(node) -> None:
    """Destroy ``node``'s lifecycle state machine (after ``destroy_node``).

    rclpy's ``LifecycleNode.destroy_node`` leaves it, and it holds the node's handle: the
    node stayed on the ROS graph, its lifecycle services advertised and unanswered, for as
    long as anything referred to the Python object.
    """
    machine = getattr(node, '_state_machine', None)
    if machine is not None:
        machine.destroy_when_not_in_use()
