#!/usr/bin/env bash
# A NodePool provisioner for one machine (docs/autoscaling.md): each node is a `sluice agent`
# process with fake GPUs of the pool's shape, started on `create` and stopped on `delete`.
# The contract is a real cloud's: `local-agents.sh create|delete POOL NODE`, the shape in
# SLUICE_NODE_*, the server in SLUICE_SERVER; idempotent; exit 0 when done.
#
#   SLUICE_BIN        the sluice binary (default: `sluice` on PATH)
#   POOL_STATE_DIR    where the agents keep their state, pid and log (default: /tmp/sluice-pool)
set -uo pipefail
op=${1:?usage: local-agents.sh create|delete POOL NODE} pool=${2:?} node=${3:?}
bin=${SLUICE_BIN:-sluice}
dir=${POOL_STATE_DIR:-/tmp/sluice-pool}/$pool
mkdir -p "$dir"
pidfile=$dir/$node.pid
alive() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
case $op in
  create)
    alive && exit 0  # asked again (a retry, a server restart): it is there
    as_agent=()
    [[ $(id -u) == 0 ]] && as_agent=(--pods-as-agent)  # root: pods as root (a demo, no isolation)
    # setsid: the agent outlives this call (the server kills the call's process group at its
    # timeout); its output goes to its own log, not to the call's.
    setsid "$bin" agent --server "$SLUICE_SERVER" --name "$node" \
      --gpus "fake:${SLUICE_NODE_GPUS}x${SLUICE_NODE_GPU_MODEL}" --state-dir "$dir/$node" \
      --no-fencer "${as_agent[@]}" >>"$dir/$node.log" 2>&1 </dev/null &
    echo $! >"$pidfile"
    echo "started $node (pid $!)"
    ;;
  delete)
    if alive; then
      pid=$(cat "$pidfile")
      kill "$pid"
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null
      echo "stopped $node (pid $pid, reason $SLUICE_REASON)"
    fi
    rm -rf "${dir:?}/$node" "$pidfile"
    ;;
  *) echo "local-agents.sh: unknown operation '$op' (create or delete)" >&2; exit 2 ;;
esac
