# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A text through the front end into a scheduler, as ``tts_node`` does it (tests, benches)."""

from __future__ import annotations


def submit_text(scheduler, text: str, voice, **kwargs):
    """``prepare`` with the scheduler's own settings, then ``submit`` the segments.

    Args:
        scheduler: A :class:`~hayakoe_ros.speech.SpeechScheduler`.
        text: Raw text or SSML.
        voice: :class:`~hayakoe_ros.engines.VoiceParams`.
        **kwargs: ``volume``, ``on_done``, ``on_chunk`` as for ``submit``.

    Returns:
        The queued :class:`~hayakoe_ros.speech.Utterance`.

    Raises:
        InputError: from the front end; anything ``submit`` raises.
    """
    from hayakoe_ros.text.pipeline import prepare

    cfg = scheduler.config
    cleaned, segments = prepare(text, cfg.max_chars, cfg.max_segment_chars,
                                cfg.first_segment_morae)
    return scheduler.submit(segments, voice, text=cleaned, **kwargs)
