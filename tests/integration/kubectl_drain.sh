#!/usr/bin/env bash
# The real kubectl against `sluice serve`, third slice (issue 36; docs/kubernetes.md): kubectl
# auth can-i answers from the tokens (SelfSubjectAccessReview, --list); kubectl describe shows
# why a job waits and what happened to it (events: admitted, finished, evicted and requeued);
# kubectl drain cordons the node, lists its pods by spec.nodeName and evicts each: the running
# job goes back to its queue and its pods go, an ended pod is deleted, the node ends drained as
# sluice's drain; uncordon lets the job run again. A member may not cordon, and evicts only its
# namespace's pods.
set -euo pipefail
source "$(dirname "$0")/lib/kubectl_env.sh"
root() { KUBECONFIG=$tmp/root.kubeconfig k "$@"; }
bob() { KUBECONFIG=$tmp/bob.kubeconfig k "$@"; }
for _ in $(seq 1 300); do grep -q "^n0 *Ready" <<<"$(k get nodes 2>&1)" && break; sleep 0.1; done

# 1. kubectl auth can-i: a member in its namespace, not in another's; reads of nodes, not
#    writes; an admin everything. kubectl sends these reviews in protobuf.
[[ $(k auth can-i create jobs -n default 2>/dev/null) == yes ]] || fail "alice create jobs: $(k auth can-i create jobs 2>/dev/null)"
[[ $(k auth can-i create pods --subresource=eviction 2>/dev/null) == yes ]] || fail "alice evicts"
out=$(k auth can-i create jobs -n team-b 2>/dev/null) && fail "alice may create in team-b: $out"
[[ $out == "no - token \"alice\" is a member of namespaces default, not \"team-b\"" ]] || fail "team-b: $out"
[[ $(k auth can-i list jobs -A 2>/dev/null) == yes ]] || fail "alice list -A"
[[ $(k auth can-i get nodes 2>/dev/null) == yes ]] || fail "alice get nodes"
out=$(k auth can-i patch nodes 2>/dev/null) && fail "alice may patch nodes: $out"
[[ $(root auth can-i patch nodes 2>/dev/null) == yes ]] || fail "root patch nodes"
[[ $(root auth can-i '*' '*' -A 2>/dev/null) == yes ]] || fail "root everything"
out=$(bob auth can-i delete jobs -n default 2>/dev/null) && fail "bob may delete in default: $out"
out=$(k auth can-i --list -n default 2>/dev/null) || fail "can-i --list: $out"
grep -q "^jobs.batch  *\[\]  *\[\]  *\[\*\]" <<<"$out" || fail "can-i --list: $out"
grep -q "^nodes  *\[\]  *\[\]  *\[get list watch\]" <<<"$out" || fail "can-i --list nodes: $out"
out=$(k auth can-i --list -n team-b 2>/dev/null)
grep -q "jobs.batch" <<<"$out" && fail "can-i --list in team-b lists jobs: $out"

# 2. kubectl describe: a job that ran and finished; one that can never fit, and why.
job() {  # job NAME PODS CPU SECONDS
  cat <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: default, labels: {kueue.x-k8s.io/queue-name: user-queue}}
spec:
  parallelism: $2
  completions: $2
  template:
    spec:
      containers:
      - {name: c, image: busybox, command: ["sh", "-c", "sleep $4"], resources: {requests: {cpu: $3}}}
      restartPolicy: Never
YAML
}
job fits 1 1 0 >"$tmp/fits.yaml"
job toobig 3 4 1 >"$tmp/toobig.yaml"
k create -f "$tmp/fits.yaml" >/dev/null 2>&1 || fail "create fits"
k create -f "$tmp/toobig.yaml" >/dev/null 2>&1 || fail "create toobig"
out=$(k wait --for=condition=Complete job/fits --timeout=60s 2>&1) || fail "fits: $out"
out=$(k describe job fits 2>&1)
for e in "Normal *CreatedWorkload .*Created Workload: default/job-fits-" \
  "Normal *Started .*Admitted by clusterQueue cluster-queue" "Normal *Completed .*Job completed"; do
  grep -q "$e" <<<"$out" || fail "describe job fits has no '$e': $out"
done
wl=$(k get workloads -o name | grep job-fits-)
out=$(k describe "$wl" 2>&1)
for e in "QuotaReserved .*Quota reserved in ClusterQueue cluster-queue, wait time since queued was" \
  "Admitted .*Admitted by ClusterQueue cluster-queue" "Finished .*Job finished successfully"; do
  grep -q "$e" <<<"$out" || fail "describe $wl has no '$e': $out"
done
why="needs 12 of cpu on flavor default-flavor, more than the queue can ever get"
for _ in $(seq 1 100); do grep -q "$why" <<<"$(k describe job toobig 2>&1)" && break; sleep 0.1; done
out=$(k describe job toobig 2>&1)
grep -q "Normal *Pending .*ClusterQueue cluster-queue: $why" <<<"$out" || fail "describe toobig: $out"
grep -q "Pending .*$why" <<<"$(k describe "$(k get workloads -o name | grep job-toobig-)" 2>&1)" ||
  fail "describe toobig's workload"
out=$(k get events 2>&1)
grep -q "Pending  *job/toobig" <<<"$out" || fail "get events: $out"
out=$(bob get events -n default 2>&1) && fail "bob reads default's events: $out"

