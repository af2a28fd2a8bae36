#!/usr/bin/env bash
# Pods with an image run in a container (docs/workloads.md, "Images"): a real `sluice serve`
# and `sluice agent --container-runtime` with podman on private storage (its own --root,
# --runroot and vfs driver under a temp dir: the host's images and containers are untouched),
# and an image built here from the host's own sh and coreutils (no registry needed).
#   1. A Job with the image runs in it (a marker file only the image has), in its work dir,
#      with sluice's environment; `args` alone follow the image's (empty) entrypoint.
#   2. Without a container runtime anywhere, a job with an image is refused at submission with
#      the reason, unless its ClusterQueue sets spec.sluice.runImagesOnHost (then it runs on the
#      node), where a job of `args` alone is refused (there is no entrypoint on the node).
# Skipped (77) where podman is missing or cannot run a container on this machine.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
bin=${SLUICE_BIN:?}
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp" 2>/dev/null || true
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$tmp"/*.log; do echo "== $f" >&2; tail -15 "$f" >&2; done; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
command -v podman >/dev/null || skip "podman is not installed (Debian: apt install podman)"

# An image from the host's binaries, on private storage.
mkdir -p "$tmp/rootfs"
for f in /bin/sh /usr/bin/env /usr/bin/cat /usr/bin/test /usr/bin/pwd; do
  [[ -e $f ]] || continue
  for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do
    mkdir -p "$tmp/rootfs$(dirname "$lib")" && cp -L "$lib" "$tmp/rootfs$lib"
  done
  mkdir -p "$tmp/rootfs$(dirname "$f")" && cp -L "$f" "$tmp/rootfs$f"
done
touch "$tmp/rootfs/sluice-image-marker"
tar -C "$tmp/rootfs" -cf "$tmp/rootfs.tar" .
store="--root $tmp/storage --runroot $tmp/run --storage-driver vfs"
# shellcheck disable=SC2086
podman $store import "$tmp/rootfs.tar" localhost/sluice-test:1 >/dev/null 2>&1 \
  || skip "podman cannot import an image here"
# Plain podman, else runc (crun refuses hybrid cgroup machines), else also without the default
# ulimits (a sandboxed machine may refuse to raise them): the first that runs is the agent's.
printf '[containers]\ndefault_ulimits = []\n' >"$tmp/containers.conf"
runtime=
for rt in "podman $store" "podman $store --runtime runc" \
    "env CONTAINERS_CONF=$tmp/containers.conf podman $store --runtime runc"; do
  # shellcheck disable=SC2086
  if $rt run --rm --network host localhost/sluice-test:1 /usr/bin/test -f /sluice-image-marker \
      >/dev/null 2>&1; then
    runtime=$rt
    break
  fi
done
[[ -n $runtime ]] || skip "podman cannot run a container on this machine (crun and runc both refused)"

config() {  # $1: runImagesOnHost
  cat <<YAML
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  nodes: [{name: n1, cpu: 8, memory: 16Gi, gpus: {count: 2, model: H100, memory: 80Gi}}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: any}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors: [{name: any, resources: [{name: cpu, nominalQuota: 8}, {name: memory, nominalQuota: 16Gi}, {name: nvidia.com/gpu, nominalQuota: 2}]}]
  sluice: {runImagesOnHost: $1}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: cq}
YAML
}
job() {  # $1 name, $2: the container's command lines (YAML)
  cat <<YAML
---
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: default, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  template:
    spec:
      containers:
      - name: main
        image: localhost/sluice-test:1
$2
        resources: {requests: {cpu: "1", nvidia.com/gpu: 1}}
YAML
}
start() {  # $1: label, $2: runImagesOnHost, $3...: extra agent flags
  local label=$1 host=$2
  shift 2
  port=$(free_port)
  url=http://127.0.0.1:$port
  config "$host" >"$tmp/$label.yaml"
  "$bin" serve --config "$tmp/$label.yaml" --listen "127.0.0.1:$port" --data-dir "$tmp/$label-data" \
    --heartbeat-ms 200 --cycle-interval-ms 200 >"$tmp/$label-serve.log" 2>&1 &
  pids+=($!)
  wait_ready "$url" 10 || fail "server not ready"
  "$bin" agent --server "$url" --name n1 --gpus fake:2xH100 --state-dir "$tmp/$label-agent" \
    --heartbeat-ms 200 --pods-as-agent "$@" >"$tmp/$label-agent.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do
    [[ $(curl -fsS "$url/v1/nodes" 2>/dev/null | python3 -c 'import json,sys; print(sum(n["ready"] for n in json.load(sys.stdin)["nodes"]))' 2>/dev/null) == 1 ]] && return 0
    sleep 0.1
  done
  fail "$label: node not ready"
}
wait_state() {  # $1 id -> prints the final state
  local st=
  for _ in $(seq 1 600); do
    st=$("$bin" jobs --server "$url" --json | python3 -c "import json,sys; print(next(j['state'] for j in json.load(sys.stdin)['jobs'] if j['id']==$1))")
    [[ $st == succeeded || $st == failed ]] && break
    sleep 0.1
  done
  echo "$st"
}
submit_id() { "$bin" submit --server "$url" "$1" | sed -n 's/^submitted job \([0-9]*\).*/\1/p'; }

# 1. In the container.
start rt false --container-runtime "$runtime"
job in-image '        command: [/bin/sh, -c, "test -f /sluice-image-marker && echo in-image; echo cwd=$(pwd); echo job=$SLUICE_JOB_ID"]' >"$tmp/in.yaml"
job args-only '        args: [/bin/sh, -c, "echo args-ok"]' >"$tmp/args.yaml"
id=$(submit_id "$tmp/in.yaml") || fail "submit in-image"
[[ $(wait_state "$id") == succeeded ]] || fail "in-image did not succeed"
out=$("$bin" logs --server "$url" "$id")
grep -q "^in-image$" <<<"$out" || fail "not in the image: $out"
grep -q "^cwd=$tmp/rt-agent/" <<<"$out" || fail "not in its work dir: $out"
grep -q "^job=$id$" <<<"$out" || fail "no SLUICE_JOB_ID: $out"
id=$(submit_id "$tmp/args.yaml") || fail "submit args-only"
[[ $(wait_state "$id") == succeeded ]] || fail "args-only did not succeed"
"$bin" logs --server "$url" "$id" | grep -q "^args-ok$" || fail "args-only: no output"
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
pids=()

# 2. No runtime: refused, unless the queue lets it run on the node.
start none false
if "$bin" submit --server "$url" "$tmp/in.yaml" >"$tmp/refused.out" 2>&1; then fail "an image job was accepted with no runtime"; fi
grep -q "no node runs containers" "$tmp/refused.out" || fail "refusal without the reason: $(cat "$tmp/refused.out")"
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
pids=()
start host true
id=$(submit_id "$tmp/in.yaml") || fail "submit on host"
[[ $(wait_state "$id") == succeeded ]] || fail "on-host job did not succeed"
if "$bin" logs --server "$url" "$id" | grep -q "^in-image$"; then fail "ran in an image without a runtime"; fi
# Only `args`, which follow an entrypoint the node does not have: refused, not run as a command.
if "$bin" submit --server "$url" "$tmp/args.yaml" >"$tmp/args.out" 2>&1; then fail "args-only was accepted on the host"; fi
grep -q "only .args." "$tmp/args.out" || fail "args-only refusal without the reason: $(cat "$tmp/args.out")"
echo "containers: ok (runtime: $runtime)"
