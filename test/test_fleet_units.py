# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""tts_fleet's pure parts: the robots check, the robot nodes' command line, the split."""

import pytest

from hayakoe_ros.fleet.robots import check_robots, robot_namespace, robot_ros_args
from hayakoe_ros.node.parameters import (FLEET_PARAMETERS, OFFBOARD_PARAMETERS, PARAMETERS,
                                         ROBOT_PARAMETERS)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize('robots, needle', [
    (['r1', 'r2', 'r1', 'r2'], "duplicate robot name(s): 'r1', 'r2'"),
    (['r1', '2nd'], "invalid robot name(s): '2nd'"),
    (['a/b', 'x y', ''], "invalid robot name(s): 'a/b', 'x y', ''"),
    ([], "parameter 'robots' is empty"),
    ('r1', 'is not a string array'),
    ([1, 2], 'is not a string array'),
    (None, 'is not a string array'),
    # The namespace is valid, but the middleware refuses the node's longest service name.
    (['r1', 'x' * 206], 'would be 248 characters'),
])
def test_bad_robots_are_named(robots, needle):
    assert needle in check_robots(robots, '/fleet')


def test_good_robots_pass():
    assert check_robots(['r1', 'R_2', '_spare'], '/fleet') == ''
    assert check_robots(['r1'], '/') == ''
    assert check_robots(['x' * 205], '/fleet') == ''  # its longest name: 247 characters
    assert robot_namespace('/', 'r1') == '/r1'
    assert robot_namespace('/fleet', 'r1') == '/fleet/r1'


def test_robot_nodes_keep_parameters_and_topic_remaps_but_not_the_node_remaps():
    argv = ['tts_fleet', '--ros-args', '-r', '__ns:=/fleet', '-r', '__node:=tts_fleet',
            '-p', 'robots:=[r1, r2]', '--param', 'style:=Happy', '--params-file', 'f.yaml',
            '--log-level', 'tts_node:=debug', '-r', 'tts_fleet:__ns:=/x',
            '--remap', 'text:=/dialogue/say', '--enable-rosout-logs', '--', 'plain']
    assert robot_ros_args(argv) == [
        '--ros-args', '-p', 'robots:=[r1, r2]', '--param', 'style:=Happy',
        '--params-file', 'f.yaml', '--remap', 'text:=/dialogue/say']
    assert robot_ros_args(['tts_fleet']) == []
    assert robot_ros_args(['tts_fleet', '--ros-args', '-r', '__ns:=/fleet']) == []


def test_fleet_and_robot_parameters_split_tts_nodes():
    # A fleet is the host: a robot's use of a host is tts_node's alone.
    assert set(FLEET_PARAMETERS) | set(ROBOT_PARAMETERS) | set(OFFBOARD_PARAMETERS) == \
        set(PARAMETERS)
    assert not set(FLEET_PARAMETERS) & set(ROBOT_PARAMETERS)
    assert not (set(FLEET_PARAMETERS) | set(ROBOT_PARAMETERS)) & set(OFFBOARD_PARAMETERS)
    assert {'engine', 'speaker', 'num_threads', 'output_rate', 'phrase_cache_mb',
            'user_dictionary', 'autostart'} <= set(FLEET_PARAMETERS)
    assert {'style', 'speaker_id', 'rate', 'volume', 'queue_policy', 'max_queue',
            'qos_depth'} <= set(ROBOT_PARAMETERS)