# 3. kubectl drain: a running job's pods are evicted (the job requeued, its pods gone), the
#    ended job's pod deleted (the job stays Complete), the node drained in sluice's terms.
job long 3 1 300 >"$tmp/long.yaml"
k create -f "$tmp/long.yaml" >/dev/null 2>&1 || fail "create long"
for _ in $(seq 1 300); do [[ $(k get job long -o jsonpath='{.status.active}') == 3 ]] && break; sleep 0.1; done
[[ $(k get job long -o jsonpath='{.status.active}') == 3 ]] || fail "long not running: $(k get job long -o yaml)"
out=$(k get pods -A --field-selector spec.nodeName=n0,status.phase=Running -o name 2>&1)
[[ $out == $'pod/long-0\npod/long-1\npod/long-2' ]] || fail "field selector: $out"
uid0=$(k get pod long-0 -o jsonpath='{.metadata.uid}')
out=$(root drain n0 --ignore-daemonsets --delete-emptydir-data --timeout=90s 2>&1) ||
  fail "drain: $out"
# (A pod of the gang already gone when its own eviction comes is NotFound: kubectl says
# nothing more of it. At least one of the three is evicted and waited for.)
for e in "node/n0 cordoned" "evicting pod default/long-0" "evicting pod default/long-2" \
  "pod/long-[0-2] evicted" "pod/fits-0 evicted" "node/n0 drained"; do
  grep -q "$e" <<<"$out" || fail "drain did not say '$e': $out"
done
[[ -z $(k get pods -o name 2>&1) ]] || fail "pods left after the drain: $(k get pods 2>&1)"
[[ $(k get job fits -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}') == True ]] ||
  fail "fits after the drain: $(k get job fits -o yaml)"
grep -q "long *Suspended" <<<"$(k get job long 2>&1)" || fail "long after the drain: $(k get job long 2>&1)"
hold=$(curl -fsS -H "Authorization: Bearer root-token-0123456789a" "$SLUICE_SERVER/v1/nodes" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"][0]["hold"])')
[[ $hold == drained ]] || fail "sluice's node hold after kubectl drain: $hold"
out=$(k describe job long 2>&1)
grep -q "Normal *Stopped .*its pod long-[0-2] on node n0 was evicted by root (Kubernetes API); requeued" <<<"$out" ||
  fail "describe long after the drain: $out"
grep -q "Normal *Pending " <<<"$out" || fail "describe long: no Pending event: $out"

# 4. Uncordon: long runs again (its pods are new pods: another uid). Another namespace's member
#    may not evict alice's pods, nor cordon: its kubectl drain evicts nothing of hers. Alice may
#    not cordon either, but may evict her own pods (as she may `sluice requeue` her job): her
#    drain requeues long, and the node stays in scheduling. A pod that is gone is NotFound.
out=$(root uncordon n0 2>&1) || fail "uncordon: $out"
running() {
  for _ in $(seq 1 300); do [[ $(k get job long -o jsonpath='{.status.active}') == 3 ]] && return; sleep 0.1; done
  fail "long not running again: $(k get job long -o yaml)"
}
running
[[ $(k get pod long-0 -o jsonpath='{.metadata.uid}') != "$uid0" ]] || fail "long-0 kept its uid"
echo '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"long-1","namespace":"default"}}' >"$tmp/evict.json"
out=$(bob create --raw /api/v1/namespaces/default/pods/long-1/eviction -f "$tmp/evict.json" 2>&1) &&
  fail "bob evicts alice's pod: $out"
grep -q 'pods is forbidden: User "bob" cannot create resource "pods"' <<<"$out" || fail "bob evicts: $out"
out=$(bob drain n0 --ignore-daemonsets 2>&1 || true)
grep -q 'unable to cordon node "n0".*User "bob" cannot patch resource "nodes"' <<<"$out" || fail "bob drains: $out"
grep -q "evicting" <<<"$out" && fail "bob's drain evicted: $out"
[[ $(k get job long -o jsonpath='{.status.active}') == 3 ]] || fail "long after bob's drain"
out=$(k drain n0 --ignore-daemonsets 2>&1 || true)
grep -q 'unable to cordon node "n0".*User "alice" cannot patch resource "nodes"' <<<"$out" || fail "alice drains: $out"
grep -q "pod/long-[0-2] evicted" <<<"$out" || fail "alice's drain of her pods: $out"
grep -q "^n0 *Ready *" <<<"$(k get nodes 2>&1)" && ! grep -q SchedulingDisabled <<<"$(k get nodes 2>&1)" ||
  fail "n0 after alice's drain: $(k get nodes 2>&1)"
grep -q "pod default/long-[0-2] on node n0: evicted by alice (job [0-9]* requeued)" "$tmp/server.log" ||
  fail "alice's eviction not in the server's log"
running
grep -q "Normal *Stopped .*requeued" <<<"$(k describe job long 2>&1)" || fail "describe long: no Stopped"
sed 's/long-1/nope-0/' "$tmp/evict.json" >"$tmp/nope.json"
out=$(k create --raw /api/v1/namespaces/default/pods/nope-0/eviction -f "$tmp/nope.json" 2>&1) &&
  fail "evicting no pod: $out"
grep -q "NotFound\|not found" <<<"$out" || fail "evicting no pod: $out"
out=$(k create --raw /api/v1/namespaces/default/pods/long-1/eviction -f "$tmp/evict.json" 2>&1) ||
  fail "alice evicts long-1: $out"
grep -q '"code":201' <<<"$out" || fail "eviction answer: $out"
k delete job long toobig fits >/dev/null 2>&1 || fail "delete"
echo "PASS"
