#!/usr/bin/env bash
# Two builds of sluice in one script, alternating (A B A B ...) so that drift of the machine
# falls on both: bench/e2e/sluice_e2e.sh for each (64 agents, 10,000 jobs, batch 1 and BATCH),
# then one table of durable submissions/s, job starts/s and the server's and agents' CPU per
# job (whole run, and from the first submission: without the start-up), with the after/before
# ratio. Builds nothing.
#
#   BEFORE_BIN=/path/old/sluice AFTER_BIN=build/sluice SERVE_BENCH=build/bench/serve_bench \
#     bench/e2e/before_after.sh
#
# Environment: ROUNDS (2), JOBS (10000), BATCH (100), WORK_BASE (/tmp: where the runs' data
# dirs go; a fresh tmpfs takes the filesystem's drift out, see docs/benchmarks.md), FRESH_EXT4
# (1: each run on an ext4 made for it, a 4 GiB loop image under WORK_BASE, mounted privately and
# removed after the run; needs root and a free loop device: ext4 as agents meet it, without the
# drift a shared one gathers from the runs before, whose deleted inodes slow the next run's
# file creation), plus what sluice_e2e.sh reads (IDLE_S=N adds the idle cluster's CPU per
# second to the table).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/ports.sh"
: "${BEFORE_BIN:?set BEFORE_BIN}" "${AFTER_BIN:?set AFTER_BIN}"
ROUNDS=${ROUNDS:-2}
BATCH=${BATCH:-100}
LOGS=$(mktemp -d /tmp/before-after.XXXXXX)
WORK_ROOT=$(mktemp -d "${WORK_BASE:-/tmp}/before-after-work.XXXXXX")  # deleted at the end only (docs/benchmarks.md)
BASE_ROOT=$WORK_ROOT
MOUNTED=
# The run's own ext4 (FRESH_EXT4=1): made and mounted under BASE_ROOT, WORK_ROOT moved onto it.
fresh_ext4() {
  truncate -s 4G "$BASE_ROOT/fs.img" && mkfs.ext4 -q -F "$BASE_ROOT/fs.img" &&
    mkdir -p "$BASE_ROOT/mnt" && mount -o loop "$BASE_ROOT/fs.img" "$BASE_ROOT/mnt" &&
    MOUNTED=$BASE_ROOT/mnt && WORK_ROOT=$BASE_ROOT/mnt
}
drop_ext4() {
  [[ -z $MOUNTED ]] && return 0
  for _ in 1 2 3 4 5; do umount "$MOUNTED" 2>/dev/null && break; sleep 1; done
  MOUNTED= WORK_ROOT=$BASE_ROOT
  rm -rf "$BASE_ROOT/mnt" "$BASE_ROOT/fs.img"
}
trap 'drop_ext4; rm -rf "$BASE_ROOT"' EXIT
export WORK_ROOT
for r in $(seq 1 "$ROUNDS"); do
  for side in before after; do
    bin=$BEFORE_BIN
    [[ $side == after ]] && bin=$AFTER_BIN
    # A fresh port per run: a server on cpp-httplib (SO_REUSEPORT) leaves TIME_WAIT sockets
    # that keep a later SO_REUSEADDR-only bind of the same port refused for up to a minute.
    port=$(free_port)
    [[ ${FRESH_EXT4:-0} == 1 ]] && fresh_ext4
    PORT=$port SLUICE_BIN=$bin BATCHES="1 $BATCH" JSON_OUT="$LOGS/$side-$r.jsonl" \
      "$HERE/sluice_e2e.sh" | tee "$LOGS/$side-$r.log"
    drop_ext4
  done
done
python3 - "$LOGS" "$ROUNDS" <<'PY'
import json, os, re, statistics, sys
logs, rounds = sys.argv[1], int(sys.argv[2])
rows = {}  # (side, batch) -> list of dicts
for side in ("before", "after"):
    for r in range(1, rounds + 1):
        res = [json.loads(l) for l in open(os.path.join(logs, f"{side}-{r}.jsonl")) if l.strip()]
        text = open(os.path.join(logs, f"{side}-{r}.log")).read()
        cpus = re.findall(r"cpu: (serve|agent): [\d.]+ s = ([\d.]+) ms per job", text)
        idle = re.findall(r"idle: (serve|agent): ([\d.]+) ms CPU per s", text)
        for i, x in enumerate(res):
            x["serve_cpu_ms"] = float(cpus[2 * i][1]) if len(cpus) > 2 * i else float("nan")
            x["agent_cpu_ms"] = float(cpus[2 * i + 1][1]) if len(cpus) > 2 * i + 1 else float("nan")
            x["serve_idle"] = float(idle[2 * i][1]) if len(idle) > 2 * i else float("nan")
            x["agent_idle"] = float(idle[2 * i + 1][1]) if len(idle) > 2 * i + 1 else float("nan")
            rows.setdefault((side, x["batch"]), []).append(x)
cols = [("durable submissions/s", "durable_submissions_per_s"), ("job starts/s", "job_starts_per_s"),
        ("server CPU ms/job", "serve_cpu_ms"), ("agents CPU ms/job", "agent_cpu_ms"),
        ("server CPU ms/job from submit", "serve_cpu_ms_from_submit"),
        ("agents CPU ms/job from submit", "agent_cpu_ms_from_submit"),
        ("submit-to-running p99 s", "submit_to_running_p99_s")]
if any(x.get("serve_idle") == x.get("serve_idle") for v in rows.values() for x in v):  # IDLE_S set
    cols += [("idle server CPU ms/s", "serve_idle"), ("idle agents CPU ms/s", "agent_idle")]
print("\n| batch | " + " | ".join(f"{c} before | after | after/before" for c, _ in cols) + " |")
print("|---|" + "---|---|---|" * len(cols))
for batch in sorted({b for _, b in rows}):
    cells = []
    for _, key in cols:
        b = [x.get(key, float("nan")) for x in rows[("before", batch)]]
        a = [x.get(key, float("nan")) for x in rows[("after", batch)]]
        fmt = "{:.0f}" if "per_s" in key else "{:.1f}" if key.endswith("_idle") else "{:.3f}"
        cells += ["/".join(fmt.format(v) for v in b), "/".join(fmt.format(v) for v in a),
                  "%.2fx" % (statistics.median(a) / statistics.median(b))]
    print(f"| {batch} | " + " | ".join(cells) + " |")
print(f"\n(each cell: the {rounds} rounds in order; ratio of medians; logs in {logs})")
PY
