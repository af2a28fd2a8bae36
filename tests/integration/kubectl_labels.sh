#!/usr/bin/env bash
# A Job's own labels and annotations through the real kubectl (issue 36; docs/kubernetes.md,
# "Labels and annotations"): Jobs created with labels, annotations and pod template labels;
# label selectors on jobs, workloads and pods find them by those; kubectl label and annotate
# (merge patches of metadata) add, change and remove them; a label that breaks Kubernetes'
# rules is 422 with its cause, a label sluice reads is Forbidden to change; kubectl apply of a
# changed label; kubectl replace (an update: labels replaced, a stale resourceVersion 409, a
# changed template 422); kubectl apply --server-side; another namespace's member is Forbidden;
# all of it survives a restart of the server.
set -euo pipefail
source "$(dirname "$0")/lib/kubectl_env.sh"
export KUBECONFIG=$tmp/alice.kubeconfig
# The names `kubectl get ARGS` lists, sorted, on one line ("" for none).
names() {
  k get "$@" -o name >"$tmp/names" 2>"$tmp/names.err" || fail "get $*: $(cat "$tmp/names.err")"
  sort "$tmp/names" | tr '\n' ' '
}

# 1. Two Jobs, each with its own labels and its pods' (the template's).
cat >"$tmp/labelled.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: labelled
  labels: {kueue.x-k8s.io/queue-name: user-queue, team: a, tier: gold}
  annotations: {note: "free text, kept as written"}
spec:
  template:
    metadata: {labels: {role: worker}, annotations: {pod-note: hi}}
    spec:
      containers: [{name: main, command: ["sleep", "300"], resources: {requests: {cpu: 1}}}]
      restartPolicy: Never
YAML
sed 's/name: labelled/name: other/; s/team: a, tier: gold/team: b/; s/role: worker/role: other/' \
  "$tmp/labelled.yaml" >"$tmp/other.yaml"
k create -f "$tmp/labelled.yaml" >"$tmp/out" 2>&1 || fail "create labelled: $(cat "$tmp/out")"
k create -f "$tmp/other.yaml" >"$tmp/out" 2>&1 || fail "create other: $(cat "$tmp/out")"
[[ $(names jobs -l team=a) == "job.batch/labelled " ]] || fail "jobs -l team=a: $(names jobs -l team=a)"
[[ $(names jobs -l 'team!=a') == "job.batch/other " ]] || fail "jobs -l team!=a: $(names jobs -l 'team!=a')"
[[ $(names jobs -l tier=gold,team=a) == "job.batch/labelled " ]] || fail "two terms"
[[ $(names workloads -l team=b) == workload.kueue.x-k8s.io/job-other-*" " ]] ||
  fail "workloads -l team=b: $(names workloads -l team=b)"
[[ $(k get job labelled -o jsonpath='{.metadata.annotations.note}') == "free text, kept as written" ]] ||
  fail "annotation: $(k get job labelled -o yaml)"
[[ $(k get job labelled -o jsonpath='{.spec.template.metadata.labels.role}') == worker ]] ||
  fail "template labels: $(k get job labelled -o yaml)"
for _ in $(seq 1 300); do
  [[ $(names pods -l role=worker) == "pod/labelled-0 " ]] && break
  sleep 0.2
done
[[ $(names pods -l role=worker) == "pod/labelled-0 " ]] || fail "pods -l role=worker: $(names pods)"
[[ $(k get pod labelled-0 -o jsonpath='{.metadata.labels.batch\.kubernetes\.io/job-name}') == labelled ]] ||
  fail "the pod's job-name label: $(k get pod labelled-0 -o yaml)"
[[ $(k get pod labelled-0 -o jsonpath='{.metadata.annotations.pod-note}') == hi ]] ||
  fail "the pod's annotation: $(k get pod labelled-0 -o yaml)"
# Its log's times are not known: --since is refused with what is supported.
out=$(refused logs labelled-0 --since=1m)
grep -q 'sinceSeconds (kubectl logs --since): not supported: .*supported: tailLines (--tail)' <<<"$out" ||
  fail "logs --since: $out"

