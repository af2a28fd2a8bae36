#!/usr/bin/env bash
# The Python client (clients/python) installed with pip, offline, and driven against a real
# `sluice up` and a `sluice serve` with tokens (python_client.py).
set -euo pipefail
exec python3 "$(dirname "$0")/python_client.py"
