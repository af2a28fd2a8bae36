#!/usr/bin/env bash
# The control plane's scale benchmark at a small size, for correctness only (issue 16):
# 500 fake nodes x 8 GPUs (bench/node_swarm) register with one `sluice serve`, 2,000 one-GPU
# jobs run through it; every node registers, every job succeeds and runs once, no sync fails.
# No timing is checked (bench/ha/scale_bench.sh reports the figures). Skips (77) where the
# benchmark tools are not built (-DSLUICE_BENCH=OFF).
set -euo pipefail
: "${SLUICE_BIN:?}"
root=${SLUICE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
NODES=${NODES:-500} JOBS=${JOBS:-2000} WINDOW=${WINDOW:-2} RUN_MS=${RUN_MS:-200} CHECK=1 \
  SWARM_THREADS=${SWARM_THREADS:-2} CLIENTS=${CLIENTS:-2} \
  exec bash "$root/bench/ha/scale_bench.sh"
