# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Start ``tts_fleet``: ``ros2 launch hayakoe_ros fleet.launch.py robots:='[r1, r2]'``.

One process loads the model once and serves each robot at ``<namespace>/<robot>``
(``text``, ``say``, ``audio``, ``marks``, ``speaking``, ``stop``), the tts_node interfaces
there; ``namespace`` defaults to ``fleet``, so robot r1's action is ``/fleet/r1/say``. A
robot plays ``/fleet/r1/audio`` with ``player_node`` (remap its ``audio``).

Parameters come from ``config/tts.yaml`` (or ``params_file:=``; a file may also set one
robot's live parameters under ``/fleet/r1/tts_node``); the engine arguments given on the
command line override the file. The process is started again when it dies
(``respawn:=true``); a clean exit ends the launch, and so does a start that failed
(exit code 78: an invalid parameter, a model that does not load), which a respawn
would only repeat.
"""

import functools

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, LogInfo, OpaqueFunction
from launch.actions import RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode
from launch_ros.substitutions import FindPackageShare
import yaml

# Launch arguments that override a fleet parameter when given (empty = keep the params
# file's), with the parameter's type: launch arguments are strings.
PARAMETER_ARGUMENTS = {
    'engine': (str, "Speech engine: 'hayakoe' or 'openjtalk'."),
    'fallback_engine': (str, "Engine used when 'engine' fails to load: 'openjtalk' or "
                             "'none'."),
    'device': (str, "hayakoe device: 'cpu' (ONNX Runtime) or 'cuda' (PyTorch)."),
    'speaker': (str, 'hayakoe speaker name, e.g. jvnv-F1-jp.'),
    'speaker_source': (str, 'Speaker files URI: hf://user/repo, file:///path or s3://...'),
    'bert_source': (str, 'BERT/tokenizer URI: hf://user/repo, file:///path or s3://...'),
    'cache_dir': (str, 'hayakoe download cache directory.'),
    'num_threads': (int, 'ONNX Runtime intra-op threads per session (0 = default).'),
    'output_rate': (int, "Sample rate of every robot's audio (Hz); 0 = the engine's."),
}

#: hayakoe_ros.node.runner.EXIT_NOT_STARTED: the node could not start (invalid parameters,
#: arguments rcl refuses, a model that does not load); not respawned.
NOT_STARTED = 78


def typed(name: str, kind: type, text: str):
    """Convert a launch argument's string to the parameter's type."""
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f'launch argument {name}:={text!r}: expected {kind.__name__}') from None


def robot_list(text: str) -> list:
    """``robots:='[r1, r2]'`` (or ``r1,r2``) as a list of names; the node checks them."""
    value = yaml.safe_load(text) if text.strip().startswith('[') else [
        part.strip() for part in text.split(',') if part.strip()]
    if not isinstance(value, list):
        raise ValueError(f'launch argument robots:={text!r}: expected a list, e.g. [r1, r2]')
    return [str(v) for v in value]


def _fleet(context, *args, **kwargs):
    overrides: dict = {'robots': robot_list(LaunchConfiguration('robots').perform(context))}
    for name, (kind, _) in PARAMETER_ARGUMENTS.items():
        value = LaunchConfiguration(name).perform(context)
        if value != '':
            overrides[name] = typed(name, kind, value)
    respawn = LaunchConfiguration('respawn').perform(context).strip().lower() == 'true'
    fleet = LifecycleNode(
        package='hayakoe_ros',
        executable='tts_fleet',
        name='tts_fleet',
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        parameters=[LaunchConfiguration('params_file'), overrides],
        respawn=respawn,
        respawn_delay=float(LaunchConfiguration('respawn_delay').perform(context)),
    )
    return [RegisterEventHandler(OnProcessExit(
        target_action=fleet, on_exit=functools.partial(_on_exit, respawn))), fleet]


def _on_exit(respawn, event, context):
    if event.returncode == NOT_STARTED:  # a respawn would fail the same way
        return None if context.is_shutdown else [
            LogInfo(msg=f'tts_fleet could not start (exit code {NOT_STARTED}): not '
                        'started again; ending the launch'),
            EmitEvent(event=Shutdown(reason='tts_fleet could not start'))]
    if event.returncode == 0:
        return None if context.is_shutdown else [
            EmitEvent(event=Shutdown(reason='tts_fleet exited'))]
    then = 'starting it again' if respawn else 'not started again (respawn:=false)'
    return [LogInfo(msg=f'tts_fleet died (exit code {event.returncode}); {then}')]


def generate_launch_description():
    """Declare every argument (documented for --show-args) and the fleet node."""
    default_params = PathJoinSubstitution(
        [FindPackageShare('hayakoe_ros'), 'config', 'tts.yaml'])
    arguments = [
        DeclareLaunchArgument('robots', description='Robots served, e.g. [r1, r2]: each '
                                                    'gets <namespace>/<robot>/say, audio...'),
        DeclareLaunchArgument('params_file', default_value=default_params,
                              description='YAML file with the parameters (every node).'),
        DeclareLaunchArgument('namespace', default_value='fleet',
                              description='Namespace of the fleet; robots are under it.'),
        DeclareLaunchArgument('respawn', default_value='true',
                              description='Start tts_fleet again when its process dies '
                                          '(true/false); a clean exit, or a start that '
                                          'failed (exit code 78), ends the launch.'),
        DeclareLaunchArgument('respawn_delay', default_value='1.0',
                              description='Seconds before tts_fleet is started again.'),
    ]
    arguments += [DeclareLaunchArgument(name, default_value='',
                                        description=text + ' Empty: from params_file.')
                  for name, (_, text) in PARAMETER_ARGUMENTS.items()]
    return LaunchDescription(arguments + [OpaqueFunction(function=_fleet)])
