# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""config/tts.yaml, the launch file and README stay in step with the node's parameters."""

import ast
from pathlib import Path

import pytest
import yaml

from hayakoe_ros.tts_node import PARAMETERS

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]


def test_yaml_lists_every_parameter_with_its_default():
    data = yaml.safe_load((REPO / 'config' / 'tts.yaml').read_text())
    params = data['/**']['ros__parameters']
    assert set(params) == set(PARAMETERS)
    for name, spec in PARAMETERS.items():
        assert params[name] == spec.default, name
        assert type(params[name]) is type(spec.default), name


def test_launch_file_declares_arguments_for_real_parameters():
    source = (REPO / 'launch' / 'tts.launch.py').read_text()
    tree = ast.parse(source)
    overrides = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                     and node.targets[0].id == 'PARAMETER_ARGUMENTS')
    names = {key.value: value.elts[0].id for key, value in
             zip(overrides.keys, overrides.values)}
    assert set(names) <= set(PARAMETERS)
    for name, kind in names.items():  # each override is converted to the declared type
        assert kind == type(PARAMETERS[name].default).__name__, name
    for arg in ('params_file', 'namespace', 'text_topic', 'audio_topic', 'say_action'):
        assert f"'{arg}'" in source
    assert "executable='tts_node'" in source


def test_readme_documents_every_parameter():
    readme = (REPO / 'README.md').read_text()
    missing = [name for name in PARAMETERS if f'`{name}`' not in readme]
    assert not missing, f'README lacks parameters: {missing}'


def test_setup_installs_launch_and_config():
    setup = (REPO / 'setup.py').read_text()
    assert "glob('launch/*.launch.py')" in setup and "glob('config/*.yaml')" in setup
    assert (REPO / 'resource' / 'hayakoe_ros').exists()
    assert '$base/lib/hayakoe_ros' in (REPO / 'setup.cfg').read_text()


def test_readme_parameter_table_matches_the_node():
    """The README's table is generated from PARAMETERS (parameter_table()); keep it so."""
    from hayakoe_ros.tts_node import parameter_table

    readme = (REPO / 'README.md').read_text()
    assert parameter_table() in readme, 'regenerate: python -c "from hayakoe_ros.tts_node ' \
        'import parameter_table; print(parameter_table())"'


def test_yaml_comments_state_the_declared_ranges():
    lines = (REPO / 'config' / 'tts.yaml').read_text().splitlines()
    for name, spec in PARAMETERS.items():
        if spec.range:
            line = next(x for x in lines if x.strip().startswith(f'{name}:'))
            low, high = spec.range
            assert f'[{low:g}, {high:g}]' in line, (name, line)


def test_yaml_sections_say_when_each_parameter_applies():
    """Each parameter sits under a section header that says live or next configure."""
    from hayakoe_ros.node.parameters import Apply

    section = ''
    for line in (REPO / 'config' / 'tts.yaml').read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith('# ---'):
            section = stripped
            continue
        name = stripped.split(':', 1)[0]
        if name in PARAMETERS:
            expected = 'next configure' if PARAMETERS[name].apply is Apply.RELOAD else 'live'
            assert f'({expected})' in section, (name, section)


def test_launch_file_starts_the_player_with_real_player_parameters():
    """play:=true starts player_node; its arguments name player_node's parameters."""
    from hayakoe_ros.player_node import PLAYER_PARAMETERS

    source = (REPO / 'launch' / 'tts.launch.py').read_text()
    tree = ast.parse(source)
    player = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                  and node.targets[0].id == 'PLAYER_ARGUMENTS')
    for value in player.values:
        name, kind = value.elts[0].value, value.elts[1].id
        assert name in PLAYER_PARAMETERS, name
        assert kind == type(PLAYER_PARAMETERS[name].default).__name__, name
    assert "executable='player_node'" in source and "'play'" in source
    # tts_node's exit (e.g. its lifecycle shutdown) ends the launch, player_node included
    # (run for real with the fetched launch sources, 2026-12-01: launch exits with 0).
    assert 'OnProcessExit(' in source and 'target_action=tts_node' in source
    assert 'Shutdown(' in source
    assert "'player_node = hayakoe_ros.entry:player_node'" in (REPO / 'setup.py').read_text()


def test_readme_documents_every_player_parameter_with_its_default():
    from hayakoe_ros.player_node import PLAYER_PARAMETERS

    readme = (REPO / 'README.md').read_text()
    for name, spec in PLAYER_PARAMETERS.items():
        default = str(spec.default).lower() if isinstance(spec.default, bool) else \
            (spec.default if spec.default != '' else '""')
        assert f'| `{name}` | {spec.type_name} | `{default}` |' in readme, name


def test_fleet_launch_file_starts_tts_fleet_with_fleet_parameters():
    """fleet.launch.py: tts_fleet, its robots, and overrides of the fleet's own parameters."""
    from hayakoe_ros.node.parameters import FLEET_PARAMETERS

    source = (REPO / 'launch' / 'fleet.launch.py').read_text()
    tree = ast.parse(source)
    overrides = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                     and node.targets[0].id == 'PARAMETER_ARGUMENTS')
    for key, value in zip(overrides.keys, overrides.values):
        assert key.value in FLEET_PARAMETERS, key.value  # a robot's would be ignored
        assert value.elts[0].id == type(FLEET_PARAMETERS[key.value].default).__name__
    assert "executable='tts_fleet'" in source and "'robots'" in source
    assert 'OnProcessExit(' in source and 'Shutdown(' in source
    assert "'tts_fleet = hayakoe_ros.entry:tts_fleet'" in (REPO / 'setup.py').read_text()


@pytest.mark.parametrize('launch_file', ['tts.launch.py', 'fleet.launch.py'])
def test_launch_files_end_on_a_node_that_could_not_start(launch_file):
    """The exit status the launch files take as "could not start" is the runner's.

    On it they end the launch instead of respawning a node whose parameters are invalid
    every respawn_delay for ever (run for real with the fetched launch sources).
    """
    from hayakoe_ros.node.runner import EXIT_NOT_STARTED

    tree = ast.parse((REPO / 'launch' / launch_file).read_text())
    value = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and node.targets[0].id == 'NOT_STARTED')
    assert value == EXIT_NOT_STARTED