# 2. kubectl label and annotate: add, change, remove.
k label job other team=a --overwrite >"$tmp/out" 2>&1 || fail "label: $(cat "$tmp/out")"
grep -q "^job.batch/other labeled" "$tmp/out" || fail "label said: $(cat "$tmp/out")"
[[ $(names jobs -l team=a) == "job.batch/labelled job.batch/other " ]] || fail "after label: $(names jobs -l team=a)"
k label job labelled tier- >"$tmp/out" 2>&1 || fail "unlabel: $(cat "$tmp/out")"
[[ $(names jobs -l tier=gold) == "" ]] || fail "tier still there: $(names jobs -l tier=gold)"
k annotate job labelled reviewed-by=alice >"$tmp/out" 2>&1 || fail "annotate: $(cat "$tmp/out")"
[[ $(k get job labelled -o jsonpath='{.metadata.annotations.reviewed-by}') == alice ]] ||
  fail "annotate: $(k get job labelled -o yaml)"
[[ $(names workloads -l team=a | wc -w) == 2 ]] || fail "workloads follow: $(names workloads -l team=a)"

# 3. Refusals: a value Kubernetes refuses (422, its words), a label sluice reads (Forbidden to
#    change), another namespace's member.
sed 's/name: labelled/name: bad/; s/tier: gold/tier: "not valid"/' "$tmp/labelled.yaml" >"$tmp/bad.yaml"
out=$(refused create -f "$tmp/bad.yaml")
grep -q 'is invalid: metadata.labels: Invalid value: "not valid": a valid label must be' <<<"$out" ||
  fail "bad label: $out"
out=$(refused label job labelled kueue.x-k8s.io/queue-name=elsewhere --overwrite)
grep -q 'is invalid: metadata.labels: Forbidden: "kueue.x-k8s.io/queue-name"' <<<"$out" ||
  fail "queue label: $out"
out=$(KUBECONFIG=$tmp/bob.kubeconfig refused label job labelled -n default x=y)
grep -q 'forbidden: User "bob"' <<<"$out" || fail "bob labels: $out"

# 4. kubectl apply of a Job with a changed label: configured, and the selector follows.
sed 's/name: labelled/name: applied/; s/team: a, tier: gold/team: c/; s/role: worker/role: applied/' \
  "$tmp/labelled.yaml" >"$tmp/applied.yaml"
k apply -f "$tmp/applied.yaml" >"$tmp/out" 2>&1 || fail "apply: $(cat "$tmp/out")"
sed 's/team: c/team: d/' "$tmp/applied.yaml" >"$tmp/applied-d.yaml"
k apply -f "$tmp/applied-d.yaml" >"$tmp/out" 2>&1 || fail "apply d: $(cat "$tmp/out")"
grep -q "^job.batch/applied configured" "$tmp/out" || fail "apply d said: $(cat "$tmp/out")"
[[ $(names jobs -l team=d) == "job.batch/applied " ]] || fail "apply d: $(names jobs -l team=d)"
k apply -f "$tmp/applied-d.yaml" >"$tmp/out" 2>&1 || fail "apply d again: $(cat "$tmp/out")"
grep -q "^job.batch/applied unchanged" "$tmp/out" || fail "apply d again said: $(cat "$tmp/out")"

# 4b. kubectl replace (PUT) of a Job read back with a label changed: replaced, and the selector
#     follows; the same file again is 409 Conflict (its resourceVersion is stale); a changed
#     template is 422 "field is immutable".
k get job other -o json >"$tmp/other.json" 2>"$tmp/out" || fail "get other: $(cat "$tmp/out")"
edit() {  # edit IN OUT PYTHON: OUT is IN's object `o` after the statement
  python3 -c "import json,sys; o=json.load(open(sys.argv[1])); $3; json.dump(o, open(sys.argv[2], 'w'))" "$1" "$2"
}
edit "$tmp/other.json" "$tmp/other-e.json" 'o["metadata"]["labels"]["team"] = "e"'
k replace -f "$tmp/other-e.json" >"$tmp/out" 2>&1 || fail "replace: $(cat "$tmp/out")"
grep -q "^job.batch/other replaced" "$tmp/out" || fail "replace said: $(cat "$tmp/out")"
[[ $(names jobs -l team=e) == "job.batch/other " ]] || fail "after replace: $(names jobs -l team=e)"
out=$(refused replace -f "$tmp/other-e.json")
grep -q 'Operation cannot be fulfilled on jobs.batch "other": the object has been modified' <<<"$out" ||
  fail "a stale replace: $out"
