#!/usr/bin/env bash
# The same end-to-end benchmark against Slurm 22.05 from Debian on loopback: slurmctld and
# NODES slurmd processes (multiple-slurmd: fake nodes n1..nN on 127.0.0.1, 8 fake GPUs each as
# character devices), a private munged, SchedulerParameters=batch_sched_delay=0 (Slurm's
# fastest setting for tiny jobs; see /work/shared/PEERS.md). CLIENTS concurrent loops run
# `sbatch --wrap true --gres=gpu:1`; SubmitTime/StartTime come from jobcomp/filetxt (whole
# seconds: latencies are +-1 s). Installs the packages with apt if missing (benchmark only).
# Stops every process it started by PID. Needs root (mknod, runuser).
#
#   JOBS=2000 CLIENTS=8 NODES=16 bench/e2e/slurm_e2e.sh
#
# Environment: JOBS (2000), CLIENTS (8), NODES (16), GPUS_PER_NODE (8), CTLD_PORT (16817),
# SLURMD_PORT0 (17001: nodes use SLURMD_PORT0..+NODES-1), WAIT_S (900), JSON_OUT (file),
# KEEP (1: keep the temp dir), WORK_ROOT (/tmp: where the temp dir goes), POD_COMMAND (an
# absolute path: each job is a batch script whose `#!` line is that program, so the kernel
# runs it directly as sluice's agent does, instead of `--wrap true`'s /bin/sh; compare.sh
# STATIC_PODS=1).
set -euo pipefail
JOBS=${JOBS:-2000}
CLIENTS=${CLIENTS:-8}
NODES=${NODES:-16}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CTLD_PORT=${CTLD_PORT:-16817}
SLURMD_PORT0=${SLURMD_PORT0:-17001}
WAIT_S=${WAIT_S:-900}
JSON_OUT=${JSON_OUT:-}

if ! command -v slurmctld >/dev/null || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurmctld slurmd slurm-client munge >/dev/null
fi
[[ -f /etc/munge/munge.key ]] || { echo "slurm_e2e: /etc/munge/munge.key missing" >&2; exit 2; }

TMP=$(mktemp -d "${WORK_ROOT:-/tmp}/slurm-e2e.XXXXXX")
chmod 755 "$TMP"
PIDS=()
MUNGE_PID=
stop_all() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
  if [[ -n $MUNGE_PID ]]; then kill "$MUNGE_PID" 2>/dev/null || true; MUNGE_PID=; fi
}
cleanup() { stop_all; [[ ${KEEP:-0} == 1 ]] && echo "kept $TMP" >&2 || rm -rf "$TMP"; }
trap cleanup EXIT

# A private munged (its own socket), so a system one is neither needed nor disturbed.
install -d -o munge -g munge -m 755 "$TMP/munge"
runuser -u munge -- /usr/sbin/munged --socket="$TMP/munge/munge.sock" \
  --pid-file="$TMP/munge/munged.pid" --log-file="$TMP/munge/munged.log" \
  --seed-file="$TMP/munge/munged.seed"
for _ in $(seq 1 50); do [[ -s $TMP/munge/munged.pid ]] && break; sleep 0.1; done
MUNGE_PID=$(cat "$TMP/munge/munged.pid")

# Fake GPUs: Slurm accepts only character devices as gres files.
mkdir -p "$TMP/dev" "$TMP/state" "$TMP/out"
for i in $(seq 0 $((GPUS_PER_NODE - 1))); do mknod "$TMP/dev/nvidia$i" c 1 3; done
LAST=$((GPUS_PER_NODE - 1))
cat > "$TMP/gres.conf" <<CONF
NodeName=n[1-$NODES] Name=gpu File=$TMP/dev/nvidia[0-$LAST]
CONF
cat > "$TMP/slurm.conf" <<CONF
ClusterName=bench
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$TMP/munge/munge.sock
CredType=cred/munge
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT0
StateSaveLocation=$TMP/state
SlurmdSpoolDir=$TMP/spool/%n
SlurmctldPidFile=$TMP/slurmctld.pid
SlurmdPidFile=$TMP/slurmd-%n.pid
SlurmctldLogFile=$TMP/slurmctld.log
SlurmdLogFile=$TMP/slurmd-%n.log
SlurmctldDebug=error
SlurmdDebug=error
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$TMP/jobcomp.txt
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MaxJobCount=100000
MinJobAge=300
MpiDefault=none
GresTypes=gpu
ReturnToService=2
NodeName=n[1-$NODES] NodeHostname=localhost NodeAddr=127.0.0.1 Port=$SLURMD_PORT0-$((SLURMD_PORT0 + NODES - 1)) CPUs=2 RealMemory=8000 Gres=gpu:$GPUS_PER_NODE State=UNKNOWN
PartitionName=bench Nodes=n[1-$NODES] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:64
CONF
export SLURM_CONF=$TMP/slurm.conf

