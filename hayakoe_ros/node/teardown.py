# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The lifecycle transitions that end in a teardown, shared by ``tts_node`` and the fleet.

:class:`TeardownNode` gives a lifecycle node ``on_cleanup``, ``on_shutdown`` and
``on_error`` that free what configure made (the subclass's ``_teardown``) and set the
state word its ``/diagnostics`` report; ``on_shutdown`` also sets ``finalized``, on which
the runner (:mod:`.runner`) ends the process with status 0.
"""

from __future__ import annotations

import threading

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.lifecycle import (LifecycleNode, LifecycleNodeMixin, LifecycleState,
                             TransitionCallbackReturn)
from rclpy.node import Node

from .lifecycle_state import destroy_state_machine


class TeardownNode(LifecycleNode):
    """A lifecycle node whose cleanup, shutdown and error transitions call ``_teardown``.

    Subclasses set ``_active`` (accepting work), ``_state_label`` (the state word) and
    ``finalized`` (a :class:`threading.Event`), and define ``_teardown``.
    """

    _active: bool
    _state_label: str
    finalized: threading.Event

    def __init__(self, node_name: str, **kwargs) -> None:
        # LifecycleNode.__init__'s two steps, with a group of their own for the lifecycle
        # services: rclpy's puts them in the node's default group, where they run one at a
        # time with the parameter services, so during a configure requested as a
        # change_state call (a model load, seconds) neither get_state nor a parameter
        # request was answered. The state machine refuses a second transition while one
        # runs, so these services may run side by side.
        Node.__init__(self, node_name, **kwargs)
        LifecycleNodeMixin.__init__(self, enable_communication_interface=True,
                                    callback_group=ReentrantCallbackGroup())

    def _teardown(self) -> None:
        raise NotImplementedError

    @staticmethod
    def wait_released(timeout: float) -> bool:
        """Nothing outlives a transition here: teardown ends what it starts (runner)."""
        return True

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Free what ``on_configure`` made; back to unconfigured."""
        self._teardown()
        self._state_label = 'unconfigured'
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop and free everything; the process then exits with status 0."""
        self._active = False
        self._teardown()
        self._state_label = 'finalized'
        self.finalized.set()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Free whatever a failed transition left behind; back to unconfigured."""
        self.get_logger().error(f'error in lifecycle state {state.label}: cleaning up')
        self._active = False
        self._teardown()
        self._state_label = 'unconfigured'
        return TransitionCallbackReturn.SUCCESS

    def destroy_node(self) -> None:
        """Destroy the node, its lifecycle state machine too.

        rclpy's ``LifecycleNode.destroy_node`` leaves the state machine, which holds the
        node's handle: the node stayed on the ROS graph, its lifecycle services
        advertised and unanswered, for as long as anything referred to the Python object
        (a fleet's robots after a cleanup and configure: each robot listed twice, and
        each reporting "2 nodes of this name" on /diagnostics).
        """
        super().destroy_node()
        destroy_state_machine(self)
