#!/usr/bin/env bash
# JobSet, PyTorchJob and MPIJob through the real kubectl (issue 36; docs/kubernetes.md, "JobSet,
# PyTorchJob and MPIJob"): in discovery; created with kubectl create as written (the readers of
# these kinds, src/config/jobs), each one gang whose pods run on the agent; listed with their
# columns and as their Workloads; watched to the end (kubectl wait on JobSet's Completed and
# the training operator's Succeeded); read back as written; a label selector; patched (the
# suspend flag where each kind keeps it, labels), replaced; another namespace's member is
# Forbidden; deleted.
set -euo pipefail
source "$(dirname "$0")/lib/kubectl_env.sh"
export KUBECONFIG=$tmp/alice.kubeconfig

k api-resources >"$tmp/out" 2>&1 || fail "api-resources: $(cat "$tmp/out")"
for r in "jobsets .*jobset.x-k8s.io/v1alpha2 *true *JobSet" "pytorchjobs .*kubeflow.org/v1 *true *PyTorchJob" \
    "mpijobs .*kubeflow.org/v2beta1 *true *MPIJob"; do
  grep -q "^$r" "$tmp/out" || fail "not discovered: $r: $(cat "$tmp/out")"
done

cat >"$tmp/kinds.yaml" <<'YAML'
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, labels: {kueue.x-k8s.io/queue-name: user-queue, team: a}}
spec:
  replicatedJobs:
  - name: leader
    template:
      spec:
        template:
          spec:
            containers: [{name: c, command: ["true"], resources: {requests: {cpu: 1}}}]
  - name: workers
    replicas: 2
    template:
      spec:
        template:
          spec:
            containers: [{name: c, command: ["true"], resources: {requests: {cpu: 1}}}]
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, labels: {kueue.x-k8s.io/queue-name: user-queue}}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, command: ["true"], resources: {requests: {cpu: 1}}}]
    Worker:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, command: ["true"], resources: {requests: {cpu: 1}}}]
---
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: mpi, labels: {kueue.x-k8s.io/queue-name: user-queue}}
spec:
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers: [{name: l, command: ["true"], resources: {requests: {cpu: 1}}}]
    Worker:
      replicas: 1
      template:
        spec:
          containers: [{name: w, command: ["sleep", "300"], resources: {requests: {cpu: 1}}}]
YAML
k create -f "$tmp/kinds.yaml" >"$tmp/out" 2>&1 || fail "create: $(cat "$tmp/out")"
for o in jobset.jobset.x-k8s.io/js pytorchjob.kubeflow.org/pt mpijob.kubeflow.org/mpi; do
  grep -q "^$o created" "$tmp/out" || fail "create said: $(cat "$tmp/out")"
done

# Each is its kind, as written, and a Workload; a label selector finds the JobSet.
[[ $(k get jobset js -o jsonpath='{.spec.replicatedJobs[1].replicas}') == 2 ]] ||
  fail "the JobSet as written: $(k get jobset js -o yaml)"
k get jobsets -l team=a -o name >"$tmp/out" 2>&1 || fail "jobsets -l: $(cat "$tmp/out")"
[[ $(cat "$tmp/out") == "jobset.jobset.x-k8s.io/js" ]] || fail "jobsets -l team=a: $(cat "$tmp/out")"
k get workloads -o name >"$tmp/out" 2>&1 || fail "workloads: $(cat "$tmp/out")"
for w in js pt mpi; do grep -q "^workload.kueue.x-k8s.io/job-$w-" "$tmp/out" || fail "no workload of $w: $(cat "$tmp/out")"; done
k get pytorchjobs,mpijobs >"$tmp/out" 2>&1 || fail "get: $(cat "$tmp/out")"
grep -q "^NAME *STATE *AGE" "$tmp/out" && grep -q "^pytorchjob.kubeflow.org/pt " "$tmp/out" ||
  fail "get pytorchjobs: $(cat "$tmp/out")"

# To the end: the JobSet Completed, the PyTorchJob Succeeded (their pods ran `true`).
k wait --for=condition=Completed jobset/js --timeout=120s >"$tmp/out" 2>&1 ||
  fail "jobset not completed: $(cat "$tmp/out"; k get jobset js -o yaml)"
k wait --for=condition=Succeeded pytorchjob/pt --timeout=120s >"$tmp/out" 2>&1 ||
  fail "pytorchjob not succeeded: $(cat "$tmp/out"; k get pytorchjob pt -o yaml)"
k get jobsets >"$tmp/out" 2>&1 || fail "get jobsets: $(cat "$tmp/out")"
grep -q "^NAME *TERMINALSTATE *RESTARTS *COMPLETED *SUSPENDED *AGE" "$tmp/out" &&
  grep -q "^js *Completed *0 *True *false " "$tmp/out" || fail "get jobsets said: $(cat "$tmp/out")"
