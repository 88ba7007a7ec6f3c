# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Publishing a node's ``/diagnostics`` status (ROS only, no speech stack: both nodes use it)."""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray

__all__ = ['publish_status']


def publish_status(node, publisher, build) -> None:
    """Publish ``[build()]`` as a ``DiagnosticArray`` stamped with ``node``'s clock.

    Diagnostics must never take a node down: a failure is logged as ERROR (at most every
    10 s) and the next period tries again.
    """
    try:
        msg = DiagnosticArray()
        msg.header.stamp = node.get_clock().now().to_msg()
        msg.status = [build()]
        publisher.publish(msg)
    except Exception as exc:
        node.get_logger().error(f'diagnostics failed: {type(exc).__name__}: {exc}',
                                throttle_duration_sec=10.0)
