#!/usr/bin/env python3
"""Seeded fault injection against a real sluice cluster (a nemesis in the spirit of Jepsen's,
replayable by seed like TigerBeetle's VOPR): finds at-most-once and isolation breaks by itself.

Each schedule starts a fresh `sluice serve` (SQLite) and 3 agents with fake GPUs on loopback
(one under --sandbox bwrap where bwrap works), lets clients submit, cancel, hold, release,
requeue and preempt jobs whose pods beat into a shared ledger, while a nemesis drawn from
random.Random(seed) kills and freezes agents, the server and fencers, partitions or
black-holes an agent's link, and fills the server's disk. Then it heals, cancels everything
and checks (chaoslib/checker.py): (a) no job runs twice at once, (b) no acknowledged job is
lost, (c) no GPU serves two jobs at once, (d) ended jobs stop within lease + grace + margin
and leave no process behind.

  python3 tests/chaos/chaos.py                 the CI set: seeds 1..20
  python3 tests/chaos/chaos.py --long          seeds 1..300
  python3 tests/chaos/chaos.py --seed 7        replay one schedule
  python3 tests/chaos/chaos.py --faults kill,stall --seeds 1-50
  python3 tests/chaos/chaos.py --ops submit,cancel,hold,release   (no requeue, no preemption)
  python3 tests/chaos/chaos.py --store etcd --seeds 1-10 --parallel 2   replicas on etcd
Fault kinds: kill stop server-kill server-stop disk fencer-kill fencer-stop partition stall;
etcd-kill with --store etcd (a three-member etcd cluster and 3 `serve --store etcd://`
replicas per schedule; server-kill/-stop hit the leader; no disk fault; chaoslib/etcd.py).
Client operations: submit cancel hold release requeue preempt.

Exit status: 0 no violation, 1 violations (each printed with its seed), 77 no binary (or no
etcd with --store etcd).
Env: SLUICE_BIN (default build/sluice), CHAOS_FAULTS and CHAOS_OPS (defaults of --faults and
--ops, so a ctest run can be narrowed), SLUICE_KEEP_TMP=1 (keep every schedule's files).
Every process is stopped by PID at the end (and at exit); a tmpfs it mounted is unmounted."""
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import argparse  # noqa: E402
import atexit  # noqa: E402
import mmap  # noqa: E402
import os  # noqa: E402
import queue  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chaoslib import cluster, etcd, nemesis, procs, runner  # noqa: E402

BASE = []  # the run's temp dir


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, help="replay this one schedule")
    ap.add_argument("--seeds", help="a range A-B of seeds (default 1-20; --long: 1-300)")
    ap.add_argument("--long", action="store_true", help="seeds 1..300")
    ap.add_argument("--faults", default=os.environ.get("CHAOS_FAULTS", ""),
                    help="comma-separated fault kinds (default: all%s): " %
                    ("".join(" but " + k for k in nemesis.OPT_IN)) +
                    ",".join(sorted(nemesis.FAULTS)))
    ap.add_argument("--ops", default=os.environ.get("CHAOS_OPS", ""),
                    help="comma-separated client operations (default: all; submit always): " +
                    ",".join(nemesis.OPS))
    ap.add_argument("--store", choices=("sqlite", "etcd"), default="sqlite",
                    help="sqlite (default): one server; etcd: replicas on a private "
                    "three-member etcd cluster per schedule")
    ap.add_argument("--replicas", type=int, default=3, choices=(2, 3),
                    help="with --store etcd: sluice replicas (default 3)")
    ap.add_argument("--window", type=float, default=6.0, help="seconds of faults (default 6)")
    ap.add_argument("--parallel", type=int, default=4, help="schedules at once (default 4)")
    ap.add_argument("--slack", type=float, default=0.0,
                    help="seconds of overlap tolerated (default 0: any overlap counts)")
    ap.add_argument("--compound", action="store_true",
                    help="also fault a node's agent and its fencer in one schedule")
    ap.add_argument("--agent-arg", action="append", default=[], metavar="ARG",
                    help="an extra flag for every agent (repeatable), e.g. --agent-arg=--no-fencer")
    ap.add_argument("--no-sandbox", action="store_true", help="no agent under bwrap")
    ap.add_argument("--keep", action="store_true", help="keep every schedule's files")
    ap.add_argument("-v", "--verbose", action="store_true", help="print client operations")
    return ap.parse_args(argv)


