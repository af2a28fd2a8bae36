#!/usr/bin/env python3
"""Failover benchmark of replicated `sluice serve --store etcd://` (issue 16, docs/ha.md).

A 3-member etcd cluster, 3 sluice replicas and one agent process (4 nodes x 4 fake H100, given
every replica's URL) on free loopback ports. Clients submit short one-GPU jobs at a steady rate
through the replicas' URLs while the leading replica is killed with SIGKILL, KILLS times (and
restarted: it comes back as a standby). Two long jobs run through every failover.

Measured per kill:
  - takeover: kill -> a replica answers /readyz 200 (it holds the lease and loaded the jobs);
  - first decision: kill -> the first "start" event (a placement) in etcd's event log after the
    kill: the new leader has the agents back and schedules again. Reported p50 / p99 / max.
Checked at the end (against a ledger of every 202):
  - 0 acknowledged jobs lost, 0 ids acknowledged twice, no submission stored twice;
  - every job ran once: one start line in its pod's log (the pods print it), one "start" and one
    "submit" event per job in the event log (the log is complete across the failovers);
  - 0 double-assigned GPUs: no two pods' [start, end] on one node's GPU overlap (the pods print
    their CUDA_VISIBLE_DEVICES and clock);
  - the long jobs' pods never restarted (attempts, admit time, one start line each).

  bench/ha/failover_bench.py [KILLS=10] [SEED=1616]
Env: SLUICE_BIN (build/sluice), RATE (submissions/s, 30), LEASE (the leader lease s, 2),
FREEZE=1 (SIGSTOP the leader instead of SIGKILL, as a dead machine: its port refuses nothing,
the standbys revoke its lease once it was silent for silent-leader-ms and missed a renewal, or
wait for the lease to expire; agents leave it for the leader the standbys name, clients wait
for their timeouts; it is killed 15 s after it froze, once a new leader leads),
STORE_OPTS (more store URL options, e.g. "probe-leader=0" or "silent-leader-ms=0"),
ETCD_FLAGS (more etcd flags, e.g. "--heartbeat-interval 50 --election-timeout 500": etcd's
shortest lease is 1.5 election timeouts, so LEASE=1 needs a shorter election timeout),
JSON_OUT (file: one JSON line with the figures). Exit 77 where etcd is not installed."""
import base64
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "reliability"))
from common import (BIN, EtcdCluster, Ledger, Serve, all_jobs, check, finish, http, leader_of,  # noqa: E402
                    skip_without_etcd, wait_for, workdir)

skip_without_etcd("failover_bench")

KILLS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 1616
RATE = float(os.environ.get("RATE", "30"))
LEASE = int(os.environ.get("LEASE", "2"))
FREEZE = os.environ.get("FREEZE") == "1"
FREEZE_S = 15.0  # how long a frozen leader stays frozen before it is killed
WITNESS_S = 1.0  # a client's submission unanswered this long: ask who leads
PROMISE_S = 3.0  # takeover and first decision after each kill
NODES, GPUS = 4, 4
CLIENTS = 4
rng = random.Random(SEED)
data, _ = workdir("failover-bench")
cfg = os.path.join(data, "bench.yaml")
with open(cfg, "w") as f:
    f.write("""
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: fo}
spec:
  nodeGroups:
  - {namePrefix: n, count: %d, cpu: 64, memory: 256Gi, gpus: {count: %d, model: H100}}
---
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: fo}
spec: {maxPendingTotal: 1000000}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: %d}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team-a}
spec: {clusterQueue: cq}
""" % (NODES, GPUS, NODES * GPUS))

# The pod prints when it starts and ends, where, and on which GPU: the double-assignment check.
POD = ('echo "S $(date +%%s.%%N) $SLUICE_NODE $CUDA_VISIBLE_DEVICES"; sleep %s; '
       'echo "E $(date +%%s.%%N)"')


def job(name, sleep_s):
    return json.dumps({"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
                       "metadata": {"name": name, "namespace": "team-a"},
                       "spec": {"queue": "q", "podSets": [{"resources": {"nvidia.com/gpu": 1}}],
                                "command": ["sh", "-c", POD % sleep_s]}})


