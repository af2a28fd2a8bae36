#!/usr/bin/env bash
# The control plane at scale (issue 16): one `sluice serve` (SQLite) with NODES fake nodes of
# GPUS fake H100 each (bench/node_swarm: the agents' protocol from a few threads), then JOBS
# one-GPU jobs through it (serve_bench, batches of 100). Reports:
#   - registration: wall time until every node registered;
#   - heartbeats: the server's CPU (utime+stime from /proc/PID/stat) over WINDOW s while every
#     node syncs once per heartbeat and nothing else happens: cores; the syncs/s the swarm got
#     answered (below NODES/heartbeat when the machine is too loaded for the swarm to keep up);
#     microseconds of server CPU per sync answered, and the cores that makes at the full rate;
#     the server's context switches per sync (all its threads, /proc/PID/task/*/status);
#   - memory: the server's RSS idle with every node, and its peak (VmHWM) after the jobs;
#   - jobs: durable submissions/s, starts/s, submit-to-running p50/p99 (serve_bench), the
#     scheduling cycle's mean and max (the server's metrics), the server's CPU per job.
#
#   SLUICE_BIN=build/sluice bench/ha/scale_bench.sh            (10,000 nodes x 8, 100,000 jobs)
#   NODES=500 JOBS=2000 CHECK=1 bench/ha/scale_bench.sh        (what tests/integration runs)
#   JOBS=0 bench/ha/scale_bench.sh                              (registration and heartbeats only)
#
# Env: NODES (10000), GPUS (8), JOBS (100000), HEARTBEAT_MS (1000), WINDOW (10), RUN_MS (pods
# "run" this long, 2000), SWARM_THREADS (NODES/50: a sync that carries reports waits for the
# server's durable commit, so the swarm needs many in flight), CLIENTS (4), BATCH (100), PORT (free), JSON_OUT
# (file: one JSON line), PERF_OUT (dir: `perf record -g` of the server during the heartbeat
# window and the jobs), CHECK (1: exit 1 unless every node registered, every job succeeded and
# no sync failed), KEEP (1: keep the temp dir). Builds nothing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SLUICE_BIN=${SLUICE_BIN:-$ROOT/build/sluice}
BIN_DIR=$(dirname "$SLUICE_BIN")
SWARM=${NODE_SWARM:-$BIN_DIR/bench/node_swarm}
SERVE_BENCH=${SERVE_BENCH:-$BIN_DIR/bench/serve_bench}
NODES=${NODES:-10000}
GPUS=${GPUS:-8}
JOBS=${JOBS:-100000}
HEARTBEAT_MS=${HEARTBEAT_MS:-1000}
WINDOW=${WINDOW:-10}
RUN_MS=${RUN_MS:-2000}
CHECK=${CHECK:-0}
for b in "$SLUICE_BIN" "$SWARM" "$SERVE_BENCH"; do
  [[ -x $b ]] || { echo "scale_bench: $b is not built (-DSLUICE_BENCH=ON)" >&2; exit 77; }
done
PORT=${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
URL=http://127.0.0.1:$PORT
TMP=$(mktemp -d "${WORK_ROOT:-/tmp}/sluice-scale.XXXXXX")
SERVE_PID= SWARM_PID= PERF_PID=
cleanup() {  # by PID only: what this script started
  for p in $PERF_PID $SWARM_PID $SERVE_PID; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  [[ ${KEEP:-0} == 1 ]] && echo "kept $TMP" >&2 || rm -rf "$TMP"
}
trap cleanup EXIT

cat > "$TMP/config.yaml" <<YAML
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: scale}
spec:
  nodeGroups:
  - {namePrefix: n, firstIndex: 1, count: $NODES, cpu: 64, memory: 512Gi, gpus: {count: $GPUS, model: H100, memory: 80Gi}}
---
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: scale}
spec: {maxPendingTotal: 10000000}
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
      - {name: nvidia.com/gpu, nominalQuota: $((NODES * GPUS))}
      - {name: cpu, nominalQuota: $((NODES * 64))}
      - {name: memory, nominalQuota: $((NODES * 512))Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: bench, namespace: bench}
spec: {clusterQueue: bench}
YAML

cpu_s() {  # utime+stime of a PID, in seconds
  python3 -c "import os,sys; f=open('/proc/%s/stat'%sys.argv[1]).read().rsplit(')',1)[1].split(); print((int(f[11])+int(f[12]))/os.sysconf('SC_CLK_TCK'))" "$1"
}
ctx_switches() {  # voluntary + involuntary, summed over the PID's threads
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^(non)?voluntary_ctxt_switches:/ {n += $2} END {print n + 0}'
}
status_kb() { awk -v k="$2:" '$1==k {print $2}' "/proc/$1/status"; }
perf_start() {
  [[ -n ${PERF_OUT:-} ]] || return 0
  mkdir -p "$PERF_OUT"
  perf record -q -g -F "${PERF_FREQ:-499}" -p "$SERVE_PID" -o "$PERF_OUT/serve-$1.data" 2>/dev/null &
  PERF_PID=$!
}
perf_stop() { [[ -n $PERF_PID ]] && kill -INT "$PERF_PID" 2>/dev/null && wait "$PERF_PID" 2>/dev/null || true; PERF_PID=; }

