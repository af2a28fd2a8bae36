#!/usr/bin/env bash
# `sluice run --pty` on `sluice up`, driven from a real pseudo-terminal (see slurm_pty.py).
set -euo pipefail
exec python3 "$(dirname "$0")/slurm_pty.py"
