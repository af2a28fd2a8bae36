#!/usr/bin/env bash
# Installs dependencies, builds sluice and runs the whole test suite: the normal build first, then
# the same tests under AddressSanitizer + UndefinedBehaviorSanitizer, then a short run of every
# fuzz target (docs/fuzzing.md; SLUICE_FUZZ_SECONDS per target, 0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
jobs=${SLUICE_JOBS:-$(nproc)}
scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_TESTS=ON -DSLUICE_BENCH=ON
(cd build && ctest --output-on-failure -j"$jobs" --timeout 900)
if [ "${SLUICE_SKIP_SANITIZE:-0}" != 1 ]; then
  # The sanitizer pass runs the C++ unit, scenario and property tests (one binary, the only
  # target it builds); integration tests (real servers, timing), the reliability suite, the
  # gateway's load tests and the Python client's tests already ran above.
  SLUICE_TARGETS="sluice_unit_tests sluice_fake_nvml" scripts/build.sh build-asan \
    -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=ON -DSLUICE_BENCH=OFF -DSLUICE_GATEWAY=OFF
  # In a few processes, not one per test (scripts/unit_shards.sh: an ASan process is slow to
  # start); more shards than cores, as some tests mostly wait (servers, etcd).
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    scripts/unit_shards.sh build-asan $((2 * jobs))
fi
fuzz_s=${SLUICE_FUZZ_SECONDS:-10}
if [ "$fuzz_s" = 0 ]; then
  echo "fuzz: skipped (SLUICE_FUZZ_SECONDS=0)"
elif ! command -v clang++-16 >/dev/null; then
  echo "fuzz: skipped: clang++-16 is not installed (scripts/deps.sh test installs clang-16)"
else
  scripts/fuzz.sh "$fuzz_s"
fi
