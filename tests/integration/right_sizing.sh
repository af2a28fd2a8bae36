#!/usr/bin/env bash
# Right-sizing from measured GPU use end to end (issue 37, item 3): a real `sluice serve` and a
# fake-GPU `sluice agent`; a job on an 80 GiB H100 whose pod writes a simulated use of 11 GiB
# to $SLUICE_GPU_USE_FILE. The agent reports it, the server keeps the job's peak and mean (the
# JobView, `sluice jobs --json`, the store across a restart), /metrics counts GPU-seconds used
# per namespace, and `sluice advise` lists the job as over-requesting with the MIG slice of
# this cluster it fits (1g.20gb: 11 GiB + 20% headroom). A pod that writes garbage is measured
# as nothing, and the agent goes on.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
bin=${SLUICE_BIN:?}
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
tmp=$(mktemp -d)
chmod 711 "$tmp"
cd "$tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp" 2>/dev/null || true
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$tmp"/*.log; do echo "== $f" >&2; tail -20 "$f" >&2; done; exit 1; }

# n1: the agent's two H100s; m1: an H100 cut into MIG slices (configured; no agent needed for
# `sluice advise` to know the cluster offers them).
cat >"$tmp/cluster.yaml" <<'YAML'
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  nodes:
  - {name: n1, cpu: 8, memory: 16Gi, gpus: {count: 2, model: H100, memory: 80Gi}}
  - name: m1
    cpu: 8
    memory: 16Gi
    gpus:
    - {model: H100, memory: 80Gi, mig: [1g.10gb, 1g.20gb, 3g.40gb]}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: any}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors: [{name: any, resources: [{name: cpu, nominalQuota: 16}, {name: memory, nominalQuota: 32Gi}, {name: nvidia.com/gpu, nominalQuota: 2}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: cq}
YAML

start_server() {
  port=$(free_port)
  url=http://127.0.0.1:$port
  "$bin" serve --config "$tmp/cluster.yaml" --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
    --heartbeat-ms 200 --cycle-interval-ms 200 >>"$tmp/serve.log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  wait_ready "$url" 20 "$server_pid" || fail "server not ready"
}
start_server
"$bin" agent --server "$url" --name n1 --gpus fake:2xH100 --state-dir "$tmp/agent" \
  --heartbeat-ms 200 --pods-as-agent >"$tmp/agent.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
  [[ $(curl -fsS "$url/v1/nodes" 2>/dev/null | python3 -c 'import json,sys; print(sum(n["ready"] for n in json.load(sys.stdin)["nodes"]))' 2>/dev/null) == 1 ]] && break
  sleep 0.1
done
job_field() {  # $1 id, $2 python expression on the JobView j
  curl -fsS "$url/v1/jobs/$1" | python3 -c "import json,sys; j=json.load(sys.stdin); j=j.get('job', j); print($2)"
}
run_job() {  # $1 name, $2 what the pod writes to its use file -> the job id
  "$bin" run --server "$url" -q q --gpus 1 --cpu 1 --name "$1" -- \
    sh -c "printf '$2' > \"\$SLUICE_GPU_USE_FILE\"; sleep 3" | sed -n 's/^submitted job \([0-9]*\).*/\1/p'
}
wait_done() {
  local st=
  for _ in $(seq 1 600); do
    st=$(job_field "$1" 'j["state"]')
    [[ $st == succeeded || $st == failed ]] && break
    sleep 0.1
  done
  [[ $st == succeeded ]] || fail "job $1: $st"
}

# 1. 11 GiB at 35% on an 80 GiB H100; a pod whose file is garbage.
big=$(run_job big '11264 35\n')
bad=$(run_job garbage 'lots of memory\n')
[[ -n $big && -n $bad ]] || fail "submit"
wait_done "$big"
wait_done "$bad"

# 2. The job's peak and mean: the JobView and `sluice jobs --json`; nothing for the garbage one.
[[ $(job_field "$big" 'j["gpu_use"]["peak_mib"]') == 11264 ]] || fail "peak: $(job_field "$big" 'j["gpu_use"]')"
[[ $(job_field "$big" 'j["gpu_use"]["mean_mib"]') == 11264 ]] || fail "mean: $(job_field "$big" 'j["gpu_use"]')"
[[ $(job_field "$big" 'j["gpu_use"]["mean_util_pct"]') == 35 ]] || fail "util: $(job_field "$big" 'j["gpu_use"]')"
[[ $(job_field "$bad" 'j["gpu_use"]') == None ]] || fail "garbage measured: $(job_field "$bad" 'j["gpu_use"]')"
"$bin" jobs --server "$url" --json | python3 -c "
import json,sys
j=next(j for j in json.load(sys.stdin)['jobs'] if j['id']==$big)
sys.exit(0 if j['gpu_use']['peak_mib']==11264 else 1)" || fail "sluice jobs --json: no gpu_use"

# 3. `sluice advise`: over-requesting, with the slice it fits; --headroom 0 changes nothing here
#    (11 GiB still needs a 20 GB slice); the JSON form names it too.
"$bin" advise --server "$url" >"$tmp/advise.txt" || fail "advise: $(cat "$tmp/advise.txt")"
grep -qF "$big default/big (" "$tmp/advise.txt" || fail "advise: job missing: $(cat "$tmp/advise.txt")"
grep -qF "requested 1 H100 80GB, peak 11 GiB: fits 1g.20gb" "$tmp/advise.txt" ||
  fail "advise: $(cat "$tmp/advise.txt")"
grep -qF "garbage" "$tmp/advise.txt" && fail "advise lists an unmeasured job: $(cat "$tmp/advise.txt")"
[[ $("$bin" advise --server "$url" --json | python3 -c "
import json,sys; r=json.load(sys.stdin); print([j['fits'] for j in r['jobs'] if j['id']==$big][0])") == 1g.20gb ]] ||
  fail "advise --json"
"$bin" advise --server "$url" --headroom 101 >/dev/null 2>&1 && fail "--headroom 101 accepted"

# 4. /metrics: GPU-seconds measured and used in namespace default (used = 35% of measured).
curl -fsS "$url/metrics" >"$tmp/metrics.txt" || fail "GET /metrics"
python3 - "$tmp/metrics.txt" <<'PY' || fail "metrics: $(grep gpu_seconds "$tmp/metrics.txt")"
import re, sys
text = open(sys.argv[1]).read()
def value(name):
    m = re.search(r'^%s\{namespace="default"\} (\S+)$' % name, text, re.M)
    return float(m.group(1)) if m else None
measured = value("sluice_namespace_gpu_seconds_measured_total")
used = value("sluice_namespace_gpu_seconds_used_total")
assert measured and measured >= 2.5, measured
assert used is not None and abs(used - 0.35 * measured) <= 1e-3 * measured, (used, measured)
PY

# 5. The store keeps the job's use across a restart of the server.
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
start_server
[[ $(job_field "$big" 'j["gpu_use"]["peak_mib"]') == 11264 ]] || fail "peak after a restart"
echo "right_sizing: ok"
