# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Speech pipeline: front end, segmenting, pauses, loudness, chunking, pacing, queue, cancel.

The text front end reads numbers, dates, URLs, SSML and the user dictionary.

No ROS imports: the node wires :class:`~.scheduler.SpeechScheduler` to its topics.
"""

from .pipeline import prepare, reading
from .scheduler import SpeechScheduler
from .text import Boundary, InputError, Segment, prepare_text, segment
from .userdict import UserDictionary, UserDictionaryError
from .utterance import (AudioChunk, CancelReason, Outcome, QueueFullError, QueuePolicy,
                        SchedulerClosedError, SchedulerConfig, SchedulerFailedError, Utterance)

__all__ = ['AudioChunk', 'Boundary', 'CancelReason', 'InputError', 'Outcome',
           'QueueFullError', 'QueuePolicy', 'SchedulerClosedError', 'SchedulerConfig',
           'SchedulerFailedError',
           'Segment', 'SpeechScheduler', 'UserDictionary', 'UserDictionaryError',
           'Utterance', 'prepare', 'prepare_text', 'reading', 'segment']
