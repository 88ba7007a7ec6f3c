# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""config/tts.yaml, the launch file and README stay in step with the node's parameters."""

import ast
from pathlib import Path

import yaml

from hayakoe_ros.tts_node import PARAMETERS

REPO = Path(__file__).resolve().parents[1]


def test_yaml_lists_every_parameter_with_its_default():
    data = yaml.safe_load((REPO / 'config' / 'tts.yaml').read_text())
    params = data['/**']['ros__parameters']
    assert set(params) == set(PARAMETERS)
    for name, (default, *_rest) in PARAMETERS.items():
        assert params[name] == default, name
        assert type(params[name]) is type(default), name


def test_launch_file_declares_arguments_for_real_parameters():
    source = (REPO / 'launch' / 'tts.launch.py').read_text()
    tree = ast.parse(source)
    overrides = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                     and node.targets[0].id == 'PARAMETER_ARGUMENTS')
    names = ast.literal_eval(overrides)
    assert set(names) <= set(PARAMETERS)
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