def etcd_range(endpoint, prefix):
    """Every (key, value) under prefix, from etcd's JSON gateway, in pages."""
    b64 = lambda s: base64.b64encode(s.encode()).decode()
    out, start, end = [], prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)
    while True:
        st, body = http("POST", endpoint + "/v3/kv/range",
                        json.dumps({"key": b64(start), "range_end": b64(end), "limit": 2000}),
                        timeout=30)
        if st != 200:
            return None
        r = json.loads(body)
        kvs = r.get("kvs", [])
        for kv in kvs:
            out.append((base64.b64decode(kv["key"]).decode(),
                        base64.b64decode(kv.get("value", "")).decode()))
        if not r.get("more") or not kvs:
            return out
        start = out[-1][0] + "\x00"


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))] if xs else float("nan")


def pod_runs(agent_dir):
    """job id -> [(start, end or None, node, gpus)] from the pods' logs."""
    runs = {}
    for node in os.listdir(agent_dir):
        logs = os.path.join(agent_dir, node, "logs")
        if not os.path.isdir(logs):
            continue
        for name in os.listdir(logs):
            jid = int(name.split("-")[0])
            with open(os.path.join(logs, name), errors="replace") as f:
                for line in f:
                    p = line.split()
                    if p and p[0] == "S" and len(p) >= 3:
                        runs.setdefault(jid, []).append(
                            [float(p[1]), None, p[2], p[3] if len(p) > 3 else ""])
                    elif p and p[0] == "E" and runs.get(jid):
                        runs[jid][-1][1] = float(p[1])
    return runs


def overlaps(runs, now):
    """Pairs of runs that held one GPU of one node at the same time."""
    by_gpu = {}
    for jid, rs in runs.items():
        for s, e, node, gpus in rs:
            for g in gpus.split(","):
                if g:
                    by_gpu.setdefault((node, g), []).append((s, e if e else now, jid))
    bad = []
    for key, iv in by_gpu.items():
        iv.sort()
        for a, b in zip(iv, iv[1:]):
            if b[0] < a[1]:
                bad.append((key, a[2], b[2]))
    return bad


