# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""``/diagnostics`` of ``tts_node``: a snapshot record and a pure status builder."""

from __future__ import annotations

import dataclasses
import threading
from typing import Optional

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

from ..speech import Outcome


@dataclasses.dataclass
class SpeechStats:
    """Counters of one configured engine; reset together at every configure.

    Attributes:
        spoken: Utterances that played to the end.
        failed: Utterances aborted by an error (not counting cancels).
        canceled: Utterances canceled (client, stop, interrupt, deactivation).
        last_error: The most recent error given to a caller ('' if none).
        last_rtf: Real-time factor of the last finished utterance (synthesis s / audio s).
        last_ttfa_s: Time to first audio of the last finished utterance (s).
        last_start_delay_s: The gapless start delay chosen for it (s).
        last_underruns: Times its playback ran dry.
    """

    spoken: int = 0
    failed: int = 0
    canceled: int = 0
    last_error: str = ''
    last_rtf: Optional[float] = None
    last_ttfa_s: Optional[float] = None
    last_start_delay_s: Optional[float] = None
    last_underruns: Optional[int] = None
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False,
                                              compare=False)

    def record(self, utt, source: str) -> str:
        """Count a finished utterance; return its one log line (any thread).

        Args:
            utt: A finished :class:`~hayakoe_ros.speech.Utterance`.
            source: Where it came from (``topic`` or ``goal``).

        Returns:
            ``utterance <n> (<source> <id>) '<first 20 characters>': <n> segment(s), <s> s
            audio, TTFA <s> s (start delay <s> s), RTF <x>, <n> underrun(s): <outcome>``
            and the reason when it did not succeed; then ``[<voice>]`` when a host was
            involved (``Utterance.spoken_by``: which voice spoke it and why it switched).
        """
        with self._lock:  # utterances end on the scheduler's threads and on cancelers'
            if utt.outcome is Outcome.SUCCEEDED:
                self.spoken += 1
            elif utt.outcome is Outcome.CANCELED:
                self.canceled += 1
            else:
                self.failed += 1
                self.last_error = utt.error
            if utt.audio_s:
                self.last_rtf, self.last_ttfa_s = utt.rtf, utt.ttfa_s
                self.last_start_delay_s = utt.start_delay_s
                self.last_underruns = utt.underruns
        head = utt.text[:20] + ('…' if len(utt.text) > 20 else '')
        ttfa = f'{utt.ttfa_s:.3f} s' if utt.ttfa_s is not None else '-'
        rtf = f'{utt.rtf:.3f}' if utt.rtf is not None else '-'
        line = (f'utterance {utt.id} ({source} {utt.key}) {head!r}: '
                f'{len(utt.segments)} segment(s), '
                f'{utt.audio_s:.2f} s audio, TTFA {ttfa} (start delay '
                f'{utt.start_delay_s:.3f} s), RTF {rtf}, {utt.underruns} underrun(s): '
                f'{utt.outcome.value}')
        line += f': {utt.error}' if utt.error else ''
        # Which voice spoke it, when a host may speak for this node (and why it switched).
        return line + (f' [{utt.spoken_by}]' if 'host' in utt.spoken_by else '')


@dataclasses.dataclass
class Snapshot:
    """Everything the status reports, read once per period.

    Attributes:
        name: Status name (node's fully qualified name + ``: speech synthesis``).
        hardware_id: The compute device.
        lifecycle_state: unconfigured, inactive, active or finalized.
        engine: Engine speaking ('' before configure); ``voice``: the voice speaking
            (the fallback's when it is in use); ``device``; ``sample_rate`` (Hz, 0 if none).
        speaking: Whether audio is being published.
        queue_depth: Utterances waiting.
        stats: The engine's :class:`SpeechStats`.
        fallback_reason: Why the fallback voice speaks ('' if it does not).
        engine_error: Why no engine could be loaded ('' if none failed).
        pipeline_failure: Why the speech pipeline stopped ('' while healthy).
        restarts: Times the node came back after its process died
            (:class:`~hayakoe_ros.node.restarts.RunRecord`).
        twins: Other nodes of this node's name on its domain (:func:`twin_count`).
        extra: More key/values (e.g. from the scheduler), reported as given.
    """

    name: str
    hardware_id: str
    lifecycle_state: str
    engine: str = ''
    voice: str = ''
    device: str = ''
    sample_rate: int = 0
    speaking: bool = False
    queue_depth: int = 0
    stats: SpeechStats = dataclasses.field(default_factory=SpeechStats)
    fallback_reason: str = ''
    engine_error: str = ''
    pipeline_failure: str = ''
    restarts: int = 0
    twins: int = 0
    extra: dict = dataclasses.field(default_factory=dict)


