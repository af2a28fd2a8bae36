#!/usr/bin/env bash
# The web dashboard in a real headless Chromium (dashboard.py; docs/dashboard.md).
set -euo pipefail
exec python3 "$(dirname "$0")/dashboard.py"
