# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Route the ROS-free layers' Python ``logging`` records to the node's ROS logger.

The engines and the speech pipeline log with :mod:`logging` (logger ``hayakoe_ros``) and
know nothing of ROS; this handler forwards their records to the node's logger, so that
they reach the console and ``/rosout`` with the node's name and obey its log level
(``--ros-args --log-level tts_node:=debug``).
"""

from __future__ import annotations

import logging

from rclpy.impl.rcutils_logger import RcutilsLogger
from rclpy.logging import LoggingSeverity


class RosLogHandler(logging.Handler):
    """A :class:`logging.Handler` that writes to an rclpy logger.

    Args:
        ros_logger: The node's logger (``node.get_logger()``).
    """

    def __init__(self, ros_logger: RcutilsLogger) -> None:
        super().__init__()
        self._ros = ros_logger

    def emit(self, record: logging.LogRecord) -> None:
        """Forward one record at its severity (exception text appended)."""
        try:
            text = self.format(record)
            if record.levelno >= logging.CRITICAL:
                self._ros.fatal(text)
            elif record.levelno >= logging.ERROR:
                self._ros.error(text)
            elif record.levelno >= logging.WARNING:
                self._ros.warning(text)
            elif record.levelno >= logging.INFO:
                self._ros.info(text)
            else:
                self._ros.debug(text)
        except Exception:  # a logging failure must never break the caller
            self.handleError(record)


_SEVERITY_TO_LEVEL = {
    LoggingSeverity.DEBUG: logging.DEBUG, LoggingSeverity.INFO: logging.INFO,
    LoggingSeverity.WARN: logging.WARNING, LoggingSeverity.ERROR: logging.ERROR,
    LoggingSeverity.FATAL: logging.CRITICAL}


def attach(ros_logger: RcutilsLogger, name: str = 'hayakoe_ros') -> RosLogHandler:
    """Send the records of Python logger ``name`` to ``ros_logger``; return the handler.

    The Python logger's level follows the ROS logger's effective level, so DEBUG records
    are built only when they will be printed. Records are not propagated to the root
    logger (they would print twice).
    """
    handler = RosLogHandler(ros_logger)
    handler.setFormatter(logging.Formatter('%(message)s'))
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    logger.propagate = False
    severity = LoggingSeverity(ros_logger.get_effective_level())
    logger.setLevel(_SEVERITY_TO_LEVEL.get(severity, logging.INFO))
    return handler


def detach(handler: RosLogHandler, name: str = 'hayakoe_ros') -> None:
    """Undo :func:`attach`."""
    logger = logging.getLogger(name)
    logger.removeHandler(handler)
    logger.propagate = True
