#!/usr/bin/env bash
# The server's CPU for heartbeats, two builds of `sluice serve` against each other (issue 16):
# bench/ha/scale_bench.sh with JOBS=0 (registration, then WINDOW s of every node syncing once
# per heartbeat), A and B alternating (A B, B A, A B, ...: neither always runs first), PAIRS
# times at each of SIZES nodes. CPU from /proc (utime+stime), so less sensitive than wall time
# to what else runs on the machine; the load average is printed with each run.
#
#   cp build/sluice /tmp/sluice-before   # (before the change)
#   A=/tmp/sluice-before B=build/sluice PAIRS=3 SIZES="3000 10000" bench/ha/heartbeat_ab.sh
#
# Env: A, B (the two binaries; B defaults to build/sluice), PAIRS (3), SIZES ("3000 10000"),
# WINDOW (10), JSON_OUT (file: scale_bench's JSON line per run, with "build": A or B). Prints
# per size the microseconds of server CPU per sync answered, the cores that makes at one sync
# per node per heartbeat, and the cores measured, with B/A per pair. The
# swarm is build/bench/node_swarm (NODE_SWARM). Builds nothing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
A=${A:?A=path of the first sluice binary}
B=${B:-$ROOT/build/sluice}
PAIRS=${PAIRS:-3}
SIZES=${SIZES:-3000 10000}
export NODE_SWARM=${NODE_SWARM:-$ROOT/build/bench/node_swarm}
export SERVE_BENCH=${SERVE_BENCH:-$ROOT/build/bench/serve_bench}
OUT=$(mktemp "${TMPDIR:-/tmp}/heartbeat_ab.XXXXXX")
trap 'rm -f "$OUT"' EXIT
for n in $SIZES; do
  for ((i = 0; i < PAIRS; i++)); do
    order="A B"
    ((i % 2)) && order="B A"
    for which in $order; do
      bin=$A
      [[ $which == B ]] && bin=$B
      JSON_OUT=$OUT SLUICE_BIN=$bin NODES=$n JOBS=0 WINDOW=${WINDOW:-10} \
        "$ROOT/bench/ha/scale_bench.sh" | grep -E 'heartbeats|swarm' | sed "s/^/$which $n: /"
      python3 - "$OUT" "$which" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
r = json.loads(lines[-1]); r["build"] = sys.argv[2]
lines[-1] = json.dumps(r)
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
    done
  done
done
[[ -n ${JSON_OUT:-} ]] && cat "$OUT" >> "$JSON_OUT"
python3 - "$OUT" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
for n in sorted({r["nodes"] for r in runs}):
    for key, what in (("us_per_sync", "us per sync answered"),
                      ("heartbeat_cores_full_rate", "cores at the full rate"),
                      ("heartbeat_cores", "cores measured")):
        a = [r[key] for r in runs if r["nodes"] == n and r["build"] == "A"]
        b = [r[key] for r in runs if r["nodes"] == n and r["build"] == "B"]
        ratios = [y / x for x, y in zip(a, b) if x > 0]
        print("%d nodes, %s: A %s, B %s; B/A per pair %s, median %.2f" % (
            n, what, a, b, [round(x, 2) for x in ratios],
            statistics.median(ratios) if ratios else float("nan")))
PY
