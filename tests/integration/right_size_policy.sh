#!/usr/bin/env bash
# Right-sizing's policy end to end (issue 37, item 3; docs/scheduling.md, "Right-sizing"): a
# real `sluice serve` and two fake-GPU `sluice agent`s, one with an 80 GiB H100, one with a
# 24 GiB L4. A job that asks for the H100 with --right-size auto runs there first (no history)
# and reports a peak of 5 GiB; its second run (same name, user, image) lands on the L4 (5 GiB +
# 20% fits 24 GiB), with an event and the JobView saying so. A third run that needs 30 GiB
# fails on the L4 as a CUDA out-of-memory error would (exit 1) and is retried whole on the H100,
# where it succeeds: the job succeeds. A run of the same name without --right-size stays on the
# H100.
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

cat >"$tmp/cluster.yaml" <<'YAML'
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  nodes:
  - {name: big, cpu: 8, memory: 16Gi, gpus: {count: 1, model: H100, memory: 80Gi}}
  - {name: small, cpu: 8, memory: 16Gi, gpus: {count: 1, model: L4, memory: 24Gi}}
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

port=$(free_port)
url=http://127.0.0.1:$port
"$bin" serve --config "$tmp/cluster.yaml" --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
  --heartbeat-ms 200 --cycle-interval-ms 200 >>"$tmp/serve.log" 2>&1 &
pids+=($!)
wait_ready "$url" 20 "${pids[0]}" || fail "server not ready"
"$bin" agent --server "$url" --name big --gpus fake:1xH100:80Gi --state-dir "$tmp/agent-big" \
  --heartbeat-ms 200 --pods-as-agent >"$tmp/agent-big.log" 2>&1 &
pids+=($!)
"$bin" agent --server "$url" --name small --gpus fake:1xL4:24Gi --state-dir "$tmp/agent-small" \
  --heartbeat-ms 200 --pods-as-agent >"$tmp/agent-small.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
  curl -fsS "$url/v1/nodes" >"$tmp/nodes.json" 2>/dev/null || true
  [[ $(python3 -c 'import json,sys; print(sum(n["ready"] for n in json.load(open(sys.argv[1]))["nodes"]))' "$tmp/nodes.json" 2>/dev/null) == 2 ]] && break
  sleep 0.1
done
job_field() {  # $1 id, $2 python expression on the JobView j
  curl -fsS "$url/v1/jobs/$1" | python3 -c "import json,sys; j=json.load(sys.stdin); j=j.get('job', j); print($2)"
}
# $1: MiB the pod uses; the rest: more `sluice run` options. A pod that needs more than the L4
# holds exits 1 there, as a CUDA out-of-memory error does. -> the job id
run_train() {
  local mib=$1
  shift
  "$bin" run --server "$url" -q q --gpus 1 --gpu-model H100 --cpu 1 --name train --chdir /tmp "$@" -- \
    sh -c "echo '$mib 40' > \"\$SLUICE_GPU_USE_FILE\"; sleep 1.5;
           if [ \"\$SLUICE_NODE\" = small ] && [ $mib -gt 24576 ]; then echo 'CUDA out of memory'; exit 1; fi" |
    sed -n 's/^submitted job \([0-9]*\).*/\1/p'
}
wait_done() {
  local st=
  for _ in $(seq 1 600); do
    st=$(job_field "$1" 'j["state"]')
    [[ $st == succeeded || $st == failed ]] && break
    sleep 0.1
  done
  [[ $st == succeeded ]] || fail "job $1: $st ($(job_field "$1" 'j["reason"]'))"
}
node_of() { job_field "$1" 'j["placement"][0]["node"]'; }

# 1. First run: no history, on the H100 it asked for; 5 GiB measured.
first=$(run_train 5120 --right-size auto)
[[ -n $first ]] || fail "submit"
wait_done "$first"
[[ $(node_of "$first") == big ]] || fail "first run on $(node_of "$first")"
[[ $(job_field "$first" 'j["right_size"]') == None ]] || fail "right-sized without a history"

# 2. Second run: right-sized to the L4 from a history of one run.
second=$(run_train 5120 --right-size auto)
[[ $(job_field "$second" 'j["right_size"]["shape"]') == L4 ]] || fail "not right-sized: $(job_field "$second" 'j["right_size"]')"
[[ $(job_field "$second" 'j["right_size"]["runs"]') == 1 ]] || fail "runs"
wait_done "$second"
[[ $(node_of "$second") == small ]] || fail "second run on $(node_of "$second")"

# 3. Third run needs 30 GiB: fails on the L4, retried whole on the H100, succeeds.
third=$(run_train 30720 --right-size auto)
[[ $(job_field "$third" 'j["right_size"]["shape"]') == L4 ]] || fail "third not right-sized"
wait_done "$third"
[[ $(node_of "$third") == big ]] || fail "retry on $(node_of "$third")"
[[ $(job_field "$third" 'j["right_size"]["retried"]') == True ]] || fail "not marked retried"
[[ $(job_field "$third" 'j["attempts"]') == 2 ]] || fail "attempts: $(job_field "$third" 'j["attempts"]')"
job_field "$third" 'j["runs"]' >"$tmp/runs.txt"
grep -qF "retried whole" "$tmp/runs.txt" || fail "runs: $(cat "$tmp/runs.txt")"

# 4. Without --right-size: as requested, though the history would fit the L4.
plain=$(run_train 5120)
wait_done "$plain"
[[ $(node_of "$plain") == big ]] || fail "not opted in, yet on $(node_of "$plain")"
[[ $(job_field "$plain" 'j["right_size"]') == None ]] || fail "not opted in, yet right-sized"

# 5. The events say what happened (the event log beside the store).
for _ in $(seq 1 100); do
  grep -q '"right-size-retry"' "$tmp/data/events.jsonl" 2>/dev/null && break
  sleep 0.1
done
grep -F "\"id\":$second," "$tmp/data/events.jsonl" >"$tmp/ev2.txt" || true
grep -qF "right-sized to L4 (24 GiB) from its history of 1 run (peak 5 GiB)" "$tmp/ev2.txt" ||
  fail "no right-size event: $(cat "$tmp/ev2.txt")"
grep -F "\"id\":$third," "$tmp/data/events.jsonl" >"$tmp/ev3.txt" || true
grep -qF "right-size-retry" "$tmp/ev3.txt" || fail "no retry event: $(cat "$tmp/ev3.txt")"
echo "right_size_policy: ok"
