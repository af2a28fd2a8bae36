#!/usr/bin/env bash
# The real kubectl against `sluice serve` (issue 36, first slice; docs/kubernetes.md): a
# kubeconfig from `sluice kubeconfig`, `kubectl get nodes`, Kueue's sample batch/v1 Job created
# as published (generateName, the queue-name label), jobs, pods and workloads listed, the job
# waited for until Complete, its logs, AlreadyExists, a pending Job's Workload saying why, delete,
# suspend and resume (spec.suspend), cordon and uncordon, and a token of another namespace
# Forbidden. kubectl sends a token only over https: a small
# TLS terminator (tls_proxy.py) stands in front of the server, as nginx would.
set -euo pipefail
source "$(dirname "$0")/lib/kubectl_env.sh"

# 1. Nodes, once the agent registered: Ready, with the GPUs as nvidia.com/gpu.
# (Output is read whole before grep looks at it: a grep -q that stops early would cut kubectl.)
for _ in $(seq 1 300); do grep -q "^n0 *Ready" <<<"$(k get nodes 2>&1)" && break; sleep 0.1; done
out=$(k get nodes 2>&1)
grep -q "^n0 *Ready" <<<"$out" || fail "kubectl get nodes: $out"
[[ $(k get node n0 -o jsonpath='{.status.capacity.nvidia\.com/gpu}') == 4 ]] ||
  fail "node capacity: $(k get node n0 -o json)"
out=$(k api-resources 2>&1)
grep -q "workloads *wl *kueue.x-k8s.io/v1beta1 *true *Workload" <<<"$out" || fail "api-resources: $out"

# 2. Kueue's sample Job as published (generateName, suspend, the queue-name label).
cat >"$tmp/sample-job.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  generateName: sample-job-
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  parallelism: 3
  completions: 3
  suspend: true
  template:
    spec:
      containers:
      - name: dummy-job
        image: gcr.io/k8s-staging-perf-tests/sleep:v0.1.0
        command: ["sh", "-c", "echo hello from kubectl; echo second line; sleep 1"]
        resources:
          requests:
            cpu: 1
            memory: "200Mi"
      restartPolicy: Never
YAML
k create -f "$tmp/sample-job.yaml" >"$tmp/out" 2>&1 || fail "create: $(cat "$tmp/out")"
job=$(sed -n 's|^job.batch/\(sample-job-[a-z0-9]*\) created$|\1|p' "$tmp/out")
[[ -n $job ]] || fail "create said: $(cat "$tmp/out")"
k get jobs,pods,workloads >"$tmp/out" 2>&1 || fail "get jobs,pods,workloads: $(cat "$tmp/out")"
grep -q "job.batch/$job" "$tmp/out" && grep -q "workload.kueue.x-k8s.io/job-$job-" "$tmp/out" ||
  fail "listing: $(cat "$tmp/out")"
