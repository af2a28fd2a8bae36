#!/usr/bin/env bash
# Kueue's Cohort and Topology through the real kubectl (issue 36; docs/kubernetes.md, "Changing
# Kueue's configuration"): both kinds are in discovery and have schemas (kubectl explain); an
# admin applies a Cohort and a Topology, which change the configuration as a ClusterQueue's
# apply does (validated by the loader, refused whole when invalid); a ClusterQueue joins the
# Cohort; kubectl get prints Kueue's columns; a member reads them and may not write them; the
# changes survive a restart; delete.
set -euo pipefail
source "$(dirname "$0")/lib/kubectl_env.sh"
export KUBECONFIG=$tmp/root.kubeconfig

k api-resources --api-group=kueue.x-k8s.io >"$tmp/out" 2>&1 || fail "api-resources: $(cat "$tmp/out")"
for r in cohorts topologies; do
  grep -q "^$r .*kueue.x-k8s.io/v1beta1 *false" "$tmp/out" || fail "$r not discovered: $(cat "$tmp/out")"
done
k explain cohort.spec.parent >"$tmp/out" 2>&1 || fail "explain cohort: $(cat "$tmp/out")"
grep -q "parent" "$tmp/out" || fail "explain cohort said: $(cat "$tmp/out")"
k explain topology.spec.levels >"$tmp/out" 2>&1 || fail "explain topology: $(cat "$tmp/out")"

# 1. A Cohort with a parent and its own quota, and a Topology of the node level.
cat >"$tmp/cohorts.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: org}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: team}
spec:
  parent: org
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 2}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {name: hosts}
spec:
  levels: [{nodeLabel: kubernetes.io/hostname}]
YAML
k apply -f "$tmp/cohorts.yaml" >"$tmp/out" 2>&1 || fail "apply: $(cat "$tmp/out")"
for o in cohort.kueue.x-k8s.io/org cohort.kueue.x-k8s.io/team topology.kueue.x-k8s.io/hosts; do
  grep -q "^$o created" "$tmp/out" || fail "apply said: $(cat "$tmp/out")"
done
k apply -f "$tmp/cohorts.yaml" >"$tmp/out" 2>&1 || fail "apply again: $(cat "$tmp/out")"
[[ $(grep -c " unchanged$" "$tmp/out") == 3 ]] || fail "apply again said: $(cat "$tmp/out")"
k get cohorts >"$tmp/out" 2>&1 || fail "get cohorts: $(cat "$tmp/out")"
grep -q "^NAME *AGE" "$tmp/out" && grep -q "^org " "$tmp/out" && grep -q "^team " "$tmp/out" ||
  fail "get cohorts said: $(cat "$tmp/out")"
[[ $(k get cohort team -o jsonpath='{.spec.parent}') == org ]] || fail "parent: $(k get cohort team -o yaml)"
[[ $(k get topology hosts -o jsonpath='{.spec.levels[0].nodeLabel}') == kubernetes.io/hostname ]] ||
  fail "topology: $(k get topology hosts -o yaml)"

# 2. A ClusterQueue joins the Cohort (kubectl patch); an invalid Cohort is refused whole.
k patch clusterqueue cluster-queue --type merge -p '{"spec":{"cohort":"team"}}' >"$tmp/out" 2>&1 ||
  fail "patch cq: $(cat "$tmp/out")"
k get clusterqueues >"$tmp/out" 2>&1 || fail "get cq: $(cat "$tmp/out")"
grep -q "^cluster-queue *team " "$tmp/out" || fail "cq's cohort: $(cat "$tmp/out")"
printf 'apiVersion: kueue.x-k8s.io/v1beta1\nkind: Cohort\nmetadata: {name: bad}\nspec: {parent: bad}\n' \
  >"$tmp/bad.yaml"
out=$(refused apply -f "$tmp/bad.yaml")
grep -q 'is invalid' <<<"$out" || fail "a cohort that is its own parent: $out"
out=$(refused get cohort bad)
grep -q NotFound <<<"$out" || fail "the refused cohort exists: $out"

# 3. A member reads them, and may not write them.
KUBECONFIG=$tmp/alice.kubeconfig k get cohorts,topologies >"$tmp/out" 2>&1 ||
  fail "alice reads: $(cat "$tmp/out")"
out=$(KUBECONFIG=$tmp/alice.kubeconfig refused delete cohort org)
grep -q 'forbidden: User "alice" cannot delete resource "cohorts"' <<<"$out" || fail "alice deletes: $out"

# 4. A restart keeps them (the configuration is stored); then delete.
kill "${pids[0]}" && wait "${pids[0]}" 2>/dev/null || true
"$SLUICE_BIN" serve --listen "127.0.0.1:$port" --data-dir "$tmp/data" --heartbeat-ms 200 \
  --cycle-interval-ms 200 >>"$tmp/server.log" 2>&1 &
pids[0]=$!
for _ in $(seq 1 300); do curl -fsS "$SLUICE_SERVER/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
[[ $(k get cohort team -o jsonpath='{.spec.parent}') == org ]] || fail "after a restart: $(k get cohorts 2>&1)"
k get topology hosts >/dev/null 2>&1 || fail "topology lost in a restart"
k patch clusterqueue cluster-queue --type merge -p '{"spec":{"cohort":null}}' >/dev/null 2>&1 ||
  fail "cq leaves the cohort"
for o in cohort/team cohort/org topology/hosts; do
  k delete "$o" >"$tmp/out" 2>&1 || fail "delete $o: $(cat "$tmp/out")"
done
k get cohorts,topologies >"$tmp/out" 2>&1 || fail "get: $(cat "$tmp/out")"
grep -q "No resources found" "$tmp/out" || fail "left: $(cat "$tmp/out")"
echo "kubectl_cohorts: ok"