slurmctld -D -i > "$TMP/slurmctld.out" 2>&1 &
PIDS+=($!)
for n in $(seq 1 "$NODES"); do
  mkdir -p "$TMP/spool/n$n"
  slurmd -D -N "n$n" > "$TMP/slurmd-n$n.out" 2>&1 &
  PIDS+=($!)
done
idle=0
for _ in $(seq 1 300); do
  idle=$(sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l || echo 0)
  [[ $idle -ge $NODES ]] && break
  sleep 0.2
done
if [[ $idle -lt $NODES ]]; then
  echo "slurm_e2e: only $idle/$NODES nodes idle" >&2
  sinfo -N >&2 || true; tail -5 "$TMP/slurmctld.log" "$TMP"/slurmd-n1.log >&2 || true
  exit 1
fi

job=(--wrap true)
if [[ -n ${POD_COMMAND:-} ]]; then
  printf '#!%s\n' "$POD_COMMAND" > "$TMP/job.sh"
  job=("$TMP/job.sh")
fi
echo "== slurm: $JOBS jobs, $CLIENTS clients, $NODES nodes x $GPUS_PER_NODE fake GPUs, batch_sched_delay=0${POD_COMMAND:+, jobs run $POD_COMMAND}"
cd "$TMP/out"
t0=$(date +%s.%N)
for c in $(seq 0 $((CLIENTS - 1))); do
  (
    n=$(((JOBS - c + CLIENTS - 1) / CLIENTS))  # this client's share
    for _ in $(seq 1 "$n"); do
      sbatch --parsable --gres=gpu:1 --output=/dev/null "${job[@]}" >> "$TMP/ids.$c" 2>> "$TMP/sbatch.err" || true
    done
  ) &
  SUBMITTERS[$c]=$!
done
for p in "${SUBMITTERS[@]}"; do wait "$p"; done
t1=$(date +%s.%N)
acked=$(cat "$TMP"/ids.* | grep -c '^[0-9]' || true)

deadline=$(($(date +%s) + WAIT_S))
while :; do
  done_n=$(grep -c '^JobId=' "$TMP/jobcomp.txt" 2>/dev/null || true); done_n=${done_n:-0}
  [[ $done_n -ge $acked ]] && break
  [[ $(date +%s) -ge $deadline ]] && { echo "slurm_e2e: timed out with $done_n/$acked ended" >&2; break; }
  sleep 0.5
done

python3 - "$TMP/jobcomp.txt" "$acked" "$t0" "$t1" "$JOBS" "$CLIENTS" "$NODES" "${JSON_OUT:-}" <<'PY'
import json, sys, re, datetime
path, acked, t0, t1, jobs, clients, nodes, json_out = sys.argv[1:9]
acked, t0, t1 = int(acked), float(t0), float(t1)
def ts(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").timestamp()
sub, start, end, states = [], [], [], {}
for line in open(path):
    f = dict(re.findall(r'(\w+)=(\S*)', line))
    if 'JobId' not in f: continue
    states[f['JobState']] = states.get(f['JobState'], 0) + 1
    sub.append(ts(f['SubmitTime'])); start.append(ts(f['StartTime'])); end.append(ts(f['EndTime']))
lat = sorted(s - b for s, b in zip(start, sub))
def pct(p):
    if not lat: return 0.0
    import math
    k = max(1, math.ceil(p / 100 * len(lat))) - 1
    return lat[min(k, len(lat) - 1)]
span = (max(start) - min(sub)) if start else 0
out = {
  "system": "slurm", "jobs": int(jobs), "clients": int(clients), "nodes": int(nodes),
  "acknowledged": acked, "ended": len(sub), "states": states,
  "submit_wall_s": t1 - t0, "durable_submissions_per_s": acked / (t1 - t0),
  "job_starts_per_s": len(start) / span if span > 0 else 0.0,
  "job_starts_per_s_after_first_start": len(start) / max(1.0, max(start) - min(start)) if start else 0.0,
  "completions_per_s": len(end) / max(1.0, max(end) - min(sub)) if end else 0.0,
  "submit_to_running_p50_s": pct(50), "submit_to_running_p99_s": pct(99),
  "submit_to_running_max_s": lat[-1] if lat else 0.0,
  "time_resolution_s": 1,
}
print(f"  acknowledged jobs                      {acked:12d}  (ended {len(sub)}: {states})")
print(f"  submissions/s (sbatch returned)        {out['durable_submissions_per_s']:12.0f}  ({t1-t0:.2f} s wall)")
print(f"  job starts/s (first submit..last start){out['job_starts_per_s']:12.1f}")
print(f"  completions/s                          {out['completions_per_s']:12.1f}")
print(f"  submit-to-running p50 / p99            {pct(50):9.0f} s / {pct(99):.0f} s (1 s resolution)")
if json_out:
    with open(json_out, "a") as fh: fh.write(json.dumps(out) + "\n")
PY
[[ -s $TMP/sbatch.err ]] && { echo "sbatch errors (first 3):" >&2; head -3 "$TMP/sbatch.err" >&2; }
exit 0