head -1 "$tmp/out" | grep -q "NAME *STATUS *COMPLETIONS *DURATION *AGE" || fail "job columns: $(cat "$tmp/out")"
out=$(k get workloads 2>&1)
grep -q "^NAME *QUEUE *RESERVED IN *ADMITTED *FINISHED *AGE" <<<"$out" || fail "workload columns: $out"
for _ in $(seq 1 600); do
  [[ $(k get job "$job" -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}') == True ]] && break
  sleep 0.2
done
[[ $(k get job "$job" -o jsonpath='{.status.succeeded}') == 3 ]] || fail "not complete: $(k get job "$job" -o yaml)"
out=$(k get job "$job" 2>&1)
grep -q "Complete *3/3" <<<"$out" || fail "job row: $out"
out=$(k get pods 2>&1)
grep -q "$job-2 *0/1 *Completed" <<<"$out" || fail "pods: $out"
wl=$(k get workloads -o jsonpath='{.items[0].metadata.name}')
[[ $(k get workload "$wl" -o jsonpath='{.status.conditions[?(@.type=="Finished")].reason}') == Succeeded ]] ||
  fail "workload: $(k get workload "$wl" -o yaml)"
[[ $(k logs "$job-0") == $'hello from kubectl\nsecond line' ]] || fail "logs: $(k logs "$job-0" 2>&1)"
[[ $(k logs "$job-1" --tail=1) == "second line" ]] || fail "logs --tail: $(k logs "$job-1" --tail=1 2>&1)"
out=$(k logs "job/$job" 2>&1)
grep -q "hello from kubectl" <<<"$out" || fail "logs job/: $out"

# 3. A long job by name: a second create of the name is AlreadyExists; one that does not fit
#    waits, and its Workload says why; delete cancels, and the job is gone.
sed 's/generateName: sample-job-/name: long/; s/sleep 1/sleep 300/' "$tmp/sample-job.yaml" >"$tmp/long.yaml"
k create -f "$tmp/long.yaml" >/dev/null 2>&1 || fail "create long"
out=$(refused create -f "$tmp/long.yaml")
grep -q 'AlreadyExists.*jobs.batch "long" already exists' <<<"$out" || fail "AlreadyExists: $out"
sed 's/name: long/name: waits/; s/cpu: 1$/cpu: 3/' "$tmp/long.yaml" >"$tmp/waits.yaml"
k create -f "$tmp/waits.yaml" >/dev/null 2>&1 || fail "create waits"
for _ in $(seq 1 300); do
  why=$(k get workloads -o jsonpath='{.items[?(@.spec.queueName=="user-queue")].status.conditions[?(@.reason=="Pending")].message}')
  [[ -n $why ]] && break
  sleep 0.1
done
[[ -n $why ]] || fail "no pending reason: $(k get workloads -o yaml)"
out=$(k get job waits 2>&1)
grep -q "Suspended" <<<"$out" || fail "pending job not Suspended: $out"
# Suspend and resume through spec.suspend (Kueue's habit): hold and release; the running Job
# suspended goes back to its queue, held. Other fields and other patch types are refused.
suspended() { k get job "$1" -o jsonpath='{.status.conditions[?(@.type=="Suspended")].message}'; }
k patch job waits -p '{"spec":{"suspend":true}}' >/dev/null 2>&1 || fail "suspend waits"
[[ $(suspended waits) == "held by a user" ]] || fail "waits not held: $(k get job waits -o yaml)"
k patch job long --type merge -p '{"spec":{"suspend":true}}' >/dev/null 2>&1 || fail "suspend long"
[[ $(suspended long) == "held by a user" ]] || fail "long not held: $(k get job long -o yaml)"
# Resumed, waits takes the CPUs that long, suspended, gave back.
k patch job waits -p '{"spec":{"suspend":false}}' >/dev/null 2>&1 || fail "resume waits"
for _ in $(seq 1 300); do [[ $(k get job waits -o jsonpath='{.status.active}') == 3 ]] && break; sleep 0.1; done
[[ $(k get job waits -o jsonpath='{.status.active}') == 3 ]] || fail "waits not running: $(k get job waits -o yaml)"
[[ $(suspended long) == "held by a user" ]] || fail "long released: $(k get job long -o yaml)"
out=$(refused patch job long -p '{"spec":{"parallelism":5}}')
grep -q 'invalid.*spec.parallelism' <<<"$out" || fail "patch parallelism: $out"
out=$(refused patch job long --type json -p '[{"op":"replace","path":"/spec/suspend","value":false}]')
grep -q 'UnsupportedMediaType\|merge patch' <<<"$out" || fail "json patch: $out"
out=$(k delete job waits long 2>&1)
grep -q 'job.batch "long" deleted' <<<"$out" || fail "delete: $out"
out=$(refused get job long)
grep -q 'NotFound' <<<"$out" || fail "deleted job still there: $out"
k delete job "$job" >/dev/null || fail "delete a finished job"
[[ -z $(k get jobs -o name) ]] || fail "jobs left: $(k get jobs -o name)"

# Cordon and uncordon (an admin's, as sluice cordon / resume): the node shows
# SchedulingDisabled and a job waits; uncordoned, it runs. A member may not cordon.
out=$(refused cordon n0)
grep -q 'forbidden: User "alice" cannot patch resource "nodes"' <<<"$out" || fail "alice cordons: $out"
out=$(KUBECONFIG=$tmp/root.kubeconfig k cordon n0 2>&1) || fail "cordon: $out"
[[ $out == "node/n0 cordoned" ]] || fail "cordon said: $out"
grep -q "^n0 *Ready,SchedulingDisabled" <<<"$(k get nodes 2>&1)" || fail "cordoned: $(k get nodes 2>&1)"
sed 's/name: long/name: after-cordon/; s/sleep 300/sleep 1/' "$tmp/long.yaml" >"$tmp/after.yaml"
k create -f "$tmp/after.yaml" >/dev/null 2>&1 || fail "create after-cordon"
for _ in $(seq 1 300); do
  why=$(k get workloads -o jsonpath='{.items[*].status.conditions[?(@.reason=="Pending")].message}')
  [[ -n $why ]] && break
  sleep 0.1
done
[[ -n $why && $(k get job after-cordon -o jsonpath='{.status.active}') != 3 ]] ||
  fail "after-cordon on a cordoned node: $(k get job after-cordon -o yaml)"
out=$(KUBECONFIG=$tmp/root.kubeconfig k uncordon n0 2>&1) || fail "uncordon: $out"
[[ $out == "node/n0 uncordoned" ]] || fail "uncordon said: $out"
out=$(k wait --for=condition=Complete job/after-cordon --timeout=60s 2>&1) || fail "after uncordon: $out"
k delete job after-cordon >/dev/null || fail "delete after-cordon"

# 4. Another namespace's token: Forbidden in default, its own namespace empty.
export KUBECONFIG=$tmp/bob.kubeconfig
out=$(refused get jobs -n default)
grep -q 'Forbidden.*User "bob" cannot list resource "jobs"' <<<"$out" || fail "bob in default: $out"
out=$(refused create -f "$tmp/sample-job.yaml")
grep -q Forbidden <<<"$out" || fail "bob creates in default: $out"
out=$(k get jobs 2>&1)
grep -q "No resources found in team-b namespace" <<<"$out" || fail "bob's own: $out"
echo "PASS"
