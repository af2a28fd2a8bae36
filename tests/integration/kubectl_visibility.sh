#!/usr/bin/env bash
# Kueue's visibility API and `kubectl explain` against `sluice serve` (issue 36;
# docs/kubernetes.md): `kubectl get --raw .../clusterqueues/NAME/pendingworkloads` and
# `.../namespaces/NS/localqueues/NAME/pendingworkloads` list the pending workloads in sluice's
# queue order with their positions (offset and limit; a member sees its namespaces' only, at
# their true positions; another namespace's LocalQueue is Forbidden); `kubectl explain` reads
# the OpenAPI v3 schemas (workloads.spec, clusterqueue.spec.resourceGroups, job.spec.suspend).
set -euo pipefail
source "$(dirname "$0")/lib/kubectl_env.sh"

job_yaml() {  # NAME NAMESPACE CPU SECONDS
  cat <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: $2, labels: {kueue.x-k8s.io/queue-name: user-queue}}
spec:
  template:
    spec:
      containers:
      - {name: main, image: busybox, command: [sh, -c, "sleep $4"], resources: {requests: {cpu: $3}}}
      restartPolicy: Never
YAML
}
for _ in $(seq 1 300); do grep -q "^n0 *Ready" <<<"$(k get nodes 2>&1)" && break; sleep 0.1; done

# 1. kubectl explain, from the OpenAPI v3 schemas.
out=$(k explain workloads.spec 2>&1) || fail "explain workloads.spec: $out"
grep -q "KIND: *Workload" <<<"$out" && grep -q "queueName.*<string>" <<<"$out" &&
  grep -q "podSets.*<\[\]Object>" <<<"$out" || fail "explain workloads.spec: $out"
out=$(k explain clusterqueue.spec.resourceGroups 2>&1) || fail "explain resourceGroups: $out"
grep -q "FIELD: *resourceGroups <\[\]Object>" <<<"$out" && grep -q "coveredResources" <<<"$out" &&
  grep -q "flavors" <<<"$out" || fail "explain clusterqueue.spec.resourceGroups: $out"
out=$(k explain job.spec.suspend 2>&1) || fail "explain job.spec.suspend: $out"
grep -q "FIELD: *suspend <boolean>" <<<"$out" && grep -q "held back" <<<"$out" ||
  fail "explain job.spec.suspend: $out"
out=$(k explain pods.spec.nodeName 2>&1) || fail "explain pods.spec.nodeName: $out"

# 2. A job holding the queue's CPUs, then three that wait: p1 and p2 in default, p3 in team-b.
job_yaml blocker default 9 300 | k create -f - >/dev/null 2>&1 || fail "create blocker"
for _ in $(seq 1 300); do [[ $(k get job blocker -o jsonpath='{.status.active}') == 1 ]] && break; sleep 0.1; done
job_yaml p1 default 1 1 | k create -f - >/dev/null 2>&1 || fail "create p1"
job_yaml p2 default 1 1 | k create -f - >/dev/null 2>&1 || fail "create p2"
job_yaml p3 team-b 1 1 | KUBECONFIG=$tmp/bob.kubeconfig k create -f - >/dev/null 2>&1 || fail "create p3"
cq=/apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/cluster-queue/pendingworkloads
lq=/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/default/localqueues/user-queue/pendingworkloads
# NAME CQ-POSITION LQ-POSITION LOCALQUEUE, one a line.
rows() {
  python3 -c 'import json, sys
for i in json.load(sys.stdin)["items"]:
    print(i["metadata"]["name"].split("-")[1], i["positionInClusterQueue"], i["positionInLocalQueue"],
          i["metadata"]["namespace"] + "/" + i["localQueueName"])'
}
for _ in $(seq 1 300); do
  [[ $(KUBECONFIG=$tmp/root.kubeconfig k get --raw "$cq" | rows | wc -l) == 3 ]] && break
  sleep 0.1
done
out=$(KUBECONFIG=$tmp/root.kubeconfig k get --raw "$cq" | rows)
[[ $out == $'p1 0 0 default/user-queue\np2 1 1 default/user-queue\np3 2 0 team-b/user-queue' ]] ||
  fail "pending workloads of cluster-queue: $out"
out=$(k get --raw "$cq" | rows)  # alice: default's only, at their positions
[[ $out == $'p1 0 0 default/user-queue\np2 1 1 default/user-queue' ]] || fail "alice's view: $out"
out=$(k get --raw "$lq" | rows)
[[ $out == $'p1 0 0 default/user-queue\np2 1 1 default/user-queue' ]] || fail "localqueue: $out"
out=$(KUBECONFIG=$tmp/root.kubeconfig k get --raw "$cq?offset=1&limit=1" | rows)
[[ $out == "p2 1 1 default/user-queue" ]] || fail "offset=1&limit=1: $out"
out=$(k get --raw "$cq" 2>&1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["kind"])')
[[ $out == PendingWorkloadsSummary ]] || fail "kind: $out"
out=$(refused get --raw /apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/nope/pendingworkloads)
grep -q NotFound <<<"$out" || fail "unknown clusterqueue: $out"
out=$(refused get --raw "$cq?limit=x")
grep -q BadRequest <<<"$out" || fail "limit=x: $out"
out=$(KUBECONFIG=$tmp/bob.kubeconfig refused get --raw "$lq")
grep -q Forbidden <<<"$out" || fail "bob reads default's localqueue: $out"
out=$(k api-resources --api-group=visibility.kueue.x-k8s.io 2>&1)
grep -q "clusterqueues *visibility.kueue.x-k8s.io/v1beta1 *false *ClusterQueue" <<<"$out" ||
  fail "api-resources: $out"
# kubectl get clusterqueues is still Kueue's ClusterQueue (the first group that serves it).
out=$(k get clusterqueues 2>&1)
grep -q "^cluster-queue" <<<"$out" || fail "get clusterqueues: $out"
k delete job blocker p1 p2 >/dev/null 2>&1 || fail "delete"
echo "PASS"
