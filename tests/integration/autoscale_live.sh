#!/usr/bin/env bash
# The live autoscaler end to end (issue 37; docs/autoscaling.md): a real `sluice serve` with a
# fixed one-GPU node and a spot NodePool of two-GPU nodes whose provisioner is a shell script
# that starts and stops real `sluice agent` processes (fake GPUs) and records its calls.
#  1. scale-up: a gang of two pods, each a whole pool node, gets exactly two nodes and runs;
#  2. scale-down: once idle past scaleDownAfter, both nodes are deleted (their agents stop);
#  3. a spot reclaim (`sluice nodes reclaim`): the checkpointing job on the node gets SIGTERM,
#     saves its progress, goes back to its queue (not a failure) and finishes on a new node
#     from where it stopped; the reclaimed node is deleted;
#  4. a failing provisioner (exit 1), then a hanging one (killed at its timeout): every call an
#     event, a metric and a line in /v1/pools, while jobs on the fixed node run as before; once
#     the provisioner works again the waiting job gets its node.
# Every wait is a bounded loop on a condition, never a duration asserted.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"      # wait_ready
source "$(dirname "${BASH_SOURCE[0]}")/lib/autoscale.sh"  # json_get, wait_for, metric, ...
bin=${SLUICE_BIN:?}
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
tmp=$(mktemp -d)
chmod 711 "$tmp"
cd "$tmp"
mkdir -p "$tmp/agents" "$tmp/work"
trap cleanup EXIT  # lib/autoscale.sh
port=$(free_port)
url=http://127.0.0.1:$port

# The provisioner: `provision.sh create|delete POOL NODE`, the shape in SLUICE_NODE_*. It starts
# the node's agent in the background (its output to a file of its own, not to the call's) and
# stops it on delete; `fail` and `hang` files make it fail or hang, as a cloud API might.
cat >"$tmp/provision.sh" <<'SH'
#!/usr/bin/env bash
set -u
op=$1 pool=$2 node=$3
[[ $SLUICE_SERVER == "$PROV_URL" ]] || { echo "SLUICE_SERVER=$SLUICE_SERVER" >&2; exit 3; }
echo "$op $pool $node reason=$SLUICE_REASON gpus=$SLUICE_NODE_GPUS model=$SLUICE_NODE_GPU_MODEL type=$SLUICE_CAPACITY_TYPE" >>"$PROV_DIR/calls.log"
if [[ -e $PROV_DIR/fail ]]; then echo "no capacity in this zone" >&2; exit 1; fi
if [[ -e $PROV_DIR/hang && $op == create ]]; then echo "hanging $node" >>"$PROV_DIR/calls.log"; sleep 600; fi
pidfile=$PROV_DIR/agents/$node.pid
case $op in
  create)
    [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null && exit 0  # idempotent
    "$PROV_BIN" agent --server "$SLUICE_SERVER" --name "$node" \
      --gpus "fake:${SLUICE_NODE_GPUS}x$SLUICE_NODE_GPU_MODEL" --state-dir "$PROV_DIR/agents/$node" \
      --heartbeat-ms 200 --pods-as-agent --no-fencer >>"$PROV_DIR/agent-$node.log" 2>&1 </dev/null &
    echo $! >"$pidfile"
    ;;
  delete)
    if [[ -f $pidfile ]]; then
      pid=$(cat "$pidfile")
      kill "$pid" 2>/dev/null
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null
      rm -f "$pidfile"
    fi
    rm -rf "${PROV_DIR:?}/agents/$node"
    ;;
  *) echo "unknown operation $op" >&2; exit 2 ;;
esac
SH
chmod +x "$tmp/provision.sh"

{ fixed_cluster_yaml; cat <<YAML; } >"$tmp/cluster.yaml"
apiVersion: sluice.dev/v1alpha1
kind: NodePool
metadata: {name: spot}
spec:
  flavor: any
  namePrefix: sp-
  node: {cpu: 4, memory: 8Gi, gpus: {count: 2, model: H100}}
  maxNodes: 3
  capacityType: spot
  scaleDownAfter: 2s
  provisioner:
    command: [$tmp/provision.sh]
    timeout: 3s
    retryAfter: 1s
    joinTimeout: 30s
YAML

PROV_DIR=$tmp PROV_BIN=$bin PROV_URL=$url \
  "$bin" serve --config "$tmp/cluster.yaml" --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
  --heartbeat-ms 200 --cycle-interval-ms 200 >>"$tmp/serve.log" 2>&1 &
pids+=($!)
wait_ready "$url" 20 "${pids[0]}" || fail "server not ready"
"$bin" agent --server "$url" --name f1 --gpus fake:1xH100 --state-dir "$tmp/f1" \
  --heartbeat-ms 200 --pods-as-agent >"$tmp/agent-f1.log" 2>&1 &
pids+=($!)

wait_for "the fixed node" node_ready f1

# 1. Scale-up: a gang of two pods of two GPUs (each a whole pool node; f1 has one GPU).
gang=$(run_job gang --gang 2 --gpus 2 -- sleep 1)
[[ -n $gang ]] || fail "submit gang"
wait_for "the gang to run" state_in "$gang" running succeeded  # `sleep 1` may end between polls
[[ $(calls create) == 2 ]] || fail "scale-up made $(calls create) create calls, not 2: $(cat "$tmp/calls.log")"
grep -q "^create spot sp-0 reason=scale-up gpus=2 model=H100 type=spot" "$tmp/calls.log" ||
  fail "the call's arguments: $(cat "$tmp/calls.log")"
