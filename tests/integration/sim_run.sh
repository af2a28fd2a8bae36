#!/usr/bin/env bash
# `sluice sim run` and `sluice sim compare` end to end on a tiny hand-made trace (written to a temp dir): the table, the
# JSON report, the per-job CSV, byte-identical reports for the same seed, and bad rows named by file and line.
set -euo pipefail
: "${SLUICE_BIN:?}" "${SLUICE_SOURCE_DIR:?}"
command -v python3 >/dev/null || { echo "python3 missing: skip"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/cluster.yaml" <<'YAML'
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: tiny}
spec:
  nodeGroups:
  - {namePrefix: n-, count: 1, cpu: 8, memory: 64Gi, gpus: {count: 4, model: T4}}
YAML
cat >"$tmp/queues.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: low}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: default, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team, namespace: default}
spec: {clusterQueue: team}
YAML
# Hand-worked: utilisation 560 / 600 GPU-s, waits 0, 90, 80 s.
cat >"$tmp/trace.csv" <<'CSV'
job_id,user,num_gpu,submit_time,duration,best_effort
1,team,4,0,100,0
2,team,2,10,50,0
3,team,2,20,30,1
CSV

run() { "$SLUICE_BIN" sim run --config "$tmp/queues.yaml" --cluster "$tmp/cluster.yaml" "$@"; }

run --trace "$tmp/trace.csv" --report "$tmp/a.json" >"$tmp/table.txt"
grep -q "utilisation 93.3%" "$tmp/table.txt" || { cat "$tmp/table.txt"; exit 1; }
grep -q "^high " "$tmp/table.txt"
python3 - "$tmp/a.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert abs(r["utilisation"] - 560 / 600) < 1e-12, r["utilisation"]
assert r["max_wait_s"] == 90, r["max_wait_s"]
assert r["by_priority_class"]["low"]["wait_s"]["p50"] == 80
assert r["by_queue"]["team"]["jobs"] == 3
PY

# --jobs-out: one CSV row per job, in trace order, with the hand-worked waits; an unwritable
# path fails before the run.
run --trace "$tmp/trace.csv" --quiet --jobs-out "$tmp/jobs.csv"
python3 - "$tmp/jobs.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["id"] for r in rows] == ["1", "2", "3"], rows
assert [r["wait_s"] for r in rows] == ["0", "90", "80"], rows
assert rows[0]["queue"] == "team" and rows[2]["class"] == "low" and rows[1]["gpus"] == "2", rows
assert rows[1]["first_start_s"] == "100" and rows[1]["end_s"] == "150", rows
PY
if run --trace "$tmp/trace.csv" --quiet --jobs-out "$tmp/no/such/dir/jobs.csv" 2>"$tmp/err.txt"; then
  echo "an unwritable --jobs-out was accepted"; exit 1
fi
grep -q "error: cannot write $tmp/no/such/dir/jobs.csv" "$tmp/err.txt" || { cat "$tmp/err.txt"; exit 1; }

# Same seed, same bytes (synthetic trace with node failures).
syn=(--trace-format synthetic --jobs 300 --arrival-rate 0.002 --node-failures 2 --seed 5 --quiet)
run "${syn[@]}" --report "$tmp/s1.json"
run "${syn[@]}" --report "$tmp/s2.json"
cmp "$tmp/s1.json" "$tmp/s2.json"

# compare: one row per --config variant, and a report keyed by file.
cp "$tmp/queues.yaml" "$tmp/queues2.yaml"
"$SLUICE_BIN" sim compare --config "$tmp/queues.yaml" "$tmp/queues2.yaml" \
  --cluster "$tmp/cluster.yaml" --trace "$tmp/trace.csv" --report "$tmp/cmp.json" >"$tmp/cmp.txt"
[ "$(grep -c '| 93.3% |' "$tmp/cmp.txt")" = 2 ] || { cat "$tmp/cmp.txt"; exit 1; }
python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))) == 2" "$tmp/cmp.json"

# A bad row fails with file:line; --skip-bad-rows counts it.
printf '4,team,1,30,-5,0\n' >>"$tmp/trace.csv"
if run --trace "$tmp/trace.csv" --quiet 2>"$tmp/err.txt"; then exit 1; fi
grep -q "trace.csv:5: duration: -5 is negative" "$tmp/err.txt" || { cat "$tmp/err.txt"; exit 1; }
run --trace "$tmp/trace.csv" --skip-bad-rows --quiet --report "$tmp/b.json"
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['input']['bad_rows'] == 1" "$tmp/b.json"
echo "sim_run: ok"
