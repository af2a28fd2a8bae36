#!/usr/bin/env bash
# The reliability suite on its own: tests/reliability/run.sh [--long]
#   default: the CI sizes (20 kills, 5,000 mutated bodies, 4 failovers on etcd);
#   --long:  100 kills, 50,000 mutated bodies and 20 failovers (a few minutes).
# The etcd scripts exit 77 (skipped) where etcd is not installed.
# SLUICE_BIN picks the binary (default build/sluice).
set -euo pipefail
cd "$(dirname "$0")/../.."
export SLUICE_BIN=${SLUICE_BIN:-build/sluice}
kills=20 fuzz=5000 failovers=4
if [ "${1:-}" = --long ]; then kills=100 fuzz=50000 failovers=20; fi
rc=0
python3 tests/reliability/kill9.py "$kills" || rc=1
python3 tests/reliability/faults.py || rc=1
python3 tests/reliability/hostile.py "$fuzz" || rc=1
for s in "failover_etcd.py $failovers" etcd_quorum.py; do
  python3 tests/reliability/$s || { [ $? -eq 77 ] || rc=1; }
done
for s in tests/reliability/slowloris.py; do [ -f "$s" ] && { python3 "$s" || rc=1; }; done
exit $rc
