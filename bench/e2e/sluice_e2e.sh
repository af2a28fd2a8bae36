#!/usr/bin/env bash
# End-to-end benchmark of the real sluice cluster on loopback: `sluice serve` plus one
# `sluice agent` process running 64 agents (n1..n64, 8 fake H100 each), then serve_bench
# submits JOBS one-GPU jobs running `true` and measures durable submissions/s, job starts/s
# and submit-to-running latency from the server's JobViews. Builds nothing.
#
#   SLUICE_BIN=build-bench/sluice SERVE_BENCH=build-bench/bench/serve_bench bench/e2e/sluice_e2e.sh
#
# Environment: JOBS (10000), CLIENTS (8), BATCHES ("1 100": one serve_bench run per batch
# size, each against a fresh server), NODES (64), GPUS_PER_NODE (8), HEARTBEAT_MS (100),
# CYCLE_MS (50), PORT (a free one), JSON_OUT (file: one JSON line per run), KEEP (1: keep temp dir),
# WORK_ROOT (/tmp: where the temp dir goes), RATE (requests a second over all clients, open loop:
# two builds then compare at the same load; unset: each client posts again once answered),
# NODELAY (1: a what-if run; compiles bench/e2e/nodelay_preload.c with cc and LD_PRELOADs it
# into serve and agent, emulating TCP_NODELAY on their sockets; see docs/benchmarks.md),
# SLOW_FSYNC_MS (N: a slow disk; compiles bench/e2e/slow_fsync_preload.c and LD_PRELOADs it into
# serve: each fsync/fdatasync sleeps N ms first; shows group commit filling each sync),
# INGEST (1: no agents and no waiting for jobs to run: the server's durable submission rate
# alone, the ceiling the busy-cluster runs share their two cores against),
# POD_COMMAND (true: the program every job runs, an absolute path or a name on PATH; compare.sh
# STATIC_PODS=1 passes a program without the C library),
# AGENT_ARGS (more `sluice agent` flags, e.g. "--pods-as-agent --no-fencer"),
# ETCD (HOST:PORT,...: the server keeps its state in this etcd, under a fresh cluster prefix per
# run, instead of SQLite; ETCD_OPTS: the store URL's options, e.g. "max-txn-ops=1024"; see
# bench/ha/store_bench.sh),
# IDLE_S (N: once the nodes are ready, before submitting, the server's and the agents' CPU over N
# idle seconds, printed as `idle: serve: X ms CPU per s`; what a cluster with no jobs costs),
# BUSY_S (N: instead of the run, every GPU gets a job that sleeps, and once all of them run the
# server's and the agents' CPU over N seconds is printed as `busy: agent: X ms CPU per s`: what
# a full cluster of long jobs costs while nothing starts or ends),
# PERF_OUT (dir: `perf record -g` of serve and of the agent process while serve_bench runs,
# written as DIR/{serve,agent}-batchN.data (and {serve,agent}-idle-batchN.data over the IDLE_S
# window); read with `perf report -i FILE --no-children`;
# PERF_CALLGRAPH=dwarf for call chains through code built without frame pointers, PERF_FREQ).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SLUICE_BIN=${SLUICE_BIN:-$ROOT/build/sluice}
SERVE_BENCH=${SERVE_BENCH:-$ROOT/build/bench/serve_bench}
JOBS=${JOBS:-10000}
CLIENTS=${CLIENTS:-8}
BATCHES=${BATCHES:-"1 100"}
NODES=${NODES:-64}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
HEARTBEAT_MS=${HEARTBEAT_MS:-100}
CYCLE_MS=${CYCLE_MS:-50}
source "$(dirname "$0")/ports.sh"
PORT=${PORT:-$(free_port)}
JSON_OUT=${JSON_OUT:-}
for b in "$SLUICE_BIN" "$SERVE_BENCH"; do
  [[ -x $b ]] || { echo "sluice_e2e: $b is not built (set SLUICE_BIN / SERVE_BENCH)" >&2; exit 2; }
