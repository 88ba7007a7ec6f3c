#!/usr/bin/env bash
# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
#
# Fresh-machine set-up (`make setup`): builds .venv, a self-contained ROS 2 Kilted + hayakoe
# environment, from PyPI only.
#
#   1. python3.11 -m venv .venv
#   2. pip install -r requirements/{ros,runtime,test}.txt  (one resolve; torch comes from the
#      CPU wheel on local disk, see requirements/test.txt)
#   3. pip install --no-deps -e .
#   4. scripts/fix_ros_cmake_paths.py: repairs the build-machine include dirs that the ROS
#      wheels' CMake exports hard-code (/opt/python/cp311-cp311/...)
#   5. builds test/fixtures/audio_common_msgs with plain CMake against the .venv ament prefix
#      and installs it into .venv (its Python package lands in site-packages)
#   6. scripts/ament_layout.py: hayakoe_ros laid out in .venv as colcon would install it
#      (lib/hayakoe_ros/<every console script>, share/hayakoe_ros/{package.xml,launch,config},
#      the ament index entry), so `ros2 run` / `ros2 launch` find it; runs every time
#   7. a .pth file that appends .venv to AMENT_PREFIX_PATH, then a smoke test of rclpy.
#
# Afterwards nothing needs sourcing: `.venv/bin/python` finds rclpy, the rmw and
# audio_common_msgs by itself (ros-wheels-bootstrapper re-executes it once with
# LD_LIBRARY_PATH set; child processes inherit that).
#
# Idempotent: a stamp in .venv holds a hash of every input (requirements, fixture sources,
# setup.py/setup.cfg, this script); when it matches, the run ends in about a second.
# Environment: PYTHON (default python3.11), SETUP_FORCE=1 to ignore the stamp,
# SETUP_JOBS (default: nproc) for the CMake build.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3.11}"
VENV="$ROOT/.venv"
VPY="$VENV/bin/python"
STAMP="$VENV/.hayakoe_ros-setup.stamp"
FIXTURE="$ROOT/test/fixtures/audio_common_msgs"
BUILD_DIR="$ROOT/.cache/audio_common_msgs-build"
JOBS="${SETUP_JOBS:-$(nproc 2>/dev/null || echo 2)}"

log() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

# Nothing from an outer ROS or venv environment may leak into the build or the checks:
# a sourced /opt/ros would be found by CMake, and an inherited
# _ROS_WHEELS_BOOTSTRAP_COMPLETE would stop the bootstrapper from setting LD_LIBRARY_PATH
# for *this* venv.
unset AMENT_PREFIX_PATH CMAKE_PREFIX_PATH COLCON_PREFIX_PATH PYTHONPATH PYTHONHOME \
  LD_LIBRARY_PATH _ROS_WHEELS_BOOTSTRAP_COMPLETE VIRTUAL_ENV RMW_IMPLEMENTATION \
  ROS_DISTRO ROS_VERSION ROS_PYTHON_VERSION 2>/dev/null || true

# --- stamp -------------------------------------------------------------------------------
input_hash() {
  {
    printf 'root=%s\n' "$ROOT"
    "$PYTHON" -c 'import sys; print(sys.version)'
    # Every input file, by name and content, in a stable order.
    find scripts/setup.sh scripts/fix_ros_cmake_paths.py requirements "$FIXTURE" \
      setup.py setup.cfg -type f ! -name '*.pyc' -print0 2>/dev/null \
      | sed -z "s|^$ROOT/||" | sort -z | xargs -0 sha256sum || true  # a missing file: no hash
  } | sha256sum | cut -d' ' -f1
}

# The ament layout of this package (lib/hayakoe_ros/<console script>, share/hayakoe_ros/
# files, the ament index entry), derived from setup.py. It runs on every `make setup`, also
# when the stamp matches: it takes well under a second, and a launch or config file added
# since the last run must show up in share/ (the stamp does not cover launch/ or config/).
ament_layout() {
  "$VPY" scripts/ament_layout.py "$VENV" | sed 's/^/[setup] /'
}

command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (Python 3.11 is required)"
KEY="$(input_hash)"

if [[ "${SETUP_FORCE:-0}" != 1 && -x "$VPY" && -f "$STAMP" && "$(cat "$STAMP")" == "$KEY" ]] \
  && "$VPY" -c 'import importlib.util as u, rclpy, audio_common_msgs.msg
assert u.find_spec("hayakoe_ros")' 2>/dev/null; then
  ament_layout
  log ".venv is up to date (stamp $KEY); SETUP_FORCE=1 to redo"
  exit 0
fi
T0=$SECONDS

# --- 1. venv -----------------------------------------------------------------------------
if [[ -x "$VPY" ]] && ! "$VPY" -c 'import sys; assert sys.version_info[:2] == (3, 11)' \
  2>/dev/null; then
  log "existing .venv is not a working Python 3.11 venv: recreating it"
  rm -rf "$VENV"
fi
if [[ ! -x "$VPY" ]]; then
  log "creating .venv with $("$PYTHON" --version)"
  "$PYTHON" -m venv "$VENV"
fi
rm -f "$STAMP"

# pip prints one "Location 'file:///opt/...' is ignored" warning per package for the local
# mirrors this machine's pip.conf lists; drop that noise, keep everything else.
pip_quiet() {
  "$VPY" -m pip "$@" 2>&1 | { grep -v "^WARNING: Location 'file://.*' is ignored" || true; }
}

# --- 2. PyPI requirements (one resolve, so torch==2.13.0 binds everything) ----------------
log "pip install -r requirements/{ros,runtime,test}.txt"
pip_quiet install --progress-bar off -q \
  -r requirements/ros.txt -r requirements/runtime.txt -r requirements/test.txt