def seeds_of(args):
    if args.seed is not None:
        return [args.seed]
    a, b = (args.seeds or ("1-300" if args.long else "1-20")).split("-")
    return list(range(int(a), int(b) + 1))


def options(args, base):
    """Options for every schedule; says which faults and sandboxes this machine allows."""
    o = runner.Options()
    etcd = args.store == "etcd"
    other = nemesis.SQLITE_ONLY if etcd else nemesis.ETCD_ONLY  # not this store's faults
    kinds = [k for k in args.faults.split(",") if k] or sorted(
        k for k in nemesis.FAULTS if k not in other and k not in nemesis.OPT_IN)
    bad = [k for k in kinds if k not in nemesis.FAULTS]
    if bad:
        sys.exit("chaos: unknown fault kind(s) %s; known: %s" %
                 (bad, ", ".join(sorted(nemesis.FAULTS))))
    if [k for k in kinds if k in other]:
        print("chaos: skipping %s: not with --store %s" %
              (",".join(k for k in kinds if k in other), args.store))
        kinds = [k for k in kinds if k not in other] or ["kill"]
    o.tmpfs, why = cluster.can_mount_tmpfs(os.path.join(base, "mount-probe"))
    if etcd:
        o.store, o.replicas, o.etcd_tmpfs, o.tmpfs = "etcd", args.replicas, o.tmpfs, False
        print("chaos: --store etcd: 3 etcd members (data on %s) and %d replicas per schedule"
              % ("a tmpfs" if o.etcd_tmpfs else "disk", o.replicas))
    if not o.tmpfs and "disk" in kinds:
        print("chaos: skipping the full-disk fault: %s" % why)
        kinds = [k for k in kinds if k != "disk"] or ["kill"]
    ok, why = cluster.bwrap_works()
    if args.no_sandbox or not ok:
        print("chaos: no sandboxed agent: %s" % ("--no-sandbox" if args.no_sandbox else why))
    else:
        o.sandboxed = ("n2",)
        print("chaos: agent n2 runs pods under --sandbox bwrap")
    o.gangs = binary_sets_run()
    if not o.gangs:
        print("chaos: the agent does not set SLUICE_RUN: 1-pod jobs only, runs told apart "
              "by node:pid")
    ops = {"submit"} | {v for v in args.ops.split(",") if v} if args.ops else set(nemesis.OPS)
    if ops - set(nemesis.OPS):
        sys.exit("chaos: unknown operation(s) %s; known: %s" %
                 (sorted(ops - set(nemesis.OPS)), ", ".join(nemesis.OPS)))
    o.ops = tuple(v for v in nemesis.OPS if v in ops)
    o.kinds, o.window, o.slack = kinds, args.window, args.slack
    o.verbose, o.keep, o.compound = args.verbose, args.keep, args.compound
    o.agent_args = tuple(args.agent_arg)
    return o


def binary_sets_run():
    """Whether the agent gives pods $SLUICE_RUN (the run identity gangs need)."""
    with open(cluster.BIN, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        return m.find(b"SLUICE_RUN") >= 0


def run_all(seeds, opts, base, parallel):
    """Runs the schedules, `parallel` at a time; returns [(seed, faults, violations)]."""
    todo, results = queue.Queue(), []
    for s in seeds:
        todo.put(s)

    def worker():
        while True:
            try:
                s = todo.get_nowait()
            except queue.Empty:
                return
            results.append(runner.run_schedule(s, opts, base))
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, parallel))]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.5)  # a timed join: Ctrl-C still reaches the main thread
    return sorted(results)


