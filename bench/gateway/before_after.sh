#!/usr/bin/env bash
# Two gateway builds side by side, in front of the same nginx backend (a 100-byte 200), on
# loopback, in one script, rounds alternating (old, new, old, new, ...) so that other work on the
# machine hits both alike:
#   1. throughput: wrk -t2 -c64 (pool maxInFlight 256: every request dispatched at once);
#   2. queued: wrk -t2 -c256 against a pool of maxInFlight 16 (most requests wait in the queue,
#      watched for a client's close);
#   3. added latency: wrk -t1 -c1 (one request at a time).
# Besides wrk's figures: the gateway's CPU time per request (all its threads' run time from
# /proc/PID/task/*/schedstat over the run, divided by the requests wrk counted), which other
# work on a shared machine disturbs far less than throughput.
# Usage: bench/gateway/before_after.sh OLD_SLUICE NEW_SLUICE [SECONDS_PER_RUN]  (ROUNDS=5)
OLD=$1
NEW=$2
export SLUICE_BIN=$NEW
source "$(dirname "$0")/common.sh"
DUR=${3:-5}
ROUNDS=${ROUNDS:-5}
start_nginx_backend
gw_config() {  # NAME MAX_IN_FLIGHT
  cat >"$WORK/$1.yaml" <<YAML
listen: 127.0.0.1:0
pools:
  - name: main
    backends: [127.0.0.1:$BE]
    maxInFlight: $2
    maxQueueDepth: 1024
    shedThreshold: 1.0
    queueTimeoutMs: 30000
YAML
  echo "$WORK/$1.yaml"
}
# Started here, not in $(start_gateway ...): a PID recorded in a subshell is not stopped on exit.
PORT_FILES=()
GW_PIDS=()
for bin in "$OLD" "$NEW"; do
  for mif in 256 16; do
    pf="$WORK/gw-${#PORT_FILES[@]}.port"
    "$bin" gateway --config "$(gw_config "gw-${#PORT_FILES[@]}" $mif)" --port-file "$pf" \
      >>"$WORK/gateway.log" 2>&1 &
    PIDS+=($!)
    GW_PIDS+=($!)
    PORT_FILES+=("$pf")
  done
done
PORTS=()
for pf in "${PORT_FILES[@]}"; do PORTS+=("$(wait_port "$pf")"); done
for p in "${PORTS[@]}"; do wait_http "$p"; done

python3 - "$DUR" "$ROUNDS" "${PORTS[@]}" "${GW_PIDS[@]}" <<'PY'
import glob, re, statistics, subprocess, sys
dur, rounds = sys.argv[1], int(sys.argv[2])
old_fast, old_q, new_fast, new_q = sys.argv[3:7]
pid_of = dict(zip(sys.argv[3:7], sys.argv[7:11]))
def cpu_ns(pid):
    total = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            total += int(open(f).read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total
def us(v):
    n, u = re.match(r"([\d.]+)(us|ms|s)", v).groups()
    return float(n) * {"us": 1, "ms": 1e3, "s": 1e6}[u]
def wrk(port, t, c):
    cpu0 = cpu_ns(pid_of[port])
    out = subprocess.run(["wrk", f"-t{t}", f"-c{c}", f"-d{dur}s", "--latency",
                          f"http://127.0.0.1:{port}/v1/completions"],
                         capture_output=True, text=True, timeout=int(dur) + 60).stdout
    cpu = cpu_ns(pid_of[port]) - cpu0
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    n = int(re.search(r"(\d+) requests in", out).group(1))
    return (float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            us(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)),
            us(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)),
            cpu / 1000 / max(n, 1),
            int(non2xx.group(1)) if non2xx else 0)
def compare(title, t, c, old_port, new_port):
    res = {"old": [], "new": []}
    for i in range(rounds):
        order = [("old", old_port), ("new", new_port)] if i % 2 == 0 else \
                [("new", new_port), ("old", old_port)]
        for name, port in order:
            res[name].append(wrk(port, t, c))
    print(f"== {title}: wrk -t{t} -c{c}, {rounds} alternating rounds of {dur} s, medians ==")
    print(f"{'build':6} {'req/s':>9} {'p50 us':>8} {'p99 us':>8} {'cpu us/req':>10} {'non-2xx':>8}"
          f"   req/s per round; cpu us/req per round")
    med = {}
    for name in ("old", "new"):
        rs = res[name]
        med[name] = [statistics.median(r[i] for r in rs) for i in range(4)]
        print(f"{name:6} {med[name][0]:9.0f} {med[name][1]:8.0f} {med[name][2]:8.0f} "
              f"{med[name][3]:10.1f} {sum(r[4] for r in rs):8d}   {[round(r[0]) for r in rs]}; "
              f"{[round(r[3], 1) for r in rs]}")
    per = [n[0] / o[0] for o, n in zip(res["old"], res["new"])]
    print(f"new/old req/s: {med['new'][0] / med['old'][0]:.3f} (per round: "
          f"{', '.join(f'{x:.2f}' for x in per)}); p50: {med['new'][1] / med['old'][1]:.3f}, "
          f"p99: {med['new'][2] / med['old'][2]:.3f}, cpu/req: "
          f"{med['new'][3] / med['old'][3]:.3f}\n")
compare("throughput, dispatched at once", 2, 64, old_fast, new_fast)
compare("queued (maxInFlight 16)", 2, 256, old_q, new_q)
compare("latency, one request at a time", 1, 1, old_fast, new_fast)
PY
