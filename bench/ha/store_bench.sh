#!/usr/bin/env bash
# Durable submissions on the etcd store against SQLite, in one run (issue 16): a 3-member etcd
# cluster on free loopback ports (its data beside SQLite's, under WORK_ROOT), then
# bench/e2e/sluice_e2e.sh in ingest mode (no agents: the server's durable submission rate
# alone) once on SQLite and once on etcd, JOBS jobs from CLIENTS clients in requests of BATCH
# jobs. A 202 means committed: SQLite's fsync, or etcd's quorum commit (the txn answered).
#
#   bench/ha/store_bench.sh          (JOBS=20000 CLIENTS=8 BATCH=100)
#
# Env: JOBS, CLIENTS, BATCH, ETCD_OPTS (the store URL's options, e.g. "max-txn-ops=1024"; this
# script starts etcd with --max-txn-ops 1024 --max-request-bytes 8388608 so larger txns are
# allowed), ETCD_MEMBERS (3), SLUICE_BIN, SERVE_BENCH. Exit 77 where etcd is not installed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
command -v etcd >/dev/null || { echo "store_bench: skipped: etcd is not installed (scripts/deps.sh test)"; exit 77; }
JOBS=${JOBS:-20000} CLIENTS=${CLIENTS:-8} BATCH=${BATCH:-100} MEMBERS=${ETCD_MEMBERS:-3}
TMP=$(mktemp -d "${WORK_ROOT:-/tmp}/sluice-store-bench.XXXXXX")
PIDS=()
cleanup() {  # by PID only: what this script started
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
clients=() peers=() cluster=
for i in $(seq 0 $((MEMBERS - 1))); do
  clients+=("$(free_port)") peers+=("$(free_port)")
  cluster+="${cluster:+,}m$i=http://127.0.0.1:${peers[$i]}"
done
for i in $(seq 0 $((MEMBERS - 1))); do
  etcd --name "m$i" --data-dir "$TMP/etcd$i" \
    --listen-client-urls "http://127.0.0.1:${clients[$i]}" --advertise-client-urls "http://127.0.0.1:${clients[$i]}" \
    --listen-peer-urls "http://127.0.0.1:${peers[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${peers[$i]}" \
    --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "store-bench-$$" \
    --max-txn-ops 1024 --max-request-bytes 8388608 > "$TMP/etcd$i.log" 2>&1 &
  PIDS+=($!)
done
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:${clients[0]}/health" 2>/dev/null | grep -q true && break
  sleep 0.2
done
ETCD_EP=$(printf '127.0.0.1:%s,' "${clients[@]}")
ETCD_EP=${ETCD_EP%,}

run() {  # $1: label; the rest: env for sluice_e2e.sh
  local label=$1; shift
  env "$@" INGEST=1 JOBS="$JOBS" CLIENTS="$CLIENTS" BATCHES="$BATCH" WORK_ROOT="$TMP" \
    PORT="$(free_port)" JSON_OUT="$TMP/$label.json" bash "$ROOT/bench/e2e/sluice_e2e.sh" |
    sed "s/^== sluice:/== sluice ($label):/"
}
run sqlite ETCD=
run etcd ETCD="$ETCD_EP" ETCD_OPTS="${ETCD_OPTS:-}"
python3 - "$TMP/sqlite.json" "$TMP/etcd.json" "$MEMBERS" "$BATCH" <<'PY'
import json, sys
s, e = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:3])
a, b = s["durable_submissions_per_s"], e["durable_submissions_per_s"]
print("durable submissions/s, batch %s: SQLite %.0f, etcd (%s members) %.0f: etcd/SQLite %.2fx"
      % (sys.argv[4], a, sys.argv[3], b, b / a if a else float("nan")))
print("ack p50/p99 ms: SQLite %.1f/%.1f, etcd %.1f/%.1f" % (
    s["ack_latency_p50_ms"], s["ack_latency_p99_ms"], e["ack_latency_p50_ms"], e["ack_latency_p99_ms"]))
PY
