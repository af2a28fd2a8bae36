#!/usr/bin/env bash
# A Slurm user's batch day on `sluice up` (issue 17, second part): held jobs that wait and say
# why, dependencies (afterok met, afterok never met -> cancelled, afternotok), a throttled job
# array with per-task output files, an sbatch script with #SBATCH lines depending on the array,
# requeue, the history (sacct) and GPU-hour usage after finished jobs were dropped from memory
# and after a restart, shell completion, and the event log replayed by `sluice sim run`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
: "${SLUICE_BIN:?}"
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
tmp=$(mktemp -d)
chmod 711 "$tmp"  # a root agent's pods (another uid) reach the user's directory through it
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- up log" >&2; tail -50 "$tmp/up.log" >&2 || true; exit 1; }
sluice() { "$SLUICE_BIN" "$@"; }
job_id() { sed -n 's/^submitted job \([0-9]*\) .*/\1/p' "$1"; }
state() { sluice jobs --json --limit 100000 | python3 -c "
import json, sys
print(next((j['state'] for j in json.load(sys.stdin)['jobs'] if j['id'] == $1), 'gone'))"; }
# wait_state ID STATE...: until the job is in one of the states (bounded by a count, not a clock).
wait_state() {
  local id=$1; shift
  for _ in $(seq 1 600); do
    local s; s=$(state "$id")
    for want in "$@"; do [[ $s == "$want" ]] && return 0; done
    sleep 0.1
  done
  fail "job $id is $(state "$id"), not $*"
}
start_up() {  # on a fresh port each time: the last server's may still be in TIME_WAIT
  port=$(free_port)
  export SLUICE_SERVER=http://127.0.0.1:$port
  "$SLUICE_BIN" up --nodes 1 --gpus fake:2xH100 --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
    --heartbeat-ms 100 --keep-finished-jobs 3 >>"$tmp/up.log" 2>&1 &
  pid=$!
  wait_ready "$SLUICE_SERVER" 20 || fail "not ready"
}
stop_up() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }

start_up
mkdir -p "$tmp/proj"
# Pods write their -o files here: as the submitter on a root agent, or as the namespace's uid
# where the submitter is root (the agent does not run pods as root unless a queue allows it).
chmod 777 "$tmp/proj"
cd "$tmp/proj"

# 1. A held job never starts and says why; released, it runs.
sluice run --hold --cpu 1 --name held -- true >"$tmp/r" || fail "run --hold"
held=$(job_id "$tmp/r")
sluice run --cpu 1 -- true >"$tmp/r"
wait_state "$(job_id "$tmp/r")" succeeded  # the cluster is idle, yet...
[[ $(state "$held") == pending ]] || fail "held job is $(state "$held")"
sluice explain "$held" | grep -q "Why: held by a user (sluice release $held)" ||
  fail "explain held: $(sluice explain "$held")"
sluice jobs --state pending | grep -q "held by a user" || fail "jobs reason: $(sluice jobs)"
sluice release "$held" | grep -q "released" || fail "release"
wait_state "$held" succeeded

# 2. Dependencies: afterok on a job that fails is cancelled (it can never be met); afternotok
#    runs; afterok on a job that succeeds runs after it.
sluice run --cpu 1 --name bad -- sh -c 'sleep 1; exit 3' >"$tmp/r"
bad=$(job_id "$tmp/r")
sluice run --cpu 1 -d "afterok:$bad" --name never -- true >"$tmp/r"
never=$(job_id "$tmp/r")
sluice run --cpu 1 -d "afternotok:$bad" --name rescue -- true >"$tmp/r"
rescue=$(job_id "$tmp/r")
sluice run --cpu 1 -d "afterok:$rescue" --name then -- true >"$tmp/r"
then_id=$(job_id "$tmp/r")
s=$(state "$never")
[[ $s == pending || $s == cancelled ]] || fail "afterok job ran: $s"
wait_state "$never" cancelled
sluice explain "$never" | grep -q "its dependency afterok:$bad can never be met (job $bad is failed)" ||
  fail "explain never: $(sluice explain "$never")"
