#!/usr/bin/env bash
# Slurm's step semantics on `sluice up` (issue 43): `sbatch -N 2 --ntasks-per-node 2` puts its
# pods on two distinct nodes (bin-pack alone would stack them on one 4-GPU node), the batch
# script runs once, on the first node, `srun` inside it launches one process per task (4, with
# SLURM_PROCID/LOCALID/NODEID and the node's own GPUs), waits for them and returns the worst
# exit status; the -o file holds every pod's output; `sluice run --nodes 2` spreads as well;
# `sluice run --wait` and `sbatch -W` wait and stream, with the job's status.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
: "${SLUICE_BIN:?}"
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
tmp=$(mktemp -d)
chmod 711 "$tmp"  # a root agent's pods (another uid) reach the user's directory through it
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$tmp"/proj/*.out; do [[ -f $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }; done
  echo "--- up log" >&2; tail -50 "$tmp/up.log" >&2 || true; exit 1
}
sluice() { "$SLUICE_BIN" "$@"; }
job() { sluice jobs --json --limit 100000 | python3 -c "
import json, sys
j = next((j for j in json.load(sys.stdin)['jobs'] if j['id'] == $1), {})
print([p['node'] for p in j.get('placement', [])] if '$2' == 'nodes' else j.get('$2', 'gone'))"; }
wait_state() {  # bounded by a count, not a clock
  for _ in $(seq 1 600); do
    [[ $(job "$1" state) == "$2" ]] && return 0
    sleep 0.1
  done
  fail "job $1 is $(job "$1" state), not $2"
}

port=$(free_port)
export SLUICE_SERVER=http://127.0.0.1:$port
"$SLUICE_BIN" up --nodes 3 --gpus fake:4xH100 --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
  --heartbeat-ms 100 >>"$tmp/up.log" 2>&1 &
pid=$!
wait_ready "$SLUICE_SERVER" 20 "$pid" || fail "not ready"
mkdir -p "$tmp/proj"
chmod 777 "$tmp/proj"  # pods may run as the namespace's uid (a root agent)
cd "$tmp/proj"

# 1. Two nodes of two tasks, a GPU a task: two pods of 2 GPUs, on distinct nodes.
cat >steps.sh <<'EOF'
#!/bin/sh
#SBATCH -J steps -N 2 --ntasks-per-node=2 --gpus-per-task=1 -o steps-%j.out
echo "batch on $SLUICE_NODE ntasks $SLURM_NTASKS nodes $SLURM_JOB_NODELIST"
export GREETING=hello
srun sh -c 'echo "task $SLURM_PROCID local $SLURM_LOCALID node $SLURM_NODEID on $SLUICE_NODE $GREETING"'
srun -n 1 sh -c 'echo "single task $SLURM_PROCID of $SLURM_NTASKS"'
srun sh -c 'exit $SLURM_PROCID'
echo "worst $?"
EOF
id=$(sluice sbatch --parsable steps.sh) || fail "sbatch"
wait_state "$id" succeeded
nodes=$(job "$id" nodes)
python3 -c "import sys; n = $nodes; sys.exit(0 if len(n) == 2 and len(set(n)) == 2 else 1)" ||
  fail "-N 2 pods on $nodes, not two distinct nodes"
out=steps-$id.out
[[ $(grep -c '^batch on' "$out") == 1 ]] || fail "the script ran more than once: $(cat "$out")"
grep -q "^batch on .* ntasks 4 nodes " "$out" || fail "batch env: $(cat "$out")"
for t in 0 1 2 3; do
  [[ $(grep -c "^task $t local $((t % 2)) node $((t / 2)) on .* hello$" "$out") == 1 ]] ||
    fail "task $t: $(cat "$out")"
done
# Tasks 0-1 on one node, 2-3 on the other, and those are the job's two nodes.
n0=$(sed -n 's/^task 0 .* on \([^ ]*\) hello$/\1/p' "$out")
n2=$(sed -n 's/^task 2 .* on \([^ ]*\) hello$/\1/p' "$out")
[[ -n $n0 && -n $n2 && $n0 != "$n2" ]] || fail "tasks 0 and 2 on $n0 and $n2: $(cat "$out")"
grep -q "^task 1 .* on $n0 hello$" "$out" || fail "task 1 not beside task 0: $(cat "$out")"
grep -q "^task 3 .* on $n2 hello$" "$out" || fail "task 3 not beside task 2: $(cat "$out")"
[[ $(grep -c '^single task 0 of 1$' "$out") == 1 ]] || fail "srun -n 1: $(cat "$out")"
grep -qx "worst 3" "$out" || fail "srun's status is not the worst task's: $(cat "$out")"

# 2. srun outside a job says so; an unknown srun option is an error, not a silent run.
set +e
sluice srun true 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 1 ]] && grep -q "not inside a sluice job" "$tmp/err" || fail "srun outside: $rc $(cat "$tmp/err")"
id2=$(sluice sbatch --parsable -o bad-%j.out --wrap 'srun --mpi=pmix true; echo "rc $?"') ||
  fail "sbatch --wrap"
wait_state "$id2" succeeded
grep -q "is not an srun option sluice knows" "bad-$id2.out" && grep -qx "rc 1" "bad-$id2.out" ||
  fail "srun --mpi: $(cat "bad-$id2.out")"
# A job of several nodes submitted from a directory the nodes lack fails at once, and says why
# (its pods would otherwise wait for each other forever).
id4=$(sluice sbatch --parsable -N 2 -D "/nonexistent-$$" --wrap 'echo never') || fail "sbatch -D"
wait_state "$id4" failed
# (Either pod may end first and stop the other: one of the two logs says it.)
logs4=$(sluice logs "$id4" 2>&1; sluice logs "$id4" --pod 1 2>&1)
grep -q "srun: the job's directory /nonexistent-$$ is not on node" <<<"$logs4" ||
  fail "the reason: $logs4"

# 3. sluice run --nodes 2: the same spread; --ntasks-per-node 2 runs two processes a pod.
id3=$(sluice run --parsable --nodes 2 --ntasks-per-node 2 --gpus 2 -o run-%j.out -- \
  sh -c 'echo "rank $SLURM_PROCID on $SLUICE_NODE"') || fail "run --nodes"
wait_state "$id3" succeeded
nodes=$(job "$id3" nodes)
python3 -c "import sys; n = $nodes; sys.exit(0 if len(set(n)) == 2 else 1)" ||
  fail "run --nodes 2 on $nodes"
[[ $(sort "run-$id3.out" | grep -c '^rank [0-3] on ') == 4 ]] || fail "run output: $(cat "run-$id3.out")"

# 4. --wait (-W), as srun and sbatch --wait: the output as it comes, the job's status as ours.
set +e
sluice run --wait --cpu 1 -- sh -c 'echo waited; exit 5' >"$tmp/w" 2>"$tmp/werr"; rc=$?
set -e
[[ $rc == 5 ]] && grep -qx waited "$tmp/w" && grep -q "^submitted job" "$tmp/werr" ||
  fail "run --wait: rc $rc, out $(cat "$tmp/w"), err $(cat "$tmp/werr")"
sluice sbatch -W --wrap 'echo wrapped and waited' >"$tmp/w" 2>&1 || fail "sbatch -W: $(cat "$tmp/w")"
grep -qx "wrapped and waited" "$tmp/w" || fail "sbatch -W output: $(cat "$tmp/w")"
echo "slurm_steps: ok"
