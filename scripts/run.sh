#!/usr/bin/env bash
# The main job: install dependencies, build, then `sluice up --demo`: a control-plane server and
# two local agents with fake GPUs in one process, and a demo mix of real short processes from
# three teams (borrowing, a gang, preemptions, an interactive job). It stops after 60 s and
# prints every job's outcome; the web dashboard is at the printed address while it runs.
# SLUICE_LISTEN=HOST:PORT picks another address (default 127.0.0.1:7070).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
# The binary only: the tests and benchmarks (scripts/test.sh, bench/) need more packages.
scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_TESTS=OFF -DSLUICE_BENCH=OFF \
  >/dev/null
data=$(mktemp -d /tmp/sluice-demo.XXXXXX)
echo "== sluice up --demo --exit-after 60 --data-dir $data"
build/sluice up --demo --exit-after 60 --data-dir "$data" --listen "${SLUICE_LISTEN:-127.0.0.1:7070}"