"$SLUICE_BIN" serve --config "$TMP/config.yaml" --listen "127.0.0.1:$PORT" --data-dir "$TMP/data" \
  --heartbeat-ms "$HEARTBEAT_MS" --agent-timeout $((HEARTBEAT_MS * 30 / 1000 + 30)) --quiet \
  --namespace-max-pending 0 --namespace-submit-rate 0 \
  > "$TMP/serve.log" 2>&1 &
SERVE_PID=$!
for _ in $(seq 1 300); do
  curl -fsS "$URL/readyz" >/dev/null 2>&1 && break
  kill -0 "$SERVE_PID" 2>/dev/null || { echo "scale_bench: serve exited" >&2; cat "$TMP/serve.log" >&2; exit 1; }
  sleep 0.1
done
echo "== $NODES nodes x $GPUS fake H100, heartbeat $HEARTBEAT_MS ms, $JOBS jobs"

# 1. Registration.
t0=$(date +%s.%N)
"$SWARM" --server "$URL" --prefix n --first 1 --count "$NODES" --width "${#NODES}" --gpus "$GPUS" \
  --threads "${SWARM_THREADS:-$(( (NODES + 49) / 50 ))}" --run-ms "$RUN_MS" --progress-file "$TMP/syncs" \
  > "$TMP/swarm.json" 2> "$TMP/swarm.log" &
SWARM_PID=$!
# The swarm says when the server answered every node's registration (the server's /metrics
# lists every node: scraping it during the run would cost the server more than the syncs).
for _ in $(seq 1 12000); do
  grep -q "nodes registered in" "$TMP/swarm.log" 2>/dev/null && break
  kill -0 "$SWARM_PID" 2>/dev/null || break
  sleep 0.05
done
reg_s=$(python3 -c "import time; print(round(time.time()-$t0, 2))")
sleep 2  # one heartbeat or two: every node has synced since
ready=$(curl -fsS "$URL/metrics" 2>/dev/null | grep -c '^sluice_node_ready{.*} 1$' || true)
echo "  registration: $NODES nodes in $reg_s s; ${ready:-0} ready"

# 2. Heartbeats alone: the server's CPU over WINDOW s.
sleep 1
perf_start heartbeats
n0=$(cat "$TMP/syncs"); s0=$(ctx_switches "$SERVE_PID"); c0=$(cpu_s "$SERVE_PID"); w0=$(date +%s.%N)
sleep "$WINDOW"
c1=$(cpu_s "$SERVE_PID"); w1=$(date +%s.%N); s1=$(ctx_switches "$SERVE_PID"); n1=$(cat "$TMP/syncs")
perf_stop
rss_idle=$(status_kb "$SERVE_PID" VmRSS)
read -r hb_cores hb_rate hb_us hb_full hb_cs <<<"$(python3 -c "
w=$w1-$w0; c=($c1-$c0)/w; n=max(1.0, ($n1-$n0)/w)
print(round(c,3), round(n), round(1e6*c/n,1), round(c*$NODES*1000.0/$HEARTBEAT_MS/n,3), round(($s1-$s0)/w/n,2))")"
echo "  heartbeats: server CPU $hb_cores cores for $hb_rate syncs/s answered (of $((NODES * 1000 / HEARTBEAT_MS))) = $hb_us us per sync ($hb_full cores at the full rate), $hb_cs context switches per sync; RSS $((rss_idle / 1024)) MiB; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# 3. Jobs.
perf_start jobs
c0=$(cpu_s "$SERVE_PID")
if (( JOBS > 0 )); then
  "$SERVE_BENCH" --server "$URL" --jobs "$JOBS" --clients "${CLIENTS:-4}" --batch "${BATCH:-100}" \
    --namespace bench --queue bench --command true --wait-s 1800 --json > "$TMP/jobs.json" || true
else
  echo '{"acknowledged": 0, "durable_submissions_per_s": 0, "succeeded": 0}' > "$TMP/jobs.json"