done
TMP=$(mktemp -d "${WORK_ROOT:-/tmp}/sluice-e2e.XXXXXX")
PRELOAD=
if [[ ${NODELAY:-0} == 1 ]]; then
  cc -O2 -shared -fPIC -o "$TMP/nodelay.so" "$ROOT/bench/e2e/nodelay_preload.c" -ldl
  PRELOAD=$TMP/nodelay.so
fi
SERVE_PRELOAD=$PRELOAD
if [[ ${SLOW_FSYNC_MS:-0} -gt 0 ]]; then
  cc -O2 -shared -fPIC -o "$TMP/slow_fsync.so" "$ROOT/bench/e2e/slow_fsync_preload.c" -ldl
  SERVE_PRELOAD=$TMP/slow_fsync.so${PRELOAD:+:$PRELOAD}
  export SLOW_FSYNC_MS
fi
URL=http://127.0.0.1:$PORT
SERVE_PID=
AGENT_PID=

stop() {  # by PID only: what this script started
  [[ -n $AGENT_PID ]] && kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null || true
  [[ -n $SERVE_PID ]] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null || true
  AGENT_PID= SERVE_PID=
}
cleanup() { stop; [[ ${KEEP:-0} == 1 ]] && echo "kept $TMP" >&2 || rm -rf "$TMP"; }
trap cleanup EXIT

TOTAL=$((NODES * GPUS_PER_NODE))
# nodeGroups zero-pads names to the width of the largest index (n01..n64); so does --names.
FIRST=$(printf "%0${#NODES}d" 1)
cat > "$TMP/config.yaml" <<YAML
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: bench}
spec:
  nodeGroups:
  - {namePrefix: n, firstIndex: 1, count: $NODES, cpu: 64, memory: 512Gi, gpus: {count: $GPUS_PER_NODE, model: H100, memory: 80Gi}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: bench}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu, memory]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: $TOTAL}
      - {name: cpu, nominalQuota: $((NODES * 64))}
      - {name: memory, nominalQuota: $((NODES * 512))Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: bench, namespace: bench}
spec: {clusterQueue: bench}
YAML

INGEST=${INGEST:-0}
start_cluster() {  # $1: run label
  local d=$TMP/$1
  mkdir -p "$d"
  if curl -fsS "$URL/healthz" >/dev/null 2>&1; then
    echo "sluice_e2e: something already serves $URL (set PORT)" >&2; exit 1
  fi
  local store=()
  [[ -n ${ETCD:-} ]] && store=(--store "etcd://$ETCD/e2e-$$-$1${ETCD_OPTS:+?$ETCD_OPTS}")
  LD_PRELOAD=$SERVE_PRELOAD "$SLUICE_BIN" serve --config "$TMP/config.yaml" --listen "127.0.0.1:$PORT" --data-dir "$d/data" \
    --heartbeat-ms "$HEARTBEAT_MS" --cycle-interval-ms "$CYCLE_MS" --agent-timeout 30 "${store[@]}" \
    --namespace-max-pending 0 --namespace-submit-rate 0 \
    > "$d/serve.log" 2>&1 &
  SERVE_PID=$!
  for _ in $(seq 1 100); do
    curl -fsS "$URL/readyz" >/dev/null 2>&1 && break
    kill -0 "$SERVE_PID" 2>/dev/null || { echo "sluice_e2e: serve exited" >&2; cat "$d/serve.log" >&2; exit 1; }
    sleep 0.1
  done
  [[ $INGEST == 1 ]] && return 0
  LD_PRELOAD=$PRELOAD "$SLUICE_BIN" agent --server "$URL" --names "n[$FIRST-$NODES]" --gpus "fake:${GPUS_PER_NODE}xH100" \
    --state-dir "$d/agents" --heartbeat-ms "$HEARTBEAT_MS" ${AGENT_ARGS:-} > "$d/agent.log" 2>&1 &
  AGENT_PID=$!
  local ready=0
  for _ in $(seq 1 300); do
    ready=$(curl -fsS "$URL/v1/nodes" 2>/dev/null |
      python3 -c 'import json,sys; print(sum(1 for n in json.load(sys.stdin)["nodes"] if n.get("ready")))' \
      2>/dev/null || echo 0)
    [[ $ready == "$NODES" ]] && break
    sleep 0.2
  done
  [[ $ready == "$NODES" ]] || { echo "sluice_e2e: only $ready/$NODES nodes ready" >&2; tail "$d/agent.log" >&2; exit 1; }
}

