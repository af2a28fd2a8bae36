#!/usr/bin/env bash
# The Kubernetes API at scale (issue 36): `kubectl apply -f` of JOBS batch/v1 Jobs (first apply:
# created; second: unchanged), then a backlog of BACKLOG pending jobs (native API, 1,000 per
# POST) and what a client pays for it: `kubectl get jobs` of the whole backlog (paged by
# kubectl's --chunk-size, 500), a watch that starts from nothing (one ADDED per job) read to its
# last ADDED, and a watch from the current resourceVersion that sees 1,000 new jobs arrive.
# Prints one line per figure. A bench, not a test: nothing is asserted.
#
#   bench/kube/kube_bench.sh [BUILD_DIR]      (JOBS=1000 BACKLOG=100000)
#
# The server runs without tokens on loopback (kubectl sends no token over http, and a server
# without tokens needs none), no agents: the jobs stay pending, which is what a backlog is; the
# per-namespace backpressure is off, as in the other benchmarks.
set -euo pipefail
build=${1:-build}
bin=$(cd "$build" && pwd)/sluice
JOBS=${JOBS:-1000}
BACKLOG=${BACKLOG:-100000}
command -v kubectl >/dev/null || { echo "kubectl missing"; exit 2; }
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
cat >"$tmp/config.yaml" <<'YAML'
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: bench}
spec:
  nodeGroups:
  - {namePrefix: n, count: 4, cpu: 16, memory: 64Gi, gpus: {count: 8, model: H100}}
---
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: policy}
spec: {maxPendingTotal: 1000000}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  sluice: {runImagesOnHost: true}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 64}
      - {name: memory, nominalQuota: 256Gi}
      - {name: nvidia.com/gpu, nominalQuota: 32}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: user-queue, namespace: default}
spec: {clusterQueue: cluster-queue}
YAML
# No per-namespace backpressure (10,000 pending, 200 jobs/s by default): the backlog is the point.
"$bin" serve --config "$tmp/config.yaml" --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
  --namespace-submit-rate 0 --namespace-max-pending 0 >"$tmp/server.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do curl -fsS "$url/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
cat >"$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: s, cluster: {server: "$url"}}]
users: [{name: u, user: {}}]
contexts: [{name: s, context: {cluster: s, user: u, namespace: default}}]
current-context: s
EOF
export KUBECONFIG=$tmp/kubeconfig
seconds() { python3 -c 'import sys,time; print(f"{time.time()-float(sys.argv[1]):.2f}")' "$1"; }
now() { python3 -c 'import time; print(time.time())'; }

# 1. kubectl apply of JOBS Jobs (one file, one kubectl), then again (nothing changes).
python3 - "$JOBS" >"$tmp/jobs.yaml" <<'PY'
import sys
for i in range(int(sys.argv[1])):
    print(f"""---
apiVersion: batch/v1
kind: Job
metadata: {{name: apply-{i}, labels: {{kueue.x-k8s.io/queue-name: user-queue}}}}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: [sh, -c, "sleep 3600"]
        resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}""")
PY
for round in first again; do
  t0=$(now)
  kubectl apply -f "$tmp/jobs.yaml" >"$tmp/apply.out" 2>&1 || { tail -5 "$tmp/apply.out"; exit 1; }
  s=$(seconds "$t0")
  echo "kubectl apply of $JOBS Jobs ($round): ${s} s, $(python3 -c "print(f'{$JOBS/$s:.0f}')") Jobs/s;" \
    "$(grep -c ' created$' "$tmp/apply.out" || true) created, $(grep -c ' unchanged$' "$tmp/apply.out" || true) unchanged"
done

# 2. The backlog, through the native API.
t0=$(now)
python3 - "$url" "$BACKLOG" <<'PY'
import json, sys, urllib.request
url, n = sys.argv[1], int(sys.argv[2])
for start in range(0, n, 1000):
    docs = [{"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
             "metadata": {"name": f"b{i}", "namespace": "default"},
             "spec": {"queue": "user-queue", "command": ["true"],
                      "podSets": [{"count": 1, "resources": {"cpu": "100m", "memory": "64Mi"}}]}}
            for i in range(start, min(n, start + 1000))]
    req = urllib.request.Request(url + "/v1/jobs", json.dumps(docs).encode(),
                                 {"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(req, timeout=120).read()
PY
echo "backlog of $BACKLOG jobs submitted (native API, 1,000 per POST): $(seconds "$t0") s"
total=$((BACKLOG + JOBS))

# 3. kubectl get jobs of everything (paged by kubectl, 500 a page).
t0=$(now)
kubectl get jobs --no-headers >"$tmp/list" 2>"$tmp/list.err" || { tail -3 "$tmp/list.err"; exit 1; }
echo "kubectl get jobs: $(wc -l <"$tmp/list") rows in $(seconds "$t0") s"

# 4. A watch from nothing: one ADDED per job, read to the last one.
python3 - "$url" "$total" <<'PY'
import http.client, json, sys, time
url, want = sys.argv[1], int(sys.argv[2])
host = url.split("//")[1]
def watch(path):
    c = http.client.HTTPConnection(host, timeout=300)
    c.request("GET", path)
    return c.getresponse()
t0 = time.time()
r = watch("/apis/batch/v1/namespaces/default/jobs?watch=1")
added = 0
while added < want:
    line = r.readline()
    if not line:
        break
    if json.loads(line).get("type") == "ADDED":
        added += 1
s = time.time() - t0
print(f"watch from nothing over {want} jobs: {added} ADDED in {s:.2f} s ({added / s:.0f} events/s)")
PY

# 5. A watch from now while 1,000 jobs arrive: the time to see them all.
python3 - "$url" <<'PY'
import http.client, json, sys, threading, time, urllib.request
url = sys.argv[1]
host = url.split("//")[1]
c = http.client.HTTPConnection(host, timeout=300)
c.request("GET", "/apis/batch/v1/namespaces/default/jobs?limit=1")
rv = json.loads(c.getresponse().read())["metadata"]["resourceVersion"]
w = http.client.HTTPConnection(host, timeout=300)
w.request("GET", f"/apis/batch/v1/namespaces/default/jobs?watch=1&resourceVersion={rv}")
r = w.getresponse()
docs = [{"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
         "metadata": {"name": f"late{i}", "namespace": "default"},
         "spec": {"queue": "user-queue", "command": ["true"],
                  "podSets": [{"count": 1, "resources": {"cpu": "100m", "memory": "64Mi"}}]}} for i in range(1000)]
t0 = time.time()
req = urllib.request.Request(url + "/v1/jobs", json.dumps(docs).encode(),
                             {"Content-Type": "application/json"}, method="POST")
urllib.request.urlopen(req, timeout=120).read()
seen = 0
while seen < 1000:
    line = r.readline()
    if not line:
        break
    e = json.loads(line)
    if e.get("type") == "ADDED" and e["object"]["metadata"]["name"].startswith("late"):
        seen += 1
print(f"watch from now, 1,000 jobs submitted in one POST: all {seen} seen {time.time() - t0:.2f} s after the POST began")
PY
echo "server RSS: $(ps -o rss= -p "$pid" | awk '{printf "%.0f MiB", $1/1024}')"