def replay_flags(args):
    """The flags that shape a schedule, for the replay line."""
    out = []
    if args.faults:
        out.append("--faults " + args.faults)
    if args.ops:
        out.append("--ops " + args.ops)
    if args.window != 6.0:
        out.append("--window %g" % args.window)
    if args.compound:
        out.append("--compound")
    if args.store != "sqlite":
        out.append("--store " + args.store)
        if args.replicas != 3:
            out.append("--replicas %d" % args.replicas)
    if args.no_sandbox:
        out.append("--no-sandbox")
    out += ["--agent-arg=" + a for a in args.agent_arg]
    return "".join(" " + f for f in out)


def summary(results, elapsed, flags):
    bad = [(s, f, v) for s, f, v in results if v]
    print("\nchaos: %d schedules in %.1f s, %d with violations" % (len(results), elapsed,
                                                                  len(bad)))
    for seed, faults, violations in bad:
        kinds = ",".join(sorted({k for _, _, k, _ in faults})) or "none"
        print("  seed %d (faults: %s): %d violation(s)" % (seed, kinds, len(violations)))
        for v in violations:
            print("    " + v)
    if bad:
        print("chaos: replay one with: python3 tests/chaos/chaos.py --seed N%s -v" % flags)
    return 1 if bad else 0


@atexit.register
def _stop_everything():
    """At exit, whatever happened: every cluster stopped, nothing of ours left running."""
    procs.STOPPING.set()
    with runner.LIVE_LOCK:
        live = list(runner.LIVE)
    stuck = []
    for c in live:
        stuck += c.stop()
    if BASE:
        stuck += procs.kill_marked(BASE[0])
    if stuck:
        print("chaos: FAILED: processes %s would not exit" % sorted(set(stuck)), flush=True)
        os._exit(1)
    if BASE and os.path.exists(os.path.join(BASE[0], "sluice")):
        os.unlink(os.path.join(BASE[0], "sluice"))  # the copy; kept files stay


def main(argv):
    # ctest's timeout and kill(1) send SIGTERM: exit through atexit, which stops everything.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args = parse_args(argv)
    if not os.access(cluster.BIN, os.X_OK):
        print("chaos: skipped: no sluice binary at %s (set SLUICE_BIN)" % cluster.BIN)
        return 77
    if args.store == "etcd" and etcd.etcd_missing():
        print("chaos: skipped: --store etcd: %s" % etcd.etcd_missing())
        return 77
    base = tempfile.mkdtemp(prefix="sluice-chaos-")
    os.chmod(base, 0o711)  # pods (unprivileged uids) pass through it to the ledger
    BASE.append(base)
    # A copy: the build dir's binary may be rebuilt while the schedules run.
    shutil.copy2(cluster.BIN, os.path.join(base, "sluice"))
    cluster.BIN = os.path.join(base, "sluice")
    opts = options(args, base)
    seeds = seeds_of(args)
    print("chaos: %d schedule(s), faults %s, window %.1f s, %d at once, files in %s" %
          (len(seeds), ",".join(opts.kinds), opts.window, args.parallel, base), flush=True)
    start = time.time()
    results = run_all(seeds, opts, base, args.parallel)
    rc = summary(results, time.time() - start, replay_flags(args))
    keep = args.keep or os.environ.get("SLUICE_KEEP_TMP") == "1"
    for seed, _, violations in results:
        if not violations and not keep:  # a failing schedule's files stay, to look at
            shutil.rmtree(os.path.join(base, "s%d" % seed), ignore_errors=True)
    if rc == 0 and not keep:
        shutil.rmtree(base, ignore_errors=True)
    else:
        print("chaos: files kept in %s" % base)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
