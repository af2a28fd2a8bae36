#!/usr/bin/env bash
# A Slurm user's habits on `sluice up` (issue 17): a relative script run from the user's own
# directory with the shell's environment, -q left out, --time in Slurm's formats, the submitter
# in `sluice jobs` (USER, --user), `sluice queues` as LocalQueues, `logs -f`, a long log cut in
# the middle with a marker, clear errors (not a job id, another tenant's queues), cancelling by
# name, state and user, and the server's event log (and a demo run's) replayed by `sluice sim
# run`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
: "${SLUICE_BIN:?}"
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
tmp=$(mktemp -d)
chmod 711 "$tmp"  # a root agent's pods (another uid) reach the user's directory through it
cd "$tmp"  # jobs run from here start here: a directory their uid may enter
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- up log" >&2; cat "$tmp/up.log" >&2 || true; exit 1; }
sluice() { "$SLUICE_BIN" "$@"; }
job_id() { sed -n 's/^submitted job \([0-9]*\) .*/\1/p' "$1"; }

port=$(free_port)
export SLUICE_SERVER=http://127.0.0.1:$port
"$SLUICE_BIN" up --nodes 1 --gpus fake:2xH100 --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
  --log-max-bytes 4096 --heartbeat-ms 100 >"$tmp/up.log" 2>&1 &
pid=$!  # the server itself (not a subshell running the `sluice` function): kill stops it
wait_ready "$SLUICE_SERVER" 20 || fail "not ready"
# The banner comes once the local agents are up, which may be after the server is ready.
for _ in $(seq 1 100); do grep -q 'LocalQueue "default"' "$tmp/up.log" && break; sleep 0.1; done
grep -q 'LocalQueue "default" of namespace "default"' "$tmp/up.log" || fail "the banner names the queue"

# 1. A relative script in the user's directory, with the shell's variables; no -q.
mkdir -p "$tmp/proj"
printf '#!/bin/sh\necho "MYVAR=$MYVAR in $(pwd)"\n' >"$tmp/proj/relative-script.sh"
chmod 755 "$tmp/proj/relative-script.sh"
(cd "$tmp/proj" && MYVAR=hello sluice run --cpu 1 -t 10 -- ./relative-script.sh) >"$tmp/run1" ||
  fail "run without -q: $(cat "$tmp/run1")"
id1=$(job_id "$tmp/run1")
[[ -n $id1 ]] || fail "no job id in: $(cat "$tmp/run1")"
timeout 60 "$SLUICE_BIN" logs -f "$id1" >"$tmp/log1" || fail "logs -f"
grep -qx "MYVAR=hello in $tmp/proj" "$tmp/log1" || fail "env and directory: $(cat "$tmp/log1")"
(cd "$tmp/proj" && sluice run -q default --cpu 1 -- ./relative-script.sh) >"$tmp/run2" ||
  fail "run -q default"
timeout 60 "$SLUICE_BIN" logs -f "$(job_id "$tmp/run2")" >"$tmp/log2" || fail "logs -f run2"
grep -q "in $tmp/proj" "$tmp/log2" || fail "run -q default ./relative-script.sh"

# 2. The submitter: USER column and --user.
me=$(id -un)
sluice jobs >"$tmp/jobs"
head -1 "$tmp/jobs" | grep -q "USER" || fail "USER column: $(cat "$tmp/jobs")"
grep -qE "^ *$id1 .* $me " "$tmp/jobs" || fail "job $id1 by $me: $(cat "$tmp/jobs")"
[[ $(sluice jobs --user "$me" | wc -l) -ge 3 ]] || fail "--user $me"
[[ $(sluice jobs --user nobody-here) == "no jobs" ]] || fail "--user nobody-here"

