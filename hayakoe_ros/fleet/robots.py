# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The ``robots`` parameter of ``tts_fleet`` and the command line its robot nodes get.

Robot names become namespace tokens (``<fleet namespace>/<robot>``), so each must be one
valid ROS name token: a letter or underscore, then letters, digits and underscores.

rcl applies a process's global ``--ros-args`` to every node in it, the ``__ns`` and
``__node`` remaps included, which would move every robot node onto the fleet's own name.
Robot nodes are therefore made with ``use_global_arguments=False`` and given the
process's ROS arguments less those remaps (:func:`robot_ros_args`): ``-p`` values and
params files reach them as they reach ``tts_node`` (a params file may also name one
robot's node, ``/fleet/r1/tts_node``), and so do topic remaps.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Sequence

from rcl_interfaces.msg import ParameterDescriptor, ParameterType

__all__ = ['ROBOTS', 'check_robots', 'robot_namespace', 'robot_ros_args', 'robots_descriptor']

#: Name of the fleet's parameter listing its robots.
ROBOTS = 'robots'

#: The longest name under a robot's namespace (rclpy's lifecycle and parameter services
#: ``get_available_transitions`` and ``set_parameters_atomically`` are the longest).
LONGEST_NAME = '/tts_node/get_available_transitions'
_TOKEN = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')

#: Remap targets that name or place a node rather than a topic.
_NODE_REMAPS = ('__ns', '__node', '__name')

#: ROS arguments that take a value and are the process's, not a node's.
_PROCESS_FLAGS = ('--log-level', '--log-config-file', '--log-file-name', '-e', '--enclave')


def robots_descriptor() -> ParameterDescriptor:
    """Descriptor of ``robots``: a string array, applied at the next configure."""
    return ParameterDescriptor(
        name=ROBOTS, type=ParameterType.PARAMETER_STRING_ARRAY,
        description='Robots served, e.g. [r1, r2]: each gets a node at <the fleet '
                    "namespace>/<robot> with tts_node's interfaces (text, say, audio, "
                    'marks, speaking, stop) and its own queue and live parameters.',
        additional_constraints='Distinct ROS name tokens. Applies at the next configure.')


def robot_namespace(fleet_namespace: str, robot: str) -> str:
    """``<fleet_namespace>/<robot>`` (the root namespace gives ``/<robot>``)."""
    return f"{fleet_namespace.rstrip('/')}/{robot}"


def check_robots(value: Optional[Sequence], fleet_namespace: str = '/') -> str:
    """Why ``value`` is no valid ``robots`` list ('' when it is).

    The message names every offending entry: empty list, duplicates, names that are no
    ROS name token or make an invalid namespace, or a service name over the middleware's
    limit (255 - 8 characters with the namespace).
    """
    if value is None or not isinstance(value, (list, tuple)) or not all(
            isinstance(v, str) for v in value):
        return (f"parameter '{ROBOTS}': {value!r} is not a string array; give the robots "
                'as a list, e.g. robots:="[r1, r2]"')
    if not value:
        return f"parameter '{ROBOTS}' is empty: name at least one robot, e.g. [r1, r2]"
    problems = []
    seen: dict = {}
    for name in value:
        seen[name] = seen.get(name, 0) + 1
    duplicates = [name for name, n in seen.items() if n > 1]
    if duplicates:
        problems.append('duplicate robot name(s): ' + ', '.join(map(repr, duplicates)))
    invalid = [name for name in seen if not _TOKEN.fullmatch(name)]
    if invalid:
        problems.append('invalid robot name(s): ' + ', '.join(map(repr, invalid)) +
                        ' (each must be one ROS name token: a letter or underscore, then '
                        'letters, digits, underscores)')
    else:
        from rclpy.exceptions import InvalidNamespaceException, InvalidServiceNameException
        from rclpy.validate_full_topic_name import validate_full_topic_name
        from rclpy.validate_namespace import validate_namespace

        for name in seen:
            namespace = robot_namespace(fleet_namespace, name)
            try:
                validate_namespace(namespace)
                # The longest name a robot's node makes (a lifecycle service): the
                # middleware's limit on it is shorter than the namespace's.
                validate_full_topic_name(namespace + LONGEST_NAME, is_service=True)
            except (InvalidNamespaceException, InvalidServiceNameException) as exc:
                problems.append(f"robot {name!r}: {str(exc).splitlines()[0]} (its node's "
                                f'longest name, <namespace>{LONGEST_NAME}, would be '
                                f'{len(namespace + LONGEST_NAME)} characters)')
    if problems:
        return f"parameter '{ROBOTS}' {list(value)!r}: " + '; '.join(problems)
    return ''


def robot_ros_args(argv: Iterable[str]) -> list:
    """The ``--ros-args`` of ``argv`` that a robot node takes as its own.

    Parameters (``-p``, ``--param``, ``--params-file``) and topic remaps are kept; the
    remaps that name or place a node (``__ns``, ``__node``, also as ``node:__ns``) and
    the process-wide logging and enclave options are left out.

    Returns:
        ``['--ros-args', ...]``, or ``[]`` when nothing is kept.
    """
    args = list(argv)
    kept: list = []
    inside = False
    i = 0
    while i < len(args):
        arg = args[i]
        value = args[i + 1] if i + 1 < len(args) else None
        i += 1
        if arg == '--ros-args':
            inside = True
        elif arg == '--':
            inside = False
        elif not inside:
            continue
        elif arg in ('-r', '--remap') and value is not None:
            i += 1
            target = value.split(':=', 1)[0].rsplit(':', 1)[-1]
            if target not in _NODE_REMAPS:
                kept += [arg, value]
        elif arg in ('-p', '--param', '--params-file') and value is not None:
            i += 1
            kept += [arg, value]
        elif arg in _PROCESS_FLAGS:
            i += 1
    return ['--ros-args', *kept] if kept else []
