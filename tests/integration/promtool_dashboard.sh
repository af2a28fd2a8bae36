#!/usr/bin/env bash
# The Grafana dashboard: valid JSON, the seven panels (issues 8 and 18), a ${DS_PROMETHEUS} input,
# and every metric its queries use is documented in docs/api.md (or recorded by alerts.yml).
# Needs only python3; with promtool it also parses every query as PromQL.
set -euo pipefail
src=${SLUICE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
dash=$src/deploy/grafana/sluice-dashboard.json
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 -m json.tool "$dash" >/dev/null || fail "$dash is not valid JSON"

python3 - "$dash" "$src/docs/api.md" "$src/deploy/prometheus/alerts.yml" <<'PY' || fail "dashboard content"
import json, re, sys
dash = json.load(open(sys.argv[1]))
api = open(sys.argv[2]).read()
alerts = open(sys.argv[3]).read()
assert 35 <= dash["schemaVersion"] <= 41, dash["schemaVersion"]
assert any(i["name"] == "DS_PROMETHEUS" and i["pluginId"] == "prometheus" for i in dash["__inputs"])
titles = [p["title"] for p in dash["panels"]]
want = ["Pending jobs per class", "Admission wait p99 per class", "Preemptions per hour",
        "GPU allocation and utilisation per node", "Fairness debt per queue",
        "GPU usage vs quota per queue", "GPU-hours per namespace"]
assert titles == want, titles
ids = [p["id"] for p in dash["panels"]]
assert len(set(ids)) == len(ids), "duplicate panel ids"
recorded = set(re.findall(r"record: (\S+)", alerts))
for p in dash["panels"]:
    assert p["datasource"]["uid"] == "${DS_PROMETHEUS}", p["title"]
    for t in p["targets"]:
        assert t["datasource"]["uid"] == "${DS_PROMETHEUS}"
        for m in re.findall(r"sluice[a-z0-9_:]*", t["expr"]):
            if ":" in m:
                assert m in recorded, f"{p['title']}: {m} is not recorded by alerts.yml"
                continue
            base = re.sub(r"_(bucket|count|sum)$", "", m)
            assert f"`{base}`" in api, f"{p['title']}: {m} is not in docs/api.md"
assert "histogram_quantile(0.99" in dash["panels"][1]["targets"][0]["expr"]
exprs = lambda i: " ".join(t["expr"] for t in dash["panels"][i]["targets"])
assert "sluice_cluster_queue_usage" in exprs(5) and "sluice_cluster_queue_nominal_quota" in exprs(5)
assert "sluice_namespace_budget_gpu_hours" in exprs(6) and "sluice_namespace_gpu_seconds_total" in exprs(6)
print("dashboard: %d panels, queries reference documented metrics" % len(titles))
PY

# PromQL syntax of every query, with Grafana's variables replaced by plain values.
if command -v promtool >/dev/null 2>&1 && promtool --help 2>&1 | grep -q 'check rules'; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 - "$dash" >"$tmp/rules.yml" <<'PY'
import json, sys
dash = json.load(open(sys.argv[1]))
print("groups:\n- name: dashboard-queries\n  rules:")
n = 0
for p in dash["panels"]:
    for t in p["targets"]:
        e = (t["expr"].replace("$__rate_interval", "5m").replace("$wait_window", "1h")
             .replace("$cluster_queue", ".*").replace("$node", ".*"))
        n += 1
        print(f"  - record: dashboard:query_{n}\n    expr: {json.dumps(e)}")
PY
  promtool check rules "$tmp/rules.yml" >/dev/null || { cat "$tmp/rules.yml"; fail "a dashboard query is not valid PromQL"; }
fi
echo "ok"
