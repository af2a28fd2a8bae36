#!/usr/bin/env bash
# System calls, context switches and task-clock per job of `sluice serve` and of the 64-agent
# process, for two builds alternating (A B A B ...), counted by `perf stat` (software events and
# the raw_syscalls tracepoint: no hardware counters needed) from serve_bench's start (every node
# ready) until the cluster stops. --no-inherit: the pods' own processes are not counted, as in
# sluice_e2e.sh's CPU figures. Counts move little with the machine's load, where CPU times on a
# shared 2-core machine do (docs/benchmarks.md, issue 38 twenty-sixth session). Builds nothing.
# perf stat -p follows the threads alive when it attaches, and --no-inherit none started later
# (the server starts its workers on demand): the figures are the work of those threads, good
# for a before/after ratio; the whole process's CPU per job is sluice_e2e.sh's `cpu:` line.
#
#   BEFORE_BIN=/tmp/old/sluice AFTER_BIN=build/sluice SERVE_BENCH=build/bench/serve_bench \
#     bench/e2e/syscalls_per_job.sh
#
# Environment: ROUNDS (3), JOBS (2000), HEARTBEAT_MS (1000: fewer idle syncs, whose count grows
# with a run's length, in the per-job figures), WORK_BASE (/dev/shm), SYSCALLS (names, e.g.
# "recvfrom poll": each one's count per job too, from its syscalls:sys_enter_ tracepoint).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/ports.sh"
: "${BEFORE_BIN:?set BEFORE_BIN}" "${AFTER_BIN:?set AFTER_BIN}"
ROUNDS=${ROUNDS:-3}
JOBS=${JOBS:-2000}
OUT=$(mktemp -d /tmp/syscalls-per-job.XXXXXX)
events=raw_syscalls:sys_enter,context-switches,task-clock
for c in ${SYSCALLS:-}; do events+=",syscalls:sys_enter_$c"; done
for r in $(seq 1 "$ROUNDS"); do
  for side in before after; do
    bin=$BEFORE_BIN port=$(free_port)
    [[ $side == after ]] && bin=$AFTER_BIN
    SLUICE_BIN=$bin JOBS=$JOBS BATCHES=1 HEARTBEAT_MS=${HEARTBEAT_MS:-1000} PORT=$port \
      WORK_ROOT=${WORK_BASE:-/dev/shm} "$HERE/sluice_e2e.sh" > "$OUT/$side-$r.log" 2>&1 &
    e2e=$!
    # Once serve_bench runs, every node is ready: the server's and the agents' threads exist.
    for _ in $(seq 1 1200); do
      [[ -n $(pgrep -f "serve_bench --server http://127.0.0.1:$port") ]] && break
      sleep 0.05
    done
    s=$(pgrep -f "^$bin serve .*127.0.0.1:$port" | head -1)
    a=$(pgrep -f "^$bin agent --server http://127.0.0.1:$port" | head -1)
    perf stat -e $events --no-inherit -p "$s" -o "$OUT/$side-$r.serve.txt" &
    ps=$!
    perf stat -e $events --no-inherit -p "$a" -o "$OUT/$side-$r.agent.txt" &
    pa=$!
    wait $e2e
    kill -INT $ps $pa 2>/dev/null
    wait $ps $pa 2>/dev/null
    echo "$side $r: $(grep -E 'cpu:|starts/s' "$OUT/$side-$r.log" | tr -s ' ' | tr '\n' ';')"
  done
done
python3 - "$OUT" "$ROUNDS" "$JOBS" ${SYSCALLS:-} <<'PY'
import re, statistics, sys
out, rounds, jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pats = {"sys": r"([\d,]+)\s+raw_syscalls:sys_enter", "cs": r"([\d,]+)\s+context-switches",
        "ms": r"([\d.,]+)\s+msec task-clock"}
names = [("sys", "syscalls/job"), ("cs", "context switches/job"), ("ms", "task-clock ms/job")]
for c in sys.argv[4:]:
    pats[c] = r"([\d,]+)\s+syscalls:sys_enter_" + c + r"\b"
    names.append((c, c + "/job"))
def read(path, key):
    m = re.search(pats[key], open(path).read())
    return float(m.group(1).replace(",", "")) / jobs if m else float("nan")
def ratio(a, b):
    return f"{statistics.median(a) / statistics.median(b):.2f}x" if statistics.median(b) else "-"
for who in ("serve", "agent"):
    for key, name in names:
        b = [read(f"{out}/before-{r}.{who}.txt", key) for r in range(1, rounds + 1)]
        a = [read(f"{out}/after-{r}.{who}.txt", key) for r in range(1, rounds + 1)]
        print(f"{who:5s} {name:22s} before {'/'.join(f'{x:.3f}' for x in b)}  "
              f"after {'/'.join(f'{x:.3f}' for x in a)}  {ratio(a, b)}")
print(f"(each: the rounds in order; ratio of medians; logs in {out})")
PY
