#!/usr/bin/env bash
# Kueue's current API through the real binary: `sluice check` and `sluice plan` on the v1beta2 +
# topology-aware example (examples/config/kueue), then the version differences on bad input.
set -euo pipefail
bin=${SLUICE_BIN:?}
src=${SLUICE_SOURCE_DIR:?}
ex=$src/examples/config/kueue
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. The setup and the annotated Jobs load, without a warning (nothing is ignored).
"$bin" check "$ex/tas-setup.yaml" "$ex/tas-jobs.yaml" >"$tmp/check.out" 2>"$tmp/check.err" \
  || fail "check refused the example: $(cat "$tmp/check.err")"
if grep -q "warning:" "$tmp/check.err"; then fail "unexpected warnings: $(cat "$tmp/check.err")"; fi

# 2. One cycle: every Job admitted, each inside what its annotations ask.
"$bin" plan --config "$ex/tas-setup.yaml" --jobs "$ex/tas-jobs.yaml" --json >"$tmp/plan.json" \
  || fail "plan failed"
python3 - "$tmp/plan.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
admitted = {a["job"]: a for a in d["admitted"]}
assert set(admitted) == {"rack-gang", "block-preferred", "paired", "layered"}, (admitted.keys(), d["pending"])
def nodes(name):
    return [p["node"] for p in admitted[name]["placement"]]
rack = lambda n: n[:5]   # b1-r1-0 -> b1-r1
block = lambda n: n[:2]
assert len({rack(n) for n in nodes("rack-gang")}) == 1, nodes("rack-gang")
assert len({block(n) for n in nodes("block-preferred")}) == 1, nodes("block-preferred")
p = nodes("paired")
assert all(p[i] == p[i + 1] for i in range(0, 8, 2)), p
l = nodes("layered")
assert block(l[0]) == block(l[1]) and block(l[2]) == block(l[3]), l
PY

# 3. v1beta1 names in a v1beta2 file: an error that says what the field is called now.
cat >"$tmp/old.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  cohort: lab
  namespaceSelector: {}
YAML
if "$bin" check "$tmp/old.yaml" >/dev/null 2>"$tmp/old.err"; then fail "v1beta2 cohort accepted"; fi
grep -q 'old.yaml:5: spec.cohort: kueue.x-k8s.io/v1beta2 calls this field cohortName' "$tmp/old.err" \
  || fail "unexpected error text: $(cat "$tmp/old.err")"
echo "kueue_v1beta2: ok"