fi
c1=$(cpu_s "$SERVE_PID")
perf_stop
rss_peak=$(status_kb "$SERVE_PID" VmHWM)
curl -fsS "$URL/metrics" > "$TMP/metrics.txt" || true
kill -INT "$SWARM_PID" 2>/dev/null; wait "$SWARM_PID" 2>/dev/null || true; SWARM_PID=
python3 - "$TMP" "$NODES" "$GPUS" "$JOBS" "$HEARTBEAT_MS" "$reg_s" "${ready:-0}" "$hb_cores" "$hb_us" \
  "$rss_idle" "$rss_peak" "$c0" "$c1" "$CHECK" "${JSON_OUT:-}" "$hb_cs" "$hb_rate" "$hb_full" <<'PY'
import json, re, sys
(tmp, nodes, gpus, jobs, hb, reg_s, ready, hb_cores, hb_us, rss_idle, rss_peak, c0, c1, check,
 json_out, hb_cs, hb_rate, hb_full) = sys.argv[1:]
j = json.load(open(tmp + "/jobs.json"))
sw = json.loads((open(tmp + "/swarm.json").read().strip().splitlines() or ["{}"])[-1])
m = {}
for line in open(tmp + "/metrics.txt"):
    x = re.match(r'sluice_scheduling_cycle_seconds_(sum|count)\{[^}]*\} (\S+)', line)
    if x:
        m[x[1]] = m.get(x[1], 0) + float(x[2])
cyc = m.get("sum", 0) / m["count"] * 1e3 if m.get("count") else float("nan")
bk = {}
for mode, b, v in re.findall(r'sluice_scheduling_cycle_seconds_bucket\{mode="(\w+)",le="([0-9.e+-]+)"\} (\S+)',
                             open(tmp + "/metrics.txt").read()):
    bk[float(b)] = bk.get(float(b), 0) + float(v)
cyc_max = next((b * 1e3 for b, v in sorted(bk.items()) if v >= m.get("count", 0)), float("nan"))
r = {"nodes": int(nodes), "gpus_per_node": int(gpus), "jobs": int(jobs), "heartbeat_ms": int(hb),
     "registered": int(ready), "registration_s": float(reg_s), "heartbeat_cores": float(hb_cores),
     "us_per_sync": float(hb_us), "context_switches_per_sync": float(hb_cs),
     "syncs_per_s": float(hb_rate), "heartbeat_cores_full_rate": float(hb_full),
     "load_average": open("/proc/loadavg").read().split()[:3], "rss_idle_mib": int(rss_idle) // 1024,
     "rss_peak_mib": int(rss_peak) // 1024, "cycle_mean_ms": round(cyc, 2),
     "cycle_max_bucket_ms": cyc_max, "cycles": m.get("count", 0),
     "server_cpu_ms_per_job": round(1e3 * (float(c1) - float(c0)) / max(1, int(jobs)), 3),
     "swarm": sw, "serve_bench": j}
if int(jobs) > 0:
  print("  jobs: %d acknowledged, %.0f durable submissions/s; %d ended (%d succeeded)%s" % (
      j["acknowledged"], j["durable_submissions_per_s"], j.get("ended", 0), j.get("succeeded", 0),
      ", TIMED OUT" if j.get("timed_out") else ""))
  print("  starts/s %.0f; submit-to-running p50 %.2f s p99 %.2f s" % (
      j.get("job_starts_per_s", 0), j.get("submit_to_running_p50_s", 0), j.get("submit_to_running_p99_s", 0)))
  print("  cycles: %d, mean %.2f ms, max <= %s ms; server CPU %.3f ms per job; peak RSS %d MiB" % (
      r["cycles"], cyc, cyc_max, r["server_cpu_ms_per_job"], r["rss_peak_mib"]))
print("  swarm: %d syncs, %d errors%s; sync p50 %.2f ms p99 %.2f ms" % (
    sw.get("syncs", 0), sw.get("errors", 0),
    (" (first: %s)" % sw["first_error"][:200]) if sw.get("errors") else "",
    sw.get("sync_ms_p50", 0), sw.get("sync_ms_p99", 0)))
if json_out:
    open(json_out, "a").write(json.dumps(r) + "\n")
if check == "1":
    bad = []
    if int(ready) < int(nodes): bad.append("only %s of %s nodes registered" % (ready, nodes))
    if j["acknowledged"] != int(jobs): bad.append("%d of %s jobs acknowledged" % (j["acknowledged"], jobs))
    if j.get("succeeded") != int(jobs): bad.append("%s of %s jobs succeeded" % (j.get("succeeded"), jobs))
    if sw.get("errors"): bad.append("%d sync errors: %s" % (sw["errors"], sw.get("first_error", "")[:300]))
    if sw.get("pods") != int(jobs): bad.append("%s pods ran for %s jobs (each job once)" % (sw.get("pods"), jobs))
    for b in bad: print("FAIL " + b)
    print("scale_bench: %s" % ("ok" if not bad else "%d check(s) failed" % len(bad)))
    sys.exit(1 if bad else 0)
PY
