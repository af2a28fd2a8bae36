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
# allowed), VARIANTS (several option sets, space-separated, each measured in turn; "default":
# none), ROUNDS (1: SQLite and every variant, alternating, this many times), ETCD_MEMBERS (3),
# SLUICE_BIN, SERVE_BENCH. Exit 77 where etcd is not installed.
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
# ROUNDS times: SQLite, then etcd with each option set of VARIANTS (default: ETCD_OPTS alone),
# alternating, so that a machine loaded by others weighs on every store alike.
read -r -a variants <<< "${VARIANTS:-${ETCD_OPTS:-default}}"
labels=()
for r in $(seq 1 "${ROUNDS:-1}"); do
  run "sqlite-$r" ETCD=
  labels+=("sqlite-$r")
  for v in $(seq 0 $((${#variants[@]} - 1))); do
    opts=${variants[$v]}
    [[ $opts == default ]] && opts=
    run "etcd$v-$r" ETCD="$ETCD_EP" ETCD_OPTS="$opts"
    labels+=("etcd$v-$r")
  done
done
python3 - "$TMP" "$MEMBERS" "$BATCH" "${VARIANTS:-${ETCD_OPTS:-default}}" "${labels[@]}" <<'PY'
import json, statistics, sys
tmp, members, batch, variants = sys.argv[1:5]
variants = variants.split()
rows = {}
for label in sys.argv[5:]:
    with open("%s/%s.json" % (tmp, label)) as f:
        rows[label] = json.loads(f.read().strip().splitlines()[-1])
rate = lambda l: rows[l]["durable_submissions_per_s"]
rounds = sorted({int(l.rsplit("-", 1)[1]) for l in rows})
print("durable submissions/s, batch %s, etcd %s members; per round: SQLite, then each etcd variant "
      "(x SQLite of its round)" % (batch, members))
for r in rounds:
    s = rate("sqlite-%d" % r)
    print("round %d: SQLite %.0f; " % (r, s) + "; ".join(
        "etcd %s %.0f (%.2fx, ack p50/p99 %.0f/%.0f ms)" % (
            v, rate("etcd%d-%d" % (i, r)), rate("etcd%d-%d" % (i, r)) / s,
            rows["etcd%d-%d" % (i, r)]["ack_latency_p50_ms"],
            rows["etcd%d-%d" % (i, r)]["ack_latency_p99_ms"]) for i, v in enumerate(variants)))
def summary(name, xs):
    return "%s: median %.0f, min %.0f, max %.0f" % (name, statistics.median(xs), min(xs), max(xs))
print(summary("SQLite", [rate("sqlite-%d" % r) for r in rounds]))
for i, v in enumerate(variants):
    print(summary("etcd %s" % v, [rate("etcd%d-%d" % (i, r)) for r in rounds]))
PY
