# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
#
# make setup   build .venv: ROS 2 Kilted wheels, hayakoe, test tools, audio_common_msgs
# make demo    set up, start tts_node on its default configuration, speak, write demo.wav
# make test    set up, run every test offline except those marked long (a few minutes)
# make test-long  set up, run only the tests marked long (CI runs both)
# make bench   set up, run the benchmarks (writes BENCHMARKS.md and bench/results.json)

PY := .venv/bin/python
PYTEST_ARGS ?=
# Test processes side by side (pytest-xdist): most tests wait on nodes, sockets and
# audio, so 2 on a 2-core machine about halves the time. Each test file runs whole in one
# process (its module fixtures, e.g. a started node, are made once). 0: one process.
# The tests marked alone (real-time margins) run afterwards, in one process.
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist loadfile --alone=exclude

.PHONY: setup demo test test-long lint bench test-aarch64 clean

setup:
	@bash scripts/setup.sh

demo: setup
	@bash scripts/demo.sh

# --long (test/conftest.py) deselects the tests marked long, or all the others; a kind
# (PYTEST_ARGS='-m unit') still selects on top of it.
test: setup
	$(PY) -m pytest test --long=exclude $(XDIST) $(PYTEST_ARGS)
	$(PY) -m pytest test --long=exclude --alone=only $(PYTEST_ARGS)

test-long: setup
	$(PY) -m pytest test --long=only $(XDIST) $(PYTEST_ARGS)
	$(PY) -m pytest test --long=only --alone=only $(PYTEST_ARGS)

lint: setup
	$(PY) -m pytest test/test_lint.py $(PYTEST_ARGS)

bench: setup
	$(PY) bench/run.py

clean:
	rm -rf .venv .cache build install log demo.wav say.wav

# Engine + speech-pipeline tests on emulated aarch64 (Raspberry Pi 4B wheel set, qemu-user;
# needs root for apt/debootstrap on the first run). See scripts/test_aarch64.sh.
test-aarch64: setup
	@bash scripts/test_aarch64.sh
