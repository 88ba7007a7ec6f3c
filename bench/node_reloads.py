# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""RSS of a real ``tts_node`` across lifecycle reloads, on the benchmark model.

``python bench/node_reloads.py [--recipe full] [--cycles 20] [--threads 2]`` starts
``tts_node`` (``python -m hayakoe_ros.tts_node``, the benchmark's parameters), speaks one
sentence, then runs ``--cycles`` deactivate/cleanup/configure/activate cycles; after each
it speaks the sentence again and reads the node's ``VmRSS`` and ``VmHWM``
(``/proc/<pid>/status``). One JSON line per cycle goes to stdout as it is measured, a
summary (growth of the largest RSS over the first cycle's) at the end. MB = 10**6 bytes.
The tiny-model version of the same check is ``test/test_node_memory.py``; this one is
not part of ``make bench`` (each reload of the full-size model takes 25-45 s here).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import sys
import time
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tools import dds_domain  # noqa: E402

from bench.node_driver import BenchClient, NodeProcess, read_vm_kib  # noqa: E402
from bench.run import hayakoe_params  # noqa: E402
from bench.texts import benchmark_texts  # noqa: E402


def change_state(client: BenchClient, node: NodeProcess, transition_id: int,
                 timeout: float = 600.0) -> None:
    """Request a lifecycle transition; raise unless it succeeds within ``timeout`` s."""
    from lifecycle_msgs.srv import ChangeState

    srv: Any = client.node.create_client(ChangeState,
                                         node.topic(f'{node.name}/change_state'))
    try:
        if not srv.wait_for_service(timeout_sec=30.0):
            raise RuntimeError('no change_state service')
        req = ChangeState.Request()
        req.transition.id = transition_id
        future = srv.call_async(req)
        deadline = time.monotonic() + timeout
        while not future.done():
            if time.monotonic() > deadline:
                raise RuntimeError(f'transition {transition_id}: no answer in {timeout} s')
            time.sleep(0.05)
        result: Any = future.result()
        if not result.success:
            raise RuntimeError(f'transition {transition_id} failed:\n{node.log()[-3000:]}')
    finally:
        client.node.destroy_client(srv)


def main(argv=None) -> int:
    """Run the cycles; print one JSON line per cycle and a summary line."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--recipe', default='full', choices=('full', 'tiny'))
    parser.add_argument('--cycles', type=int, default=20)
    parser.add_argument('--threads', type=int, default=2)
    args = parser.parse_args(argv)
    import rclpy
    from lifecycle_msgs.msg import Transition

    from tools.random_model import cached_model

    speaker = {'full': 'full-jp', 'tiny': 'tiny-jp'}[args.recipe]
    cache = Path(os.environ.get('HAYAKOE_ROS_CACHE', REPO / '.cache')) / 'models'
    root = cached_model(cache, args.recipe, speaker)
    text = benchmark_texts()[1]
    os.environ.setdefault('ROS_DOMAIN_ID', str(dds_domain.claim()))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    rclpy.init()
    node = NodeProcess(hayakoe_params(root, speaker, args.threads), timeout=900.0)
    client = BenchClient(node, 'reload_client')
    rss = []
    try:
        client.speak_topic(text)
        print(json.dumps({'cycle': 0, 'rss_kib': read_vm_kib(node.pid, 'VmRSS'),
                          'hwm_kib': read_vm_kib(node.pid, 'VmHWM')}), flush=True)
        for cycle in range(1, args.cycles + 1):
            t0 = time.monotonic()
            for transition in (Transition.TRANSITION_DEACTIVATE,
                               Transition.TRANSITION_CLEANUP,
                               Transition.TRANSITION_CONFIGURE,
                               Transition.TRANSITION_ACTIVATE):
                change_state(client, node, transition)
            reload_s = time.monotonic() - t0
            client._wait_matched()  # the text subscription was re-created
            spoken = client.speak_topic(text)
            rss.append(read_vm_kib(node.pid, 'VmRSS'))
            print(json.dumps({'cycle': cycle, 'reload_s': round(reload_s, 1),
                              'audio_s': round(spoken['audio_s'], 2), 'rss_kib': rss[-1],
                              'hwm_kib': read_vm_kib(node.pid, 'VmHWM')}), flush=True)
        mb = [round(k * 1024 / 1e6) for k in rss]
        print(json.dumps({'rss_mb': mb, 'growth_over_first': (max(rss) - rss[0]) / rss[0],
                          'last_over_first': (rss[-1] - rss[0]) / rss[0],
                          'hwm_mb': round(read_vm_kib(node.pid, 'VmHWM') * 1024 / 1e6)}),
              flush=True)
    finally:
        client.close()
        node.stop()
        rclpy.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
