#!/usr/bin/env bash
# fuzz.sh [SECONDS] [TARGET...]: builds the libFuzzer targets of tests/fuzz/ into build-fuzz/
# (clang++-16, ASan + UBSan + LSan) and runs each for SECONDS (60 by default) on a copy of its
# seed corpus. One line per target (runs, coverage, result), then `fuzz: N passed, M failed`.
# Fails on any crash, leak, timeout, out-of-memory or sanitizer report; the input that caused
# it is kept in build-fuzz/artifacts/ (docs/fuzzing.md: minimise, fix, add it to the seeds).
# TARGET is a name without the `fuzz_` prefix (jobs_json, gateway_http, ...); none: all of them.
# SLUICE_FUZZ_JOBS targets run at once (default: the number of CPUs).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
all=(jobs_json jobs_yaml config_load proto trace_philly trace_openb trace_events trace_fgd
  gateway_config gateway_http gateway_trace http_request kube_patch kube_body kube_config
  node_body)
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")
cxx=${SLUICE_FUZZ_CXX:-clang++-16}
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz: $cxx not found (scripts/deps.sh test installs clang-16, libfuzzer-16-dev)" >&2
  exit 2
fi

# Longest input per target: a little above what the parser's own limits let through (the
# gateway's 8 KiB header limit, a screenful of YAML, a few trace rows), so time goes to
# structure, not to size. http_request: past the server's 64 KiB buffer bound, which refuses a
# chunk-size line or a trailer that does not fit.
declare -A max_len=([jobs_json]=8192 [jobs_yaml]=8192 [config_load]=16384 [proto]=8192
  [trace_philly]=4096 [trace_openb]=4096 [trace_events]=4096 [trace_fgd]=8192
  [gateway_config]=8192 [gateway_http]=12288 [gateway_trace]=4096 [http_request]=90112
  [kube_patch]=4096 [kube_body]=4096 [kube_config]=8192 [node_body]=1024)
for t in "${targets[@]}"; do
  [ -n "${max_len[$t]:-}" ] || { echo "fuzz: unknown target '$t' (one of: ${all[*]})" >&2; exit 2; }
done

# 1. Build only the targets asked for.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f build-fuzz/build.ninja ]; then
  cmake -S tests/fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" >/dev/null
fi
# Quiet unless it fails: then the compiler's and linker's errors, not a bare exit status.
build_log=$(mktemp)
if ! cmake --build build-fuzz -j"${SLUICE_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}" \
  >"$build_log" 2>&1; then
  grep -E "error|undefined reference|FAILED" "$build_log" | head -40 >&2
  echo "fuzz: the build of the targets failed (whole log: $build_log)" >&2
  exit 1
fi
rm -f "$build_log"

# 2. Seeds, and a working corpus per target that the run may grow.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 tests/fuzz/make_seeds.py "$work/seeds"
mkdir -p build-fuzz/artifacts
# Symbolized stacks in the reports (any llvm-symbolizer reads clang 16's debug info).
sym=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
[ -n "$sym" ] && export ASAN_SYMBOLIZER_PATH=$sym

run_one() {
  local t=$1 corpus=$work/corpus/$1 log=$work/$1.log
  set +e
  mkdir -p "$corpus"
  rm -f "build-fuzz/artifacts/$t-"*  # what is there after the run is this run's
  cp "$work/seeds/$t/"* "$corpus/" 2>/dev/null || true
  local rc=0
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0:detect_stack_use_after_return=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build-fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -max_len="${max_len[$t]}" -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t-" \
    "$corpus" >"$log" 2>&1 || rc=$?
  local runs cov ft result=ok
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  if [ "$rc" -ne 0 ] || grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:' "$log"; then
    result="FAILED (exit $rc; log build-fuzz/artifacts/$t.log)"
    cp "$log" "build-fuzz/artifacts/$t.log"
  fi
  printf '%-20s %10s runs  cov %6s  ft %6s  %4s s  %s\n' "fuzz_$t" "${runs:-?}" "${cov:-?}" \
    "${ft:-?}" "$seconds" "$result" >"$work/$t.result"
}

# 3. Run, SLUICE_FUZZ_JOBS at a time; print in target order.
jobs=${SLUICE_FUZZ_JOBS:-$(nproc)}
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true
passed=0 failed=0
for t in "${targets[@]}"; do
  cat "$work/$t.result"
  if grep -q ' ok$' "$work/$t.result"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
for t in "${targets[@]}"; do
  if ! grep -q ' ok$' "$work/$t.result"; then
    echo "--- fuzz_$t (last lines of its log)"
    grep -v '^#\|^INFO\|^stat::' "build-fuzz/artifacts/$t.log" | tail -40
  fi
done
echo "fuzz: $passed passed, $failed failed"
((failed == 0))
