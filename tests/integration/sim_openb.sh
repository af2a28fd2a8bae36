#!/usr/bin/env bash
# `sluice sim run --trace-format openb` on the real Alibaba openb trace (node list CSV as the
# cluster), with the JSON and HTML reports; skips (77) when the trace is absent.
set -euo pipefail
: "${SLUICE_BIN:?}" "${SLUICE_SOURCE_DIR:?}"
traces=${SLUICE_TRACES:-$SLUICE_SOURCE_DIR/../shared/traces}
dir=$traces/alibaba-openb
[ -f "$dir/openb_pod_list_default.csv" ] || { echo "openb trace not in $dir: skip"; exit 77; }
command -v python3 >/dev/null || { echo "python3 missing: skip"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {
  "$SLUICE_BIN" sim run --config "$SLUICE_SOURCE_DIR/examples/openb/queues.yaml" \
    --cluster "$dir/openb_node_list_gpu_node.csv" --trace "$dir/openb_pod_list_default.csv" \
    --trace-format openb --report "$tmp/$1.json" --html "$tmp/$1.html" --quiet
}
run a
run b
cmp "$tmp/a.json" "$tmp/b.json"
cmp "$tmp/a.html" "$tmp/b.html"
python3 - "$tmp/a.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["capacity_gpus"] == 6212, j["capacity_gpus"]
assert j["input"]["rows"] == 8152 and j["input"]["bad_rows"] == 0, j["input"]
assert j["jobs"]["total"] == 8152, j["jobs"]
assert j["jobs"]["never_started"] == 0, j["jobs"]
assert set(j["by_priority_class"]) == {"high", "normal", "low"}, j["by_priority_class"].keys()
print("openb ok:", j["jobs"], "utilisation %.4f" % j["utilisation"])
PY
grep -q '<svg' "$tmp/a.html"
# A bad row is named by file and line.
head -3 "$dir/openb_pod_list_default.csv" >"$tmp/bad.csv"
echo "bad-pod,1000,1024,1,abc,,LS,Running,0,10,0" >>"$tmp/bad.csv"
if "$SLUICE_BIN" sim run --config "$SLUICE_SOURCE_DIR/examples/openb/queues.yaml" \
    --cluster "$dir/openb_node_list_gpu_node.csv" --trace "$tmp/bad.csv" --trace-format openb \
    --quiet 2>"$tmp/err.txt"; then
  echo "expected a failure on the bad row"; exit 1
fi
grep -q "bad.csv:4: gpu_milli" "$tmp/err.txt"
"$SLUICE_BIN" sim run --config "$SLUICE_SOURCE_DIR/examples/openb/queues.yaml" \
  --cluster "$dir/openb_node_list_gpu_node.csv" --trace "$tmp/bad.csv" --trace-format openb \
  --skip-bad-rows --quiet --report "$tmp/bad.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["input"]["bad_rows"]==1' "$tmp/bad.json"
echo "sim_openb ok"
