# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Shared pytest fixtures for the hayakoe_ros tests."""

import importlib.util
import os
from pathlib import Path
import sys

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # tools/ is a top-level package, not installed
    sys.path.insert(0, str(REPO_ROOT))

# The node's engine loader keeps torch out of a process that has not imported it
# (hayakoe_load.keep_torch_out), and some tests run a node in this process; this process
# also builds the test models with torch and runs the CUDA-path tests, so it imports
# torch first where it is installed. The node and fleet processes the tests start run
# without it, as on a Raspberry Pi.
if importlib.util.find_spec('torch') is not None:
    import torch  # noqa: F401


#: The test kinds; every test module sets ``pytestmark`` to one of them (test_lint checks
#: it). ``pytest -m unit`` (or ``ros``, ``lint``) selects one kind.
MARKERS = {
    'unit': 'no ROS: engines, speech pipeline, pure functions (fast)',
    'ros': 'real rclpy nodes or processes over the rmw, colcon/ament layout',
    'lint': 'static checks: ruff, mypy, package.xml, licence headers',
}

#: Markers beside the kind. ``long`` marks a test (or a module) that takes long on a
#: 2-core machine and is not the only test of what it shows: ``make test`` leaves the long
#: ones out (``--long=exclude``), so that it stays a few minutes, and ``make test-long``
#: runs only them (``--long=only``); CI runs both. Plain ``pytest`` runs everything.
#: ``alone`` marks a test whose real-time margin (audio played without underruns, a chunk
#: within 50 ms of its time, a thread woken at once) assumes no other test process
#: computes beside it: ``make test`` and ``make test-long`` run the others in parallel
#: processes (``--alone=exclude``), then these in one process (``--alone=only``).
EXTRA_MARKERS = {
    'long': 'slow; left out by make test, run by make test-long (CI runs both)',
    'alone': 'real-time margins; make runs it after the parallel part, in one process',
}

#: The options that deselect by marker: option -> marker.
_SELECTING = {'--long': 'long', '--alone': 'alone'}


def pytest_addoption(parser):
    """``--long`` and ``--alone`` (``include|exclude|only``): the tests marked so."""
    parser.addoption('--long', choices=('include', 'exclude', 'only'), default='include',
                     help='tests marked long: run them too (default), leave them out, or '
                          'run only them')
    parser.addoption('--alone', choices=('include', 'exclude', 'only'), default='include',
                     help='tests marked alone (real-time margins, for one test process): '
                          'run them too (default), leave them out, or run only them')


def pytest_configure(config):
    """Register the test-kind markers and warning filters for third-party noise.

    Creating an rclpy node imports rosidl_parser, which imports the ``lark-parser`` 0.12
    that the ROS 2 wheels depend on; it imports the deprecated ``sre_parse`` and
    ``sre_constants`` modules (DeprecationWarning on Python 3.11+).
    """
    for name, text in {**MARKERS, **EXTRA_MARKERS}.items():
        config.addinivalue_line('markers', f'{name}: {text}')
    config.addinivalue_line(
        'filterwarnings',
        r'ignore:module .sre_(parse|constants). is deprecated:DeprecationWarning')