[[ $(k get pytorchjob pt -o jsonpath='{.status.replicaStatuses.Master.succeeded}') == 1 ]] ||
  fail "replicaStatuses: $(k get pytorchjob pt -o yaml)"

# A watch of MPIJobs sees the MPIJob (and nothing of the other kinds).
k get mpijobs -w --output-watch-events --request-timeout=3s >"$tmp/watch" 2>&1 || true
grep -q "^ADDED *mpi " "$tmp/watch" || fail "watch mpijobs: $(cat "$tmp/watch")"
! grep -q "js\|pt " "$tmp/watch" || fail "a watch of mpijobs showed another kind: $(cat "$tmp/watch")"

# Changes (patch, label, replace): the MPIJob suspended and resumed through its runPolicy, as
# Kueue suspends a Kubeflow job; a JobSet labelled and replaced with another label; a field
# sluice does not change is named; a stale resourceVersion is a Conflict.
k patch mpijob mpi --type merge -p '{"spec":{"runPolicy":{"suspend":true}}}' >"$tmp/out" 2>&1 ||
  fail "suspend mpijob: $(cat "$tmp/out")"
[[ $(k get mpijob mpi -o jsonpath='{.spec.runPolicy.suspend}') == true ]] ||
  fail "suspended mpijob: $(k get mpijob mpi -o yaml)"
[[ $(k get job mpi -o jsonpath='{.metadata.annotations.sluice\.dev/state}') == pending ]] ||
  fail "a suspended mpijob is held: $(k get job mpi -o yaml)"
k patch mpijob mpi --type merge -p '{"spec":{"runPolicy":{"suspend":false}}}' >"$tmp/out" 2>&1 ||
  fail "resume mpijob: $(cat "$tmp/out")"
for _ in $(seq 1 300); do
  [[ $(k get mpijob mpi -o jsonpath='{.spec.runPolicy.suspend}') == false ]] && break
  sleep 0.2
done
[[ $(k get mpijob mpi -o jsonpath='{.spec.runPolicy.suspend}') == false ]] ||
  fail "resumed mpijob: $(k get mpijob mpi -o yaml)"
out=$(refused patch pytorchjob pt --type merge -p '{"spec":{"runPolicy":{"backoffLimit":3}}}')
grep -q "spec.runPolicy.backoffLimit: sluice does not change this field of a PyTorchJob" <<<"$out" ||
  fail "patch of another field: $out"
k label jobset js owner=b >"$tmp/out" 2>&1 || fail "label jobset: $(cat "$tmp/out")"
k get jobsets -l owner=b -o name >"$tmp/out" 2>&1 || fail "jobsets -l owner=b: $(cat "$tmp/out")"
[[ $(cat "$tmp/out") == "jobset.jobset.x-k8s.io/js" ]] || fail "after label: $(cat "$tmp/out")"
k get jobset js -o json >"$tmp/js.json" 2>"$tmp/out" || fail "get js: $(cat "$tmp/out")"
python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); o["metadata"]["labels"]["owner"]="c"; json.dump(o, open(sys.argv[2], "w"))' \
  "$tmp/js.json" "$tmp/js-c.json"
k replace -f "$tmp/js-c.json" >"$tmp/out" 2>&1 || fail "replace jobset: $(cat "$tmp/out")"
[[ $(k get jobset js -o jsonpath='{.metadata.labels.owner}') == c ]] || fail "replaced: $(k get jobset js -o yaml)"
out=$(refused replace -f "$tmp/js-c.json")
grep -q 'Operation cannot be fulfilled on jobsets.jobset.x-k8s.io "js"' <<<"$out" || fail "stale replace: $out"

# Another namespace's member; delete.
out=$(KUBECONFIG=$tmp/bob.kubeconfig refused get jobset js -n default)
grep -q 'forbidden: User "bob"' <<<"$out" || fail "bob reads: $out"
k delete mpijob mpi >"$tmp/out" 2>&1 || fail "delete mpijob: $(cat "$tmp/out")"
grep -q 'mpijob.kubeflow.org "mpi" deleted' "$tmp/out" || fail "delete said: $(cat "$tmp/out")"
out=$(refused get mpijob mpi)
grep -q NotFound <<<"$out" || fail "mpijob after delete: $out"
out=$(refused get jobset pt)
grep -q NotFound <<<"$out" || fail "a PyTorchJob read as a JobSet: $out"
k delete jobset js >/dev/null 2>&1 || fail "delete jobset"
k delete pytorchjob pt >/dev/null 2>&1 || fail "delete pytorchjob"
echo "kubectl_jobkinds: ok"
