#!/usr/bin/env bash
# JobSet, PyTorchJob and MPIJob through the real kubectl (issue 36; docs/kubernetes.md, "JobSet,
# PyTorchJob and MPIJob"): in discovery; created with kubectl create as written (the readers of
# these kinds, src/config/jobs), each one gang whose pods run on the agent; listed with their
# columns and as their Workloads; watched to the end (kubectl wait on JobSet's Completed and
# the training operator's Succeeded); read back as written; a label selector; another
# namespace's member is Forbidden; deleted.
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
