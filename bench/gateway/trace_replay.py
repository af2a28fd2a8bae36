#!/usr/bin/env python3
"""Replay the Azure LLM inference traces (bursty `code`, steady `conv`) through the gateway,
time-compressed so that the mean arrival rate is 1x, 2x and 3x the pool's capacity, with each
request's backend service time following its token counts:
    service = 2 ms + 10 us x context tokens + 250 us x generated tokens
(code: mean 29 ms; conv: mean 66 ms). Pool `main`: 2 backends x 2 slots; capacity = 4 / mean
service. Fallback `small`: 1 backend x 2 slots running 4x faster (a smaller model).

Traces are read from $SLUICE_TRACES/inference (default ../shared/traces relative to the
repository root); the benchmark skips when they are absent.

Usage: bench/gateway/trace_replay.py [--seconds 20] [--threshold 0.85] [--no-fallback]
"""
import argparse
import sys

sys.dont_write_bytecode = True  # keep bench/gateway free of __pycache__
import os

from benchlib import HEADER, ROOT, Procs, replay, row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0, help="replay at most this long")
    ap.add_argument("--threshold", default="0.85")
    ap.add_argument("--no-fallback", action="store_true")
    ap.add_argument("--loads", default="1,2,3")
    a = ap.parse_args()
    traces = os.environ.get("SLUICE_TRACES") or os.path.join(ROOT, "..", "shared", "traces")
    files = {n: os.path.join(traces, "inference", f"AzureLLMInferenceTrace_{n}.csv")
             for n in ("code", "conv")}
    missing = [f for f in files.values() if not os.path.exists(f)]
    if missing:
        print(f"skipping: traces not found ({', '.join(missing)}); set SLUICE_TRACES "
              "(originals: github.com/Azure/AzurePublicDataset, data/)")
        return 0
    with Procs() as procs:
        b1 = procs.backend("main-1", 10, 2)
        b2 = procs.backend("main-2", 10, 2)
        small = procs.backend("small", 10, 2, scale=0.25)
        fallback = "" if a.no_fallback else "    fallback: small\n"
        _, gw = procs.gateway(
            "listen: 127.0.0.1:0\n"
            "anonymous: {class: standard, maxClass: critical}\n"
            "pools:\n"
            f"  - name: main\n    backends: [127.0.0.1:{b1}, 127.0.0.1:{b2}]\n"
            f"    maxInFlight: 2\n    maxQueueDepth: 32\n    shedThreshold: {a.threshold}\n"
            f"    queueTimeoutMs: 2000\n{fallback}"
            f"  - name: small\n    backends: [127.0.0.1:{small}]\n"
            f"    maxInFlight: 2\n    maxQueueDepth: 16\n    queueTimeoutMs: 2000\n")
        for name, path in files.items():
            print(f"\ntrace {name}: shedThreshold {a.threshold}, fallback "
                  f"{'none' if a.no_fallback else 'small (4x faster)'}, at most {a.seconds:.0f} s")
            print(f"{'':>11}{'capacity/s':>10} {'compress':>8} {'sent':>6}  " + HEADER)
            for load in (float(x) for x in a.loads.split(",")):
                r = replay(gw, "--trace", path, "--slots", "4", "--load", str(load),
                           "--max-duration", str(a.seconds),
                           "--class-mix", "critical=0.2,standard=0.5,sheddable=0.3",
                           "--seed", "42")
                print(f"{name:>4} {load:>4.0f}x  {r['capacity_rps']:10.1f} "
                      f"{r['compression']:7.0f}x {r['sent']:6d}  " + row(a.threshold, load, r),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
