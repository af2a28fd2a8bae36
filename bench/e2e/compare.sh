#!/usr/bin/env bash
# sluice against Slurm 22.05 on the same machine, in one script: runs sluice_e2e.sh (SLUICE_JOBS
# jobs on 64 nodes x 8 fake GPUs, batch 1 and batch BATCH) and slurm_e2e.sh (SLURM_JOBS jobs,
# sbatch --wrap true --gres=gpu:1, SLURM_NODES fake nodes, batch_sched_delay=0), then prints
# one side-by-side table with sluice/Slurm ratios. Rates compare across different job counts;
# latencies are per job. Builds nothing: SLUICE_BIN, SERVE_BENCH as for sluice_e2e.sh.
#
#   SLUICE_BIN=build-bench/sluice SERVE_BENCH=build-bench/bench/serve_bench bench/e2e/compare.sh
#
# Environment: SLUICE_JOBS (10000), SLURM_JOBS (2000), CLIENTS (8), BATCH (100), SLURM_NODES
# (16), NODELAY_TOO (0; 1: also a sluice run with TCP_NODELAY emulated through LD_PRELOAD, from
# before the server set it itself), INGEST_TOO (1: also the server's submission rate alone, no
# agents: the ceiling that the busy-cluster runs share two cores against), KEEP (1: keep every
# run's files; see below), STATIC_PODS (1: every job of both systems runs bench/e2e/exit0.c,
# built here with cc, instead of `true`: a program without the C library, whose start asks the
# CPU nothing; in a VM where CPUID traps, glibc's start-up is most of a `true` pod's CPU, see
# docs/benchmarks.md).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SLUICE_JOBS=${SLUICE_JOBS:-10000}
SLURM_JOBS=${SLURM_JOBS:-2000}
CLIENTS=${CLIENTS:-8}
BATCH=${BATCH:-100}
SLURM_NODES=${SLURM_NODES:-16}
OUT=$(mktemp /tmp/compare.XXXXXX.jsonl)
# Every run's files (pod logs and work dirs, databases, Slurm's spool) stay until the end: on a
# filesystem without a journal (ext4 here), creating files for some minutes after deleting
# thousands is several times slower (ext4 then skips each recently deleted inode one by one),
# so a run that follows another's cleanup would pay for it. Delete only once all have run, and
# start the next compare.sh some minutes later (or run them all with KEEP=1 and delete after).
WORK_ROOT=$(mktemp -d /tmp/compare-e2e.XXXXXX)
chmod 755 "$WORK_ROOT"  # Slurm's munged runs as user munge below it
if [[ ${KEEP:-0} == 1 ]]; then
  trap 'rm -f "$OUT"; echo "kept $WORK_ROOT" >&2' EXIT
else
  trap 'rm -f "$OUT"; rm -rf "$WORK_ROOT"' EXIT
fi
export WORK_ROOT KEEP=1
if [[ ${STATIC_PODS:-0} == 1 ]]; then
  cc -O2 -static -nostdlib -o "$WORK_ROOT/exit0" "$HERE/exit0.c"
  export POD_COMMAND=$WORK_ROOT/exit0
fi

JSON_OUT=$OUT JOBS=$SLUICE_JOBS CLIENTS=$CLIENTS BATCHES="1 $BATCH" "$HERE/sluice_e2e.sh"
if [[ ${INGEST_TOO:-1} == 1 ]]; then
  JSON_OUT=$OUT JOBS=$SLUICE_JOBS CLIENTS=$CLIENTS BATCHES="1 $BATCH" INGEST=1 "$HERE/sluice_e2e.sh"
fi
if [[ ${NODELAY_TOO:-0} == 1 ]]; then
  JSON_OUT=$OUT JOBS=$SLUICE_JOBS CLIENTS=$CLIENTS BATCHES="1 $BATCH" NODELAY=1 "$HERE/sluice_e2e.sh"
fi
JSON_OUT=$OUT JOBS=$SLURM_JOBS CLIENTS=$CLIENTS NODES=$SLURM_NODES "$HERE/slurm_e2e.sh"

python3 - "$OUT" "${POD_COMMAND:-}" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
slurm = next(r for r in rows if r["system"] == "slurm")
def label(r):
    if r["system"] == "slurm":
        return f"Slurm 22.05, {r['nodes']} nodes, {r['jobs']} jobs, sbatch"
    if r.get("ingest"):
        return f"sluice, submissions alone (no agents), {r['jobs']} jobs, batch {r['batch']}"
    return (f"sluice, {r['nodes']} nodes, {r['jobs']} jobs, batch {r['batch']}"
            + (" (what-if: TCP_NODELAY)" if r.get("nodelay") else ""))
cols = [("durable submissions/s", "durable_submissions_per_s", True, "{:.0f}"),
        ("job starts/s", "job_starts_per_s", True, "{:.0f}"),
        ("completions/s", "completions_per_s", True, "{:.0f}"),
        ("submit-to-running p50 s", "submit_to_running_p50_s", False, "{:.2f}"),
        ("submit-to-running p99 s", "submit_to_running_p99_s", False, "{:.2f}")]
print()
print("| run | " + " | ".join(c[0] for c in cols) + " |")
print("|---|" + "---|" * len(cols))
for r in rows:
    cells = []
    for name, key, higher_better, fmt in cols:
        if key not in r:
            cells.append("-")
            continue
        v = r[key]
        cell = fmt.format(v)
        if r is slurm and "submit_to_running" in key:
            cell = f"{v:.0f} (1 s res.)"
        if r is not slurm and slurm.get(key):
            ratio = v / slurm[key]
            cell += f" ({ratio:.1f}x)"
        cells.append(cell)
    print(f"| {label(r)} | " + " | ".join(cells) + " |")
print()
print("Ratios are sluice/Slurm (for latencies, lower is better: a ratio below 1 favours sluice).")
if sys.argv[2]:
    print(f"Every job of both ran {sys.argv[2]} (bench/e2e/exit0.c: no C library), not true.")
print("Targets (issue #5): >= 5,000 durable submissions/s, >= 1,000 job starts/s, >= 10x Slurm.")
PY
