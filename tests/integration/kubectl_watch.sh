#!/usr/bin/env bash
# The real kubectl's watches against `sluice serve` (issue 36, second slice; docs/kubernetes.md):
# `kubectl wait --for=condition=Complete job/x` and `--for=condition=Admitted workload/y` (a list,
# then a watch from its resourceVersion), `kubectl get jobs -w` and `kubectl get workloads -w`
# (ADDED, MODIFIED, DELETED as Table rows); then the watch API itself through curl: 410 Expired
# for a version the server never gave, timeoutSeconds ending the stream, BOOKMARK with
# allowWatchBookmarks, Forbidden in another namespace, 405 for a kind not watched; then
# `kubectl get pods -w`, `nodes -w`, `clusterqueues -w` and `localqueues -w`, a nodes watch
# through the API from its list's version, and `kubectl logs -f` of a running pod.
set -euo pipefail
source "$(dirname "$0")/lib/kubectl_env.sh"

# A batch/v1 Job in default's user-queue: NAME CPU SECONDS.
job_yaml() {
  cat <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: default, labels: {kueue.x-k8s.io/queue-name: user-queue}}
spec:
  template:
    spec:
      containers:
      - {name: main, image: busybox, command: [sh, -c, "echo $1; sleep $3"], resources: {requests: {cpu: $2}}}
      restartPolicy: Never
YAML
}
create() { job_yaml "$@" | k create -f - >/dev/null 2>&1 || fail "create $1"; }
# Waits (up to 60 s) until FILE holds a line matching the regex.
saw() {
  for _ in $(seq 1 600); do grep -Eq "$2" "$1" && return 0; sleep 0.1; done
  fail "no line /$2/ in $1: $(cat "$1")"
}
for _ in $(seq 1 300); do grep -q "^n0 *Ready" <<<"$(k get nodes 2>&1)" && break; sleep 0.1; done

# 1. kubectl wait for a Job to complete: it lists the job, then watches it from the list's
#    resourceVersion until the Complete condition comes.
create w1 1 2
out=$(k wait --for=condition=Complete job/w1 --timeout=60s 2>&1) || fail "wait Complete: $out"
[[ $out == "job.batch/w1 condition met" ]] || fail "wait Complete said: $out"

# 2. kubectl wait for a Workload's admission: w2 waits behind a job holding the queue's CPUs
#    and is admitted once that one is deleted.
create blocker 9 300
for _ in $(seq 1 300); do [[ $(k get job blocker -o jsonpath='{.status.active}') == 1 ]] && break; sleep 0.1; done
create w2 1 1
wl2=job-w2-$(k get job w2 -o jsonpath='{.metadata.labels.sluice\.dev/job-id}')
for _ in $(seq 1 300); do
  [[ -n $(k get workload "$wl2" -o jsonpath='{.status.conditions[?(@.reason=="Pending")].message}') ]] && break
  sleep 0.1
done
k wait --for=condition=Admitted "workload/$wl2" --timeout=60s >"$tmp/wait2" 2>&1 &
waiter=$!
pids+=($waiter)
# w2 cannot be admitted while blocker runs: the waiter must still be waiting.
sleep 1
[[ ! -s $tmp/wait2 ]] && kill -0 "$waiter" 2>/dev/null || fail "wait Admitted ended early: $(cat "$tmp/wait2")"
k delete job blocker >/dev/null || fail "delete blocker"
wait "$waiter" || fail "wait Admitted failed: $(cat "$tmp/wait2")"
grep -qx "workload.kueue.x-k8s.io/$wl2 condition met" "$tmp/wait2" || fail "wait Admitted: $(cat "$tmp/wait2")"

# 3. kubectl get jobs -w and kubectl get workloads -w: a new job's ADDED, its MODIFIED rows up
#    to Complete, and its DELETED.
k get jobs -w --output-watch-events >"$tmp/jobs.w" 2>&1 &
pids+=($!)
k get workloads -w >"$tmp/workloads.w" 2>&1 &
pids+=($!)
saw "$tmp/jobs.w" '^EVENT +NAME +STATUS +COMPLETIONS'
saw "$tmp/workloads.w" '^NAME +QUEUE +RESERVED IN'
create w3 1 1
saw "$tmp/jobs.w" '^ADDED +w3 '
saw "$tmp/jobs.w" '^MODIFIED +w3 +Complete +1/1'
saw "$tmp/workloads.w" '^job-w3-[0-9]+ +user-queue +cluster-queue +True +True'
k delete job w3 >/dev/null || fail "delete w3"
saw "$tmp/jobs.w" '^DELETED +w3 '

