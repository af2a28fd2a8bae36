#!/usr/bin/env bash
# kubectl writes Kueue's configuration and applies Jobs on sluice (issue 36; docs/kubernetes.md,
# "Changing Kueue's configuration"): `sluice serve` starts with nodes and tokens only; the real
# kubectl, with an admin's kubeconfig from `sluice kubeconfig`, applies Kueue's published
# quick-start setup (single-clusterqueue-setup.yaml) and creates Kueue's sample Job as
# published; the Workload is Admitted and the Job Complete. kubectl apply of a Job: again
# unchanged, spec.suspend from the file, a changed template refused, kubectl edit. Then: the
# same setup applied again is unchanged; a changed quota is applied and read back; an invalid
# one is 422 with nothing changed; a dry run changes nothing; kubectl edit; a stale update is a
# Conflict; server-side apply by two field managers, a conflict and --force-conflicts; a member
# is Forbidden; the changes survive a restart; a LocalQueue with a job in it is not deleted (as
# `sluice config apply` refuses it); a flavor in use is, with the warning that its ClusterQueue
# is inactive; delete.
# The sample Job names an image (agnhost) and gives it only args: it runs in podman, on a
# stand-in image of that name built here from the host's sh (this machine reaches no registry),
# whose entrypoint prints its arguments as agnhost's entrypoint-tester does. Where podman
# cannot run a container, that part is skipped and said so.
set -euo pipefail
command -v kubectl >/dev/null || { echo "kubectl missing: skip"; exit 77; }

# The stand-in image, on podman's private storage (the host's images are untouched).
pod=$(mktemp -d)
runtime=
if command -v podman >/dev/null; then
  mkdir -p "$pod/rootfs"
  for f in /bin/sh /usr/bin/echo; do
    for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do
      mkdir -p "$pod/rootfs$(dirname "$lib")" && cp -L "$lib" "$pod/rootfs$lib"
    done
    mkdir -p "$pod/rootfs$(dirname "$f")" && cp -L "$f" "$pod/rootfs$f"
  done
  printf '#!/bin/sh\n[ "$1" = entrypoint-tester ] && shift\necho "$@"\n' >"$pod/rootfs/agnhost"
  chmod +x "$pod/rootfs/agnhost"
  tar -C "$pod/rootfs" -cf "$pod/rootfs.tar" .
  store="--root $pod/storage --runroot $pod/run --storage-driver vfs"
  printf '[containers]\ndefault_ulimits = []\n' >"$pod/containers.conf"
  image=registry.k8s.io/e2e-test-images/agnhost:2.53
  # shellcheck disable=SC2086
  if podman $store import --change 'ENTRYPOINT ["/agnhost"]' "$pod/rootfs.tar" "$image" \
      >/dev/null 2>&1; then
    for rt in "podman $store" "podman $store --runtime runc" \
        "env CONTAINERS_CONF=$pod/containers.conf podman $store --runtime runc"; do
      # shellcheck disable=SC2086
      if [[ $($rt run --rm --network host "$image" entrypoint-tester a b 2>/dev/null) == "a b" ]]; then
        runtime=$rt
        break
      fi
    done
  fi
fi
kube_queues=0
agent_extra=()
[[ -z $runtime ]] || agent_extra=(--container-runtime "$runtime" --pods-as-agent)
source "$(dirname "$0")/lib/kubectl_env.sh"
trap 'cleanup; podman unshare rm -rf "$pod" 2>/dev/null || rm -rf "$pod" 2>/dev/null || true' EXIT
export KUBECONFIG=$tmp/root.kubeconfig
cq_yaml() { k get clusterqueue cluster-queue -o yaml >"$tmp/cq.yaml" 2>&1; cat "$tmp/cq.yaml"; }
quota() { k get clusterqueue cluster-queue -o jsonpath='{.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota}'; }

# 1. Kueue's single ClusterQueue setup, as published.
cat >"$tmp/setup.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: "default-flavor"
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "cluster-queue"
spec:
  namespaceSelector: {} # match all.
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 9
      - name: "memory"
        nominalQuota: 36Gi
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  namespace: "default"
  name: "user-queue"
spec:
  clusterQueue: "cluster-queue"

YAML
k apply -f "$tmp/setup.yaml" >"$tmp/out" 2>&1 || fail "apply setup: $(cat "$tmp/out")"
for o in resourceflavor.kueue.x-k8s.io/default-flavor clusterqueue.kueue.x-k8s.io/cluster-queue \
    localqueue.kueue.x-k8s.io/user-queue; do
  grep -q "^$o created" "$tmp/out" || fail "apply setup said: $(cat "$tmp/out")"
