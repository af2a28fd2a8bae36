#!/usr/bin/env bash
# Job deadlines end to end (issue 19): `sluice run --complete-within` and a submitted document
# with spec.completeWithin reach a real `sluice up`; `sluice jobs` shows a DEADLINE column and
# `sluice explain` the deadline; once the jobs end, /metrics counts one met and one missed
# (sluice_job_deadlines_total, checked by `promtool check metrics` where installed); hostile
# values (a negative duration, a malformed or past spec.completeBy) are refused with the field
# named and nothing submitted; an absolute `run --complete-by` survives a restart of the server
# (the store's job codec).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
: "${SLUICE_BIN:?}"
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
tmp=$(mktemp -d)
chmod 711 "$tmp"
cd "$tmp"  # pods (another uid) start in the submitter's directory: one they may enter
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- up log" >&2; cat "$tmp/up.log" >&2 || true; exit 1; }
sluice() { "$SLUICE_BIN" "$@"; }
job_id() { sed -n 's/^submitted job \([0-9]*\) .*/\1/p' "$1"; }

# A free port each start: the old one may still be held a moment after a restart.
start_up() {
  port=$(free_port)
  export SLUICE_SERVER=http://127.0.0.1:$port
  "$SLUICE_BIN" up --nodes 1 --gpus fake:2xH100 --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
    --heartbeat-ms 100 >>"$tmp/up.log" 2>&1 &
  pid=$!
  wait_ready "$SLUICE_SERVER" 20 || fail "not ready"
}
start_up

# 1. A deadline it meets (2 h from submission) and one it misses (2 s, running 6 s).
sluice run --cpu 1 --name on-time --complete-within 2h -- true >"$tmp/run1" || fail "run: $(cat "$tmp/run1")"
id1=$(job_id "$tmp/run1")
cat >"$tmp/late.yaml" <<YAML
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: late}
spec:
  cpu: 1
  walltime: 1m
  completeWithin: 2s
  command: [sleep, "6"]
YAML
sluice submit "$tmp/late.yaml" >"$tmp/run2" || fail "submit: $(cat "$tmp/run2")"
id2=$(job_id "$tmp/run2")
[[ -n $id1 && -n $id2 ]] || fail "job ids: $(cat "$tmp/run1" "$tmp/run2")"
complete_by() {
  curl -fsS "$SLUICE_SERVER/v1/jobs/$1" |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(j.get("job", j)["complete_by"] or "")'
}

# 2. Shown by `sluice jobs` (a DEADLINE column) and `sluice explain`; the JobView's complete_by
#    is completeWithin counted from the submission, in RFC 3339.
sluice jobs >"$tmp/jobs"
head -1 "$tmp/jobs" | grep -q "DEADLINE" || fail "DEADLINE column: $(cat "$tmp/jobs")"
by2=$(complete_by "$id2")
[[ $by2 =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$ ]] || fail "JobView complete_by: '$by2'"
sluice explain "$id2" >"$tmp/explain2"
grep -qF "Deadline: complete by $by2" "$tmp/explain2" || fail "explain: $(cat "$tmp/explain2")"

# 3. Both end; the verdicts in the view and in /metrics.
for _ in $(seq 1 600); do
  states=$(sluice jobs 2>/dev/null | awk -v a="$id1" -v b="$id2" '$1==a||$1==b' | grep -c succeeded || true)
  [[ $states == 2 ]] && break
  sleep 0.1
done
[[ $states == 2 ]] || fail "jobs did not succeed: $(sluice jobs)"
sluice jobs >"$tmp/jobs_done"
grep -qE "^ *$id1 .* met " "$tmp/jobs_done" || fail "met: $(cat "$tmp/jobs_done")"
grep -qE "^ *$id2 .* missed " "$tmp/jobs_done" || fail "missed: $(cat "$tmp/jobs_done")"
sluice explain "$id2" | grep -q "(missed)" || fail "explain after the end"
curl -fsS "$SLUICE_SERVER/metrics" >"$tmp/metrics.txt" || fail "GET /metrics"
grep -qx 'sluice_job_deadlines_total{cluster_queue="default",priority_class="",outcome="met"} 1' "$tmp/metrics.txt" ||
  fail "met counter: $(grep deadlines "$tmp/metrics.txt")"
grep -qx 'sluice_job_deadlines_total{cluster_queue="default",priority_class="",outcome="missed"} 1' "$tmp/metrics.txt" ||
  fail "missed counter: $(grep deadlines "$tmp/metrics.txt")"
if command -v promtool >/dev/null 2>&1; then
  promtool check metrics <"$tmp/metrics.txt" || fail "promtool check metrics"
else
  echo "note: promtool not installed: exposition not checked by promtool"
fi

# 4. Hostile values: the field named, nothing submitted.
before=$(sluice jobs | wc -l)
set +e
sluice run --cpu 1 --complete-within -5m -- true 2>"$tmp/err1"; rc1=$?
sed 's/completeWithin: .*/completeBy: "not-a-time"/' "$tmp/late.yaml" >"$tmp/bad.yaml"
sluice submit "$tmp/bad.yaml" 2>"$tmp/err2"; rc2=$?
sed 's/completeWithin: .*/completeBy: "2001-01-01T00:00:00Z"/' "$tmp/late.yaml" >"$tmp/past.yaml"
sluice submit "$tmp/past.yaml" 2>"$tmp/err3"; rc3=$?
set -e
[[ $rc1 == 1 ]] && grep -q -- "--complete-within" "$tmp/err1" || fail "negative: $rc1 $(cat "$tmp/err1")"
[[ $rc2 == 1 ]] && grep -q "spec.completeBy" "$tmp/err2" || fail "malformed: $rc2 $(cat "$tmp/err2")"
[[ $rc3 == 1 ]] && grep -q "spec.completeBy.*not after the job's submission" "$tmp/err3" ||
  fail "in the past: $rc3 $(cat "$tmp/err3")"
[[ $(sluice jobs | wc -l) == "$before" ]] || fail "a refused job was kept"

# 5. An absolute deadline (--complete-by) on a held job survives a restart (the store's codec).
by3=$(python3 -c 'import datetime as d; print((d.datetime.now(d.timezone.utc)+d.timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ"))')
sluice run --cpu 1 --gpus 2 --name waits --hold --complete-by "$by3" -- true >"$tmp/run3" ||
  fail "held run: $(cat "$tmp/run3")"
id3=$(job_id "$tmp/run3")
[[ $(complete_by "$id3") == "$by3" ]] || fail "complete_by before the restart: $(complete_by "$id3")"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
start_up
[[ $(complete_by "$id3") == "$by3" ]] || fail "complete_by after the restart: $(complete_by "$id3")"
echo "deadlines: ok"
