#!/usr/bin/env bash
# `sluice up --gpus`: the Cluster that `up` writes for its local nodes comes from the agents'
# own spec parser (agent::parse_fake_spec). A bad fake spec is an error before anything starts
# (`up` used to swallow it and start the server; only its agents then failed); several groups
# become one GPU list, so the agent that reports them is admitted (it used to be refused: the
# Cluster had the first group's GPUs alone).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
: "${SLUICE_BIN:?}"
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f $tmp/up.log ]] && tail -20 "$tmp/up.log" >&2; exit 1; }

# 1. Bad specs: exit status 2 with the parser's message, and no configuration written.
for spec in "fake:" fake:0xH100 fake:8x fake:xH100 "fake:8xH100,,1xL4" fake:8xH100:80Q \
    fake:8xH100:; do
  rc=0
  "$SLUICE_BIN" up --gpus "$spec" --data-dir "$tmp/bad" --listen 127.0.0.1:0 --exit-after 1 \
    >"$tmp/out" 2>"$tmp/err" || rc=$?
  [[ $rc == 2 ]] || fail "--gpus $spec: exit status $rc, want 2: $(cat "$tmp/err")"
  grep -q '^error: --gpus: .*fake GPU' "$tmp/err" || fail "--gpus $spec: $(cat "$tmp/err")"
done
[[ ! -e $tmp/bad/up-config.yaml ]] || fail "a bad spec wrote a configuration"

# 2. Two groups: a list of 3 GPUs in the agent's order, and the agent is admitted with them.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
"$SLUICE_BIN" up --nodes 1 --gpus fake:2xH100,1xL4:24Gi --listen "127.0.0.1:$port" \
  --data-dir "$tmp/data" --heartbeat-ms 100 >"$tmp/up.log" 2>&1 &
pid=$!
wait_ready "$url" 30 "$pid" || fail "server not ready"
grep -q -- '- {count: 2, model: H100, nvlinkDomain: 0}' "$tmp/data/up-config.yaml" &&
  grep -q -- '- {count: 1, model: L4, nvlinkDomain: 1}' "$tmp/data/up-config.yaml" &&
  grep -q 'name: nvidia.com/gpu, nominalQuota: 3}' "$tmp/data/up-config.yaml" ||
  fail "up-config.yaml: $(cat "$tmp/data/up-config.yaml")"
ready=
for _ in $(seq 1 100); do
  curl -fsS "$url/v1/nodes" >"$tmp/nodes.json" 2>/dev/null || true
  ready=$(python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["nodes"][0]; print(n["ready"], n["gpu_count"])' "$tmp/nodes.json" 2>/dev/null || true)
  [[ $ready == "True 3" ]] && break
  sleep 0.1
done
[[ $ready == "True 3" ]] || fail "local-0 not ready with 3 GPUs: $ready"
echo "up_gpus: ok"
