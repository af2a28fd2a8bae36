#!/usr/bin/env bash
# The scheduling core's benchmarks for two builds, alternating in one script so that drift of a
# shared machine falls on both: the cycle (build/bench/cycle_bench: full cycle over 100,000
# pending, incremental cycle), preemption and backfill (build/bench/preempt_bench: one
# preemption decision, a full cycle with a reservation over 100,000 pending) and the simulator's
# scale run (bench/sim_scale.sh at SIM_JOBS jobs). Rounds alternate the order (before-after,
# then after-before, ...). Prints one row per figure: each side's values in round order, the
# median of the per-round after/before ratios and their range. Builds nothing.
#
#   bench/core_before_after.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR
#
# A build directory holds `bench/cycle_bench`, `bench/preempt_bench` and `bench/sim_cli` (the
# simulator's commands alone; else `sluice` is used): configure with -DSLUICE_BENCH=ON, then
# `ninja -C DIR cycle_bench preempt_bench sim_cli`. CPU figures are the process's or thread's CPU
# time, less sensitive to other load than wall time; both are shown.
#
# Environment: ROUNDS (3), SIM_JOBS (100000; 0 leaves the sim out), SCORING (unset: each
# binary's default GPU scoring policy; e.g. fgdpack for both), ONLY (a space-separated subset
# of: cycle preempt sim), PREEMPT_ARGS (extra arguments for preempt_bench, e.g.
# "--backfill-samples 15": more samples per median on a loaded machine), CYCLE_ARGS (extra
# arguments for cycle_bench, e.g. "--ordering kueue": Kueue's cycle).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 2 ] || { sed -n '2,18p' "$0"; exit 2; }
before=$1 after=$2
sim_bin() { if [ -x "$1/bench/sim_cli" ]; then echo "$1/bench/sim_cli"; else echo "$1/sluice"; fi; }
for d in "$before" "$after"; do
  for b in bench/cycle_bench bench/preempt_bench; do
    [ -x "$d/$b" ] || { echo "missing $d/$b"; exit 2; }
  done
  [ -x "$(sim_bin "$d")" ] || { echo "missing $d/bench/sim_cli (or $d/sluice)"; exit 2; }
done
ROUNDS=${ROUNDS:-3}
SIM_JOBS=${SIM_JOBS:-100000}
ONLY=${ONLY:-cycle preempt sim}
logs=$(mktemp -d /tmp/core-before-after.XXXXXX)
wants() { [[ " $ONLY " == *" $1 "* ]]; }

run_side() {  # side dir round
  local side=$1 dir=$2 r=$3 out="$logs/$1-$3"
  # shellcheck disable=SC2086 # (CYCLE_ARGS: words)
  if wants cycle; then "$dir/bench/cycle_bench" ${CYCLE_ARGS:-} >"$out.cycle"; fi
  # shellcheck disable=SC2086 # (PREEMPT_ARGS: words)
  if wants preempt; then "$dir/bench/preempt_bench" ${PREEMPT_ARGS:-} >"$out.preempt"; fi
  if wants sim && [ "$SIM_JOBS" -gt 0 ]; then
    "$here/sim_scale.sh" "$(sim_bin "$dir")" "$SIM_JOBS" >"$out.sim"
  fi
  echo "round $r $side done" >&2
}

for r in $(seq 1 "$ROUNDS"); do
  if ((r % 2)); then
    run_side before "$before" "$r"
    run_side after "$after" "$r"
  else
    run_side after "$after" "$r"
    run_side before "$before" "$r"
  fi
done

python3 - "$logs" "$ROUNDS" <<'PY'
import os, re, statistics, sys
logs, rounds = sys.argv[1], int(sys.argv[2])
# figure name, file suffix, regex (first group: the value), lower is better
figs = [
    ("cycle: full cycle, 100k pending, ms wall", "cycle", r"full cycle:\s+([\d.]+) ms,"),
    ("cycle: full cycle, ms CPU", "cycle", r"full cycle:\s+[\d.]+ ms, ([\d.]+) ms CPU"),
    ("cycle: incremental, 100 arrivals, ms wall", "cycle", r"incremental cycle: ([\d.]+) ms"),
    ("cycle: incremental, ms CPU", "cycle", r"incremental cycle: [\d.]+ ms, ([\d.]+) ms CPU"),
    ("preemption: one decision, ms wall", "preempt", r"preemption decision: median ([\d.]+) ms wall"),
    ("preemption: one decision, ms CPU", "preempt", r"preemption decision: median [\d.]+ ms wall, ([\d.]+) ms CPU"),
    ("backfill: reservation cycle, ms wall", "preempt", r"over \d+ pending: median ([\d.]+) ms wall"),
    ("backfill: reservation cycle, ms CPU", "preempt", r"over \d+ pending: median [\d.]+ ms wall, ([\d.]+) ms CPU"),
    ("sim scale: wall s", "sim", r"^\| \d+ \| ([\d.]+) \|"),
    ("sim scale: CPU s", "sim", r"^\| \d+ \| [\d.]+ \| ([\d.]+) \|"),
    ("sim scale: sim loop s", "sim", r"^\| \d+ \| [\d.]+ \| [\d.]+ \| ([\d.]+) \|"),
]
def value(side, r, suffix, rx):
    p = os.path.join(logs, f"{side}-{r}.{suffix}")
    if not os.path.exists(p):
        return None
    m = re.search(rx, open(p).read(), re.M)
    return float(m.group(1)) if m else None
print("| figure | before (rounds in order) | after | after/before: median of rounds | range |")
print("|---|---|---|---|---|")
for name, suffix, rx in figs:
    b = [value("before", r, suffix, rx) for r in range(1, rounds + 1)]
    a = [value("after", r, suffix, rx) for r in range(1, rounds + 1)]
    if any(v is None for v in a + b):
        continue
    ratios = [x / y for x, y in zip(a, b) if y > 0]
    fmt = lambda v: ("%.2f" if v < 10 else "%.1f") % v
    print(f"| {name} | {' / '.join(map(fmt, b))} | {' / '.join(map(fmt, a))} | "
          f"**{statistics.median(ratios):.2f}x** | {min(ratios):.2f}-{max(ratios):.2f}x |")
def same(suffix, rx, what):
    vals = {}
    for side in ("before", "after"):
        for r in range(1, rounds + 1):
            p = os.path.join(logs, f"{side}-{r}.{suffix}")
            if os.path.exists(p):
                m = re.search(rx, open(p).read(), re.M)
                vals.setdefault(side, set()).add(m.group(1) if m else "?")
    if vals:
        print(f"{what}: " + "; ".join(f"{s} {', '.join(sorted(v))}" for s, v in vals.items()))
same("cycle", r"full cycle:.*?\((\d+) admitted", "cycle bench admitted")
same("cycle", r"incremental cycle:.*?; (\d+ admitted, \d+ evaluated)", "cycle bench incremental")
same("cycle", r"decisions digest:\s+([0-9a-f]{16})", "cycle bench decisions digest")
same("cycle", r"full-cycle digest:\s+([0-9a-f]{16})", "cycle bench full-cycle digest")
same("preempt", r"\((\d+) victims", "preemption bench victims")
same("preempt", r"reserved job (\d+, \d+ admitted)", "backfill bench reserved job, admitted")
same("sim", r"^\| \d+ \|(?:[^|]*\|){6} ([^|]+) \|", "sim preemptions")
same("sim", r"\| ([0-9a-f]{16}|-) \|\s*$", "sim decision digest")
print(f"\n(ratios < 1: the after build is faster; logs in {logs})")
PY
