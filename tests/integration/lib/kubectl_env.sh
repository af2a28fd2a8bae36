# Sourced by the kubectl_*.sh tests: `sluice serve` with tokens (alice in default, bob in
# team-b), one agent (n0, 4 fake H100s), a TLS terminator in front (kubectl sends tokens only
# over https), a kubeconfig per token, and the helpers k, refused and fail. $here is the
# test's directory; everything started is stopped by its PID on exit. A test may set, before
# sourcing: KUBE_CLIENT (the name of a client other than kubectl that it drives),
# kube_queues=0 (no Kueue objects in the configuration: the test creates them through the API)
# and agent_extra=(flags) for the agent.
: "${SLUICE_BIN:?}"
[[ -n ${KUBE_CLIENT:-} ]] || command -v kubectl >/dev/null || { echo "kubectl missing: skip"; exit 77; }
command -v openssl >/dev/null || { echo "openssl missing: skip"; exit 77; }
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
source "$(dirname "${BASH_SOURCE[0]}")/ready.sh"  # free_port
tmp=$(mktemp -d)
pids=()
agent_extra=("${agent_extra[@]+"${agent_extra[@]}"}")
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in server agent proxy; do echo "--- $f log" >&2; tail -30 "$tmp/$f.log" >&2 || true; done
  exit 1
}
port=$(free_port)
tls_port=$(free_port)
export SLUICE_SERVER=http://127.0.0.1:$port

cat >"$tmp/config.yaml" <<'YAML'
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: kube}
spec:
  nodeGroups:
  - {namePrefix: n, count: 1, cpu: 16, memory: 64Gi, gpus: {count: 4, model: H100}}
YAML
[[ ${kube_queues:-1} == 0 ]] || cat >>"$tmp/config.yaml" <<'YAML'
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  sluice: {runImagesOnHost: true}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 9}
      - {name: memory, nominalQuota: 36Gi}
      - {name: nvidia.com/gpu, nominalQuota: 4}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: user-queue, namespace: default}
spec: {clusterQueue: cluster-queue}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: user-queue, namespace: team-b}
spec: {clusterQueue: cluster-queue}
YAML
cat >>"$tmp/config.yaml" <<'YAML'
---
apiVersion: sluice.dev/v1alpha1
kind: ServerAuth
metadata: {name: tokens}
spec:
  joinToken: join-token-for-kubectl-0123
  tokens:
  - {name: alice, token: alice-token-0123456789, role: member, namespaces: [default]}
  - {name: bob, token: bob-token-012345678901, role: member, namespaces: [team-b]}
  - {name: root, token: root-token-0123456789a, role: admin}
YAML

"$SLUICE_BIN" serve --config "$tmp/config.yaml" --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
  --heartbeat-ms 200 --cycle-interval-ms 200 >"$tmp/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do curl -fsS "$SLUICE_SERVER/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "$SLUICE_SERVER/readyz" >/dev/null || fail "server not ready"
SLUICE_JOIN_TOKEN=join-token-for-kubectl-0123 "$SLUICE_BIN" agent --server "$SLUICE_SERVER" \
  --name n0 --gpus fake:4xH100 --state-dir "$tmp/agent" --heartbeat-ms 200 "${agent_extra[@]}" \
  >"$tmp/agent.log" 2>&1 &
pids+=($!)
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 \
  -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" >/dev/null 2>&1 || fail "openssl"
python3 "$here/tls_proxy.py" "$tmp/cert.pem" "$tmp/key.pem" "$tls_port" "$port" >"$tmp/proxy.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do grep -q listening "$tmp/proxy.log" && break; sleep 0.1; done

# The kubeconfigs, one per token (the file is the owner's only: it holds the token).
"$SLUICE_BIN" kubeconfig --server "https://127.0.0.1:$tls_port" --certificate-authority \
  "$tmp/cert.pem" --token alice-token-0123456789 -n default -o "$tmp/alice.kubeconfig" 2>/dev/null ||
  fail "sluice kubeconfig"
[[ $(stat -c %a "$tmp/alice.kubeconfig") == 600 ]] || fail "kubeconfig mode $(stat -c %a "$tmp/alice.kubeconfig")"
echo bob-token-012345678901 >"$tmp/bob.token"
"$SLUICE_BIN" kubeconfig --server "https://127.0.0.1:$tls_port" --certificate-authority \
  "$tmp/cert.pem" --token-file "$tmp/bob.token" -n team-b >"$tmp/bob.kubeconfig" 2>/dev/null
export KUBECONFIG=$tmp/alice.kubeconfig
"$SLUICE_BIN" kubeconfig --server "https://127.0.0.1:$tls_port" --certificate-authority \
  "$tmp/cert.pem" --token root-token-0123456789a -n default -o "$tmp/root.kubeconfig" 2>/dev/null
k() { kubectl --request-timeout=30s "$@"; }
refused() { k "$@" 2>&1 && echo "(it succeeded)" || true; }  # a call that must fail: its words
