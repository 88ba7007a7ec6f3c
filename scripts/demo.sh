#!/usr/bin/env bash
# Copyright 2026 The hayakoe_ros Authors
# SPDX-License-Identifier: AGPL-3.0-or-later
#
# `make demo`: start tts_node on its default configuration (config/tts.yaml), speak a
# Japanese paragraph through the `say` action client, write demo.wav, print the figures,
# then shut the node down cleanly (SIGINT) and check that it exited with status 0.
# Offline, hayakoe's default voice cannot be downloaded, so the node logs one WARN and
# speaks with the Open JTalk fallback voice.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="$ROOT/.venv/bin/python"
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( $$ % 100 + 1 ))}"
TEXT="${DEMO_TEXT:-こんにちは。私は案内ロボットです。今日は、駅前の図書館までご案内します。途中で分からないことがあれば、いつでも声をかけてください。}"
LOG="$ROOT/.cache/demo-node.log"
mkdir -p "$ROOT/.cache"

"$PY" -m hayakoe_ros.tts_node --ros-args --params-file config/tts.yaml >"$LOG" 2>&1 &
NODE=$!
cleanup() { kill -INT "$NODE" 2>/dev/null || true; }
trap cleanup EXIT
echo "[demo] tts_node started (pid $NODE, log $LOG); waiting for it to be ready..."
for _ in $(seq 1 240); do
  grep -q "ready:" "$LOG" && break
  kill -0 "$NODE" 2>/dev/null || { cat "$LOG"; echo "[demo] tts_node died" >&2; exit 1; }
  sleep 0.5
done
grep -E "WARN|ready:|loaded in" "$LOG" | sed 's/^/[node] /'
echo "[demo] speaking: $TEXT"
"$PY" -m hayakoe_ros.say "$TEXT" --output demo.wav
trap - EXIT
kill -INT "$NODE"
STATUS=0
wait "$NODE" || STATUS=$?
echo "[demo] tts_node exited with status $STATUS"
[ "$STATUS" -eq 0 ] || { tail -20 "$LOG"; exit 1; }
