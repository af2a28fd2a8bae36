#!/usr/bin/env bash
# Group commit (issue 38): durable one-job submissions/s and submissions per commit (acknowledged
# jobs / sluice_store_commit_seconds_count; ingest only, so nearly every commit holds
# submissions) as the clients grow, on this machine's disk and on a slow one (every fsync 10 ms longer:
# bench/e2e/slow_fsync_preload.c), ingest only (no agents: the server's durable submission rate
# alone). With BEFORE_BIN, the same runs of that build alternate with AFTER_BIN's (before, after,
# before, after... per cell) and the table gives the after/before ratio. Builds nothing.
#
#   BEFORE_BIN=/tmp/before/build/sluice AFTER_BIN=build/sluice bench/e2e/group_commit.sh
#
# Environment: CLIENTS ("1 8 32"), SLOW ("0 10": extra ms per fsync), JOBS (2000 per run),
# ROUNDS (1), SERVE_BENCH (build/bench/serve_bench).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/ports.sh"
AFTER_BIN=${AFTER_BIN:-$HERE/../../build/sluice}
sides=(after)
[[ -n ${BEFORE_BIN:-} ]] && sides=(before after)
out=$(mktemp -d /tmp/group-commit.XXXXXX)
trap 'rm -rf "$out"' EXIT
for slow in ${SLOW:-0 10}; do
  for c in ${CLIENTS:-1 8 32}; do
    for r in $(seq 1 "${ROUNDS:-1}"); do
      for side in "${sides[@]}"; do
        bin=$AFTER_BIN port=$(free_port)
        [[ $side == before ]] && bin=$BEFORE_BIN
        PORT=$port SLUICE_BIN=$bin INGEST=1 BATCHES=1 JOBS=${JOBS:-2000} CLIENTS=$c \
          SLOW_FSYNC_MS=$slow "$HERE/sluice_e2e.sh" > "$out/$side-$slow-$c-$r.log" 2>&1 ||
          { cat "$out/$side-$slow-$c-$r.log" >&2; exit 1; }
      done
    done
  done
done
python3 - "$out" "${sides[@]}" <<'PY'
import glob, os, re, statistics, sys
out, sides = sys.argv[1], sys.argv[2:]
cells = {}
for f in glob.glob(os.path.join(out, "*.log")):
    side, slow, c, r = os.path.basename(f)[:-4].split("-")
    t = open(f).read()
    rate = float(re.search(r"durable submissions/s\s+(\d+)", t)[1])
    jobs = int(re.search(r"acknowledged jobs\s+(\d+)", t)[1])
    commits = int(re.search(r"sluice_store_commit_seconds: (\d+) x", t)[1])
    p50 = float(re.search(r"ack p50 ([\d.]+) ms", t)[1])
    cells.setdefault((int(slow), int(c)), {}).setdefault(side, []).append(
        (rate, jobs / commits, p50))
head = "| fsync + | clients | " + " | ".join(
    f"{s}: submissions/s | {s}: submissions per commit | {s}: ack p50" for s in sides)
print(head + (" | after / before |" if len(sides) == 2 else " |"))
print("|---|---|" + "---|---|---|" * len(sides) + ("---|" if len(sides) == 2 else ""))
for (slow, c), by in sorted(cells.items()):
    m = {s: [statistics.fmean(x) for x in zip(*by[s])] for s in sides}
    row = f"| {slow} ms | {c} | " + " | ".join(
        f"{m[s][0]:.0f} | {m[s][1]:.1f} | {m[s][2]:.1f} ms" for s in sides)
    if len(sides) == 2:
        row += f" | {m['after'][0] / m['before'][0]:.2f}x"
    print(row + " |")
PY