wait_state "$rescue" succeeded
wait_state "$then_id" succeeded
# requeue: an ended job runs again (its dependency was met once: it is not looked at again).
sluice requeue "$then_id" | grep -q "requeued" || fail "requeue"
wait_state "$then_id" succeeded
set +e
sluice run --cpu 1 -d afterok:999999 -- true 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 1 ]] && grep -q "which this server does not know" "$tmp/err" ||
  fail "unknown dependency: rc $rc $(cat "$tmp/err")"

# 3. An array of 6 tasks, at most 2 at a time, each writing its own output file.
sluice run --cpu 1 --array '0-5%2' --name sweep -o 'out-%A_%a.txt' -- \
  sh -c 'echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID/$SLUICE_ARRAY_TASK_COUNT"; sleep 0.5' \
  >"$tmp/r" || fail "run --array"
grep -q "^submitted job array [0-9]* (sweep, 6 tasks: jobs" "$tmp/r" || fail "array: $(cat "$tmp/r")"
arr=$(sed -n 's/^submitted job array \([0-9]*\) .*/\1/p' "$tmp/r")
last=$((arr + 5))
# squeue's habit: an array's pending tasks are one line (a held array: all of them wait), and
# -r lists them one by one.
sluice run --cpu 1 --hold --array '0-3' --name held-sweep -- true >"$tmp/rh" || fail "run --hold --array"
harr=$(sed -n 's/^submitted job array \([0-9]*\) .*/\1/p' "$tmp/rh")
sluice jobs >"$tmp/collapsed"
grep -qE "^ *${harr}_\[0-3\] +held-sweep " "$tmp/collapsed" || fail "collapsed array: $(cat "$tmp/collapsed")"
sluice jobs -r >"$tmp/expanded"
[[ $(grep -c " held-sweep " "$tmp/expanded") == 4 ]] || fail "-r lists each task: $(cat "$tmp/expanded")"
sluice cancel --name held-sweep >/dev/null || fail "cancel the held array"
for _ in $(seq 1 600); do  # the throttle holds in every sample
  running=$(sluice jobs --state running --json | python3 -c "
import json, sys
print(sum(1 for j in json.load(sys.stdin)['jobs'] if j['name'] == 'sweep'))")
  ((running <= 2)) || fail "$running tasks running, throttle 2"
  [[ $(state "$last") == succeeded ]] && break
  sleep 0.1
done
wait_state "$last" succeeded
for i in 0 1 2 3 4 5; do
  grep -qx "task $i of $arr/6" "out-${arr}_$i.txt" || fail "out-${arr}_$i.txt: $(cat "out-${arr}_$i.txt" 2>&1)"
done

# 4. sbatch: #SBATCH lines, an array, a dependency on the whole array, -o and -e.
cat >"$tmp/proj/job.sh" <<'EOF'
#!/bin/sh
#SBATCH -J fromscript -c 1 --mem=64M -t 5
#SBATCH --array=0-1
#SBATCH -o sb-%x-%a.out -e sb-%j.err
echo "script task $SLURM_ARRAY_TASK_ID args $*"
echo oops >&2
EOF
sluice sbatch --dry-run job.sh one | grep -q '"array": "0-1"' || fail "sbatch --dry-run"
sluice sbatch -d "afterany:$arr" job.sh one two >"$tmp/r" || fail "sbatch: $(cat "$tmp/r")"
sb=$(sed -n 's/^submitted job array \([0-9]*\) .*/\1/p' "$tmp/r")
[[ -n $sb ]] || fail "sbatch reply: $(cat "$tmp/r")"
wait_state $((sb + 1)) succeeded
grep -qx "script task 1 args one two" sb-fromscript-1.out || fail "sbatch output: $(cat sb-fromscript-1.out)"
grep -qx "oops" "sb-$((sb + 1)).err" || fail "sbatch error file"

# 5. History: jobs dropped from memory (--keep-finished-jobs 3) are still there, with states,
#    exit codes and array tasks; usage sums GPU-hours by user.
me=$(id -un)
sluice history --json --limit 100000 >"$tmp/h"
python3 - "$tmp/h" "$bad" "$never" "$arr" <<'PY' || fail "history: $(head -c 2000 "$tmp/h")"
import json, sys
rows = {r["id"]: r for r in json.load(open(sys.argv[1]))["jobs"]}
bad, never, arr = (int(a) for a in sys.argv[2:])
assert rows[bad]["state"] == "failed" and rows[bad]["exit_code"] == 3, rows[bad]
assert rows[never]["state"] == "cancelled" and "can never be met" in rows[never]["reason"], rows[never]
tasks = [r for r in rows.values() if r["array_job"] == arr]
assert sorted(r["array_task"] for r in tasks) == list(range(6)), tasks
assert all(r["state"] == "succeeded" and r["elapsed_s"] >= 0 for r in tasks), tasks
PY
[[ $(sluice jobs --limit 100000 --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))') -lt 10 ]] ||
  fail "--keep-finished-jobs 3 kept more"
sluice history --user "$me" --state failed >"$tmp/hf"
grep -qE "^ *$bad +bad " "$tmp/hf" || fail "history --state failed"
sluice history --user nobody-here | grep -qx "no jobs" || fail "history --user nobody-here"
sluice usage --by user --period day | grep -q " $me " || fail "usage: $(sluice usage --by user)"
curl -fsS "$SLUICE_SERVER/v1/history?state=cancelled&since=2020-01-01" >"$tmp/hc"
grep -q "\"id\":$never" "$tmp/hc" || fail "GET /v1/history"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$SLUICE_SERVER/v1/history?since=yesterday") == 400 ]] ||
  fail "a bad since is not 400"

# 6. A restart: the history comes back from the event log, a held job stays held.
sluice run --hold --cpu 1 --name still-held -- true >"$tmp/r"
still=$(job_id "$tmp/r")
stop_up
start_up
# To a file first: `| grep -q` under pipefail fails when grep exits before a long output ends
# (the writer gets SIGPIPE).
sluice history --json --limit 100000 >"$tmp/h2"
grep -qE "\"id\": *$bad," "$tmp/h2" || fail "history after restart"
[[ $(state "$still") == pending ]] || fail "held job after restart: $(state "$still")"
sluice explain "$still" | grep -q "held by a user" || fail "held after restart: $(sluice explain "$still")"
sluice cancel "$still" >/dev/null

# 7. Shell completion knows every command `sluice --help` lists.
cmds=$(sluice --help | awk 'tolower($0) ~ /^subcommands:/ {on=1; next} on && NF {print $1}')
[[ -n $cmds ]] || fail "no subcommands in --help"
for c in $cmds; do
  grep -qw "$c" "$SLUICE_SOURCE_DIR/deploy/completion/sluice.bash" || fail "bash completion lacks $c"
  grep -q "'$c:" "$SLUICE_SOURCE_DIR/deploy/completion/_sluice" || fail "zsh completion lacks $c"
done
out=$(bash -c "source '$SLUICE_SOURCE_DIR/deploy/completion/sluice.bash'
  COMP_WORDS=(sluice h); COMP_CWORD=1; _sluice; echo \"\${COMPREPLY[*]}\"")
[[ $out == "hold history" ]] || fail "bash completion of 'h': '$out'"

# 8. The event log replays through the simulator, with no bad rows.
stop_up
sluice sim run --config "$tmp/data/up-config.yaml" --trace "$tmp/data/events.jsonl" \
  --trace-format sluice-events --report "$tmp/report.json" >"$tmp/sim" 2>&1 ||
  fail "sim replay: $(cat "$tmp/sim")"
python3 -c "
import json, sys
r = json.load(open('$tmp/report.json'))['input']
sys.exit(0 if r['bad_rows'] == 0 else 1)" || fail "bad rows in the replay: $(cat "$tmp/sim")"
echo "ok"
