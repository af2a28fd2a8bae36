#!/usr/bin/env python3
"""Failover of replicated `sluice serve --store etcd://` (issue 16, docs/ha.md).

A 3-member etcd cluster and 3 sluice replicas on free loopback ports. Four clients submit jobs
with unique names through the replicas' URLs (a standby answers 503 not_leader: the client
tries the next, with a new name) while the leading replica is killed with SIGKILL, KILLS times, and restarted
(it comes back as a standby); a replica that stepped down (exit 3) is restarted too. Once, one
etcd member is killed as well: the service goes on with two. Every 202 goes into a ledger
(id -> name). At the end: every acknowledged job is there under its name (0 lost), no id was
acknowledged twice (0 duplicated), no submission is stored twice.

Skipped (exit 77) where `etcd` is not installed. Usage: failover_etcd.py [KILLS] [SEED]."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import Serve, check, finish, free_port, http, job, wait_for, workdir  # noqa: E402

if not shutil.which("etcd"):
    print("reliability.failover_etcd: skipped: etcd is not installed "
          "(Debian etcd-server; scripts/deps.sh installs it)")
    sys.exit(77)

KILLS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 1616
CLIENTS = 4
rng = random.Random(SEED)
data, cfg = workdir("failover")


class Etcd:
    """One member of a 3-member etcd cluster, stopped by its PID."""

    def __init__(self, i, peers, clients):
        self.i, self.peers, self.clients = i, peers, clients
        self.proc = None

    def start(self):
        cluster = ",".join("m%d=http://127.0.0.1:%d" % (k, p) for k, p in enumerate(self.peers))
        me_c = "http://127.0.0.1:%d" % self.clients[self.i]
        me_p = "http://127.0.0.1:%d" % self.peers[self.i]
        log = open(os.path.join(data, "etcd%d.log" % self.i), "a")
        self.proc = subprocess.Popen(
            ["etcd", "--name", "m%d" % self.i, "--data-dir", os.path.join(data, "etcd%d" % self.i),
             "--listen-client-urls", me_c, "--advertise-client-urls", me_c,
             "--listen-peer-urls", me_p, "--initial-advertise-peer-urls", me_p,
             "--initial-cluster", cluster, "--initial-cluster-state", "new",
             "--initial-cluster-token", "sluice-failover-%d" % os.getpid()],
            stdout=log, stderr=log)

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)


peers = [free_port() for _ in range(3)]
client_ports = [free_port() for _ in range(3)]
members = [Etcd(i, peers, client_ports) for i in range(3)]
for m in members:
    m.start()
try:
    store = "etcd://" + ",".join("127.0.0.1:%d" % p for p in client_ports) + "/failover"
    check(wait_for(lambda: http("GET", "http://127.0.0.1:%d/health" % client_ports[0],
                                timeout=2)[0] == 200, 30, "etcd cluster health") is not None,
          "the etcd cluster is up")

    replicas = [Serve(os.path.join(data, "r%d" % i), cfg, extra=["--store", store])
                for i in range(3)]
    for r in replicas:
        check(r.start(), "replica %s starts" % r.url)

    def leader():
        for r in replicas:
            if http("GET", r.url + "/readyz", timeout=2)[0] == 200:
                return r
        return None

    first = wait_for(leader, 30, "a leader")
    check(first is not None, "one replica leads")

    ledger, dups, sent = {}, [], [0]
    lock = threading.Lock()
    stop = threading.Event()

    def client(c):
        seq, at = 0, c
        while not stop.is_set():
            # A new name for every attempt: an attempt cut short by a kill may have been stored
            # without an answer, and must not be mistaken for a duplicate of the next one.
            name = "c%d-%d" % (c, seq)
            seq += 1
            status, body = http("POST", replicas[at % 3].url + "/v1/jobs", job(name), timeout=15)
            with lock:
                sent[0] += 1
            if status != 202:
                at += 1  # a standby (503 not_leader), a dead or a deposed replica: the next one
                time.sleep(0.02)
                continue
            ids = [j["id"] for j in json.loads(body)["jobs"]]
            with lock:
                for i in ids:
                    if i in ledger:
                        dups.append((i, ledger[i], name))
                    ledger[i] = name

    threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(CLIENTS)]
    for t in threads:
        t.start()
    t0 = time.time()
    takeovers = []
    for k in range(KILLS):
        time.sleep(rng.uniform(0.3, 1.0))
        old = leader()
        if old is None:
            old = wait_for(leader, 20, "a leader before kill %d" % (k + 1))
            if old is None:
                break
        if k == 1:
            members[2].kill9()  # one etcd member down: two of three keep the quorum
        killed_at = time.time()
        old.kill9()
        new = wait_for(lambda: (lambda l: l if l is not None and l is not old else None)(leader()),
                       20, "a new leader after kill %d" % (k + 1))
        if new is None:
            break
        takeovers.append(time.time() - killed_at)
        check(old.start(), "killed replica %s restarts as a standby" % old.url)
        for r in replicas:  # a replica that stepped down (exit 3) comes back as a standby
            if r.proc.poll() is not None:
                check(r.proc.returncode == 3, "replica %s exited only to step down (status %s)"
                      % (r.url, r.proc.returncode))
                r.start()
        if k == 1:
            members[2].start()
    with lock:
        before = len(ledger)
    time.sleep(1.0)
    with lock:
        check(len(ledger) > before, "submissions acknowledged after the last failover")
    stop.set()
    for t in threads:
        t.join(timeout=30)
    elapsed = time.time() - t0

    final = wait_for(leader, 20, "a leader at the end")
    status, body = http("GET", final.url + "/v1/jobs?limit=100000000", timeout=60) if final else (0, "")
    check(status == 200, "job list from the leader")
    jobs = {j["id"]: j["name"] for j in json.loads(body)["jobs"]} if status == 200 else {}
    lost = [i for i in ledger if i not in jobs]
    reused = [i for i in ledger if i in jobs and jobs[i] != ledger[i]]
    names = {}
    for i, n in jobs.items():
        names.setdefault(n, []).append(i)
    twice = [n for n, ids in names.items() if len(ids) > 1]
    for r in replicas:
        r.stop()

    check(len(takeovers) == KILLS, "a new leader after each of the %d kills" % KILLS)
    check(len(ledger) > KILLS, "submissions were acknowledged between kills (%d)" % len(ledger))
    check(not lost, "0 acknowledged jobs lost (lost: %s)" % lost[:10])
    check(not dups, "0 ids acknowledged twice (%s)" % dups[:5])
    check(not reused, "0 ids reused for another submission (%s)" % reused[:10])
    check(not twice, "no submission stored twice (%s)" % twice[:5])
finally:
    for m in members:
        m.kill9()
finish("reliability.failover_etcd",
       "%d kills in %.1f s, takeover %s s, %d requests, %d acknowledged, %d lost, %d duplicated"
       % (KILLS, elapsed, ",".join("%.1f" % t for t in takeovers), sent[0], len(ledger),
          len(lost), len(dups)))
