#!/usr/bin/env bash
# Gateway vs nginx as plain reverse proxies in front of the same backend (nginx answering a
# 100-byte 200), all on loopback, in one script:
#   1. throughput: wrk -t2 -c64 against the backend directly, nginx's proxy, the gateway;
#   2. added latency: wrk -t1 -c1 (one request at a time), p50/p99 minus the direct figures.
# The gateway does full admission on every request (pool with maxInFlight/maxQueueDepth).
# Usage: bench/gateway/proxy_bench.sh [SECONDS_PER_RUN]   (ROUNDS=3; needs wrk, nginx, curl)
source "$(dirname "$0")/common.sh"
DUR=${1:-5}
ROUNDS=${ROUNDS:-3}
start_nginx_backend
NP=$(free_port)
start_nginx proxy "upstream be { server 127.0.0.1:$BE; keepalive 64; }
  server { listen 127.0.0.1:$NP; location / { proxy_pass http://be;
    proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
wait_http "$NP"
cat >"$WORK/gw.yaml" <<YAML
listen: 127.0.0.1:0
pools:
  - name: main
    backends: [127.0.0.1:$BE]
    maxInFlight: 256
    maxQueueDepth: 1024
    shedThreshold: 0.85
YAML
start_gateway "$WORK/gw.yaml"
GP=$GW_PORT
wait_http "$GP"

# Rounds are interleaved (direct, nginx, gateway, direct, ...) and the median of each target is
# reported, so that a burst of other work on the machine does not decide the comparison.
python3 - "$BE" "$NP" "$GP" "$DUR" "$ROUNDS" <<'PY'
import re, statistics, subprocess, sys
be, np_, gp, dur, rounds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
def us(v):
    n, u = re.match(r"([\d.]+)(us|ms|s)", v).groups()
    return float(n) * {"us": 1, "ms": 1e3, "s": 1e6}[u]
def wrk(port, t, c):
    out = subprocess.run(["wrk", f"-t{t}", f"-c{c}", f"-d{dur}s", "--latency",
                          f"http://127.0.0.1:{port}/v1/completions"],
                         capture_output=True, text=True, timeout=int(dur) + 60).stdout
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return (float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            us(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)),
            us(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)),
            int(non2xx.group(1)) if non2xx else 0)
targets = [("backend direct", be), ("nginx proxy (1 worker)", np_), ("sluice gateway (1 thread)", gp)]
def run(t, c):
    res = {name: [] for name, _ in targets}
    for _ in range(rounds):
        for name, port in targets:
            res[name].append(wrk(port, t, c))
    med = {}
    for name, rs in res.items():
        med[name] = tuple(statistics.median(r[i] for r in rs) for i in range(3)) + (sum(r[3] for r in rs),)
        med[name + " all"] = [round(r[0]) for r in rs]
    return med
print(f"== throughput: wrk -t2 -c64, {rounds} interleaved rounds of {dur} s, medians ==")
m = run(2, 64)
print(f"{'target':28} {'req/s':>9} {'p50 us':>8} {'p99 us':>8} {'non-2xx':>8}   req/s per round")
for name, _ in targets:
    r = m[name]
    print(f"{name:28} {r[0]:9.0f} {r[1]:8.0f} {r[2]:8.0f} {r[3]:8d}   {m[name + ' all']}")
ratio = m[targets[2][0]][0] / m[targets[1][0]][0]
rounds_ratio = [g / n for g, n in zip(m[targets[2][0] + " all"], m[targets[1][0] + " all"])]
print(f"gateway / nginx req/s: {ratio:.2f}x (per round: {', '.join(f'{x:.2f}' for x in rounds_ratio)})")
print()
print(f"== added latency: wrk -t1 -c1 (one request at a time), {rounds} rounds of {dur} s, medians ==")
m = run(1, 1)
d = m[targets[0][0]]
print(f"{'target':28} {'req/s':>9} {'p50 us':>8} {'p99 us':>8} {'added p50':>10} {'added p99':>10}")
for name, _ in targets:
    r = m[name]
    add50 = "-" if r is d else f"{r[1] - d[1]:.0f}"
    add99 = "-" if r is d else f"{r[2] - d[2]:.0f}"
    print(f"{name:28} {r[0]:9.0f} {r[1]:8.0f} {r[2]:8.0f} {add50:>10} {add99:>10}")
PY
