"""The checker: what must hold after a schedule, proven from the ledger, the API and /proc.

Alive intervals. Every beat's time is read by the pod itself ($EPOCHREALTIME, the host's
CLOCK_REALTIME) just before it writes the line, so each beat is an instant at which that
process was certainly alive. A process's alive interval is [its first beat, its last beat];
a run's is the union over its pods (first beat of any pod, last beat of any pod). If run B
truly started after run A ended, then last(A) <= end(A) < start(B) <= first(B): the intervals
are disjoint. Any intersection, even of zero length (one beat of B inside A's interval),
proves both alive at one instant. So the slack is 0 by default: an overlap is any
intersection. `--slack S` (S > 0) only reports intersections longer than S seconds, for a
host whose clock may be stepped while the harness runs. The beat period (0.2 s) bounds how
what can be missed: two runs alive together for less than one beat period may leave no
intersecting beats, so the checker can under-report, never over-report.

(a) no two runs of one job are alive at once; within one run, no pod index beats from two
    pids at once (a pod started twice inside one run).
(b) every acknowledged submission is still known to GET /v1/jobs/ID, under its name.
(c) no GPU (node, device index from CUDA_VISIBLE_DEVICES) has two jobs' pods alive at once.
(d) a terminal job beats no later than end_time + END_BOUND_S: its stop reaches the agent
    within the lease (or the agent/fencer fences itself when the lease runs out), then the
    grace to SIGKILL, plus the margin and ticks (END_BOUND_S below); and after the settle
    no pod process and no background child of the schedule is left in /proc.
"""
import json
import os

from . import procs
from .cluster import GRACE_S, LEASE_S, MARGIN_S

# lease + grace + fence margin + 0.5 s of ticks (agent 50 ms, fencer 200 ms, a beat 200 ms,
# the long poll of one heartbeat).
END_BOUND_S = LEASE_S + GRACE_S + MARGIN_S + 0.5
TERMINAL = ("succeeded", "failed", "cancelled", "rejected")


def read_ledger(path):
    """(beats, children): beats = [(t, job, node, run, pod, devices, pid)],
    children = [(job, run, pid, node, pod)]."""
    beats, children = [], []
    if not os.path.exists(path):
        return beats, children
    with open(path, errors="replace") as f:
        for line in f:
            p = line.split()
            try:
                if len(p) == 8 and p[0] == "beat":
                    beats.append((float(p[7]), p[1], p[2], p[3], p[4], p[5], p[6]))
                elif len(p) == 6 and p[0] == "child":
                    children.append((p[1], p[2], p[3], p[4], p[5]))
            except ValueError:
                continue  # a torn line (none expected: single O_APPEND writes)
    return beats, children


def _span(spans, key, t):
    s = spans.setdefault(key, [t, t])
    s[0], s[1] = min(s[0], t), max(s[1], t)


def _intersect(a, b, slack):
    """Seconds both of [a0, a1] and [b0, b1] cover, or None when they do not intersect by
    more than `slack` (a zero-length touch counts as an intersection when slack is 0)."""
    lo, hi = max(a[0], b[0]), min(a[1], b[1])
    if hi < lo or (slack > 0 and hi - lo <= slack):
        return None
    return hi - lo


def _pairs_overlapping(spans, slack):
    """[(key1, key2, seconds, since)] of the intervals of `spans` that intersect."""
    items = sorted(spans.items(), key=lambda kv: kv[1][0])
    out = []
    for i, (k1, s1) in enumerate(items):
        for k2, s2 in items[i + 1:]:
            if s2[0] > s1[1]:
                break
            d = _intersect(s1, s2, slack)
            if d is not None:
                out.append((k1, k2, d, max(s1[0], s2[0])))
    return out


def read_requeues(events_path):
    """{job name: [(time, reason)]} of the server's event log's "preempt" events (a run taken
    off: requeued by a user, preempted, its node silent, its pod lost...): why a job ran
    again, to say next to an overlap. {} without a log."""
    names, out = {}, {}
    if not os.path.exists(events_path):
        return out
    with open(events_path, errors="replace") as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a line cut short by a SIGKILL
            if e.get("event") == "submit":
                names[e.get("id")] = e.get("name")
            elif e.get("event") == "preempt" and e.get("id") in names:
                out.setdefault(names[e["id"]], []).append((e.get("time", 0), e.get("reason")))
    return out


def _why(requeues, job, before, t0):
    """The last requeue of `job` at or before `before`, in words."""
    past = [r for r in requeues.get(job, []) if r[0] <= before + 0.05]
    if not past:
        return ""
    return " [server at +%.2fs: %s]" % (past[-1][0] - t0,
                                       past[-1][1] or "preempted (the event names no reason)")


