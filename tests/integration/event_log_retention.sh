#!/usr/bin/env bash
# The event log's retention end to end (issue 41): a `sluice serve` with a tiny
# --event-log-max-bytes, --event-log-keep 2 and --events-keep 3 rotates events.jsonl (never
# more than two rotated files), trims the database's events, and after a restart `sluice
# history` still lists every job (a live job's row comes from its record when its submit event
# was trimmed) with the states it had. A lost database is still noticed across the rotation,
# and --fresh-store continues the ids after the rotated files'.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/ready.sh"  # wait_ready
: "${SLUICE_BIN:?}"
command -v curl >/dev/null || { echo "curl missing: skip"; exit 77; }
tmp=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- server log" >&2; cat "$tmp/serve.log" >&2 || true; exit 1; }
sluice() { "$SLUICE_BIN" "$@"; }
job_id() { sed -n 's/^submitted job \([0-9]*\) .*/\1/p' "$1"; }

src=${SLUICE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
config=(--config "$src/examples/demo/cluster.yaml" --config "$src/examples/demo/queues.yaml")
# serve [FLAGS...]: on a fresh port each time (the last one may still be in TIME_WAIT).
serve() {
  port=$(free_port)
  export SLUICE_SERVER=http://127.0.0.1:$port
  "$SLUICE_BIN" serve "${config[@]}" --listen "127.0.0.1:$port" --data-dir "$tmp/data" \
    --event-log-max-bytes 400 --event-log-keep 2 --events-keep 3 "$@" >>"$tmp/serve.log" 2>&1 &
  pid=$!
  wait_ready "$SLUICE_SERVER" 10 || fail "server not ready"
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }

# 1. Eight pending jobs (no agent: nothing runs), one of them cancelled.
serve
ids=()
for i in 1 2 3 4 5 6 7 8; do
  sluice run --queue train --namespace team-a --gpus 1 --name "j$i" -- true >"$tmp/r" || fail "run: $(cat "$tmp/r")"
  ids+=("$(job_id "$tmp/r")")
done
sluice cancel "${ids[0]}" >/dev/null || fail "cancel"
stop
logs=$(cd "$tmp/data" && ls events.jsonl*)
[[ $logs == $'events.jsonl\nevents.jsonl.1\nevents.jsonl.2' ]] || fail "rotated files: $logs"
for f in "$tmp"/data/events.jsonl*; do
  [[ $(stat -c %s "$f") -lt 1200 ]] || fail "$f: $(stat -c %s "$f") bytes, rotated at 400"
done

# 2. A restart: the history still has every job (the table kept only the newest 3 events).
serve
sluice history --json >"$tmp/h" || fail "history: $(cat "$tmp/h")"
python3 - "$tmp/h" "${ids[@]}" <<'PY' || fail "history after the restart: $(cat "$tmp/h")"
import json, sys
rows = {r["id"]: r for r in json.load(open(sys.argv[1]))["jobs"]}
ids = [int(x) for x in sys.argv[2:]]
assert sorted(rows) == sorted(ids), (sorted(rows), ids)
assert rows[ids[0]]["state"] == "cancelled", rows[ids[0]]
assert all(rows[i]["state"] == "pending" for i in ids[1:]), rows
assert rows[ids[7]]["name"] == "j8", rows[ids[7]]
PY
stop

# 3. The database lost: refused although events.jsonl may be empty after a rotation; afresh,
#    ids continue after the rotated files' highest.
rm -f "$tmp"/data/sluice.db*
if "$SLUICE_BIN" serve "${config[@]}" --listen 127.0.0.1:0 --data-dir "$tmp/data" \
  >"$tmp/refused" 2>&1; then fail "a lost database must be refused"; fi
grep -q "sluice.db is missing" "$tmp/refused" || fail "refusal: $(cat "$tmp/refused")"
serve --fresh-store
sluice run --queue train --namespace team-a --gpus 1 -- true >"$tmp/r" || fail "run: $(cat "$tmp/r")"
[[ $(job_id "$tmp/r") -gt ${ids[7]} ]] || fail "ids continue: $(cat "$tmp/r") after ${ids[7]}"
echo "event log retention: ok"