def twin_count(node) -> int:
    """Other nodes with ``node``'s name and namespace that its ROS graph knows of.

    ROS 2 does not refuse a second node of one name: both then serve the same goals and
    topics, and a robot speaks every text twice. Read from the local graph cache (no
    network call), as discovery has seen it so far.
    """
    me = (node.get_name(), node.get_namespace())
    return max(0, sum(1 for n in node.get_node_names_and_namespaces() if tuple(n) == me) - 1)


def rate_values(rates, engine) -> dict:
    """``rtf_estimate`` and ``decoder_rtf_estimate`` of the engine speaking.

    Args:
        rates: The scheduler's :class:`~hayakoe_ros.speech.gapless.RateEstimator`, or None.
        engine: The engine speaking, or None.

    Returns:
        As text: synthesis seconds per audio second, exponentially weighted over its
        segments, and the decoder's alone (the windows after a segment's first); each ''
        until measured (the decoder's: until a segment came in windows), or without an
        engine.
    """
    if rates is None or engine is None:
        return {'rtf_estimate': '', 'decoder_rtf_estimate': ''}
    estimate = rates.estimate(f'{engine.name}/{engine.voice}')
    return {'rtf_estimate': _fmt(estimate.rtf if estimate else None),
            'decoder_rtf_estimate': _fmt(estimate.decoder_rtf if estimate else None)}


def _fmt(value: Optional[float]) -> str:
    return '' if value is None else f'{value:.3f}'


def build_status(snap: Snapshot) -> DiagnosticStatus:
    """Build the ``DiagnosticStatus`` of a snapshot.

    Level: ERROR when the engine failed to load, the pipeline failed or another node of
    this name runs on the domain; WARN while the fallback voice speaks, while a fleet
    robot's host failed its last utterance (``offboard_failures_in_a_row`` above 0:
    the host may still be ``found``, DDS keeps a dead participant up to its lease, 20 s
    on Fast DDS) or after the process died and was started again; OK otherwise.
    """
    stats = snap.stats
    values = {
        'engine': snap.engine,
        'voice': snap.voice,
        'device': snap.device,
        'lifecycle_state': snap.lifecycle_state,
        'fallback_in_use': str(bool(snap.fallback_reason)).lower(),
        'sample_rate': str(snap.sample_rate) if snap.sample_rate else '',
        'queue_depth': str(snap.queue_depth),
        'speaking': str(snap.speaking).lower(),
        'utterances_spoken': str(stats.spoken),
        'utterances_failed': str(stats.failed),
        'utterances_canceled': str(stats.canceled),
        'last_rtf': _fmt(stats.last_rtf),
        'last_ttfa_s': _fmt(stats.last_ttfa_s),
        'last_start_delay_s': _fmt(stats.last_start_delay_s),
        'last_underruns': '' if stats.last_underruns is None else str(stats.last_underruns),
        'last_error': stats.last_error,
        'nodes_of_this_name': str(snap.twins + 1),
    }
    values.update({str(k): str(v) for k, v in snap.extra.items()})
    status = DiagnosticStatus(name=snap.name, hardware_id=snap.hardware_id)
    status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
    if snap.engine_error:
        status.level = DiagnosticStatus.ERROR
        status.message = f'engine failed: {snap.engine_error}'
    elif snap.pipeline_failure:
        status.level = DiagnosticStatus.ERROR
        status.message = f'speech pipeline failed: {snap.pipeline_failure}'
    elif snap.twins:
        status.level = DiagnosticStatus.ERROR
        status.message = (f'{snap.twins + 1} nodes of this name on this ROS domain: each '
                          'speaks every goal and text')
    elif snap.fallback_reason:
        status.level = DiagnosticStatus.WARN
        status.message = f'fallback voice in use: {snap.fallback_reason}'
    elif values.get('offboard_failures_in_a_row', '0') not in ('', '0'):
        status.level = DiagnosticStatus.WARN
        status.message = (f"{snap.lifecycle_state}; the host {values.get('offboard_action')} "
                          f"failed {values['offboard_failures_in_a_row']} time(s) in a row "
                          f"(last: {values.get('offboard_last_failure', '')}): speaking "
                          'onboard')
    elif snap.restarts:
        status.level = DiagnosticStatus.WARN
        status.message = (f'{snap.lifecycle_state}; started again after its process died '
                          f'({snap.restarts} time(s))')
    else:
        status.level = DiagnosticStatus.OK
        status.message = snap.lifecycle_state + (', speaking' if snap.speaking else '')
        if snap.extra.get('loading'):
            status.message += f": loading {snap.extra['loading']}"
    return status
