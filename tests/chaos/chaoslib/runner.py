"""One schedule, start to verdict: a fresh cluster, the seeded plan, heal, quiet, cancel
everything, wait out the end bound, check, stop every process.

A fresh cluster per schedule (it starts in well under a second) keeps schedules independent:
no process, job, lease or store of one schedule can reach another's checks."""
import os
import random
import threading
import time

from . import checker, nemesis
from .cluster import Cluster
from .etcd import EtcdCluster
from .workload import Client

LIVE = set()            # clusters running now: stopped by chaos.py's atexit handler
LIVE_LOCK = threading.Lock()
PRINT_LOCK = threading.Lock()


class Options:
    kinds = sorted(nemesis.FAULTS)
    window = 8.0        # seconds of faults and client operations
    quiet = 2.0         # seconds without faults before the final cancellations
    slack = 0.0
    gangs = True
    compound = False    # a node's agent and fencer both faulted in one schedule
    ops = tuple(nemesis.OPS)  # client operations the schedules make
    agent_args = ()     # extra flags for every agent (--agent-arg)
    sandboxed = ()
    tmpfs = False
    store = "sqlite"    # or "etcd": replicas on a three-member etcd cluster (etcd.py)
    replicas = 3
    etcd_tmpfs = False  # etcd's data dir on a tmpfs
    verbose = False
    keep = False


def say(line):
    with PRINT_LOCK:
        print(line, flush=True)


def run_schedule(seed, opts, base):
    """Returns (seed, faults, violations)."""
    tag = "s%d" % seed
    faults, ops = nemesis.plan(random.Random(seed), opts.kinds, opts.window, opts.gangs,
                               opts.compound, opts.ops)
    say("[%s] schedule: %s" % (tag, "; ".join("+%.2fs %s %s for %.2fs" % (t, k, tg, d)
                                              for t, d, k, tg in faults) or "no faults"))
    root = os.path.join(base, tag)
    os.makedirs(root)
    if opts.store == "etcd":
        cluster = EtcdCluster(root, replicas=opts.replicas, etcd_tmpfs=opts.etcd_tmpfs,
                              sandboxed=opts.sandboxed, agent_args=opts.agent_args)
    else:
        cluster = Cluster(root, sandboxed=opts.sandboxed, tmpfs=opts.tmpfs,
                          agent_args=opts.agent_args)
    with LIVE_LOCK:
        LIVE.add(cluster)
    violations = []

    def log(line):  # faults always; client operations with --verbose
        words = line.split()
        if opts.verbose or (len(words) > 1 and words[1] in ("FAULT", "HEAL", "heal:")):
            say("[%s] %s" % (tag, line))
    try:
        cluster.start()
        client = Client(cluster, tag, log)
        nem = nemesis.Nemesis(cluster, log)
        t0 = nemesis.execute(nem, client, faults, ops, log)
        violations += ["crash: " + c for c in nem.crashes()]
        violations += settle(cluster, client, opts, log, t0)
    except Exception as e:  # noqa: BLE001 - a harness failure is reported like a violation
        violations.append("harness: %s: %s (see %s)" % (type(e).__name__, e, root))
    finally:
        stuck = cluster.stop()
        with LIVE_LOCK:
            LIVE.discard(cluster)
        if stuck:
            violations.append("harness: pids %s would not exit after SIGKILL" % stuck)
    kinds = sorted({k for _, _, k, _ in faults})
    for v in violations:
        say("VIOLATION seed=%d faults=%s: %s" % (seed, ",".join(kinds) or "none", v))
    say("[%s] %s" % (tag, "%d violation(s)" % len(violations) if violations else "ok"))
    return seed, faults, violations


def settle(cluster, client, opts, log, t0):
    """After the plan: heal, a quiet period, cancel every job, wait until the end bound has
    passed for all of them, then run the checks. Returns the violations."""
    out = []
    healed = cluster.heal()
    if healed:
        log("+%.2fs heal: %s" % (time.time() - t0, ", ".join(healed)))
    if not cluster.wait_ready(20):
        out.append("recovery: the nodes were not all ready 20 s after healing")
    time.sleep(opts.quiet)
    deadline = time.time() + 20
    while True:
        failed = client.cancel_all()
        if failed == [] or time.time() > deadline:
            break
        time.sleep(0.2)
    if failed != []:
        out.append("recovery: could not cancel jobs %s within 20 s" % failed)
    ends = wait_terminal(cluster, 15)
    if ends is None:
        out.append("recovery: jobs still not ended 15 s after their cancellation")
        ends = [time.time()]
    # Nothing may beat or survive past the last end + the bound: wait until then.
    wait = max(ends + [time.time()]) + checker.END_BOUND_S + 0.3 - time.time()
    time.sleep(max(0.0, wait))
    return out + run_checks(cluster, client, opts, t0)


def wait_terminal(cluster, timeout):
    """The end times of every job once none is pending or running; None after `timeout`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        st, body = cluster.call("GET", "/v1/jobs?limit=1000")
        if st == 200:
            jobs = body.get("jobs", [])
            if all(j.get("state") in checker.TERMINAL for j in jobs):
                return [j["end_time"] for j in jobs if j.get("end_time")]
        time.sleep(0.2)
    return None


def run_checks(cluster, client, opts, t0):
    beats, children = checker.read_ledger(cluster.ledger)
    requeues = checker.read_requeues(cluster.event_log())
    out = checker.check_runs(beats, opts.slack, t0, requeues)
    out += checker.check_gpus(beats, opts.slack, t0)
    acked_out, views = checker.check_acked(cluster.call, dict(client.acked))
    out += acked_out
    out += checker.check_ends(beats, views, t0)
    out += checker.check_leftovers(cluster.root, children)
    runs = {(b[1], b[3]) for b in beats}
    log_line = "checked %d beats of %d runs of %d jobs (%d acknowledged)" % (
        len(beats), len(runs), len({b[1] for b in beats}), len(client.acked))
    say("[%s] %s" % (os.path.basename(cluster.root), log_line))
    return out
