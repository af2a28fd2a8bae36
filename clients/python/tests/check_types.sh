#!/usr/bin/env bash
# mypy --strict over the client, its build backend and its tests. Exit 77 (skipped) where no
# Python here has mypy (Debian: python3-mypy, installed by scripts/deps.sh test).
set -euo pipefail
cd "$(dirname "$0")/.."
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import mypy' 2>/dev/null; then
    exec "$py" -m mypy --strict --no-error-summary --cache-dir "${TMPDIR:-/tmp}/sluice-mypy-cache" \
      sluice _sluice_build.py tests
  fi
done
echo "skip: mypy is not installed (Debian: python3-mypy)"
exit 77