cpu_ticks() { local st; read -r -a st < "/proc/$1/stat" && echo $((st[13] + st[14])); }
# cutime + cstime: the CPU of the children it reaped (the agents' pods).
child_ticks() { local st; read -r -a st < "/proc/$1/stat" && echo $((st[15] + st[16])); }
perf_start() {  # $1: label; records serve and the agent process into PERF_OUT/{serve,agent}-$1.data
  perf_pids=()
  [[ -n ${PERF_OUT:-} ]] || return 0
  mkdir -p "$PERF_OUT"
  local who
  for who in serve:$SERVE_PID agent:$AGENT_PID; do
    [[ $who == *: ]] && continue
    perf record -q --call-graph "${PERF_CALLGRAPH:-fp}" -F "${PERF_FREQ:-499}" -p "${who#*:}" -o "$PERF_OUT/${who%%:*}-$1.data" 2>/dev/null &
    perf_pids+=($!)
  done
}
perf_stop() {
  local p
  for p in "${perf_pids[@]}"; do kill -INT "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done
}
# CPU per second of serve and of the agent process over $1 seconds, printed as `$2: serve: X ms
# CPU per s ($1 s, $3)`, perf-recorded as $2-batchN; each process's ticks go into WINDOW_TICKS.
declare -A WINDOW_TICKS IDLE_TICKS
cpu_per_s() {
  local who pids=() before=() i=0 t
  for who in serve:$SERVE_PID agent:$AGENT_PID; do
    [[ $who == *: ]] && continue
    pids+=("$who") before+=("$(cpu_ticks "${who#*:}")")
  done
  perf_start "$2-batch$batch"
  sleep "$1"
  perf_stop
  for who in "${pids[@]}"; do
    t=$(($(cpu_ticks "${who#*:}") - before[i]))
    WINDOW_TICKS[${who%%:*}]=$t
    python3 -c "import os,sys; t=int(sys.argv[1])/os.sysconf('SC_CLK_TCK'); print(f'  {sys.argv[4]}: {sys.argv[2]}: {1e3*t/float(sys.argv[3]):.1f} ms CPU per s ({sys.argv[3]} s, {sys.argv[5]})')" \
      "$t" "${who%%:*}" "$1" "$2" "$3"
    i=$((i + 1))
  done
}
idle_cpu() {  # over IDLE_S idle seconds; left out of the run's CPU per job below
  cpu_per_s "$IDLE_S" idle "no jobs"
  local k
  for k in "${!WINDOW_TICKS[@]}"; do IDLE_TICKS[$k]=${WINDOW_TICKS[$k]}; done
}
busy_cpu() {  # over BUSY_S seconds with every GPU busy
  # Pods may run as another user: the script must be reachable (the directory searchable).
  chmod 711 "$TMP" && printf '#!/bin/sh\nexec sleep 100000\n' > "$TMP/sleeper" && chmod 755 "$TMP/sleeper"
  "$SERVE_BENCH" --server "$URL" --jobs "$TOTAL" --clients 4 --batch 64 --namespace bench \
    --queue bench --command "$TMP/sleeper" --no-wait --json > "$TMP/busy.json" || { rc=1; return; }
  local n=0
  for _ in $(seq 1 600); do
    n=$(pgrep -c -P "$AGENT_PID" -f "sleep 100000" || true)
    [[ $n -ge $TOTAL ]] && break
    sleep 0.2
  done
  [[ $n -ge $TOTAL ]] || { echo "sluice_e2e: only $n/$TOTAL sleeping pods run" >&2; rc=1; return; }
  sleep 2  # the starts' reports and pods.json writes settle
  cpu_per_s "$BUSY_S" busy "$TOTAL pods running"
}

rc=0
for batch in $BATCHES; do
  start_cluster "batch$batch"
  [[ ${IDLE_S:-0} -gt 0 ]] && idle_cpu
  if [[ ${BUSY_S:-0} -gt 0 ]]; then busy_cpu; stop; continue; fi
  nowait=() label=
  [[ $INGEST == 1 ]] && nowait=(--no-wait) label=", ingest only (no agents)"
  perf_start "batch$batch"
  echo "== sluice: $JOBS jobs, $CLIENTS clients, batch $batch, $NODES nodes x $GPUS_PER_NODE fake GPUs${POD_COMMAND:+, pods run $POD_COMMAND}${PRELOAD:+, TCP_NODELAY emulated}${SLOW_FSYNC_MS:+, fsync +${SLOW_FSYNC_MS} ms}${label}"
  # --cpu-pids: serve_bench reads both processes' CPU once every job has ended, before it lists
  # the 3,000+ job views to measure them (8-9% of the server's CPU at batch 1, docs/benchmarks.md).
  "$SERVE_BENCH" --server "$URL" --jobs "$JOBS" --clients "$CLIENTS" --batch "$batch" \
    --namespace bench --queue bench --command "${POD_COMMAND:-true}" --json "${nowait[@]}" ${RATE:+--rate "$RATE"} \
    --cpu-pids "serve=$SERVE_PID${AGENT_PID:+,agent=$AGENT_PID}" > "$TMP/result.json" || rc=1
  perf_stop
  python3 - "$TMP/result.json" "$NODES" "${NODELAY:-0}" "$INGEST" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["system"] = "sluice"; r["nodes"] = int(sys.argv[2])
r["nodelay"] = sys.argv[3] == "1"
r["ingest"] = sys.argv[4] == "1"
print(f"  acknowledged jobs                      {r['acknowledged']:12d}  (errors {r['submit_errors']}, 429s {r['submit_429']})")
print(f"  durable submissions/s                  {r['durable_submissions_per_s']:12.0f}  ({r['submit_wall_s']:.2f} s wall; ack p50 {r['ack_latency_p50_ms']:.1f} ms, p99 {r['ack_latency_p99_ms']:.1f} ms)")
if "ended" in r:
    print(f"  ended jobs                             {r['ended']:12d}  (started {r['started']} of which {r['start_time_from_end_time']} by end_time, succeeded {r['succeeded']}, failed {r['failed']}{', TIMED OUT' if r['timed_out'] else ''})")
    print(f"  job starts/s (first submit..last start){r['job_starts_per_s']:12.0f}  ({r['job_starts_per_s_after_first_start']:.0f}/s after the first start)")
    print(f"  completions/s                          {r['completions_per_s']:12.0f}")
    print(f"  submit-to-running p50 / p99            {r['submit_to_running_p50_s']:9.3f} s / {r['submit_to_running_p99_s']:.3f} s (max {r['submit_to_running_max_s']:.3f} s)")
if r.get("first_error"): print("  first error:", r["first_error"][:300])
json.dump(r, open(sys.argv[1], "w"))
PY
  # CPU seconds (user+system, from start-up until every job ended, less the IDLE_S window) of
  # the server and of the 64-agent process, from /proc: with 2 shared cores, CPU per job is what
  # bounds the rates. Taken by serve_bench before its final listing (cpu_ticks_at_end); where
  # it has none (--no-wait, an older serve_bench), now. In brackets, and in the JSON line as
  # {serve,agent}_cpu_ms_from_submit: from the first submission on (cpu_ticks_at_start), without
  # the start-up (the 64 agents' scans of /proc, 0.3-0.6 s in all), which a short run divides by
  # few jobs.
  for who in serve:$SERVE_PID agent:$AGENT_PID; do
    [[ $who == *: ]] && continue
    read -r ticks start_ticks < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get("cpu_ticks_at_end", {}).get(sys.argv[2], -1), r.get("cpu_ticks_at_start", {}).get(sys.argv[2], -1))' \
      "$TMP/result.json" "${who%%:*}" 2>/dev/null || echo -1 -1)
    [[ ${ticks:--1} -ge 0 ]] || ticks=$(cpu_ticks "${who#*:}") || continue
    python3 - "$((ticks - ${IDLE_TICKS[${who%%:*}]:-0}))" "${who%%:*}" "$JOBS" "$ticks" "${start_ticks:--1}" "$TMP/result.json" <<'PY' || true
import json, os, sys
hz = os.sysconf("SC_CLK_TCK")
t, who, jobs, end, start = int(sys.argv[1]) / hz, sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
line = f"  cpu: {who}: {t:.1f} s = {1e3 * t / jobs:.2f} ms per job"
if start >= 0:
    steady = 1e3 * (end - start) / hz / jobs
    line += f" ({steady:.2f} ms per job from the first submission)"
    r = json.load(open(sys.argv[6]))
    r[f"{who}_cpu_ms_from_submit"] = steady
    json.dump(r, open(sys.argv[6], "w"))
print(line)
PY
  done
  # The pods' own processes (`true` here), which the agent reaps: their CPU, beside the
  # server's and the agents', is what two shared cores run per job (an exec and an exit).
  if [[ -n $AGENT_PID ]] && pod_ticks=$(child_ticks "$AGENT_PID"); then
    python3 -c 'import os,sys; t = int(sys.argv[1]) / os.sysconf("SC_CLK_TCK"); print(f"  cpu: pods: {t:.1f} s = {1e3 * t / int(sys.argv[2]):.2f} ms per job (their own processes, reaped by the agent)")' \
      "$pod_ticks" "$JOBS" || true
  fi
  # Peak resident memory of the server and the agent process (VmHWM): what the allocator and
  # the jobs kept in memory cost.
  for who in serve:$SERVE_PID agent:$AGENT_PID; do
    [[ $who == *: ]] && continue
    hwm=$(awk '/^VmHWM:/ {printf "%.0f", $2 / 1024}' "/proc/${who#*:}/status" 2>/dev/null) &&
      [[ -n $hwm ]] && echo "  memory: ${who%%:*}: peak RSS $hwm MiB"
  done
  # Where the server's time went: durable commits and scheduling cycles (count, mean, sum).
  curl -fsS "$URL/metrics" 2>/dev/null | python3 -c '
import sys, re
v = {}
for l in sys.stdin:
    m = re.match(r"(sluice_(?:store_commit|scheduling_cycle)_seconds|sluice_store_commit_writes)_(sum|count)(\{[^}]*\})? (\S+)", l)
    if m: v[(m[1], m[3] or "", m[2])] = float(m[4])
for (name, labels, kind), x in sorted(v.items()):
    if kind != "count" or not x: continue
    total = v.get((name, labels, "sum"), 0.0)
    if name.endswith("_writes"):
        print(f"  server: {name}: {total:.0f} writes in {x:.0f} commits = {total / x:.1f} per commit")
    else:
        print(f"  server: {name}{labels}: {x:.0f} x {1e3 * total / x:.2f} ms = {total:.2f} s")
' || true
  [[ -n $JSON_OUT ]] && cat "$TMP/result.json" >> "$JSON_OUT" && echo >> "$JSON_OUT"
  cp "$TMP/batch$batch/serve.log" "$TMP/serve-batch$batch.log" 2>/dev/null || true
  stop
done
exit $rc