def pytest_collection_modifyitems(config, items):
    """Deselect the tests marked ``long`` (``--long=exclude``) or all others (``only``).

    ``--alone`` likewise for the tests marked ``alone``. Deselection, not a skip: the
    summary counts them apart, and a selection by kind (``-m unit``) still applies on top.
    """
    for option, marker in _SELECTING.items():
        mode = config.getoption(option)
        if mode == 'include':
            continue
        keep, drop = [], []
        for item in items:
            marked = item.get_closest_marker(marker) is not None
            (keep if marked == (mode == 'only') else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep


def pytest_sessionstart(session):
    """In a parallel run's controller, build the tiny test model before the workers start.

    Otherwise on a fresh machine every worker builds the same tree at once (each about 30
    s of torch at 2 threads) and all but one throw theirs away. Workers and one-process
    runs build it on first use instead (:func:`tiny_model_root`).
    """
    config = session.config
    if hasattr(config, 'workerinput') or not getattr(config.option, 'numprocesses', None) \
            or os.environ.get('HAYAKOE_ROS_TINY_MODEL'):
        return
    _cached_tiny_model()


def pytest_sessionfinish(session, exitstatus):
    """No test left by ``--alone=only`` (e.g. ``-m lint``) is a pass, not pytest's 5.

    ``make test`` always runs that second part; a selection without such tests must not
    fail it.
    """
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED \
            and session.config.getoption('--alone') == 'only':
        session.exitstatus = pytest.ExitCode.OK


@pytest.fixture(scope='session', autouse=True)
def ros_test_domain():
    """Give this test session its own DDS domain, on the loopback only.

    ROS_DOMAIN_ID is one that no other run on this machine holds (:mod:`tools.dds_domain`:
    a lock per domain, held for the session), so parallel runs never see each other's
    topics; ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST keeps discovery traffic on this host.
    Subprocesses the tests start inherit both.  Yields the domain id; at the end removes
    the restart records (:mod:`hayakoe_ros.node.restarts`) of this session's killed nodes.
    """
    from hayakoe_ros.node.restarts import record_dir
    from tools import dds_domain

    saved = {k: os.environ.get(k) for k in ('ROS_DOMAIN_ID', 'ROS_AUTOMATIC_DISCOVERY_RANGE')}
    domain_id = dds_domain.claim()
    os.environ['ROS_DOMAIN_ID'] = str(domain_id)
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    yield domain_id
    for left in Path(record_dir()).glob(f'd{domain_id}_t{os.getpid()}_*.json'):
        left.unlink(missing_ok=True)
    os.environ.update({k: v for k, v in saved.items() if v is not None})
    for key in (k for k, v in saved.items() if v is None):
        os.environ.pop(key, None)


def model_cache_dir():
    """Return where built test models are cached ($HAYAKOE_ROS_CACHE or .cache)."""
    return Path(os.environ.get('HAYAKOE_ROS_CACHE', REPO_ROOT / '.cache')) / 'models'


def _cached_tiny_model() -> Path:
    """The tiny model's tree under :func:`model_cache_dir`, built there on first use."""
    from tools.random_model import cached_model

    return cached_model(model_cache_dir(), 'tiny', 'tiny-jp')


@pytest.fixture(scope='session')
def tiny_model_root():
    """Root of the tiny random-weight hayakoe model tree (built once, then cached).

    Load it with ``TTS(device='cpu', bert_source=f'file://{root}', ...)`` and
    ``.load('tiny-jp', source=f'file://{root}')``; see tools/random_model/.
    $HAYAKOE_ROS_TINY_MODEL, when set, names a tree built beforehand, used as is: the
    emulated aarch64 leg (scripts/test_aarch64.sh) has no torch to build one.
    """
    prebuilt = os.environ.get('HAYAKOE_ROS_TINY_MODEL')
    if prebuilt:
        root = Path(prebuilt)
        if not (root / 'random_model.json').is_file():
            pytest.fail(f'HAYAKOE_ROS_TINY_MODEL={prebuilt} is not a built model tree')
        return root
    return _cached_tiny_model()


@pytest.fixture
def hayakoe_clean_globals():
    """Unload hayakoe's global BERT tokenizer/model before and after the test.

    hayakoe keeps them as process-wide singletons and reuses whatever is
    loaded, so a test that loads a model tree must not inherit another's.
    """
    from tools.random_model import unload_hayakoe_globals

    unload_hayakoe_globals()
    yield
    unload_hayakoe_globals()


@pytest.fixture(scope='session')
def tiny_engine(tiny_model_root):
    """A loaded, warm :class:`HayakoeEngine` on the tiny model (one ONNX thread)."""
    from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine

    engine = HayakoeEngine('tiny-jp', speaker_source=f'file://{tiny_model_root}',
                           bert_source=f'file://{tiny_model_root}', num_threads=1)
    engine.warmup()
    yield engine
    engine.close()


@pytest.fixture
def hayakoe_front_end(tiny_model_root):
    """The hayakoe engine's own normaliser and g2p (``tools.hayakoe_probe.front_end``).

    Its g2p reads a global tokenizer that another test in the same process may have
    unloaded (which tests share a process varies with the parallel run), so it is
    loaded again here, from the tiny model's, for each test.
    """
    from hayakoe_ros.engines import hayakoe_internals
    from tools import hayakoe_probe

    hayakoe_internals.ensure_tokenizer(str(tiny_model_root / 'bert' / 'tokenizer'))
    return hayakoe_probe.front_end


@pytest.fixture(scope='session')
def det_voice():
    """Deterministic voice settings: hayakoe's noise, noise_w and sdp_ratio at 0."""
    from hayakoe_ros.engines import VoiceParams

    return VoiceParams(style='Neutral', noise=0.0, noise_w=0.0, sdp_ratio=0.0)


@pytest.fixture(scope='session')
def openjtalk_engine():
    """The Open JTalk engine, warm."""
    from hayakoe_ros.engines.openjtalk_engine import OpenJTalkEngine

    engine = OpenJTalkEngine()
    engine.warmup()
    return engine


@pytest.fixture
def no_network(monkeypatch):
    """Refuse every socket connection for the duration of the test."""
    import socket

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError('network access is disabled in this test')

    monkeypatch.setattr(socket.socket, 'connect', refuse)
    monkeypatch.setattr(socket.socket, 'connect_ex', refuse)
    monkeypatch.setattr(socket, 'create_connection', refuse)


@pytest.fixture
def rig():
    """The speech scheduler tests' rig (test_scheduler*.py; test/marks_rig.py is the marks').

    ``make(**config) -> (scheduler, recorder, engine, clock, speaking calls)``: a
    ``SpeechScheduler`` with ``SchedulerConfig(**config)`` on a ``ToneEngine`` and a
    ``VirtualClock`` (test/speech_fakes.py), its sink a ``Recorder``
    (test/scheduler_rig.py); each engine is released and each scheduler shut down after.
    """
    from hayakoe_ros.speech import SchedulerConfig, SpeechScheduler
    from scheduler_rig import Recorder
    from speech_fakes import ToneEngine, VirtualClock

    made = []

    def make(**config):
        clock = VirtualClock()
        engine = ToneEngine(clock)
        rec = Recorder()
        speaking = []
        sched = SpeechScheduler(engine, rec, SchedulerConfig(**config),
                                on_speaking=speaking.append, clock=clock, waiter=clock.wait)
        made.append((sched, engine))
        return sched, rec, engine, clock, speaking

    yield make
    for sched, engine in made:
        engine.release()
        sched.shutdown()


@pytest.fixture(scope='session')
def ros_client(ros_test_domain):
    """An rclpy node in the test process, spinning in a background thread."""
    import rclpy

    from ros_utils import Client

    rclpy.init()
    client = Client()
    yield client
    client.close()
    rclpy.shutdown()



@pytest.fixture(scope='module')
def ojt_node():
    """tts_node on the Open JTalk voice with the default chunk (2048) and max_lead_s.

    One process per test module, stopped (and its exit checked) after the module.
    """
    from ros_utils import NodeProcess

    node = NodeProcess({'engine': 'openjtalk'})
    yield node
    assert node.stop() == 0, node.log()


@pytest.fixture
def listen(ojt_node, ros_client):
    """``(audio recorder, MarkRecorder)`` of ``ojt_node``, both matched before the test."""
    import time

    from ros_utils import MarkRecorder

    rec = ros_client.audio_recorder(ojt_node.topic('audio'), node=ojt_node)
    marks = MarkRecorder(ros_client, ojt_node.topic('marks'))
    ros_client.wait_for_subscribers(ojt_node.topic('audio'))
    deadline = time.monotonic() + 10
    while marks.sub.get_publisher_count() < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    yield rec, marks
    ros_client.node.destroy_subscription(rec.sub)
    ros_client.node.destroy_subscription(marks.sub)


@pytest.fixture
def mark_listener(ojt_node, ros_client):
    """A MarkRecorder of ``ojt_node``'s marks, matched before the test."""
    import time

    from ros_utils import MarkRecorder

    marks = MarkRecorder(ros_client, ojt_node.topic('marks'))
    deadline = time.monotonic() + 10
    while marks.sub.get_publisher_count() < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    yield marks
    ros_client.node.destroy_subscription(marks.sub)


@pytest.fixture(scope='module')
def pulse(tmp_path_factory):
    """A PulseAudio server with a null sink (tools/pulse.py), one per test module.

    For the player's sound tests (test_player_sound*.py, helpers in test/pulse_sink.py),
    which skip where PulseAudio is missing.
    """
    from pulse_sink import SINK_RATE
    from tools.pulse import PulseServer

    server = PulseServer(tmp_path_factory.mktemp('pulse'), rate=SINK_RATE)
    yield server
    server.stop()

@pytest.fixture
def netns_link():
    """A host and a robot network namespace joined by a veth link (test/netns.py).

    Multicast is blocked on the link, as on Wi-Fi. Skips where namespaces cannot be made
    (not root, no ``ip``). On teardown the namespaces are removed with every process in
    them, and the test errors if anything of them is left.
    """
    import netns

    with netns.pair() as link:
        yield link
    left = link.leftovers()
    assert not left, f'left behind by the network namespaces: {left}'


@pytest.fixture
def read_only_view(tmp_path):
    """``view(src) -> path``: ``src`` seen through a read-only bind mount (root needed).

    A real read-only file system, as on a robot whose cache lives on a read-only image:
    as root, permission bits would not stop a write. Skips where mounting is refused.
    """
    import subprocess

    mounted = []

    def view(src):
        dst = tmp_path / f'ro-{len(mounted)}'
        dst.mkdir()
        proc = subprocess.run(['mount', '--bind', str(src), str(dst)], capture_output=True,
                              text=True, timeout=30)
        if proc.returncode == 0:
            mounted.append(dst)
            proc = subprocess.run(['mount', '-o', 'remount,bind,ro', str(dst)],
                                  capture_output=True, text=True, timeout=30)
        if proc.returncode:
            pytest.skip(f'cannot make a read-only view: {proc.stderr.strip()}')
        return dst

    yield view
    for dst in mounted:
        subprocess.run(['umount', str(dst)], capture_output=True, timeout=30)


@pytest.fixture
def spawn(netns_link):
    """``spawn(namespace, *args) -> Observer``: an observer there, closed after the test.

    It runs test/netns_observer.py in that namespace with the discovery profile's
    environment (its peer: the host's address from the robot, loopback on the host).
    """
    import functools

    from fleet_net import profile_env
    from netns_observer import Observer

    link = netns_link
    started: list = []

    def start(name: str, *args: str) -> Observer:
        peer = '127.0.0.1' if name == link.host else link.host_ip
        obs = Observer(functools.partial(link.popen, name, env=profile_env(peer)),
                       [*args, '--lifetime', '300'])
        started.append(obs)
        return obs

    yield start
    for obs in started:
        obs.close()