# --- 3. this package, editable -----------------------------------------------------------
log "pip install --no-deps -e ."
pip_quiet install --progress-bar off -q --no-deps --no-build-isolation -e .
# An editable wheel installs neither setup.py's data_files nor the lib/hayakoe_ros
# executables: scripts/ament_layout.py lays them out as colcon would (step 6, every run).

# --- 4. repair the wheels' CMake exports -------------------------------------------------
"$VPY" scripts/fix_ros_cmake_paths.py "$VENV"

# --- 5. test copy of audio_common_msgs ---------------------------------------------------
command -v cmake >/dev/null 2>&1 || die "cmake not found (apt-get install cmake)"
command -v c++ >/dev/null 2>&1 || die "no C++ compiler found (apt-get install g++)"
SITE="$("$VPY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
# A build dir configured for another source tree or prefix would fail: start over.
if [[ -f "$BUILD_DIR/CMakeCache.txt" ]] \
  && ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$FIXTURE" "$BUILD_DIR/CMakeCache.txt"; then
  rm -rf "$BUILD_DIR"
fi
# Remove what an earlier build installed, so that a dropped interface does not linger.
if [[ -f "$BUILD_DIR/install_manifest.txt" ]]; then
  xargs -d '\n' rm -f < "$BUILD_DIR/install_manifest.txt"
fi
log "building audio_common_msgs (test copy) into .venv"
mkdir -p "$(dirname "$BUILD_DIR")"
T_BUILD=$SECONDS
(
  export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV" PATH="$VENV/bin:$PATH"
  cmake -S "$FIXTURE" -B "$BUILD_DIR" -Wno-dev --log-level=WARNING \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$VENV" \
    -DBUILD_TESTING=OFF \
    -DPython3_EXECUTABLE="$VPY" \
    -DPython3_FIND_VIRTUALENV=ONLY >"$BUILD_DIR.log" 2>&1 \
    || { cat "$BUILD_DIR.log" >&2; die "CMake configure of audio_common_msgs failed"; }
  cmake --build "$BUILD_DIR" -j "$JOBS" >>"$BUILD_DIR.log" 2>&1 \
    || { tail -n 60 "$BUILD_DIR.log" >&2; die "build of audio_common_msgs failed"; }
  cmake --install "$BUILD_DIR" >>"$BUILD_DIR.log" 2>&1 \
    || { tail -n 30 "$BUILD_DIR.log" >&2; die "install of audio_common_msgs failed"; }
)
log "audio_common_msgs built in $((SECONDS - T_BUILD)) s (log: ${BUILD_DIR#"$ROOT"/}.log)"
[[ -f "$SITE/audio_common_msgs/__init__.py" ]] \
  || die "generated audio_common_msgs not found in $SITE"

# --- 6. ament layout (lib/hayakoe_ros, share/hayakoe_ros, index entry) --------------------
ament_layout

# --- 7. environment hook + smoke test ----------------------------------------------------
# ament_index_python (get_package_share_directory, rosidl runtime look-ups) needs
# AMENT_PREFIX_PATH; add the venv to it at every interpreter start, so that
# `.venv/bin/python` works with no sourcing. The venv goes *last*: a workspace the user
# sources later (its setup.bash prepends its install space) must win over the venv's copy
# of hayakoe_ros, as an overlay does over its underlay.
cat >"$SITE/_hayakoe_ros_ament_prefix.py" <<'EOF'
# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
"""Add this venv to AMENT_PREFIX_PATH (written by hayakoe_ros' scripts/setup.sh).

Imported at every interpreter start by _hayakoe_ros_ament_prefix.pth, so that
``.venv/bin/python`` finds the ament index (package share dirs) with no sourcing.
The venv is appended: prefixes set outside (a sourced colcon workspace, an overlay)
come first and win.
"""
import os
import sys

_paths = [p for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
if sys.prefix not in _paths:
    os.environ['AMENT_PREFIX_PATH'] = os.pathsep.join(_paths + [sys.prefix])
del _paths
EOF
echo 'import _hayakoe_ros_ament_prefix' >"$SITE/_hayakoe_ros_ament_prefix.pth"

log "checking rclpy and audio_common_msgs with a bare environment"
env -u AMENT_PREFIX_PATH ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST ROS_DOMAIN_ID=0 "$VPY" - <<'EOF'
"""Smoke test: rclpy on rmw_fastrtps_cpp, audio_common_msgs importable, ament index."""
import os
import sys

import rclpy
from ament_index_python.packages import get_package_share_directory
from audio_common_msgs.action import TTS
from audio_common_msgs.msg import AudioStamped
from rclpy.utilities import get_rmw_implementation_identifier

rclpy.init()
try:
    node = rclpy.create_node('hayakoe_ros_setup_check')
    pub = node.create_publisher(AudioStamped, 'setup_check', 1)
    pub.publish(AudioStamped())
    rmw = get_rmw_implementation_identifier()
    assert rmw == 'rmw_fastrtps_cpp', rmw
    assert TTS.Goal().language == 'en'
    for pkg in ('audio_common_msgs', 'std_msgs', 'hayakoe_ros'):
        assert get_package_share_directory(pkg).startswith(sys.prefix), pkg
    node.destroy_node()
finally:
    rclpy.shutdown()
print(f'[setup] ok: rclpy {rmw}, AMENT_PREFIX_PATH={os.environ["AMENT_PREFIX_PATH"]}')
EOF

echo "$KEY" >"$STAMP"
log "done in $((SECONDS - T0)) s"
