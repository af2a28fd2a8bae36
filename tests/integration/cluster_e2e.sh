#!/usr/bin/env bash
# Real server + three real agents + real processes on loopback (see cluster_e2e.py).
set -euo pipefail
exec python3 "$(dirname "$0")/cluster_e2e.py"
