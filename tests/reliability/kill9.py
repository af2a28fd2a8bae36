#!/usr/bin/env python3
"""kill -9 of `sluice serve` at random points during concurrent submission (issue 13).

Four clients submit jobs with unique names while the server is killed with SIGKILL and
restarted on the same data dir, KILLS times at seeded random moments. Every 202 is written to
a ledger (id -> name). At the end every acknowledged job must be there under its name
(0 lost), no id may have been acknowledged twice (0 duplicated), and no id may name another
submission than the one it acknowledged (0 ids reused). Jobs whose answer never came (the
kill cut the connection) may or may not exist: they were never acknowledged.

Usage: kill9.py [KILLS] [SEED]   (CI: 20; the documented long run: 100)."""
import random
import sys
import threading
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
from common import Ledger, Serve, all_jobs, check, finish, http, job, workdir  # noqa: E402

KILLS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 1313
CLIENTS = 4

rng = random.Random(SEED)
print("kill9: %d kills, seed %d" % (KILLS, SEED), flush=True)
data, cfg = workdir("kill9")
srv = Serve(data + "/data", cfg)
check(srv.start(), "server starts")

ledger = Ledger()
stop = threading.Event()


def client(c):
    seq = 0
    while not stop.is_set():
        name = "c%d-%d" % (c, seq)
        seq += 1
        status, body = http("POST", srv.url + "/v1/jobs", job(name), timeout=10)
        if not ledger.record(status, body, name):
            time.sleep(0.02)  # the server is down or restarting


threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(CLIENTS)]
for t in threads:
    t.start()
t0 = time.time()
for k in range(KILLS):
    time.sleep(rng.uniform(0.05, 0.6))
    srv.kill9()
    if not srv.start():
        check(False, "restart %d: %s" % (k + 1, srv.proc.stderr.read()[-500:]))
        break
time.sleep(0.5)
stop.set()
for t in threads:
    t.join(timeout=30)
elapsed = time.time() - t0

# One more crash and restart, then read everything back.
srv.kill9()
check(srv.start(), "final restart")
status, listed = all_jobs(srv.url)
check(status == 200, "job list after the last restart")
jobs = {j["id"]: j["name"] for j in listed}
srv.stop()

check(len(ledger) > KILLS, "submissions were acknowledged between kills (%d)" % len(ledger))
lost = ledger.verify(jobs)
if not __import__("os").environ.get("KEEP"):
    __import__("shutil").rmtree(data, ignore_errors=True)
finish("reliability.kill9",
       "%d kills in %.1f s, %d requests, %d acknowledged, %d lost, %d duplicated, "
       "%d stored without an answer" % (KILLS, elapsed, ledger.sent, len(ledger), len(lost),
                                        len(ledger.dups), len(jobs) - len(ledger)))
