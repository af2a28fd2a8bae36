#!/usr/bin/env bash
# The shipped local provisioner (examples/autoscale/local-agents.sh with local-pool.yaml;
# docs/autoscaling.md) as its comment says to run it: `sluice serve` from the checkout's root,
# a fixed node's agent, a gang of two 2-GPU pods: two pool nodes start as local agents, run
# it, and are stopped once idle (the pool's scaleDownAfter, 30 s). Waits are bounded loops.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
bin=${SLUICE_BIN:?}
src=${SLUICE_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
command -v setsid >/dev/null || { echo "setsid missing: skip"; exit 77; }
tmp=$(mktemp -d)
chmod 711 "$tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  for f in "$tmp"/pool/local/*.pid; do [[ -f $f ]] && kill "$(cat "$f")" 2>/dev/null || true; done
  rm -rf "$tmp" 2>/dev/null || true
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$tmp"/*.log "$tmp"/pool/local/*.log; do [[ -f $f ]] && { echo "== $f" >&2; tail -20 "$f" >&2; }; done
  exit 1
}
port=$(free_port)
url=http://127.0.0.1:$port
cd "$src"
SLUICE_BIN=$bin POOL_STATE_DIR=$tmp/pool "$bin" serve --config examples/autoscale/local-pool.yaml \
  --listen "127.0.0.1:$port" --data-dir "$tmp/data" --cycle-interval-ms 200 >"$tmp/serve.log" 2>&1 &
pids+=($!)
wait_ready "$url" 20 "${pids[0]}" || fail "server not ready"
"$bin" agent --server "$url" --name local-0 --gpus fake:1xH100 --state-dir "$tmp/local-0" \
  --pods-as-agent >"$tmp/agent.log" 2>&1 &
pids+=($!)
id=$("$bin" run --server "$url" --gpus 2 --gang 2 --cpu 1 -- sleep 1 | sed -n 's/^submitted job \([0-9]*\).*/\1/p')
[[ -n $id ]] || fail "submit"
pool_nodes() {  # $1 state: how many of the pool's nodes are in it
  curl -fsS "$url/v1/pools" | python3 -c "import json,sys; print(json.load(sys.stdin)['pools'][0]['nodes']['$1'])"
}
state() { curl -fsS "$url/v1/jobs/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
st=
for _ in $(seq 1 600); do st=$(state); [[ $st == succeeded || $st == failed ]] && break; sleep 0.1; done
[[ $st == succeeded ]] || fail "the gang: $st"
ls "$tmp"/pool/local/pool-0.pid "$tmp"/pool/local/pool-1.pid >/dev/null 2>&1 || fail "no local agents started"
grep -q "provisioner create local pool-1: ok" "$tmp/serve.log" || fail "no create call"
gone=
for _ in $(seq 1 900); do
  if [[ $(pool_nodes ready) == 0 && $(pool_nodes deleting) == 0 ]] &&
    ! ls "$tmp"/pool/local/*.pid >/dev/null 2>&1; then gone=1; break; fi
  sleep 0.1
done
[[ -n $gone ]] || fail "the idle pool nodes were not stopped"
grep -q "provisioner delete local pool-0: ok" "$tmp/serve.log" || fail "no delete call"
echo "ok: autoscale_example"