done
[[ $(quota) == 9 ]] || fail "quota as written: $(cq_yaml)"
[[ $(k get clusterqueue cluster-queue -o jsonpath='{.spec.resourceGroups[0].flavors[0].resources[1].nominalQuota}') == 36Gi ]] ||
  fail "memory quota: $(cq_yaml)"
grep -q "kubectl.kubernetes.io/last-applied-configuration" <<<"$(cq_yaml)" ||
  fail "no last-applied-configuration: $(cat "$tmp/cq.yaml")"
k get localqueues >"$tmp/out" 2>&1 || fail "get localqueues: $(cat "$tmp/out")"
grep -q "^user-queue *cluster-queue" "$tmp/out" || fail "localqueues: $(cat "$tmp/out")"
# The same file again: nothing to do.
k apply -f "$tmp/setup.yaml" >"$tmp/out" 2>&1 || fail "apply again: $(cat "$tmp/out")"
[[ $(grep -c " unchanged$" "$tmp/out") == 3 ]] || fail "apply again said: $(cat "$tmp/out")"

# 2. Kueue's sample Job as published: Admitted, then Complete.
if [[ -n $runtime ]]; then
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
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: ["entrypoint-tester", "hello", "world"]
        resources:
          requests:
            cpu: 1
            memory: "200Mi"
      restartPolicy: Never
YAML
  k create -f "$tmp/sample-job.yaml" >"$tmp/out" 2>&1 || fail "create: $(cat "$tmp/out")"
  job=$(sed -n 's|^job.batch/\(sample-job-[a-z0-9]*\) created$|\1|p' "$tmp/out")
  [[ -n $job ]] || fail "create said: $(cat "$tmp/out")"
  wl=$(k get workloads -o jsonpath='{.items[0].metadata.name}')
  k wait --for=condition=Admitted "workload/$wl" --timeout=120s >"$tmp/out" 2>&1 ||
    fail "not admitted: $(cat "$tmp/out"; k get workload "$wl" -o yaml)"
  k wait --for=condition=Complete "job/$job" --timeout=120s >"$tmp/out" 2>&1 ||
    fail "not complete: $(cat "$tmp/out"; k get job "$job" -o yaml)"
  [[ $(k logs "$job-0") == "hello world" ]] || fail "logs: $(k logs "$job-0" 2>&1)"
else
  echo "podman cannot run a container here: the sample Job's part is skipped"
fi

# 3. kubectl apply of a Job: the same file again is unchanged; spec.suspend in the file holds
#    and releases; a changed template is 422, "field is immutable"; kubectl edit suspends.
cat >"$tmp/job.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: applied, namespace: default, labels: {kueue.x-k8s.io/queue-name: user-queue}}
spec:
  suspend: false
  template:
    spec:
      containers: [{name: main, command: ["sleep", "300"], resources: {requests: {cpu: 1}}}]
      restartPolicy: Never
YAML
held() { k get job applied -o jsonpath='{.status.conditions[?(@.type=="Suspended")].message}'; }
k apply -f "$tmp/job.yaml" >"$tmp/out" 2>&1 || fail "apply job: $(cat "$tmp/out")"
grep -q "^job.batch/applied created" "$tmp/out" || fail "apply job said: $(cat "$tmp/out")"
k apply -f "$tmp/job.yaml" >"$tmp/out" 2>&1 || fail "apply job again: $(cat "$tmp/out")"
grep -q "^job.batch/applied unchanged" "$tmp/out" || fail "apply job again said: $(cat "$tmp/out")"
sed 's/suspend: false/suspend: true/' "$tmp/job.yaml" >"$tmp/job-suspended.yaml"
k apply -f "$tmp/job-suspended.yaml" >"$tmp/out" 2>&1 || fail "apply suspend: $(cat "$tmp/out")"
grep -q "^job.batch/applied configured" "$tmp/out" || fail "apply suspend said: $(cat "$tmp/out")"
[[ $(held) == "held by a user" ]] || fail "not held: $(k get job applied -o yaml)"
k apply -f "$tmp/job.yaml" >"$tmp/out" 2>&1 || fail "apply resume: $(cat "$tmp/out")"
[[ $(held) != "held by a user" ]] || fail "still held: $(k get job applied -o yaml)"
sed 's/"sleep", "300"/"sleep", "301"/' "$tmp/job.yaml" >"$tmp/job-changed.yaml"
out=$(refused apply -f "$tmp/job-changed.yaml")
grep -q 'spec.template: .*field is immutable' <<<"$out" || fail "template change: $out"
KUBE_EDITOR="sed -i s/suspend:\ false/suspend:\ true/" k edit job applied >"$tmp/out" 2>&1 ||
  fail "edit job: $(cat "$tmp/out")"