etcd = EtcdCluster(data, extra=os.environ.get("ETCD_FLAGS", "").split())
figures = {}
agent = None
try:
    check(etcd.start(), "the etcd cluster is up")
    store = etcd.store_url("fobench") + ("?lease=%d" % LEASE) + (
        "&" + os.environ["STORE_OPTS"] if os.environ.get("STORE_OPTS") else "")
    replicas = [Serve(os.path.join(data, "r%d" % i), cfg,
                      extra=["--store", store, "--cycle-interval-ms", "50"]) for i in range(3)]
    for r in replicas:
        check(r.start(), "replica %s starts" % r.url)
    leader = lambda: leader_of(replicas)
    first = wait_for(leader, 30, "a leader")
    urls = ",".join(r.url for r in replicas)
    agent_dir = os.path.join(data, "agents")
    agent = subprocess.Popen(
        [BIN, "agent", "--server", urls, "--names", "n[0-%d]" % (NODES - 1),
         "--gpus", "fake:%dxH100" % GPUS, "--state-dir", agent_dir, "--listen", "127.0.0.1:0",
         "--no-fencer", "--pods-as-agent", "--drain", "--drain-grace-ms", "1000",
         # Every pod's log stays for the checks (a node keeps its last 1,000 by default: a run
         # with more acknowledged jobs found the first ones "never ran").
         "--keep-finished", "1000000"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(data, "agent.log"), "w"))
    ledger = Ledger()
    longs = []
    for k in range(2):
        st, body = http("POST", first.url + "/v1/jobs", job("long%d" % k, "100000"), timeout=15)
        if check(st == 202, "long job %d submitted" % k):
            longs.append(json.loads(body)["jobs"][0]["id"])
            ledger.ids[longs[-1]] = "long%d" % k

    def job_view(jid):
        lead = leader()
        if not lead:
            return None
        st, body = http("GET", "%s/v1/jobs/%d" % (lead.url, jid), timeout=5)
        return json.loads(body) if st == 200 else None

    running = lambda: all((job_view(j) or {}).get("state") == "running" for j in longs)
    check(wait_for(running, 60, "the long jobs to run"), "the long jobs run")
    before = {j: job_view(j) for j in longs}

    stop = threading.Event()

    def client(c):
        seq, at, period = 0, c, CLIENTS / RATE
        nxt = time.time()
        while not stop.is_set():
            nxt += period
            name = "c%d-%d" % (c, seq)  # a new name per attempt (see failover_etcd.py)
            seq += 1
            st, body = http("POST", replicas[at % 3].url + "/v1/jobs", job(name, "0.2"),
                            timeout=WITNESS_S)
            if not ledger.record(st, body, name):
                at = follow_leader(at)
            time.sleep(max(0.0, nxt - time.time()))

    # A client of replicas follows the leader as the agents do (docs/ha.md): a request still
    # unanswered WITNESS_S after it was sent asks the others who leads (their /readyz), and goes
    # there with the next attempt (a new name: a frozen leader cannot have acknowledged it).
    # With the former 15 s timeout and no witness, every client stayed on a frozen leader until
    # it was killed, no submission reached the new one for 15 s, and the first decision after
    # a kill with no pending work waited as long (issue 42).
    def follow_leader(at):
        for i in range(1, 4):
            r = replicas[(at + i) % 3]
            if http("GET", r.url + "/readyz", timeout=1)[0] == 200:
                return at + i
        return at + 1  # none leads yet: the next one (a standby says not_leader at once)

    threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(CLIENTS)]
    for t in threads:
        t.start()
    kills = []  # (killed_at, ready_at)
    loads, load_lines = [], []  # ms and their breakdown, from the killed leaders' logs
    revoked = {}  # how each killed leader had taken over -> how often
    t0 = time.time()
    for k in range(KILLS):
        time.sleep(rng.uniform(1.5, 3.0))  # scheduling has resumed since the last takeover
        old = leader() or wait_for(leader, 20, "a leader before kill %d" % (k + 1))
        if old is None:
            break
        killed_at = time.time()
        if FREEZE:
            old.proc.send_signal(signal.SIGSTOP)
        else:
            old.kill9()
        # Not asking the old one: a frozen replica answers nothing, and every round would wait
        # out its timeout (the takeover would look later than it was).
        others = [r for r in replicas if r is not old]
        new = wait_for(lambda: leader_of(others), 30, "a new leader after kill %d" % (k + 1))
        if new is None:
            break
        kills.append((killed_at, time.time()))
        if FREEZE:  # a dead machine stays silent: agents and clients must give up on it
            time.sleep(max(0.0, killed_at + FREEZE_S - time.time()))
        old.kill9()
        # What it logged: "state loaded in N ms (...)" when it took over.
        err = old.proc.stderr.read()
        for m in re.findall(r"state loaded in (\d+) ms \((.*)\)", err):
            loads.append(int(m[0]))
            load_lines.append(m[1])
        # And how it took over: the lease of a leader it found gone, and why (none: it expired).
        for why in re.findall(r"took over: (revoked the lease) of \S+ (\(.*\))", err) or [
                ("found the key free", "(the first leader, or the lease expired)")]:
            why = re.sub(r"\d+", "N", " ".join(why))
            revoked[why] = revoked.get(why, 0) + 1
        check(old.start(), "killed replica %s restarts as a standby" % old.url)
        for r in replicas:  # one that stepped down (exit 3) comes back as a standby
            if r.proc.poll() is not None:
                r.start()
    time.sleep(2.0)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    elapsed = time.time() - t0

    final = wait_for(leader, 30, "a leader at the end")

    def all_ended():
        st, js = all_jobs(final.url)
        if st != 200:
            return None
        left = [j for j in js if j["state"] in ("pending", "running") and j["id"] not in longs]
        return None if left else js
    jobs = wait_for(all_ended, 120, "every short job to end") or []
    ended = {j["id"]: j for j in jobs}
    lost = ledger.verify({j["id"]: j["name"] for j in jobs})
    failed = [i for i, j in ended.items() if j["state"] not in ("succeeded", "running")]
    check(not failed, "every acknowledged job succeeded (failed: %s)" % failed[:10])

    after = {j: job_view(j) for j in longs}
    keys = ("state", "attempts", "preemptions", "admit_time")
    check(all(before[j] and after[j] and all(before[j][k] == after[j][k] for k in keys)
              for j in longs), "the long jobs' pods were never restarted or requeued")

    # The event log in etcd: complete across the failovers, and the decision times.
    ev = etcd_range("http://127.0.0.1:%d" % etcd.client_ports[0], "/sluice/fobench/events/")
    check(ev is not None, "the event log reads from etcd")
    events = [json.loads(v) for _, v in ev or []]
    seqs = [int(k.rsplit("/", 1)[1]) for k, _ in ev or []]
    check(seqs == list(range(1, len(seqs) + 1)), "event sequence numbers 1..%d without gaps"
          % len(seqs))
    per = {}
    for e in events:
        per.setdefault((e.get("event"), e.get("id")), []).append(e)
    acked = list(ledger.ids)
    # A placement the old leader committed but never delivered (the agent had not synced yet)
    # is found lost when the agent registers with the new leader: the job is requeued (a
    # "preempt" event) and placed again. Its pod still runs once.
    missing = [i for i in acked if len(per.get(("submit", i), [])) != 1 or
               len(per.get(("start", i), [])) != 1 + len(per.get(("preempt", i), []))]
    check(not missing, "one submit event for every acknowledged job, one start event per "
          "placement (not: %s)" % [(i, len(per.get(("start", i), [])),
                                    len(per.get(("preempt", i), []))) for i in missing[:10]])
    requeued = sum(1 for i in acked if per.get(("preempt", i)))
    starts = sorted(e["time"] for e in events if e.get("event") == "start")
    submits = sorted(e["time"] for e in events if e.get("event") == "submit")
    decided, first_submit = [], []
    for killed_at, ready_at in kills:
        nxt = [s for s in starts if s > killed_at]
        if nxt:
            decided.append(nxt[0] - killed_at)
        nxt = [s for s in submits if s > killed_at]
        if nxt:
            first_submit.append(round(nxt[0] - killed_at, 2))
    print("first submission stored after each kill (s): %s" % first_submit)

    runs = pod_runs(agent_dir)
    twice = [j for j, rs in runs.items() if len(rs) != 1]
    check(not twice, "every pod ran once (more than one start: %s)" % twice[:10])
    never = [j for j in acked if j not in runs]
    check(not never, "every acknowledged job's pod ran (not: %s)" % never[:10])
    bad = overlaps(runs, time.time())
    check(not bad, "0 double-assigned GPUs (%s)" % bad[:5])
    takeover = [r - k for k, r in kills]
    check(len(kills) == KILLS, "a new leader after each of the %d kills" % KILLS)
    figures = {"kills": len(kills), "lease_s": LEASE, "rate": RATE,
               "acknowledged": len(ledger), "requests": ledger.sent, "lost": len(lost),
               "duplicated": len(ledger.dups), "double_assigned": len(bad),
               "requeued_undelivered": requeued,
               "takeover_p50_s": pct(takeover, 50), "takeover_p99_s": pct(takeover, 99),
               "takeover_max_s": max(takeover or [float("nan")]),
               "first_decision_p50_s": pct(decided, 50), "first_decision_p99_s": pct(decided, 99),
               "first_decision_max_s": max(decided or [float("nan")]),
               "first_decision_s": [round(d, 2) for d in decided],
               "freeze": FREEZE, "state_load_ms": loads, "state_load_parts": load_lines,
               "revoked": revoked}
    check(len(decided) == len(kills), "a scheduling decision after every kill")
    # The promise (docs/ha.md): a new leader, and a decision, within 3 s of a leader's failure.
    check(takeover and max(takeover) <= PROMISE_S,
          "takeover within %.0f s of every kill (max %.2f s)" % (PROMISE_S, max(takeover or [0])))
    check(decided and pct(decided, 99) <= PROMISE_S,
          "first decision within %.0f s of every kill (p99 %.2f s)"
          % (PROMISE_S, pct(decided, 99) if decided else float("nan")))
