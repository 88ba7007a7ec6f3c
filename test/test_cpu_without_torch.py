# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""A node whose hayakoe engine runs on ONNX Runtime (device ``cpu``) never loads torch.

On a machine with torch installed (this one: the tests build their models with it), a
``tts_node`` on its default device speaks with no torch library mapped in its process
(its engine loader calls :func:`hayakoe_ros.engines.hayakoe_load.keep_torch_out`), and
an engine built after that call speaks, and says why ``cuda`` then needs a restart; a
node reconfigured from ``cpu`` to ``cuda`` logs that restart.
"""

import json
from pathlib import Path
import subprocess
import sys

import pytest

from ros_utils import tiny_params
from tools.node_process import NodeProcess

pytestmark = pytest.mark.ros

REPO_ROOT = Path(__file__).resolve().parents[1]

#: Builds a CPU engine in a fresh interpreter, speaks, then asks for CUDA; prints JSON.
_CHILD = """
import json, sys
from hayakoe_ros.engines import EngineLoadError
from hayakoe_ros.engines.base import VoiceParams
from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine
from hayakoe_ros.engines.hayakoe_load import check_cuda, keep_torch_out
keep_torch_out()  # as the node's engine loader does for a CPU engine
root = sys.argv[1]
engine = HayakoeEngine('tiny-jp', speaker_source=f'file://{root}',
                       bert_source=f'file://{root}', num_threads=1)
audio = engine.synthesize('こんにちは。', VoiceParams(noise=0.0, noise_w=0.0, sdp_ratio=0.0))
try:
    check_cuda('cuda')
    cuda = ''
except EngineLoadError as exc:
    cuda = str(exc)
print(json.dumps({'samples': int(audio.size), 'peak': float(abs(audio).max()),
                  'torch': repr(sys.modules.get('torch', 'never asked for')),
                  'windowed': engine.windowed, 'cuda': cuda}))
"""


def _torch_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec('torch') is not None


@pytest.mark.long  # about 6 s here; the node without torch stays quick (below)
def test_a_cpu_engine_speaks_without_torch_and_says_cuda_needs_a_restart(tiny_model_root):
    if not _torch_installed():
        pytest.skip('torch is not installed here: nothing to keep out')
    proc = subprocess.run([sys.executable, '-c', _CHILD, str(tiny_model_root)],
                          capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out['torch'] == 'None', out  # marked absent, never imported
    assert out['samples'] > 0 and out['peak'] > 0.0 and out['windowed'], out
    assert 'restart the node' in out['cuda'] and "device 'cpu'" in out['cuda'], out


def _mapped_libraries(pid: int) -> set:
    with open(f'/proc/{pid}/maps', encoding='utf-8') as maps:
        return {line.split()[-1] for line in maps if len(line.split()) >= 6}


def test_a_cpu_node_maps_no_torch_library(tiny_model_root):
    if not _torch_installed():
        pytest.skip('torch is not installed here: nothing to keep out')
    node = NodeProcess(tiny_params(tiny_model_root))
    try:
        libraries = _mapped_libraries(node.pid)
        assert any('onnxruntime' in lib for lib in libraries), sorted(libraries)[:20]
        assert not [lib for lib in libraries if 'libtorch' in lib or '/torch/' in lib]
    finally:
        assert node.stop() == 0, node.log()


@pytest.mark.long  # about 10 s here; the node without torch stays quick (above)
def test_a_cpu_node_reconfigured_to_cuda_says_to_restart(tiny_model_root, ros_client):
    from lifecycle_msgs.msg import Transition
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient

    from ros_utils import change_state, wait_future

    node = NodeProcess(tiny_params(tiny_model_root))
    try:
        assert change_state(ros_client, node, Transition.TRANSITION_DEACTIVATE)
        assert change_state(ros_client, node, Transition.TRANSITION_CLEANUP)
        params = AsyncParameterClient(ros_client.node, node.topic(node.name))
        assert params.wait_for_services(timeout_sec=10)
        result = wait_future(params.set_parameters([Parameter('device', value='cuda')]), 10)
        assert result.results[0].successful, result.results
        mark = node.log_mark()
        assert not change_state(ros_client, node, Transition.TRANSITION_CONFIGURE)
        node.wait_for_log('restart the node', timeout=30, after=mark)
        assert "device 'cuda' needs PyTorch" in node.log()[mark:]
    finally:
        assert node.stop() == 0, node.log()
