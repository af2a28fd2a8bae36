#!/usr/bin/env bash
# Configuration changes on a live `sluice serve`: `sluice config get`, a SIGHUP that re-reads the
# --config files (a new LocalQueue becomes usable), a broken file that `sluice config reload`
# refuses with the parser's file:line while the old configuration stays in force, and
# `sluice config apply`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
: "${SLUICE_BIN:?}"
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- server log" >&2; cat "$tmp/serve.log" >&2 || true; exit 1; }

port=$(free_port)
export SLUICE_SERVER=http://127.0.0.1:$port
cat >"$tmp/cluster.yaml" <<'YAML'
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: tiny}
spec:
  nodeGroups:
  - {namePrefix: n, count: 1, cpu: 8, memory: 64Gi, gpus: {count: 4, model: H100}}
YAML
queues() {  # $1: extra LocalQueue name, or nothing
  cat <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 4}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: a, namespace: team}
spec: {clusterQueue: cq}
YAML
  if [[ -n ${1:-} ]]; then
    printf -- '---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: %s, namespace: team}\nspec: {clusterQueue: cq}\n' "$1"
  fi
}
queues >"$tmp/queues.yaml"
"$SLUICE_BIN" serve --config "$tmp/cluster.yaml" --config "$tmp/queues.yaml" \
  --listen "127.0.0.1:$port" --data-dir "$tmp/data" >"$tmp/serve.log" 2>&1 &
pid=$!
wait_ready "$SLUICE_SERVER" 10 || fail "server not ready"

"$SLUICE_BIN" config get >"$tmp/got"  # not piped into grep -q: pipefail and an early exit
grep -q "name: a, namespace: team" "$tmp/got" || fail "config get shows the configuration"
"$SLUICE_BIN" run --queue b --namespace team --gpus 1 -- true >"$tmp/out" 2>&1 && fail "queue b should not exist yet"
grep -q "not found" "$tmp/out" || fail "unknown queue b is reported: $(cat "$tmp/out")"

# 1. SIGHUP re-reads the files: queue b appears.
queues b >"$tmp/queues.yaml"
kill -HUP "$pid"
ok=0
for _ in $(seq 1 50); do
  if "$SLUICE_BIN" run --queue b --namespace team --gpus 1 -- true >"$tmp/out" 2>&1; then ok=1; break; fi
  sleep 0.1
done
[[ $ok == 1 ]] || fail "after SIGHUP queue b accepts jobs: $(cat "$tmp/out")"
# (The new configuration is in force before the line is written: give the log a moment.)
logged=0
for _ in $(seq 1 50); do
  if grep -q "configuration reloaded" "$tmp/serve.log"; then logged=1; break; fi
  sleep 0.1
done
[[ $logged == 1 ]] || fail "the reload is logged"

# 2. A broken file is refused with its file:line; the old configuration stays.
printf 'apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: c, namespace: team\n' >>"$tmp/queues.yaml"
if "$SLUICE_BIN" config reload >"$tmp/out" 2>&1; then fail "a broken file must be refused"; fi
grep -q "the old one stays" "$tmp/out" || fail "refusal says the old configuration stays: $(cat "$tmp/out")"
grep -q "queues.yaml:" "$tmp/out" || fail "refusal names the file and line: $(cat "$tmp/out")"
kill -HUP "$pid"  # the same through the signal: logged, server unharmed
for _ in $(seq 1 50); do grep -q "reload refused" "$tmp/serve.log" && break; sleep 0.1; done
grep -q "reload refused" "$tmp/serve.log" || fail "a refused SIGHUP reload is logged"
kill -0 "$pid" || fail "the server survived a bad reload"
"$SLUICE_BIN" run --queue b --namespace team --gpus 1 -- true >/dev/null || fail "queue b still works"

# 3. config apply replaces the whole configuration; one that would strand queue b's jobs is
#    refused (409) until they are gone.
queues >"$tmp/queues.yaml"
if "$SLUICE_BIN" config apply "$tmp/cluster.yaml" "$tmp/queues.yaml" >"$tmp/out" 2>&1; then
  fail "dropping a queue with jobs must be refused"
fi
grep -q "409" "$tmp/out" && grep -q 'no LocalQueue "b"' "$tmp/out" || fail "409 names the queue: $(cat "$tmp/out")"
ids=$("$SLUICE_BIN" jobs --json | python3 -c 'import json,sys; print(" ".join(str(j["id"]) for j in json.load(sys.stdin)["jobs"] if j["queue"] == "b" and j["state"] in ("pending", "running")))')
[[ -n $ids ]] || fail "queue b has jobs"
# shellcheck disable=SC2086
"$SLUICE_BIN" cancel $ids >/dev/null || fail "cancel queue b's jobs"
"$SLUICE_BIN" config apply "$tmp/cluster.yaml" "$tmp/queues.yaml" >"$tmp/out" 2>&1 || fail "config apply: $(cat "$tmp/out")"
grep -q "configuration applied" "$tmp/out" || fail "config apply says so: $(cat "$tmp/out")"
# Files win at a reload: the apply says so.
grep -q "replaces this one with theirs" "$tmp/out" || fail "apply warns of the files: $(cat "$tmp/out")"
"$SLUICE_BIN" run --queue b --namespace team --gpus 1 -- true >/dev/null 2>&1 && fail "queue b is gone after apply"

# 4. An error in an applied file names that file and its own line, not the joined body's.
printf 'apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: c, namespace: team}\nspec: {clusterQueue: nope}\n' >"$tmp/bad.yaml"
if "$SLUICE_BIN" config apply "$tmp/cluster.yaml" "$tmp/queues.yaml" "$tmp/bad.yaml" >"$tmp/out" 2>&1; then
  fail "an unknown ClusterQueue must be refused"
fi
grep -q "bad.yaml:4" "$tmp/out" || fail "the error cites bad.yaml:4: $(cat "$tmp/out")"
grep -q "request:" "$tmp/out" && fail "no request:LINE left: $(cat "$tmp/out")"

# 5. A reload says that it replaces what config apply put in force.
queues b >"$tmp/queues.yaml"
"$SLUICE_BIN" config apply "$tmp/cluster.yaml" "$tmp/queues.yaml" >/dev/null 2>&1 || fail "config apply with b"
"$SLUICE_BIN" config reload >"$tmp/out" 2>&1 || fail "config reload: $(cat "$tmp/out")"
grep -q "applied with .sluice config apply. (PUT /v1/config) is replaced" "$tmp/out" \
  || fail "the reload says what it replaced: $(cat "$tmp/out")"
echo "config reload: ok"
