# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""The restart count's record: a death counts for the node of that name on that domain only."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hayakoe_ros.node.restarts import RunRecord

pytestmark = pytest.mark.unit


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, '-c', 'pass'])
    proc.wait()
    return proc.pid


def _died(directory, name: str, domain: int, restarts: int = 0) -> None:
    """Leave the record a process of ``name`` on ``domain`` leaves when it is killed."""
    record = RunRecord.begin(name, domain, str(directory))
    with open(record.path, 'w', encoding='utf-8') as f:
        json.dump({'pid': _dead_pid(), 'restarts': restarts, 'started': 1.0e9}, f)


def test_a_death_counts_for_the_same_name_on_the_same_domain(tmp_path):
    _died(tmp_path, '/robot/tts_node', 3, restarts=1)
    record = RunRecord.begin('/robot/tts_node', 3, str(tmp_path))
    assert record.restarts == 2
    assert record.values()['last_crashed_run_started'].startswith('2001-09-')
    record.end()  # a clean exit: the next start is a first start
    assert not os.listdir(tmp_path)
    assert RunRecord.begin('/robot/tts_node', 3, str(tmp_path)).restarts == 0


def test_a_node_of_that_name_on_another_domain_is_a_first_start(tmp_path):
    # Two robots (or a test run and a user's node) on two domains share the machine's
    # runtime directory: one's death is not the other's restart.
    _died(tmp_path, '/robot/tts_node', 0)
    other = RunRecord.begin('/robot/tts_node', 42, str(tmp_path))
    assert other.restarts == 0 and other.values() == {'restarts': '0',
                                                      'last_crashed_run_started': ''}
    other.end()
    assert RunRecord.begin('/robot/tts_node', 0, str(tmp_path)).restarts == 1


def test_a_record_that_cannot_be_written_counts_nothing(tmp_path):
    blocked = tmp_path / 'file'
    blocked.write_text('not a directory')
    record = RunRecord.begin('/robot/tts_node', 0, str(blocked / 'records'))
    assert (record.restarts, record.path) == (0, '')
    record.end()
