#!/usr/bin/env bash
# `sluice up --config` with queues but no Cluster (Kueue's own setup files, where Kubernetes
# knows the nodes): the local nodes are the cluster. A Kueue-style batch Job (parallelism 3,
# completions 3) and a plain-Pod group of 2 run to success on it; a --config that has a
# Cluster keeps its own nodes (no local cluster added).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
bin=${SLUICE_BIN:?}
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f $tmp/up.log ]] && tail -20 "$tmp/up.log" >&2; exit 1; }
port=$(free_port)
url=http://127.0.0.1:$port

cat >"$tmp/setup.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 9}
      - {name: memory, nominalQuota: 36Gi}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: user-queue}
spec: {clusterQueue: cluster-queue}
YAML
cat >"$tmp/work.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: three
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  parallelism: 3
  completions: 3
  template:
    spec:
      containers:
      - name: main
        command: [/bin/sh, -c, "exit 0"]
        resources: {requests: {cpu: "1", memory: 200Mi}}
      restartPolicy: Never
---
apiVersion: v1
kind: Pod
metadata:
  name: pair-a
  labels: {kueue.x-k8s.io/queue-name: user-queue, kueue.x-k8s.io/pod-group-name: pair}
  annotations: {kueue.x-k8s.io/pod-group-total-count: "2"}
spec:
  containers:
  - {name: main, command: [/bin/sh, -c, "exit 0"], resources: {requests: {cpu: 3}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: pair-b
  labels: {kueue.x-k8s.io/queue-name: user-queue, kueue.x-k8s.io/pod-group-name: pair}
  annotations: {kueue.x-k8s.io/pod-group-total-count: "2"}
spec:
  containers:
  - {name: main, command: [/bin/sh, -c, "exit 0"], resources: {requests: {cpu: 3}}}
YAML

"$bin" up --config "$tmp/setup.yaml" --nodes 1 --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
  --heartbeat-ms 200 --cycle-interval-ms 200 >"$tmp/up.log" 2>&1 &
pid=$!
wait_ready "$url" 30 || fail "server not ready"
grep -q "no Cluster in --config: the 1 local node(s) are the cluster" "$tmp/up.log" \
  || fail "no word that the local nodes form the cluster"

"$bin" submit --server "$url" "$tmp/work.yaml" >"$tmp/submit.out" 2>&1 || fail "submit: $(cat "$tmp/submit.out")"
states=
for _ in $(seq 1 600); do
  states=$("$bin" jobs --server "$url" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join(sorted(j["name"] + "=" + j["state"] for j in d["jobs"])))')
  [[ $states == "pair=succeeded three=succeeded" ]] && break
  sleep 0.1
done
[[ $states == "pair=succeeded three=succeeded" ]] || fail "jobs did not succeed: $states"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=

# A --config with its own Cluster is left as it is (another port: the first one's connections
# may hold it a while).
port=$(free_port)
url=http://127.0.0.1:$port
cat >"$tmp/cluster.yaml" <<'YAML'
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: mine}
spec:
  nodes: [{name: local-0, cpu: 16, memory: 64Gi, gpus: {count: 8, model: H100, memory: 80Gi}}]
YAML
"$bin" up --config "$tmp/setup.yaml" --config "$tmp/cluster.yaml" --nodes 1 \
  --listen "127.0.0.1:$port" --data-dir "$tmp/data2" >"$tmp/up.log" 2>&1 &
pid=$!
wait_ready "$url" 30 || fail "server not ready (own Cluster)"
if grep -q "no Cluster in --config" "$tmp/up.log"; then fail "a local cluster was added to a config that has one"; fi
echo "up_queues_only: ok"
