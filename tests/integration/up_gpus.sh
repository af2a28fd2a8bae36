#!/usr/bin/env bash
# `sluice up --gpus`: the Cluster that `up` writes for its local nodes comes from the agents'
# own spec parser (agent::parse_fake_spec). A bad fake spec is an error before anything starts
# (`up` used to swallow it and start the server; only its agents then failed); several groups
# become one GPU list, so the agent that reports them is admitted (it used to be refused: the
# Cluster had the first group's GPUs alone). --node-label puts labels on the local nodes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
: "${SLUICE_BIN:?}"
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f $tmp/up.log ]] && tail -20 "$tmp/up.log" >&2; exit 1; }

# 1. Bad specs: exit status 2 with the parser's message, and no configuration written.
for spec in "fake:" fake:0xH100 fake:8x fake:xH100 "fake:8xH100,,1xL4" fake:8xH100:80Q \
    fake:8xH100:; do
  rc=0
  "$SLUICE_BIN" up --gpus "$spec" --data-dir "$tmp/bad" --listen 127.0.0.1:0 --exit-after 1 \
    >"$tmp/out" 2>"$tmp/err" || rc=$?
  [[ $rc == 2 ]] || fail "--gpus $spec: exit status $rc, want 2: $(cat "$tmp/err")"
  grep -q '^error: --gpus: .*fake GPU' "$tmp/err" || fail "--gpus $spec: $(cat "$tmp/err")"
done
[[ ! -e $tmp/bad/up-config.yaml ]] || fail "a bad spec wrote a configuration"

# 2. Two groups: a list of 3 GPUs in the agent's order, and the agent is admitted with them.
port=$(free_port)
url=http://127.0.0.1:$port
"$SLUICE_BIN" up --nodes 1 --gpus fake:2xH100,1xL4:24Gi --listen "127.0.0.1:$port" \
  --data-dir "$tmp/data" --heartbeat-ms 100 >"$tmp/up.log" 2>&1 &
pid=$!
wait_ready "$url" 30 "$pid" || fail "server not ready"
grep -q -- '- {count: 2, model: H100, nvlinkDomain: 0}' "$tmp/data/up-config.yaml" &&
  grep -q -- '- {count: 1, model: L4, nvlinkDomain: 1}' "$tmp/data/up-config.yaml" &&
  grep -q 'name: nvidia.com/gpu, nominalQuota: 3}' "$tmp/data/up-config.yaml" ||
  fail "up-config.yaml: $(cat "$tmp/data/up-config.yaml")"
ready=
for _ in $(seq 1 100); do
  curl -fsS "$url/v1/nodes" >"$tmp/nodes.json" 2>/dev/null || true
  ready=$(python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["nodes"][0]; print(n["ready"], n["gpu_count"])' "$tmp/nodes.json" 2>/dev/null || true)
  [[ $ready == "True 3" ]] && break
  sleep 0.1
done
[[ $ready == "True 3" ]] || fail "local-0 not ready with 3 GPUs: $ready"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=

# 3. --node-label: a bad label is an error before anything starts; a good one is on the local
#    nodes, so Kueue's files whose flavor selects it by nodeLabels run their jobs there.
rc=0
"$SLUICE_BIN" up --node-label "zone=bad value" --data-dir "$tmp/badl" --listen 127.0.0.1:0 \
  --exit-after 1 >/dev/null 2>"$tmp/err" || rc=$?
[[ $rc == 2 ]] && grep -q "^error: --node-label" "$tmp/err" || fail "a bad label: $rc $(cat "$tmp/err")"
cat >"$tmp/kueue.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: zone-a}
spec: {nodeLabels: {topology.example.com/zone: a}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: zone-a, resources: [{name: cpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: default, namespace: default}
spec: {clusterQueue: cq}
YAML
port=$(free_port)
url=http://127.0.0.1:$port
"$SLUICE_BIN" up --nodes 1 --gpus none --config "$tmp/kueue.yaml" \
  --node-label topology.example.com/zone=a --listen "127.0.0.1:$port" --data-dir "$tmp/lab" \
  --heartbeat-ms 100 >"$tmp/up.log" 2>&1 &
pid=$!
wait_ready "$url" 30 "$pid" || fail "server not ready (labels)"
grep -q 'labels: {"topology.example.com/zone": "a"}' "$tmp/lab/up-cluster.yaml" ||
  fail "up-cluster.yaml: $(cat "$tmp/lab/up-cluster.yaml")"
# --chdir /tmp: the pod runs as the namespace's uid, which may not enter the checkout (a clone
# under a 0700 directory).
"$SLUICE_BIN" run --server "$url" --cpu 1 --chdir /tmp -- true >"$tmp/run" || fail "run: $(cat "$tmp/run")"
id=$(sed -n 's/^submitted job \([0-9]*\) .*/\1/p' "$tmp/run")
state=
for _ in $(seq 1 300); do
  state=$("$SLUICE_BIN" jobs --server "$url" -j "$id" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["state"])')
  [[ $state == succeeded ]] && break
  sleep 0.1
done
[[ $state == succeeded ]] || fail "the job on the labelled node: $state"
echo "up_gpus: ok"
