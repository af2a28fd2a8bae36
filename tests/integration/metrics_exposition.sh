#!/usr/bin/env bash
# /metrics of a fresh `sluice serve` (issue 18): before any job, every queue has its pending
# series at 0 (also a queue nothing can ever use), the rejection and preemption counters are at
# 0, sluice_build_info names the version and commit `sluice --version` prints, the standard
# process_* families are there with sane values, and `promtool check metrics` accepts the text
# (that check is skipped, saying so, where promtool is not installed).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
bin=${SLUICE_BIN:?}
src=${SLUICE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v curl >/dev/null || { echo "SKIP: curl missing"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- server log" >&2; cat "$tmp/serve.log" >&2 || true; exit 1; }

cat >"$tmp/config.yaml" <<'YAML'
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: m}
spec:
  nodeGroups:
  - {namePrefix: n, count: 1, cpu: 8, memory: 32Gi, gpus: {count: 2, model: H100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: normal}
value: 10
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: train}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 2}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: never-used}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 0}]}]
YAML
"$bin" serve --config "$tmp/config.yaml" --listen 127.0.0.1:0 --data-dir "$tmp/data" \
  >"$tmp/serve.log" 2>&1 &
pid=$!
url=
for _ in $(seq 1 300); do
  url=$(grep -o 'API on http://[0-9.:]*' "$tmp/serve.log" | head -1 | cut -d' ' -f3 || true)
  [[ -n $url ]] && break
  kill -0 "$pid" 2>/dev/null || fail "the server exited"
  sleep 0.1
done
[[ -n $url ]] || fail "the server printed no address"
wait_ready "$url" 30 "$pid" || fail "server not ready"
curl -fsS "$url/metrics" >"$tmp/metrics.txt" || fail "GET /metrics"
m=$tmp/metrics.txt

has() { grep -qxF -- "$1" "$m" || fail "missing line: $1"; }
# Pending per queue x priority class ("" and normal) x workload class, all 0.
[[ $(grep -c '^sluice_pending_jobs{' "$m") == 12 ]] || fail "expected 12 pending series: $(grep '^sluice_pending_jobs' "$m")"
has 'sluice_pending_jobs{cluster_queue="never-used",priority_class="normal",class="interactive"} 0'
for r in invalid unknown-queue duplicate pending-cap namespace-not-selected interactive-timeout budget; do
  has "sluice_jobs_rejected_total{reason=\"$r\"} 0"
done
has 'sluice_preemptions_total{cluster_queue="never-used",reason="within-cluster-queue"} 0'
has 'sluice_jobs_finished_total{cluster_queue="train",state="succeeded"} 0'

# Build information: the same version and commit as `sluice --version`.
ver=$("$bin" --version)  # sluice X.Y.Z (commit C)
v=$(sed -E 's/^sluice ([^ ]+) .*/\1/' <<<"$ver")
c=$(sed -E 's/.*\(commit ([^)]+)\).*/\1/' <<<"$ver")
has "sluice_build_info{commit=\"$c\",version=\"$v\"} 1"
if [[ $c != unknown ]] && git -C "$src" rev-parse HEAD >/dev/null 2>&1; then
  head=$(git -C "$src" rev-parse --short=12 HEAD)
  [[ ${c%-dirty} == "$head"* || $head == "${c%-dirty}"* ]] || echo "note: built from $c, checkout at $head (rebuild pending)"
fi

# process_*: the server's own figures.
python3 - "$m" "$pid" <<'PY' || fail "process metrics"
import os, sys, time
vals = {}
for line in open(sys.argv[1]):
    if line.startswith("process_"):
        k, v = line.split()
        vals[k] = float(v)
want = ["process_cpu_seconds_total", "process_resident_memory_bytes",
        "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
        "process_start_time_seconds"]
missing = [k for k in want if k not in vals]
assert not missing, missing
assert vals["process_resident_memory_bytes"] > 1 << 20, vals
assert 3 <= vals["process_open_fds"] <= vals["process_max_fds"], vals
assert abs(vals["process_start_time_seconds"] - time.time()) < 600, vals
print("process metrics:", {k: vals[k] for k in want})
PY

if command -v promtool >/dev/null 2>&1; then
  promtool check metrics <"$m" || fail "promtool check metrics"
  echo "promtool check metrics: ok"
else
  echo "note: promtool not installed (Debian package prometheus): exposition not checked by promtool"
fi
echo "metrics_exposition: ok"