# 2b. squeue's and sbatch's habits (issue 43): --parsable, -Q, --wrap, a script on stdin, and
#     jobs -t/--me/-j with Slurm's state codes.
idw=$(sluice sbatch --parsable --wrap "echo wrapped") || fail "sbatch --parsable --wrap"
[[ $idw =~ ^[0-9]+$ ]] || fail "--parsable prints the id alone: '$idw'"
timeout 60 "$SLUICE_BIN" logs -f "$idw" >"$tmp/logw" || fail "logs -f of the --wrap job"
grep -qx wrapped "$tmp/logw" || fail "--wrap ran its command: $(cat "$tmp/logw")"
printf '#!/bin/sh\n#SBATCH -J from-stdin\necho read from stdin\n' >"$tmp/stdin.sh"
ids=$(sluice sbatch --parsable <"$tmp/stdin.sh") || fail "sbatch with the script on stdin"
timeout 60 "$SLUICE_BIN" logs -f "$ids" >"$tmp/logs" || fail "logs -f of the stdin job"
grep -qx "read from stdin" "$tmp/logs" || fail "the stdin script ran: $(cat "$tmp/logs")"
[[ -z $(sluice sbatch -Q --wrap true) ]] || fail "sbatch -Q prints nothing"
sluice jobs -t CD --me -j "$idw,$ids" >"$tmp/jobsj" || fail "jobs -t CD --me -j"
grep -qE "^ *$idw " "$tmp/jobsj" && grep -qE "^ *$ids .*from-stdin" "$tmp/jobsj" ||
  fail "jobs -j lists both: $(cat "$tmp/jobsj")"
[[ $(sluice jobs -t PD,R -j "$idw") == "no jobs" ]] || fail "jobs -t PD,R -j of an ended job"
sluice jobs -t XX >/dev/null 2>"$tmp/err" && fail "an unknown state is refused"
grep -q "Slurm's PD, R, CD" "$tmp/err" || fail "the refusal lists the states: $(cat "$tmp/err")"
# A wrong option is named, in sbatch (before a script it could be taken for a value of) and run.
sluice sbatch --bogus "$tmp/stdin.sh" >/dev/null 2>"$tmp/err" && fail "sbatch --bogus is refused"
grep -q "the command line: --bogus is not an sbatch option sluice knows" "$tmp/err" ||
  fail "sbatch names --bogus: $(cat "$tmp/err")"
sluice run --bogus -- true >/dev/null 2>"$tmp/err" && fail "run --bogus is refused"
grep -q "sluice run: unknown option --bogus" "$tmp/err" || fail "run names --bogus: $(cat "$tmp/err")"

# 2c. A GPU type is the model: h100 (any case) runs on the H100s; a100, which no node has, is
#     warned about and waits rather than run on an H100.
idh=$(sluice sbatch --parsable --gpus=h100:1 --wrap "echo typed") || fail "sbatch --gpus=h100:1"
timeout 60 "$SLUICE_BIN" logs -f "$idh" >"$tmp/logh" || fail "logs -f of the h100 job"
grep -qx typed "$tmp/logh" || fail "the h100 job ran: $(cat "$tmp/logh")"
ida=$(sluice sbatch --parsable --gpus=a100:1 --wrap "echo never" 2>"$tmp/warn") ||
  fail "sbatch --gpus=a100:1: $(cat "$tmp/warn")"
grep -q 'no node has GPU model "a100"' "$tmp/warn" || fail "the a100 job is warned about: $(cat "$tmp/warn")"
sleep 1
[[ $(sluice jobs -t PD -j "$ida" | wc -l) == 2 ]] || fail "the a100 job waits: $(sluice jobs -j "$ida")"
sluice cancel "$ida" >/dev/null || fail "cancel the a100 job"

# 2d. A walltime kill reads as Slurm's TIMEOUT; the history shows when each job started and ended.
sluice run --cpu 1 -t 0:02 --name too-long -- sleep 60 >"$tmp/rt" || fail "run -t 0:02"
idt=$(job_id "$tmp/rt")
for _ in $(seq 1 300); do
  sluice jobs -j "$idt" >"$tmp/jt"
  grep -qE "^ *$idt .* timeout " "$tmp/jt" && break
  sleep 0.2
done
grep -qE "^ *$idt .* timeout " "$tmp/jt" || fail "the walltime kill shows timeout: $(cat "$tmp/jt")"
sluice history --name too-long >"$tmp/ht" || fail "history --name too-long"
head -1 "$tmp/ht" | grep -qE "STATE +START +END +ELAPSED" || fail "START and END columns: $(cat "$tmp/ht")"
grep -qE "^ *$idt .* timeout +20[0-9-]+T[0-9:]+Z +20[0-9-]+T[0-9:]+Z " "$tmp/ht" ||
  fail "the row has timeout, its start and end: $(cat "$tmp/ht")"

# 3. A 20,000-line log: no silent cut at the cap (4096 bytes here).
sluice run --cpu 1 --name big-out -- sh -c \
  'i=0; while [ $i -lt 20000 ]; do echo "line $i"; i=$((i+1)); done' >"$tmp/run3"