# `sluice nodes` says where each pool slot stands; the third has no machine.
"$bin" nodes --server "$url" >"$tmp/nodes.txt"
grep -q "^sp-2 .*no (pool spot: absent)" "$tmp/nodes.txt" || fail "sluice nodes: $(cat "$tmp/nodes.txt")"
wait_for "the gang to finish" state_is "$gang" succeeded

# 2. Scale-down: both nodes idle past scaleDownAfter are deleted; their agents are gone.
deleted_both() { [[ $(calls delete) -ge 2 ]]; }
wait_for "the idle nodes' deletion" deleted_both
grep -q "^delete spot sp-[01] reason=idle" "$tmp/calls.log" || fail "delete reason: $(cat "$tmp/calls.log")"
wait_for "the pool to be empty" pool_empty
[[ $(metric 'sluice_provisioner_calls_total{pool="spot",op="create",result="ok"}') == 2 ]] ||
  fail "create metric: $(grep provisioner_calls "$tmp/metrics.txt")"
[[ $(metric 'sluice_provisioner_calls_total{pool="spot",op="delete",result="ok"}') == 2 ]] ||
  fail "delete metric: $(grep provisioner_calls "$tmp/metrics.txt")"
[[ $(metric 'sluice_pool_nodes{pool="spot",state="ready"}') == 0 ]] || fail "ready nodes left"
if command -v promtool >/dev/null 2>&1; then  # the new families are well-formed
  promtool check metrics <"$tmp/metrics.txt" >"$tmp/promtool.txt" 2>&1 || fail "promtool: $(cat "$tmp/promtool.txt")"
fi
grep -q "provisioner create spot sp-0: ok" "$tmp/serve.log" || fail "no log line for the calls"

# 3. A spot reclaim: a job that saves its progress at SIGTERM (and reports a checkpoint) is
#    reclaimed mid-run, requeued, and finishes on a new node from its progress.
cat >"$tmp/work/ckpt.sh" <<'SH'
#!/bin/sh
n=$(cat "$WORK/progress" 2>/dev/null || echo 0)
echo "start $n on $SLUICE_NODE run $SLUICE_RUN" >>"$WORK/ckpt.log"
trap 'echo "$n" >"$WORK/progress"; touch "$SLUICE_CHECKPOINT_FILE"; echo "saved $n" >>"$WORK/ckpt.log"; exit 143' TERM
while [ "$n" -lt 30 ]; do
  sleep 0.1 & wait $!
  n=$((n + 1))
  echo "$n" >"$WORK/progress"
done
echo "done $n" >>"$WORK/ckpt.log"
SH
chmod +x "$tmp/work/ckpt.sh"
ck=$(run_job ckpt --gpus 2 -e "WORK=$tmp/work" -- "$tmp/work/ckpt.sh")
[[ -n $ck ]] || fail "submit ckpt"
wait_for "the checkpointing job to run" state_is "$ck" running
progressed() { [[ $(cat "$tmp/work/progress" 2>/dev/null || echo 0) -ge 5 ]]; }
wait_for "progress" progressed
node=$(job_field "$ck" 'j["placement"][0]["node"]')
[[ $node == sp-* ]] || fail "ckpt runs on $node, not a pool node"
"$bin" nodes reclaim "$node" --notice 5s --server "$url" >"$tmp/reclaim.out" 2>&1 ||
  fail "reclaim: $(cat "$tmp/reclaim.out")"
wait_for "the job to finish after the reclaim" state_is "$ck" succeeded
grep -q "^saved [0-9]" "$tmp/work/ckpt.log" || fail "no checkpoint at SIGTERM: $(cat "$tmp/work/ckpt.log")"
second=$(grep -c "^start " "$tmp/work/ckpt.log")
[[ $second == 2 ]] || fail "runs: $(cat "$tmp/work/ckpt.log")"
resumed=$(grep "^start " "$tmp/work/ckpt.log" | sed -n '2s/^start \([0-9]*\) on \([^ ]*\).*/\1 \2/p')
[[ ${resumed%% *} -ge 5 && ${resumed#* } != "$node" ]] ||
  fail "did not resume from its progress elsewhere: $(cat "$tmp/work/ckpt.log")"
reclaimed_deleted() { grep -q "^delete spot $node reason=reclaim" "$tmp/calls.log"; }
wait_for "the reclaimed node's deletion" reclaimed_deleted

wait_for "the pool to be empty again" pool_empty

# 4. A failing provisioner, then a hanging one: scheduling on the fixed node goes on.
failed_call_listed() {
  json_get /v1/pools 'j["calls"][0]["result"] + " " + j["calls"][0]["output"]' >"$tmp/last.txt"
  grep -q "failed no capacity in this zone" "$tmp/last.txt" || fail "/v1/pools: $(cat "$tmp/last.txt")"
}
provisioner_faults spot failed_call_listed true
echo "ok: autoscale_live"
