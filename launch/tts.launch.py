# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Start ``tts_node``: ``ros2 launch hayakoe_ros tts.launch.py [arg:=value ...]``.

Parameters come from ``config/tts.yaml`` (or ``params_file:=``); any voice/engine argument
given on the command line overrides the file. ``ros2 launch hayakoe_ros tts.launch.py
--show-args`` lists every argument.
"""

import yaml
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode
from launch_ros.substitutions import FindPackageShare

# Launch arguments that override a parameter when given (empty = keep the params file's).
PARAMETER_ARGUMENTS = {
    'engine': "Speech engine: 'hayakoe' or 'openjtalk'.",
    'fallback_engine': "Engine used when 'engine' fails to load: 'openjtalk' or 'none'.",
    'device': "hayakoe device: 'cpu' (ONNX Runtime) or 'cuda' (PyTorch).",
    'compile': 'CUDA only: torch.compile the BERT (true/false).',
    'speaker': 'hayakoe speaker name, e.g. jvnv-F1-jp.',
    'speaker_source': 'Speaker files URI: hf://user/repo, file:///path or s3://...',
    'bert_source': 'BERT/tokenizer URI: hf://user/repo, file:///path or s3://...',
    'cache_dir': 'hayakoe download cache directory.',
    'num_threads': 'ONNX Runtime intra-op threads per session (0 = default).',
    'style': 'Voice style name, e.g. Neutral.',
    'rate': 'Speaking-rate multiplier (2.0 = twice as fast).',
    'volume': 'Linear gain of the voice (1.0 = model level).',
    'queue_policy': "'enqueue' (FIFO) or 'interrupt' (new speech cancels the current one).",
    'chunk': 'Frames per audio message.',
    'frame_id': 'header.frame_id of audio messages.',
    'autostart': 'Configure and activate without a lifecycle manager (true/false).',
}


def _node(context, *args, **kwargs):
    overrides = {}
    for name in PARAMETER_ARGUMENTS:
        value = LaunchConfiguration(name).perform(context)
        if value != '':
            overrides[name] = yaml.safe_load(value)
    return [LifecycleNode(
        package='hayakoe_ros',
        executable='tts_node',
        name=LaunchConfiguration('node_name'),
        namespace=LaunchConfiguration('namespace'),
        output='screen',
        parameters=[LaunchConfiguration('params_file'), overrides],
        remappings=[
            ('text', LaunchConfiguration('text_topic')),
            ('audio', LaunchConfiguration('audio_topic')),
            ('say', LaunchConfiguration('say_action')),
        ],
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
    )]


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
                              description='Logger level: debug, info, warn, error.'),
    ]
    arguments += [DeclareLaunchArgument(name, default_value='',
                                        description=text + ' Empty: from params_file.')
                  for name, text in PARAMETER_ARGUMENTS.items()]
    return LaunchDescription(arguments + [OpaqueFunction(function=_node)])
