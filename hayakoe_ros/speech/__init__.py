# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speech pipeline: segmenting, pauses, loudness, chunking, pacing, queue, cancel.

No ROS imports: the node wires :class:`~.scheduler.SpeechScheduler` to its topics.
"""

from .scheduler import (AudioChunk, CancelReason, Outcome, QueueFullError, QueuePolicy,
                        SchedulerClosedError, SchedulerConfig, SpeechScheduler, Utterance)
from .text import InputError, Segment, prepare_text, segment

__all__ = ['AudioChunk', 'CancelReason', 'InputError', 'Outcome', 'QueueFullError',
           'QueuePolicy', 'SchedulerClosedError', 'SchedulerConfig', 'Segment',
           'SpeechScheduler', 'Utterance', 'prepare_text', 'segment']
