#!/usr/bin/env bash
# End to end through the real binary: `sluice check` and `sluice plan` on the shipped examples,
# on the playbook manifests, and on bad input.
set -euo pipefail
bin=${SLUICE_BIN:?}
src=${SLUICE_SOURCE_DIR:?}
ex=$src/examples/config
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. The examples validate; the summary names the queues.
out=$("$bin" check "$ex/cluster.yaml" "$ex/queues.yaml")
grep -q "team-nlp" <<<"$out" || fail "check summary lacks team-nlp: $out"

# 2. The playbook manifests load as they are (with warnings), and --strict refuses them.
"$bin" check "$ex/playbook.yaml" >"$tmp/pb.out" 2>"$tmp/pb.err" || fail "playbook did not load: $(cat "$tmp/pb.err")"
grep -q "warning:" "$tmp/pb.err" || fail "playbook loaded without warnings"
if "$bin" check --strict "$ex/playbook.yaml" >/dev/null 2>&1; then fail "--strict accepted the playbook"; fi

# 2b. The server's own ServerAuth document is checked as `sluice serve` reads it (issue 35: `check`
#     refused the kind that `serve` accepts), and a bad one is refused with its field named.
cat >"$tmp/auth.yaml" <<'YAML'
apiVersion: sluice.dev/v1alpha1
kind: ServerAuth
metadata: {name: tokens}
spec:
  joinToken: abcdefghijklmnopqrstuvwxyz012345
  tokens:
  - {name: alice, token: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", role: member, namespaces: [nlp]}
YAML
out=$("$bin" check "$ex/cluster.yaml" "$ex/queues.yaml" "$tmp/auth.yaml") \
  || fail "check refused a ServerAuth document"
grep -q "auth: 1 tokens, a join token" <<<"$out" || fail "check did not summarise auth: $out"
sed -i 's/role: member/role: boss/' "$tmp/auth.yaml"
if "$bin" check "$tmp/auth.yaml" >/dev/null 2>"$tmp/auth.err"; then fail "a bad role was accepted"; fi
grep -q 'role: "boss" is not admin or member' "$tmp/auth.err" || fail "auth error: $(cat "$tmp/auth.err")"

# 2c. An unknown command is an error, with or without --help (issue 42: `--help` exited 0).
for extra in "" "--help"; do
  set +e
  "$bin" nosuchcommand $extra >/dev/null 2>"$tmp/unknown.err"; rc=$?
  set -e
  [[ $rc == 2 ]] || fail "sluice nosuchcommand $extra exits $rc, not 2"
  grep -q "unknown command 'nosuchcommand'; see sluice --help" "$tmp/unknown.err" \
    || fail "unknown command message: $(cat "$tmp/unknown.err")"
done
"$bin" check --help >/dev/null || fail "sluice check --help fails"

# 3. Bad input: exit 1, file:line: field path: message; nothing crashes.
cat >"$tmp/bad.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default
      resources:
      - name: nvidia.com/gpu
        nominalQuota: "-4"
YAML
if "$bin" check "$tmp/bad.yaml" >/dev/null 2>"$tmp/bad.err"; then fail "negative quota accepted"; fi
grep -q 'bad.yaml:12: spec.resourceGroups\[0\].flavors\[0\].resources\[0\].nominalQuota: "-4" must not be negative' "$tmp/bad.err" \
  || fail "unexpected error text: $(cat "$tmp/bad.err")"
printf 'kind: [unclosed\n' >"$tmp/garbage.yaml"
set +e
"$bin" check "$tmp/garbage.yaml" >/dev/null 2>"$tmp/garbage.err"; rc=$?
set -e
[ "$rc" = 1 ] || fail "malformed YAML: exit $rc"
grep -q "garbage.yaml:" "$tmp/garbage.err" || fail "malformed YAML error lacks the file name"

# 4. plan: one cycle; JSON is parseable, every job is decided exactly once.
"$bin" plan --config "$ex/queues.yaml" --cluster "$ex/cluster.yaml" --jobs "$ex/jobs.yaml" --json >"$tmp/plan.json"
python3 - "$tmp/plan.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ids = [a["id"] for a in d["admitted"]] + [p["id"] for p in d["pending"]]
assert len(ids) == len(set(ids)), "a job decided twice"
assert d["admitted"], "nothing admitted"
for a in d["admitted"]:
    assert a["placement"], a
for p in d["pending"]:
    assert p["reason"], p
PY
# Same input -> byte-identical output.
"$bin" plan --config "$ex/queues.yaml" --cluster "$ex/cluster.yaml" --jobs "$ex/jobs.yaml" --json >"$tmp/plan2.json"
cmp -s "$tmp/plan.json" "$tmp/plan2.json" || fail "plan output differs between runs"
"$bin" plan --config "$ex/queues.yaml" --cluster "$ex/cluster.yaml" --jobs "$ex/jobs.yaml" >"$tmp/table"
grep -q "^ADMITTED" "$tmp/table" || fail "table output lacks ADMITTED"
echo "cli_check_plan: ok"
