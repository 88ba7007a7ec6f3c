# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""tts_node's phrase cache: preloaded phrases are spoken from the cache, as synthesised."""

import time

import numpy as np
import pytest
from action_msgs.msg import GoalStatus

from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler
from ros_utils import CHUNK, NodeProcess, send_goal, tiny_params, wait_future
from tools.submit import submit_text

pytestmark = pytest.mark.ros

PHRASE = '了解しました、すぐに向かいます。'
#: Short segments, so the phrase is several cache entries.
SEGMENT_CHARS = 8


def uncached_audio(engine, voice, text):
    """What the pipeline produces for ``text`` without a cache (pacing off), int16."""
    out = []
    sched = SpeechScheduler(engine, lambda u, c: out.append(c.samples[:c.valid_frames]),
                            SchedulerConfig(pacing=False, chunk_frames=CHUNK,
                                            max_segment_chars=SEGMENT_CHARS))
    try:
        utt = submit_text(sched, text, voice)
        assert utt.wait(60)
        return np.concatenate(out)
    finally:
        sched.shutdown()


def cache_counts(client, node, at_least_hits: int, timeout: float = 15.0) -> dict:
    """``cache_hits``/``cache_misses`` from /diagnostics once hits reach ``at_least_hits``."""
    deadline = time.monotonic() + timeout
    while True:
        values = {kv.key: kv.value for kv in client.diagnostics(node).values}
        if int(values['cache_hits']) >= at_least_hits or time.monotonic() > deadline:
            return values
        time.sleep(0.3)


@pytest.mark.long  # about 15 s here; test_phrase_cache.py is the quick check
def test_preloaded_phrase_is_spoken_from_the_cache(tiny_model_root, ros_client, tiny_engine,
                                                   det_voice, tmp_path):
    node = NodeProcess(tiny_params(
        tiny_model_root, phrase_cache_mb=8, phrase_cache_dir=str(tmp_path),
        max_segment_chars=SEGMENT_CHARS, preload_phrases=f'{PHRASE}|おはようございます。'))
    try:
        log = node.log()
        assert 'phrase cache: preloaded 2/2 phrase(s)' in log, log
        before = cache_counts(ros_client, node, 0)
        assert (before['cache_hits'], before['cache_misses']) == ('0', '0')
        action = ros_client.action_client(node.topic('say'))
        handle, feedback = send_goal(ros_client, action, PHRASE)
        assert wait_future(handle.get_result_async(), 60).status == \
            GoalStatus.STATUS_SUCCEEDED
        got = np.concatenate([np.asarray(f.audio.audio.audio_data.int16_data, np.int16)
                              for _, f in feedback])
        after = cache_counts(ros_client, node, 1)
        segments = int(after['cache_hits'])
        assert segments >= 2 and after['cache_misses'] == '0', after  # no synthesis
        expected = uncached_audio(tiny_engine, det_voice, PHRASE)
        assert np.abs(expected.astype(np.int32)).max() > 100  # real audio
        # The cached segments were decoded whole; without the cache the first segment is
        # decoded in windows, equal to the whole decode within 1e-4 of full scale (3 LSB).
        diff = np.abs(got[:expected.size].astype(np.int32) - expected.astype(np.int32))
        assert got.size >= expected.size and diff.max() <= 3, diff.max()
        assert not got[expected.size:].any()  # only the last chunk's zero padding
        assert len(list(tmp_path.glob('*.npz'))) >= segments  # persisted
    finally:
        assert node.stop() == 0, node.log()