# 4. The watch API as any client sees it (curl against the server itself, with a token).
api=$SLUICE_SERVER/apis/batch/v1/namespaces/default/jobs
alice=(-H "Authorization: Bearer alice-token-0123456789")
rv=$(curl -sS --max-time 30 "${alice[@]}" "$api" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
[[ $rv =~ ^[0-9]+$ ]] || fail "list resourceVersion: '$rv'"
out=$(curl -sS --max-time 30 "${alice[@]}" "$api?watch=true&resourceVersion=1") || fail "curl 410"
grep -q '"type":"ERROR"' <<<"$out" && grep -q '"code":410' <<<"$out" &&
  grep -q '"reason":"Expired"' <<<"$out" || fail "a too old version: $out"
# timeoutSeconds ends the stream (curl exits 0, not 28 for its own limit); bookmarks come with
# allowWatchBookmarks while nothing changes.
out=$(curl -sS --max-time 60 "${alice[@]}" \
  "$api?watch=true&resourceVersion=$rv&allowWatchBookmarks=true&timeoutSeconds=12") ||
  fail "curl timeoutSeconds: $?"
grep -q '"type":"BOOKMARK"' <<<"$out" || fail "no bookmark: $out"
# A job created after the version is one ADDED event, as JSON (not a Table) for this client.
create w4 1 1
out=$(curl -sS --max-time 60 "${alice[@]}" "$api?watch=true&resourceVersion=$rv&timeoutSeconds=2")
grep -q '"type":"ADDED","object":{"apiVersion":"batch/v1","kind":"Job"' <<<"$out" &&
  grep -q '"name":"w4"' <<<"$out" || fail "ADDED w4: $out"
code=$(curl -sS -o "$tmp/out" -w '%{http_code}' --max-time 30 \
  -H "Authorization: Bearer bob-token-012345678901" "$api?watch=true&timeoutSeconds=1")
[[ $code == 403 ]] && grep -q Forbidden "$tmp/out" || fail "bob watches default: $code $(cat "$tmp/out")"
code=$(curl -sS -o "$tmp/out" -w '%{http_code}' --max-time 30 "${alice[@]}" \
  "$SLUICE_SERVER/api/v1/namespaces/default/events?watch=true")
[[ $code == 405 ]] || fail "watch events: $code $(cat "$tmp/out")"

# 5. kubectl get pods -w, nodes -w, clusterqueues -w, localqueues -w: a new job's pod ADDED
#    and MODIFIED to Completed, then DELETED with its job; a pending job shows in its queues'
#    PENDING WORKLOADS; a cordon changes the node's row.
k get pods -w --output-watch-events >"$tmp/pods.w" 2>&1 &
pids+=($!)
k get nodes -w --output-watch-events >"$tmp/nodes.w" 2>&1 &
pids+=($!)
k get clusterqueues -w --output-watch-events >"$tmp/cq.w" 2>&1 &
pids+=($!)
k get localqueues -w --output-watch-events >"$tmp/lq.w" 2>&1 &
pids+=($!)
saw "$tmp/pods.w" '^EVENT +NAME +READY +STATUS'
saw "$tmp/nodes.w" '^EVENT +NAME +STATUS +ROLES'
saw "$tmp/cq.w" '^EVENT +NAME +COHORT +PENDING WORKLOADS'
saw "$tmp/lq.w" '^EVENT +NAME +CLUSTERQUEUE +PENDING WORKLOADS'
create w5 1 1
saw "$tmp/pods.w" '^ADDED +w5-0 +'
saw "$tmp/pods.w" '^MODIFIED +w5-0 +0/1 +Completed'
k delete job w5 >/dev/null || fail "delete w5"
saw "$tmp/pods.w" '^DELETED +w5-0 '
create blocker2 9 300
for _ in $(seq 1 300); do [[ $(k get job blocker2 -o jsonpath='{.status.active}') == 1 ]] && break; sleep 0.1; done
create w6 1 1
saw "$tmp/cq.w" '^MODIFIED +cluster-queue +[^ ]* *1$'
saw "$tmp/lq.w" '^MODIFIED +user-queue +cluster-queue +1 +1$'
KUBECONFIG=$tmp/root.kubeconfig k cordon n0 >/dev/null 2>&1 || fail "cordon"
saw "$tmp/nodes.w" '^MODIFIED +n0 +Ready,SchedulingDisabled'
KUBECONFIG=$tmp/root.kubeconfig k uncordon n0 >/dev/null 2>&1 || fail "uncordon"
# Until the watch thread has seen the uncordon: a cordon again within one of its rounds would
# be no change at all (docs/kubernetes.md, "Watch": a round's snapshot, not every state).
for _ in $(seq 1 600); do
  last=$(grep -E '^MODIFIED +n0 ' "$tmp/nodes.w" | tail -1 || true)
  [[ $last =~ \ Ready\ + ]] && break
  sleep 0.1
done
[[ $last =~ \ Ready\ + ]] || fail "the uncordon in the nodes watch: $(cat "$tmp/nodes.w")"
k delete job blocker2 w6 >/dev/null || fail "delete blocker2 w6"
saw "$tmp/cq.w" '^MODIFIED +cluster-queue +[^ ]* *0$'
# The same through the API: a nodes watch from its list's version gets the cordon only, with
# a resourceVersion; 410 for a version never given; bob may watch nodes (every caller sees
# them) but not default's pods.
nodes=$SLUICE_SERVER/api/v1/nodes
rv=$(curl -sS --max-time 30 "${alice[@]}" "$nodes" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
[[ $rv =~ ^[0-9]+$ ]] || fail "nodes list resourceVersion: '$rv'"
curl -sS --max-time 60 "${alice[@]}" "$nodes?watch=true&resourceVersion=$rv&timeoutSeconds=4" \
  >"$tmp/nodes.json" &
watcher=$!
curl -fsS -X PATCH --max-time 30 -H "Authorization: Bearer root-token-0123456789a" \
  -H "Content-Type: application/strategic-merge-patch+json" -d '{"spec":{"unschedulable":true}}' \
  "$nodes/n0" >/dev/null || fail "cordon through the API"
wait "$watcher" || fail "nodes watch"
grep -q '"type":"MODIFIED","object":{"apiVersion":"v1","kind":"Node"' "$tmp/nodes.json" &&
  grep -q '"unschedulable":true' "$tmp/nodes.json" || fail "nodes watch: $(cat "$tmp/nodes.json")"
python3 - "$tmp/nodes.json" "$rv" <<'PY' || fail "nodes watch versions: $(cat "$tmp/nodes.json")"
import json, sys
events = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
assert events and all(int(e["object"]["metadata"]["resourceVersion"]) > int(sys.argv[2]) for e in events)
PY
out=$(curl -sS --max-time 30 "${alice[@]}" "$nodes?watch=true&resourceVersion=1")
grep -q '"code":410' <<<"$out" || fail "nodes watch from 1: $out"
code=$(curl -sS -o "$tmp/out" -w '%{http_code}' --max-time 30 \
  -H "Authorization: Bearer bob-token-012345678901" "$SLUICE_SERVER/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1")
[[ $code == 403 ]] || fail "bob watches default's pods: $code $(cat "$tmp/out")"
KUBECONFIG=$tmp/root.kubeconfig k uncordon n0 >/dev/null 2>&1 || fail "uncordon after the API's cordon"

# 6. kubectl logs -f of a running pod: the stream carries what the pod writes while it runs,
#    and ends (kubectl exits 0) once the pod has ended and its log is read to its end.
cat >"$tmp/chatty.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: chatty, namespace: default, labels: {kueue.x-k8s.io/queue-name: user-queue}}
spec:
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: [sh, -c, "for i in 1 2 3 4 5 6; do echo line $i; sleep 1; done"]
        resources: {requests: {cpu: 1}}
      restartPolicy: Never
YAML
k create -f "$tmp/chatty.yaml" >/dev/null 2>&1 || fail "create chatty"
for _ in $(seq 1 300); do
  [[ $(k logs chatty-0 2>/dev/null) == *"line 1"* ]] && break
  sleep 0.1
done
[[ $(k get pod chatty-0 -o jsonpath='{.status.phase}') == Running ]] ||
  fail "chatty not running: $(k get pod chatty-0 -o yaml 2>&1)"
timeout 60 kubectl --request-timeout=0 logs -f chatty-0 >"$tmp/chatty.log" 2>&1 ||
  fail "logs -f: $? $(cat "$tmp/chatty.log")"
[[ $(cat "$tmp/chatty.log") == $'line 1\nline 2\nline 3\nline 4\nline 5\nline 6' ]] ||
  fail "logs -f said: $(cat "$tmp/chatty.log")"
[[ $(k get pod chatty-0 -o jsonpath='{.status.phase}') == Succeeded ]] ||
  fail "logs -f ended before the pod: $(k get pod chatty-0 -o yaml 2>&1)"
# With --tail=1: the last line written so far (line 2 or later), then every line after it.
sed 's/name: chatty,/name: chatty2,/' "$tmp/chatty.yaml" | k create -f - >/dev/null 2>&1 ||
  fail "create chatty2"
for _ in $(seq 1 300); do
  [[ $(k logs chatty2-0 2>/dev/null) == *"line 2"* ]] && break
  sleep 0.1
done
timeout 60 kubectl --request-timeout=0 logs -f --tail=1 chatty2-0 >"$tmp/chatty2.log" 2>&1 ||
  fail "logs -f --tail=1: $? $(cat "$tmp/chatty2.log")"
python3 - "$tmp/chatty2.log" <<'PY' || fail "logs -f --tail=1 said: $(cat "$tmp/chatty2.log")"
import sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == "", lines
n = [int(l.split()[1]) for l in lines[:-1]]
assert n[0] >= 2 and n == list(range(n[0], 7)), n
PY
echo "PASS"
