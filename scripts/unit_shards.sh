#!/usr/bin/env bash
# scripts/unit_shards.sh BUILD_DIR [SHARDS]: runs BUILD_DIR/tests/sluice_unit_tests (every unit,
# scenario and property test) as SHARDS processes side by side (gtest's sharding: each test runs
# once, in one shard), the way ctest runs them (in BUILD_DIR/tests, with SLUICE_SOURCE_DIR) but
# not one process per test: a process of the ASan + UBSan build takes ~0.85 s to start, which
# made up most of the sanitizer pass (703 tests: 361 s under `ctest -j2`). Prints each shard's
# summary, and the whole log of a shard that failed; exits 1 if any did.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { sed -n '2,7p' "$0"; exit 2; }
dir=$(cd "$1" && pwd)/tests
shards=${2:-$(nproc)}
[ -x "$dir/sluice_unit_tests" ] || { echo "unit_shards: no $dir/sluice_unit_tests" >&2; exit 2; }
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
for ((i = 0; i < shards; i++)); do
  (cd "$dir" && SLUICE_SOURCE_DIR=$root GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i \
    timeout 1800 ./sluice_unit_tests --gtest_brief=1 >"$logs/$i.log" 2>&1) &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  rc=0
  wait "${pids[$i]}" || rc=$?
  if [ "$rc" = 0 ]; then
    echo "shard $((i + 1))/$shards: $(grep -E '^\[==========\]' "$logs/$i.log" | tail -n 1)"
  else
    status=1
    echo "shard $((i + 1))/$shards FAILED (exit $rc):"
    cat "$logs/$i.log"
  fi
done
exit $status
