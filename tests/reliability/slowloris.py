#!/usr/bin/env python3
"""Slow connections against the server, the agent and the gateway (issue 13), each while a
health probe keeps asking.

The findings: 260 slow unauthenticated connections exhausted the server's thread pool and
/healthz timed out for everyone; the agent stalled on 3 slow connections; the gateway held
10,000 idle connections from one client. Now, for each of the three: SLOW connections that
send half a request header and then one byte a second, from a few loopback addresses, and
meanwhile a probe asks /healthz every 100 ms. Every probe must be answered (within 2 s each),
and a real request must still work while the slow ones are open.

Usage: slowloris.py [SLOW]   (CI: 300 per target)."""
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import BIN, STARTED, Serve, check, finish, free_port, http, job, workdir  # noqa: E402

SLOW = int(sys.argv[1]) if len(sys.argv) > 1 else 300
root, cfg = workdir("slowloris")
procs = []
summary = []


def spawn(argv, log):
    p = subprocess.Popen(argv, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    procs.append(p)
    return p


def wait_http(url, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if http("GET", url, timeout=2)[0] == 200:
            return True
        time.sleep(0.05)
    return False


def attack(name, port, probe_url, request_ok):
    """Opens SLOW slow connections to port, probes probe_url meanwhile; returns a summary."""
    socks, stop = [], threading.Event()
    probes = []  # (status, seconds)

    def probe():
        while not stop.is_set():
            t0 = time.time()
            st = http("GET", probe_url, timeout=5)[0]
            probes.append((st, time.time() - t0))
            time.sleep(0.1)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    for i in range(SLOW):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5,
                                         source_address=("127.0.0.%d" % (10 + i % 4), 0))
            s.sendall(b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            socks.append(s)
        except OSError:
            pass  # refused at a cap: that is the defence too
    held = len(socks)
    for _ in range(3):  # three seconds of dripping
        for s in socks:
            try:
                s.send(b"a")
            except OSError:
                pass
        time.sleep(1)
    still_open = 0
    for s in socks:
        try:
            s.setblocking(False)
            s.recv(1)  # data or b"": answered or closed by the server
        except BlockingIOError:  # nothing yet: the server still holds it open
            still_open += 1
        except OSError:
            pass
    ok_request = request_ok()
    stop.set()
    t.join(timeout=10)
    for s in socks:
        s.close()
    answered = sum(1 for st, dt in probes if st == 200 and dt < 2.0)
    worst = max((dt for _, dt in probes), default=0)
    check(probes and answered == len(probes),
          "%s: every health probe answered within 2 s while %d slow connections were open "
          "(%d/%d, slowest %.2f s)" % (name, held, answered, len(probes), worst))
    check(ok_request, "%s: a real request works meanwhile" % name)
    summary.append("%s: %d slow connections opened (%d still open after 3 s), %d/%d probes "
                   "answered, slowest %.0f ms" % (name, held, still_open, answered, len(probes),
                                                  worst * 1000))


try:
    # 1. The server.
    srv = Serve(os.path.join(root, "data"), cfg)
    check(srv.start(), "server starts")
    attack("server", srv.port, srv.url + "/healthz",
           lambda: http("POST", srv.url + "/v1/jobs", job("during"))[0] == 202)

    # 2. An agent of that server, with fake GPUs.
    aport = free_port()
    spawn([BIN, "agent", "--server", srv.url, "--name", "n0", "--gpus", "fake:4xH100",
           "--state-dir", os.path.join(root, "agent"), "--listen", "127.0.0.1:%d" % aport],
          os.path.join(root, "agent.log"))
    check(wait_http("http://127.0.0.1:%d/healthz" % aport), "agent starts")
    attack("agent", aport, "http://127.0.0.1:%d/healthz" % aport,
           lambda: http("GET", srv.url + "/v1/nodes")[0] == 200)

    # 3. The gateway in front of a test backend.
    bport, gport = free_port(), free_port()
    spawn([BIN, "gateway", "test-backend", "--name", "b", "--service-ms", "1", "--listen",
           "127.0.0.1:%d" % bport], os.path.join(root, "backend.log"))
    gcfg = os.path.join(root, "gateway.yaml")
    with open(gcfg, "w") as f:
        f.write("listen: 127.0.0.1:%d\npools:\n  - name: main\n    backends: [127.0.0.1:%d]\n"
                "    maxInFlight: 8\n    maxQueueDepth: 16\n" % (gport, bport))
    spawn([BIN, "gateway", "--config", gcfg], os.path.join(root, "gateway.log"))
    check(wait_http("http://127.0.0.1:%d/healthz" % gport), "gateway starts")
    attack("gateway", gport, "http://127.0.0.1:%d/healthz" % gport,
           lambda: http("POST", "http://127.0.0.1:%d/v1/completions" % gport, "{}")[0] == 200)
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    for s in STARTED:
        s.stop()
if not os.environ.get("KEEP"):
    __import__("shutil").rmtree(root, ignore_errors=True)
finish("reliability.slowloris", "; ".join(summary))