finally:
    if agent and agent.poll() is None:
        agent.terminate()
        agent.wait(timeout=60)
    for m in etcd.members:
        m.kill9()
if figures and os.environ.get("JSON_OUT"):
    with open(os.environ["JSON_OUT"], "a") as f:
        f.write(json.dumps(figures) + "\n")
for line in (figures or {}).get("state_load_parts", []):
    print("state loaded: " + line)
for why, n in sorted((figures or {}).get("revoked", {}).items()):
    print("takeovers by the killed leaders: %d x %s" % (n, why))
finish("failover_bench",
       ("%d kills in %.0f s (lease %d s): takeover p50 %.2f s p99 %.2f s max %.2f s; first "
        "decision p50 %.2f s p99 %.2f s max %.2f s (%s); %d acknowledged, %d lost, %d duplicated, "
        "%d double-assigned GPUs, %d undelivered placements requeued; state loaded in %s ms%s" % (
            figures["kills"], elapsed, LEASE, figures["takeover_p50_s"], figures["takeover_p99_s"],
            figures["takeover_max_s"], figures["first_decision_p50_s"],
            figures["first_decision_p99_s"], figures["first_decision_max_s"],
            ",".join("%.2f" % d for d in figures["first_decision_s"]), figures["acknowledged"],
            figures["lost"], figures["duplicated"], figures["double_assigned"],
            figures["requeued_undelivered"], ",".join(map(str, figures["state_load_ms"])),
            " (FREEZE: SIGSTOP)" if FREEZE else ""))
       if figures else "did not complete")