[[ $(held) == "held by a user" ]] || fail "edit did not suspend: $(cat "$tmp/out"; k get job applied -o yaml)"
k delete job applied >/dev/null 2>&1 || fail "delete applied"

# 4. A changed quota, applied and read back with a new resourceVersion; a dry run first.
rv=$(k get clusterqueue cluster-queue -o jsonpath='{.metadata.resourceVersion}')
sed 's/nominalQuota: 9$/nominalQuota: 12/' "$tmp/setup.yaml" >"$tmp/more.yaml"
k apply --dry-run=server -f "$tmp/more.yaml" >"$tmp/out" 2>&1 || fail "dry run: $(cat "$tmp/out")"
grep -q "cluster-queue configured (server dry run)" "$tmp/out" || fail "dry run said: $(cat "$tmp/out")"
[[ $(quota) == 9 ]] || fail "a dry run changed the quota: $(cq_yaml)"
k apply -f "$tmp/more.yaml" >"$tmp/out" 2>&1 || fail "apply more: $(cat "$tmp/out")"
grep -q "^clusterqueue.kueue.x-k8s.io/cluster-queue configured" "$tmp/out" ||
  fail "apply more said: $(cat "$tmp/out")"
grep -q "nominalQuota: 12" <<<"$(cq_yaml)" || fail "quota not changed: $(cat "$tmp/cq.yaml")"
[[ $(k get clusterqueue cluster-queue -o jsonpath='{.metadata.resourceVersion}') != "$rv" ]] ||
  fail "resourceVersion unchanged: $(cat "$tmp/cq.yaml")"
# An invalid quota: 422 with the loader's words, nothing changed.
sed 's/nominalQuota: 9$/nominalQuota: lots/' "$tmp/setup.yaml" >"$tmp/bad.yaml"
out=$(refused apply -f "$tmp/bad.yaml")
grep -q '"cluster-queue" is invalid: .*nominalQuota' <<<"$out" ||
  fail "invalid quota: $out"
[[ $(quota) == 12 ]] || fail "an invalid apply changed the quota: $(cq_yaml)"

# 5. kubectl edit (a JSON merge patch), and a stale update (kubectl replace): Conflict.
KUBE_EDITOR="sed -i s/nominalQuota:\ 12/nominalQuota:\ 10/" k edit clusterqueue cluster-queue \
  >"$tmp/out" 2>&1 || fail "edit: $(cat "$tmp/out")"
grep -q "cluster-queue edited" "$tmp/out" || fail "edit said: $(cat "$tmp/out")"
[[ $(quota) == 10 ]] || fail "edit: $(cq_yaml)"
cq_yaml >/dev/null
sed "s/nominalQuota: 10$/nominalQuota: 11/" "$tmp/cq.yaml" >"$tmp/stale.yaml"
k replace -f "$tmp/stale.yaml" >"$tmp/out" 2>&1 || fail "replace: $(cat "$tmp/out")"
[[ $(quota) == 11 ]] || fail "replace: $(cq_yaml)"
out=$(refused replace -f "$tmp/stale.yaml")
grep -q 'Conflict\|the object has been modified' <<<"$out" || fail "stale replace: $out"

# 6. Server-side apply: two field managers, a conflict, and force. A WorkloadPriorityClass too.
cat >"$tmp/ssa.yaml" <<'YAML'
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cluster-queue}
spec: {queueingStrategy: StrictFIFO}
YAML
strategy() { k get clusterqueue cluster-queue -o jsonpath='{.spec.queueingStrategy}'; }
k apply --server-side --field-manager=tool-a -f "$tmp/ssa.yaml" >"$tmp/out" 2>&1 ||
  fail "server-side apply: $(cat "$tmp/out")"
grep -q "cluster-queue serverside-applied" "$tmp/out" || fail "server-side apply said: $(cat "$tmp/out")"
[[ $(strategy) == StrictFIFO ]] || fail "strategy: $(cq_yaml)"
[[ $(k get clusterqueue cluster-queue -o jsonpath='{.metadata.managedFields[0].manager}') == tool-a ]] ||
  fail "managedFields: $(cq_yaml)"
[[ $(quota) == 11 ]] || fail "the apply of one field changed another: $(cq_yaml)"
sed 's/StrictFIFO/BestEffortFIFO/' "$tmp/ssa.yaml" >"$tmp/ssa-b.yaml"
out=$(refused apply --server-side --field-manager=tool-b -f "$tmp/ssa-b.yaml")
grep -q 'conflict with "tool-a".*\.spec\.queueingStrategy' <<<"$out" || fail "no conflict: $out"
[[ $(strategy) == StrictFIFO ]] || fail "a conflict changed the strategy: $(cq_yaml)"
k apply --server-side --field-manager=tool-b --force-conflicts -f "$tmp/ssa-b.yaml" >"$tmp/out" 2>&1 ||
  fail "forced apply: $(cat "$tmp/out")"
