#!/usr/bin/env bash
# PyTorchJob gang env, Indexed completions and submit's notes on a real cluster (see the .py).
set -euo pipefail
exec python3 "$(dirname "$0")/workloads_e2e.py"
