# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speech scheduling: pauses, loudness, chunking, pacing, queue, interrupt and cancel.

Takes the text front end's segments (:mod:`hayakoe_ros.text`; only its segment types are
imported here) and an engine (:mod:`hayakoe_ros.engines`), and turns them into timed audio
chunks. No ROS imports: the node wires :class:`~.scheduler.SpeechScheduler` to its topics.
"""

from .scheduler import SpeechScheduler
from .utterance import (AudioChunk, CancelReason, Outcome, QueueFullError, QueuePolicy,
                        SchedulerClosedError, SchedulerConfig, SchedulerFailedError, Utterance)

__all__ = ['AudioChunk', 'CancelReason', 'Outcome', 'QueueFullError', 'QueuePolicy',
           'SchedulerClosedError', 'SchedulerConfig', 'SchedulerFailedError',
           'SpeechScheduler', 'Utterance']
