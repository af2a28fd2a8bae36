#!/usr/bin/env bash
# Debian's python3-kubernetes against `sluice serve` (issue 36; docs/kubernetes.md): the
# server, an agent and the TLS terminator of the kubectl tests (lib/kubectl_env.sh), then
# kube_python.py with alice's and bob's kubeconfigs: nodes, namespaces, a typed V1Job created
# and watched to Complete, its pods and a log, watches of pods and nodes, Kueue's kinds and Workloads, label selectors,
# limit/continue, delete (404 after), Forbidden for another namespace's member. Skipped (77)
# where no python3 has the kubernetes module.
set -euo pipefail
py=
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import kubernetes' 2>/dev/null; then py=$p; break; fi
done
[[ -n $py ]] || { echo "python3-kubernetes missing: skip"; exit 77; }
KUBE_CLIENT=python
source "$(dirname "$0")/lib/kubectl_env.sh"
for _ in $(seq 1 300); do
  curl -fsS --cacert "$tmp/cert.pem" "https://127.0.0.1:$tls_port/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
"$py" "$here/kube_python.py" "$tmp/alice.kubeconfig" "$tmp/bob.kubeconfig" >"$tmp/py.out" 2>&1 ||
  fail "kube_python.py: $(cat "$tmp/py.out")"
cat "$tmp/py.out"