[[ $(strategy) == BestEffortFIFO ]] || fail "forced: $(cq_yaml)"
printf 'apiVersion: kueue.x-k8s.io/v1beta1\nkind: WorkloadPriorityClass\nmetadata: {name: high}\nvalue: 1000\n' \
  >"$tmp/wpc.yaml"
k apply --server-side -f "$tmp/wpc.yaml" >"$tmp/out" 2>&1 || fail "apply wpc: $(cat "$tmp/out")"
[[ $(k get workloadpriorityclass high -o jsonpath='{.value}') == 1000 ]] ||
  fail "wpc: $(k get workloadpriorityclass high -o yaml 2>&1)"
k delete workloadpriorityclass high >/dev/null 2>&1 || fail "delete wpc"

# 7. A member may read Kueue's objects, not change them.
KUBECONFIG=$tmp/alice.kubeconfig k get clusterqueues >"$tmp/out" 2>&1 || fail "alice reads: $(cat "$tmp/out")"
out=$(KUBECONFIG=$tmp/alice.kubeconfig refused apply -f "$tmp/setup.yaml")
grep -q 'forbidden: User "alice" cannot patch resource "clusterqueues"' <<<"$out" || fail "alice applies: $out"
out=$(KUBECONFIG=$tmp/alice.kubeconfig refused delete localqueue user-queue)
grep -q 'forbidden: User "alice" cannot delete resource "localqueues"' <<<"$out" || fail "alice deletes: $out"
[[ $(quota) == 11 ]] || fail "alice changed the quota: $(cq_yaml)"

# 8. The changes are the server's stored configuration: restarted without --config files, it
#    reads them back (tokens included).
kill "${pids[0]}" && wait "${pids[0]}" 2>/dev/null || true
"$SLUICE_BIN" serve --listen "127.0.0.1:$port" --data-dir "$tmp/data" --heartbeat-ms 200 \
  --cycle-interval-ms 200 >>"$tmp/server.log" 2>&1 &
pids[0]=$!
for _ in $(seq 1 300); do curl -fsS "$SLUICE_SERVER/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
[[ $(quota) == 11 && $(strategy) == BestEffortFIFO ]] || fail "after a restart: $(cq_yaml)"
k get localqueue user-queue >/dev/null 2>&1 || fail "user-queue lost in a restart"

# 9. Delete, what refers first. What the configuration still needs stays, as `sluice config
#    apply` keeps it: a LocalQueue that a waiting job is in, a flavor that a ClusterQueue names.
cat >"$tmp/held.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: held, namespace: default, labels: {kueue.x-k8s.io/queue-name: user-queue}}
spec:
  template:
    spec:
      containers: [{name: main, command: ["sleep", "300"], resources: {requests: {cpu: 1}}}]
      restartPolicy: Never
YAML
k create -f "$tmp/held.yaml" >/dev/null 2>&1 || fail "create held"
out=$(refused delete localqueue user-queue)
grep -q 'cannot carry the current jobs' <<<"$out" || fail "delete with a job in it: $out"
k get localqueue user-queue >/dev/null 2>&1 || fail "user-queue deleted with a job in it"
# A flavor in use may go, as in Kueue: its ClusterQueue is inactive, and the warning says so.
k delete resourceflavor default-flavor >"$tmp/out" 2>&1 || fail "delete a flavor: $(cat "$tmp/out")"
grep -q 'Warning: ClusterQueue "cluster-queue": spec.resourceGroups\[0\].flavors\[0\].name: .*is inactive' \
  "$tmp/out" || fail "delete a flavor in use said: $(cat "$tmp/out")"
k delete job --all >/dev/null 2>&1 || fail "delete jobs"
for o in localqueue/user-queue clusterqueue/cluster-queue; do
  k delete "$o" >"$tmp/out" 2>&1 || fail "delete $o: $(cat "$tmp/out")"
  grep -q "deleted" "$tmp/out" || fail "delete $o said: $(cat "$tmp/out")"
done
k get clusterqueues,localqueues,resourceflavors -A >"$tmp/out" 2>&1 || fail "get: $(cat "$tmp/out")"
grep -q "No resources found" "$tmp/out" || fail "left: $(cat "$tmp/out")"
echo "kubectl_apply: ok"
