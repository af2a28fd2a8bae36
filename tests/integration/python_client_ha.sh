#!/usr/bin/env bash
# The Python client follows the leader of replicated servers on etcd (python_client_ha.py).
set -euo pipefail
exec python3 "$(dirname "$0")/python_client_ha.py"
