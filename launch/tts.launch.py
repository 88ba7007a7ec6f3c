# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Start ``tts_node``: ``ros2 launch hayakoe_ros tts.launch.py [arg:=value ...]``.

``play:=true`` starts ``player_node`` beside it (same namespace, same ``audio`` remap),
which plays the audio on the robot's speaker (``player_device:=`` picks the device).

``tts_node`` is started again when its process dies (``respawn:=true``, the default;
after ``respawn_delay`` s); its ``/diagnostics`` then count the restarts. A clean exit
(the lifecycle shutdown transition, SIGINT, SIGTERM) ends the launch, ``player_node``
included, and so does a node that could not start (exit code 78: an invalid parameter or
argument, a model that does not load; ``player_node``'s too), which a respawn would only
repeat.

Parameters come from ``config/tts.yaml`` (or ``params_file:=``); any voice/engine argument
given on the command line overrides the file. ``ros2 launch hayakoe_ros tts.launch.py
--show-args`` lists every argument.
"""

import functools

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction
from launch.actions import LogInfo, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode
from launch_ros.substitutions import FindPackageShare

# Launch arguments that override a parameter when given (empty = keep the params file's),
# with the parameter's type: launch arguments are strings, the node's parameters are typed.
PARAMETER_ARGUMENTS = {
    'engine': (str, "Speech engine: 'hayakoe' or 'openjtalk'."),
    'fallback_engine': (str, "Engine used when 'engine' fails to load: 'openjtalk' or "
                             "'none'."),
    'device': (str, "hayakoe device: 'cpu' (ONNX Runtime) or 'cuda' (PyTorch)."),
    'compile': (bool, 'CUDA only: torch.compile the BERT (true/false).'),
    'cudnn': (bool, 'CUDA only: run the convolutions through cuDNN (true/false).'),
    'speaker': (str, 'hayakoe speaker name, e.g. jvnv-F1-jp.'),
    'speaker_source': (str, 'Speaker files URI: hf://user/repo, file:///path or s3://...'),
    'bert_source': (str, 'BERT/tokenizer URI: hf://user/repo, file:///path or s3://...'),
    'cache_dir': (str, 'hayakoe download cache directory.'),
    'num_threads': (int, 'ONNX Runtime intra-op threads per session (0 = default).'),
    'style': (str, 'Voice style name, e.g. Neutral.'),
    'rate': (float, 'Speaking-rate multiplier (2.0 = twice as fast).'),
    'volume': (float, 'Linear gain of the voice (1.0 = model level).'),
    'queue_policy': (str, "'enqueue' (FIFO), 'interrupt' (new speech cancels the current "
                          "one) or 'replace' (newest wins: the queue is dropped too)."),
    'chunk': (int, 'Frames per audio message.'),
    'output_rate': (int, "Sample rate of the published audio (Hz); 0 = the engine's own."),
    'frame_id': (str, 'header.frame_id of audio messages.'),
    'autostart': (bool, 'Configure and activate without a lifecycle manager (true/false).'),
}

# Launch arguments of player_node (play:=true): argument -> (parameter, type, help).
PLAYER_ARGUMENTS = {
    'player_device': ('device', str, "Output device: '' = default (the sound server), or an "
                                     "index / part of a name from 'python3 -m sounddevice'."),
    'player_latency': ('latency', float, 'Output latency asked of the device (s).'),
    'player_volume': ('volume', float, 'Linear gain of the played sound.'),
    'player_buffer': ('buffer', float, 'Jitter buffer before an utterance plays (s).'),
    'player_device_rate': ('device_rate', int, "Device rate (Hz); 0 = the stream's own."),
}

# An action is a set of services and topics. rcl remaps action names as a whole only
# since Kilted (ros2/rcl#1170); on Humble and Jazzy its parts must be remapped one by one.
# On Kilted these extra rules never match (the action name is remapped first): harmless.
_ACTION_PARTS = ('_action/send_goal', '_action/cancel_goal', '_action/get_result',
                 '_action/feedback', '_action/status')

#: hayakoe_ros.node.runner.EXIT_NOT_STARTED: the node could not start (invalid parameters,
#: arguments rcl refuses, a model that does not load); not respawned.
NOT_STARTED = 78


def typed(name: str, kind: type, text: str):
    """Convert a launch argument's string to the parameter's type (bool: true/false)."""
    if kind is bool:
        if text.strip().lower() not in ('true', 'false'):
            raise ValueError(f"launch argument {name}:={text!r}: expected 'true' or 'false'")
        return text.strip().lower() == 'true'
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f'launch argument {name}:={text!r}: expected {kind.__name__}') from None


def node_logger_name(namespace: str, name: str) -> str:
    """Return rcl's logger name of node ``name`` in ``namespace`` ('/a/b', 'n' -> 'a.b.n')."""
    parts = [p for p in namespace.split('/') if p] + [name]
    return '.'.join(parts)


def _node(context, *args, **kwargs):
    overrides = {}
    for name, (kind, _) in PARAMETER_ARGUMENTS.items():
        value = LaunchConfiguration(name).perform(context)
        if value != '':
            overrides[name] = typed(name, kind, value)
    say = LaunchConfiguration('say_action').perform(context)
    remappings = [
        ('text', LaunchConfiguration('text_topic')),
        ('audio', LaunchConfiguration('audio_topic')),
        ('say', say),
    ]
    if say != 'say':
        remappings += [(f'say/{part}', f'{say}/{part}') for part in _ACTION_PARTS]
    # The level applies to the node's logger (and its children), not to every logger of
    # the process: a bare `--log-level debug` would add hundreds of rcl/rmw lines.
    level = LaunchConfiguration('log_level').perform(context)
    logger = node_logger_name(LaunchConfiguration('namespace').perform(context),
                              LaunchConfiguration('node_name').perform(context))
    nodes = []
    namespace = LaunchConfiguration('namespace').perform(context)
    if typed('play', bool, LaunchConfiguration('play').perform(context)):
        player_params = {}
        for arg, (name, kind, _) in PLAYER_ARGUMENTS.items():
            value = LaunchConfiguration(arg).perform(context)
            if value != '':
                player_params[name] = typed(arg, kind, value)
        player = LifecycleNode(
            package='hayakoe_ros',
            executable='player_node',
            name='player_node',
            namespace=LaunchConfiguration('namespace'),
            output='screen',
            parameters=[player_params],
            remappings=[('audio', LaunchConfiguration('audio_topic'))],
            arguments=['--ros-args', '--log-level',
                       f"{node_logger_name(namespace, 'player_node')}:={level}"],
        )
        # play:=true asked for sound: a player that cannot start (no such device, an
        # invalid parameter) ends the launch rather than leave a robot that speaks unheard.
        nodes += [RegisterEventHandler(OnProcessExit(target_action=player,
                                                     on_exit=_on_player_exit)), player]
    respawn = typed('respawn', bool, LaunchConfiguration('respawn').perform(context))
    tts_node = LifecycleNode(
        package='hayakoe_ros',
        executable='tts_node',
        name=LaunchConfiguration('node_name'),
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        parameters=[LaunchConfiguration('params_file'), overrides],
        remappings=remappings,
        arguments=['--ros-args', '--log-level', f'{logger}:={level}'],
        respawn=respawn,
        respawn_delay=typed('respawn_delay', float,
                            LaunchConfiguration('respawn_delay').perform(context)),
    )
    # A clean exit ends the launch (player_node has nothing to play once tts_node is
    # gone); a death is followed by the respawn, which waits respawn_delay for this.
    nodes.append(RegisterEventHandler(OnProcessExit(
        target_action=tts_node, on_exit=functools.partial(_on_tts_exit, respawn))))
    return nodes + [tts_node]


def _not_started(name: str, context) -> list:
    return [] if context.is_shutdown else [
        LogInfo(msg=f'{name} could not start (exit code {NOT_STARTED}): not started '
                    'again; ending the launch'),
        EmitEvent(event=Shutdown(reason=f'{name} could not start'))]


def _on_player_exit(event, context):
    return _not_started('player_node', context) if event.returncode == NOT_STARTED else None


def _on_tts_exit(respawn, event, context):
    if event.returncode == NOT_STARTED:
        # It could not start (its error is above): a respawn would fail the same way,
        # every respawn_delay, for ever.
        return _not_started('tts_node', context)
    if event.returncode == 0:
        # After SIGINT the launch is shutting down already: a second Shutdown event makes
        # launch_ros raise ('Cannot shutdown a ROS adapter that is not running').
        return None if context.is_shutdown else [
            EmitEvent(event=Shutdown(reason='tts_node exited'))]
    then = 'starting it again' if respawn else 'not started again (respawn:=false)'
    return [LogInfo(msg=f'tts_node died (exit code {event.returncode}); {then}')]


def generate_launch_description():
    """Declare every argument (documented for --show-args) and the node."""
    default_params = PathJoinSubstitution(
        [FindPackageShare('hayakoe_ros'), 'config', 'tts.yaml'])
    arguments = [
        DeclareLaunchArgument('params_file', default_value=default_params,
                              description='YAML file with the node parameters.'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='Namespace of the node and its topics.'),
        DeclareLaunchArgument('node_name', default_value='tts_node',
                              description='Node name.'),
        DeclareLaunchArgument('text_topic', default_value='text',
                              description='Remap of the input text topic.'),
        DeclareLaunchArgument('audio_topic', default_value='audio',
                              description='Remap of the output audio topic.'),
        DeclareLaunchArgument('say_action', default_value='say',
                              description='Remap of the say action.'),
        DeclareLaunchArgument('log_level', default_value='info',
                              description="Level of the node's logger: debug, info, warn, "
                                          'error (rcl and rmw keep theirs).'),
        DeclareLaunchArgument('respawn', default_value='true',
                              description='Start tts_node again when its process dies '
                                          '(true/false); a clean exit, or a start that '
                                          'failed (exit code 78), ends the launch.'),
        DeclareLaunchArgument('respawn_delay', default_value='1.0',
                              description='Seconds before tts_node is started again.'),
        DeclareLaunchArgument('play', default_value='false',
                              description='Also start player_node: play the audio on this '
                                          "machine's speaker (true/false)."),
    ]
    arguments += [DeclareLaunchArgument(arg, default_value='',
                                        description=text + ' Empty: the default.')
                  for arg, (_, _, text) in PLAYER_ARGUMENTS.items()]
    arguments += [DeclareLaunchArgument(name, default_value='',
                                        description=text + ' Empty: from params_file.')
                  for name, (_, text) in PARAMETER_ARGUMENTS.items()]
    return LaunchDescription(arguments + [OpaqueFunction(function=_node)])