id3=$(job_id "$tmp/run3")
timeout 120 "$SLUICE_BIN" logs -f "$id3" >"$tmp/follow3" || fail "logs -f of a long log"
sluice logs "$id3" >"$tmp/log3"
head -1 "$tmp/log3" | grep -qx "line 0" || fail "head: $(head -3 "$tmp/log3")"
tail -1 "$tmp/log3" | grep -qx "line 19999" || fail "end: $(tail -3 "$tmp/log3")"
grep -qE '^\[\.\.\. [0-9]+ bytes cut \.\.\.\]$' "$tmp/log3" || fail "no cut marker"
sluice logs "$id3" --tail-bytes 100 >"$tmp/tail3"
head -1 "$tmp/tail3" | grep -qE '^\[\.\.\. [0-9]+ bytes cut \.\.\.\]$' || fail "tail marker"
sed -n 2p "$tmp/tail3" | grep -qE '^line [0-9]+$' || fail "tail starts on a line"
# -f gave every line: the head, then raw bytes from where the first answer's file ended.
grep -qx "line 19999" "$tmp/follow3" || fail "follow reached the end"

# 4. Errors a user can act on, with the documented exit code 1.
set +e
sluice cancel big-out 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 1 ]] || fail "cancel big-out exits $rc"
grep -q '"big-out" is not a job id' "$tmp/err" || fail "not a job id: $(cat "$tmp/err")"
set +e
sluice jobs --no-such-option >/dev/null 2>&1; rc=$?
set -e
[[ $rc == 1 ]] || fail "a bad option exits $rc, docs say 1"
set +e
sluice run -q nope --cpu 1 -- true 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 1 ]] || fail "unknown queue exits $rc"
grep -q '(its queues: default)' "$tmp/err" || fail "unknown queue: $(cat "$tmp/err")"
sluice run --cpu 1 -t 1-00:00:00 --dry-run -- true | grep -q '"walltime": "86400s"' ||
  fail "--time D-HH:MM:SS"

# 5. Queues as a user sees them; ClusterQueues with -c.
sluice queues | grep -qE '^default +default +default ' || fail "queues: $(sluice queues)"
sluice queues -c | grep -q "GPU USED/NOMINAL" || fail "queues -c"

# 6. Cancel by name, by state and by user (scancel -n, -t, -u); then the event log replays
#    through the simulator.
sluice run --cpu 1 --name sleepy -- sleep 300 >/dev/null
sluice cancel --name sleepy | grep -q "cancelled job" || fail "cancel --name"
sluice run --cpu 1 --hold --name waiting -- true >"$tmp/r1"
sluice run --cpu 1 --name busy -- sleep 300 >"$tmp/r2"
sluice cancel --state pending | grep -q "cancelled job $(job_id "$tmp/r1") (waiting)" ||
  fail "cancel --state pending"
[[ $(sluice cancel --user nobody-here 2>&1) == "no live job matches" ]] || fail "cancel --user nobody"
sluice cancel --user "$me" | grep -q "cancelled job $(job_id "$tmp/r2") (busy)" ||
  fail "cancel --user $me"
for _ in $(seq 1 100); do
  [[ $(sluice jobs --state pending,running) == "no jobs" ]] && break
  sleep 0.2
done
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=
sluice sim run --config "$tmp/data/up-config.yaml" --trace "$tmp/data/events.jsonl" \
  --trace-format sluice-events >"$tmp/sim" 2>&1 || fail "sim replay: $(cat "$tmp/sim")"

# 7. So does a demo run's (three teams, borrowing, a gang, a preemption), with no bad rows. A
#    fresh port: the last server's may still be in TIME_WAIT.
port=$(free_port)
"$SLUICE_BIN" up --demo --exit-after 30 --listen "127.0.0.1:$port" --data-dir "$tmp/demo" \
  >"$tmp/demo.log" 2>&1 || fail "up --demo: $(tail -5 "$tmp/demo.log")"
sluice sim run --config "$tmp/demo/up-config.yaml" --trace "$tmp/demo/events.jsonl" \
  --trace-format sluice-events --report "$tmp/demo-report.json" >"$tmp/sim" 2>&1 ||
  fail "demo replay: $(cat "$tmp/sim")"
python3 -c "
import json, sys
r = json.load(open('$tmp/demo-report.json'))['input']
sys.exit(0 if r['bad_rows'] == 0 and r['rows'] > 10 else 1)" || fail "demo replay rows: $(cat "$tmp/sim")"
echo "ok"