edit "$tmp/other.json" "$tmp/other-t.json" \
  'o["metadata"].pop("resourceVersion"); o["spec"]["template"]["spec"]["containers"][0]["command"] = ["true"]'
out=$(refused replace -f "$tmp/other-t.json")
grep -q 'spec.template.spec.containers\[0\].command: Invalid value: field is immutable' <<<"$out" ||
  fail "a changed template: $out"
[[ $(names jobs -l team=e) == "job.batch/other " ]] || fail "refused replaces changed it: $(names jobs -l team=e)"

# 4c. kubectl apply --server-side of a Job: created, shown with its spec as applied; the same
#     manifest again changes nothing; a changed label is applied and a dropped one removed; a
#     changed template is 422.
cat >"$tmp/ssa.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata:
  name: ssa
  labels: {kueue.x-k8s.io/queue-name: user-queue, team: s, keep: x}
spec:
  backoffLimit: 4
  template:
    spec:
      containers: [{name: main, command: ["sleep", "300"], resources: {requests: {cpu: 1}}}]
      restartPolicy: Never
YAML
k apply --server-side -f "$tmp/ssa.yaml" >"$tmp/out" 2>&1 || fail "ssa: $(cat "$tmp/out")"
grep -q "^job.batch/ssa serverside-applied" "$tmp/out" || fail "ssa said: $(cat "$tmp/out")"
[[ $(k get job ssa -o jsonpath='{.spec.backoffLimit}') == 4 ]] || fail "ssa spec: $(k get job ssa -o yaml)"
k apply --server-side -f "$tmp/ssa.yaml" >"$tmp/out" 2>&1 || fail "ssa again: $(cat "$tmp/out")"
sed 's/team: s, keep: x/team: t/' "$tmp/ssa.yaml" >"$tmp/ssa-t.yaml"
k apply --server-side -f "$tmp/ssa-t.yaml" >"$tmp/out" 2>&1 || fail "ssa t: $(cat "$tmp/out")"
[[ $(names jobs -l team=t) == "job.batch/ssa " && $(names jobs -l keep=x) == "" ]] ||
  fail "ssa labels: $(k get job ssa -o yaml)"
sed 's/"sleep", "300"/"sleep", "301"/' "$tmp/ssa-t.yaml" >"$tmp/ssa-cmd.yaml"
out=$(refused apply --server-side -f "$tmp/ssa-cmd.yaml")
grep -q 'spec.template.*field is immutable' <<<"$out" || fail "ssa of a changed template: $out"

# 5. A restart of the server keeps them all (they are stored with the jobs), and kubectl apply
#    still finds its annotation.
kill "${pids[0]}" && wait "${pids[0]}" 2>/dev/null || true
"$SLUICE_BIN" serve --config "$tmp/config.yaml" --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
  --heartbeat-ms 200 --cycle-interval-ms 200 >>"$tmp/server.log" 2>&1 &
pids[0]=$!
for _ in $(seq 1 300); do curl -fsS "$SLUICE_SERVER/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
[[ $(names jobs -l team=a) == "job.batch/labelled " ]] || fail "after a restart: $(names jobs -l team=a)"
[[ $(names jobs -l team=e) == "job.batch/other " ]] || fail "a replace after a restart: $(names jobs -l team=e)"
[[ $(names jobs -l tier=gold) == "" ]] || fail "a removed label is back: $(names jobs -l tier=gold)"
[[ $(k get job labelled -o jsonpath='{.metadata.annotations.reviewed-by}') == alice ]] ||
  fail "annotation after a restart: $(k get job labelled -o yaml)"
[[ $(names pods -l role=worker) == "pod/labelled-0 " ]] || fail "pods after a restart: $(names pods)"
k apply -f "$tmp/applied-d.yaml" >"$tmp/out" 2>&1 || fail "apply after a restart: $(cat "$tmp/out")"
grep -q "^job.batch/applied unchanged" "$tmp/out" || fail "apply after a restart said: $(cat "$tmp/out")"
k apply --server-side -f "$tmp/ssa-t.yaml" >"$tmp/out" 2>&1 || fail "ssa after a restart: $(cat "$tmp/out")"
[[ $(k get job ssa -o jsonpath='{.spec.backoffLimit}') == 4 ]] || fail "ssa after a restart: $(k get job ssa -o yaml)"
k delete job labelled other applied ssa >/dev/null 2>&1 || fail "delete"
echo "kubectl_labels: ok"
