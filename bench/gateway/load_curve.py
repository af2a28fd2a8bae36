#!/usr/bin/env python3
"""Offered load (50% .. 300% of capacity) against admitted throughput, admitted p50/p99 latency,
fallback share and shed/reject rates, for shed thresholds 0.5, 0.85 and 0.95.

Pool `main`: 2 test backends x 4 slots x 40 ms = 200 req/s; maxQueueDepth 64, queueTimeoutMs
2000. With --fallback (default on), a fallback pool `small` (1 backend x 2 slots x 20 ms =
100 req/s). Open-loop Poisson arrivals from `sluice gateway replay`, class mix critical 20% /
standard 50% / sheddable 30%.

Usage: bench/gateway/load_curve.py [--seconds 6] [--no-fallback]
"""
import argparse
import sys

sys.dont_write_bytecode = True  # keep bench/gateway free of __pycache__

from benchlib import HEADER, Procs, replay, row

CAPACITY = 200.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--no-fallback", action="store_true")
    ap.add_argument("--thresholds", default="0.5,0.85,0.95")
    ap.add_argument("--loads", default="0.5,1,1.5,2,2.5,3")
    a = ap.parse_args()
    with Procs() as procs:
        b1 = procs.backend("main-1", 40, 4)
        b2 = procs.backend("main-2", 40, 4)
        small = procs.backend("small", 20, 2)
        print(f"pool main: capacity {CAPACITY:.0f} req/s (2 backends x 4 slots / 40 ms), "
              f"maxQueueDepth 64; fallback: {'none' if a.no_fallback else 'small, 100 req/s'}; "
              f"{a.seconds:.0f} s per point; classes critical/standard/sheddable 20/50/30%")
        print(HEADER)
        for thr in a.thresholds.split(","):
            fallback = "" if a.no_fallback else "    fallback: small\n"
            p, gw = procs.gateway(
                "listen: 127.0.0.1:0\n"
                "anonymous: {class: standard, maxClass: critical}\n"
                "pools:\n"
                f"  - name: main\n    backends: [127.0.0.1:{b1}, 127.0.0.1:{b2}]\n"
                f"    maxInFlight: 4\n    maxQueueDepth: 64\n    shedThreshold: {thr}\n"
                f"    queueTimeoutMs: 2000\n{fallback}"
                f"  - name: small\n    backends: [127.0.0.1:{small}]\n"
                f"    maxInFlight: 2\n    maxQueueDepth: 16\n    queueTimeoutMs: 2000\n")
            for load in (float(x) for x in a.loads.split(",")):
                r = replay(gw, "--rate", str(load * CAPACITY), "--duration", str(a.seconds),
                           "--class-mix", "critical=0.2,standard=0.5,sheddable=0.3",
                           "--seed", "42")
                print(row(thr, load, r), flush=True)
            procs.stop(p)


if __name__ == "__main__":
    main()