def check_runs(beats, slack, t0, requeues=None):
    """(a): runs of one job, and pods within one run."""
    runs, pods = {}, {}
    for t, job, node, run, pod, _dev, pid in beats:
        _span(runs, (job, run), t)
        _span(pods, (job, run, pod, node, pid), t)
    out = []
    for job in sorted({k[0] for k in runs}):
        mine = {k: v for k, v in runs.items() if k[0] == job}
        for k1, k2, d, at in _pairs_overlapping(mine, slack):
            out.append("(a) job %s: runs %s and %s were alive at once for %.2fs from +%.2fs%s"
                       % (job, k1[1], k2[1], d, at - t0, _why(requeues or {}, job, at, t0)))
    by_pod = {}
    for k, v in pods.items():
        by_pod.setdefault(k[:3], {})[k] = v
    for (job, run, pod), mine in sorted(by_pod.items()):
        for k1, k2, d, at in _pairs_overlapping(mine, slack):
            out.append("(a) job %s run %s pod %s: started twice (%s pid %s and %s pid %s), "
                       "both alive for %.2fs from +%.2fs" % (job, run, pod, k1[3], k1[4],
                                                             k2[3], k2[4], d, at - t0))
    return out


def check_gpus(beats, slack, t0):
    """(c): per (node, GPU index), the pods of two different jobs never alive at once."""
    gpus = {}
    for t, job, node, run, pod, dev, pid in beats:
        for g in dev.split(","):
            if g not in ("", "-"):
                _span(gpus.setdefault((node, g), {}), (job, run, pod, pid), t)
    out = []
    for (node, g), spans in sorted(gpus.items()):
        for k1, k2, d, at in _pairs_overlapping(spans, slack):
            if k1[0] != k2[0]:
                out.append("(c) GPU %s/%s: jobs %s (run %s pod %s) and %s (run %s pod %s) "
                           "alive on it at once for %.2fs from +%.2fs" %
                           (node, g, k1[0], k1[1], k1[2], k2[0], k2[1], k2[2], d, at - t0))
    return out


def check_acked(call, acked):
    """(b): returns (violations, views {name: JobView}). `call` is the cluster's API request
    (Cluster.call: with etcd replicas, it asks the current leader)."""
    out, views = [], {}
    for name, jid in sorted(acked.items()):
        st, body = call("GET", "/v1/jobs/%d" % jid, timeout=5)
        if st != 200 or not isinstance(body, dict):
            out.append("(b) job %s (id %d) was acknowledged but GET /v1/jobs/%d answers %s"
                       % (name, jid, jid, st or "nothing"))
        elif body.get("name") != name:
            out.append("(b) id %d was acknowledged for %s but is now %r" %
                       (jid, name, body.get("name")))
        else:
            views[name] = body
    return out, views


def check_ends(beats, views, t0):
    """(d), from the ledger: no beat of a terminal job after its end + END_BOUND_S."""
    last = {}
    for t, job, node, run, pod, _dev, pid in beats:
        if t > last.get(job, (0,))[0]:
            last[job] = (t, node, run, pod, pid)
    out = []
    for name, v in sorted(views.items()):
        if v.get("state") not in TERMINAL or not v.get("end_time") or name not in last:
            continue
        t, node, run, pod, pid = last[name]
        if t > v["end_time"] + END_BOUND_S:
            out.append("(d) job %s ended (%s) at +%.2fs but run %s pod %s (pid %s on %s) "
                       "still beat at +%.2fs (bound: end + %.1fs)" %
                       (name, v["state"], v["end_time"] - t0, run, pod, pid, node, t - t0,
                        END_BOUND_S))
    return out


def check_leftovers(root, children):
    """(d), from /proc, once every job has ended and the bound has passed: no pod process and
    no background child of this cluster is alive (found by their mark, see workload.py)."""
    out, pods = [], {}
    for pid in procs.find(root, "chaos-pod"):
        argv = procs.cmdline(pid).split()
        job = argv[argv.index("chaos-pod") + 2] if "chaos-pod" in argv[:-2] else "?"
        pods.setdefault(job, []).append(pid)
    for job, pids in sorted(pods.items()):  # bwrap, its init and the shell: one line per job
        out.append("(d) job %s: %d pod process(es) still run after every job ended (pids %s)"
                   % (job, len(pids), " ".join(map(str, pids))))
    logged = {(job, run): (pid, node) for job, run, pid, node, _pod in children}
    for pid in procs.find(root + "/child:"):
        _, job, run = procs.cmdline(pid).split()[0].rsplit("/", 1)[1].split(":", 2)
        where = logged.get((job, run), ("?", "?"))
        out.append("(d) child of job %s run %s (pid %d, logged as pid %s on %s) outlived "
                   "its run" % (job, run, pid, where[0], where[1]))
    return out
