#!/usr/bin/env bash
# `sluice plan --server`: a real `sluice up` (two nodes of fake GPUs) runs two low-priority jobs;
# plan answers, without submitting, where a new job would go and whom it would preempt, and why
# another would wait. `sluice snapshot` saves the live state; plan on that file offline gives
# byte for byte the same answer as plan --server (round trip).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
bin=${SLUICE_BIN:?}
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- server log" >&2; cat "$tmp/up.log" >&2 || true; exit 1; }

port=$(free_port)
url=http://127.0.0.1:$port
cat >"$tmp/config.yaml" <<'YAML'
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: local}
spec:
  nodes:
  - {name: local-0, cpu: 8, memory: 32Gi, gpus: {count: 4, model: H100}}
  - {name: local-1, cpu: 8, memory: 32Gi, gpus: {count: 4, model: H100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: low}
value: 10
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: high}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
  preemption: {withinClusterQueue: LowerPriority}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: team}
YAML
"$bin" up --config "$tmp/config.yaml" --nodes 2 --gpus fake:4xH100 --listen "127.0.0.1:$port" \
  --data-dir "$tmp/data" >"$tmp/up.log" 2>&1 &
pid=$!
wait_ready "$url" 30 || fail "server not ready"

# 1. Two low-priority jobs of 4 GPUs fill the cluster.
for n in a b; do
  printf -- '---\napiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: low-%s}\nspec: {queue: q, priorityClassName: low, gpus: 4, command: [sleep, "600"]}\n' "$n"
done >"$tmp/low.yaml"
"$bin" submit --server "$url" "$tmp/low.yaml" >/dev/null || fail "submit"
running=0
for _ in $(seq 1 600); do
  running=$("$bin" jobs --server "$url" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); j=d["jobs"] if isinstance(d, dict) else d; print(sum(1 for x in j if x.get("state")=="running"))')
  [[ $running == 2 ]] && break
  sleep 0.1
done
[[ $running == 2 ]] || fail "the two low jobs did not start"

# 2. What if: a high-priority job of 4 GPUs (preempts one low job) and a low one of 1 GPU (waits).
cat >"$tmp/whatif.yaml" <<'YAML'
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: urgent}
spec: {queue: q, priorityClassName: high, gpus: 4}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: small}
spec: {queue: q, priorityClassName: low, gpus: 1}
YAML
"$bin" plan --server "$url" "$tmp/whatif.yaml" --json >"$tmp/live.json" || fail "plan --server"
python3 - "$tmp/live.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
admitted = {a["job"]: a for a in d["admitted"]}
assert set(admitted) == {"urgent"}, d["admitted"]
nodes = {p["node"] for p in admitted["urgent"]["placement"]}
assert len(nodes) == 1 and nodes <= {"local-0", "local-1"}, nodes
victims = {p["victim"]: p["preemptor"] for p in d["preempted"]}
assert len(victims) == 1 and set(victims.values()) == {"urgent"}, d["preempted"]
assert set(victims) <= {"low-a", "low-b"}, victims
pending = {p["job"]: p["reason"] for p in d["pending"]}
assert "small" in pending, d["pending"]
# Submitted now, not at time 0: the new job is not the oldest, starving one.
assert "starv" not in json.dumps(pending["small"]).lower(), pending["small"]
PY
"$bin" plan --server "$url" "$tmp/whatif.yaml" >"$tmp/table"
grep -q "STARTING STATE: 2 running" "$tmp/table" || fail "table lacks the starting state"
# Nothing was submitted.
[[ $("$bin" jobs --server "$url" --json | grep -c urgent || true) == 0 ]] || fail "plan submitted a job"

# 3. Round trip: the saved state replayed offline gives the same answer at the same time.
"$bin" snapshot --server "$url" >"$tmp/state.yaml" || fail "snapshot"
grep -q "kind: Snapshot" "$tmp/state.yaml" || fail "no Snapshot document"
grep -q "ServerAuth" "$tmp/state.yaml" && fail "the export carries ServerAuth"
now=$(python3 -c 'import re,sys; print(re.search(r"^  time: \"?([0-9.]+)", open(sys.argv[1]).read(), re.M).group(1))' "$tmp/state.yaml")
[[ -n $now ]] || fail "no time in the snapshot"
"$bin" plan --config "$tmp/state.yaml" "$tmp/whatif.yaml" --now "$now" --json >"$tmp/offline.json" || fail "plan offline"
"$bin" plan --server "$url" "$tmp/whatif.yaml" --now "$now" --json >"$tmp/live2.json" || fail "plan --server --now"
cmp -s "$tmp/offline.json" "$tmp/live2.json" || { diff "$tmp/offline.json" "$tmp/live2.json" >&2; fail "offline and live answers differ"; }
# The same jobs as one JSON array give the same answer.
cat >"$tmp/whatif.json" <<'JSON'
[{"apiVersion": "sluice.dev/v1alpha1", "kind": "Job", "metadata": {"name": "urgent"},
  "spec": {"queue": "q", "priorityClassName": "high", "gpus": 4}},
 {"apiVersion": "sluice.dev/v1alpha1", "kind": "Job", "metadata": {"name": "small"},
  "spec": {"queue": "q", "priorityClassName": "low", "gpus": 1}}]
JSON
"$bin" plan --server "$url" "$tmp/whatif.json" --now "$now" --json >"$tmp/live3.json" || fail "plan a JSON array"
cmp -s "$tmp/live2.json" "$tmp/live3.json" || fail "a JSON array of the jobs answers differently"
echo "plan_server: ok"
