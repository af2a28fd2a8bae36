#!/usr/bin/env python3
"""Fencing: a job never runs twice (issue 14; docs/agent.md "Fencing").

Every pod appends "beat <job> <attempt> <time>" to a shared ledger every 50 ms while it runs,
so the ledger shows when each attempt of each job was alive. Two scenarios:

1. kill -9 of an agent with running jobs: its fencer stops the pods once the lease runs out,
   the server requeues the jobs after lease + grace + margin, they run again on the other
   node, and no attempt of a job overlaps another.
2. The server dies (kill -9) for longer than the lease: every live agent stops its pods
   ("lease expired"), the restarted server requeues them, they run again, no overlap.

Real processes on loopback, stopped by their PIDs."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))
from common import BIN, CONFIG, Serve, check, finish, free_port, http, wait_for, workdir  # noqa

TIMEOUT_S, GRACE_S, MARGIN_S = 2, 1, 1
AGENTS = {}


def start_agent(url, node, d):
    log = open(os.path.join(d, "agent-%s.log" % node), "ab")
    p = subprocess.Popen([BIN, "agent", "--server", url, "--name", node, "--gpus", "fake:4xH100",
                          "--state-dir", os.path.join(d, "agent-" + node), "--heartbeat-ms",
                          "200", "--drain", "--drain-grace-ms", "2000"], stdout=log, stderr=log)
    AGENTS[node] = p
    return p


def job(name, ledger):
    # An attempt is the pod's own pid: unique among live processes of the machine.
    script = ('trap "exit 0" TERM; while :; do echo "beat %s $$ $(date +%%s.%%N)" >> %s; '
              'sleep 0.05; done' % (name, ledger))
    return json.dumps({"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
                       "metadata": {"name": name, "namespace": "team-a"},
                       "spec": {"queue": "q", "checkpointGrace": "%ds" % GRACE_S,
                                "podSets": [{"resources": {"nvidia.com/gpu": 2}}],
                                "command": ["sh", "-c", script]}})


def attempts(ledger):
    """{job: {pid: [first beat, last beat]}} from the ledger."""
    out = {}
    if not os.path.exists(ledger):
        return out
    with open(ledger) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 4 or parts[0] != "beat":
                continue
            try:
                t = float(parts[3])
            except ValueError:
                continue
            span = out.setdefault(parts[1], {}).setdefault(parts[2], [t, t])
            span[0], span[1] = min(span[0], t), max(span[1], t)
    return out


def overlaps(ledger):
    bad = []
    for name, runs in attempts(ledger).items():
        spans = sorted(runs.values())
        for x, y in zip(spans, spans[1:]):
            if y[0] <= x[1]:
                bad.append("%s: an attempt started at %.3f while another beat until %.3f" %
                           (name, y[0], x[1]))
    return bad


def node_of(url, i):
    st, body = http("GET", url + "/v1/jobs/%d" % i)
    if st != 200:
        return None
    j = json.loads(body)
    return j["placement"][0]["node"] if j["state"] == "running" and j["placement"] else None


def runs_of(ledger, name):
    return len(attempts(ledger).get(name, {}))


def main():
    d, cfg = workdir("fencing")
    # Pods run as unprivileged users when the agent is root: they may write the shared ledger
    # (in a directory of its own) and reach it (the test's directory is only traversable).
    os.chmod(d, 0o711)
    shared = os.path.join(d, "shared")
    os.makedirs(shared)
    os.chmod(shared, 0o1777)
    ledger = os.path.join(shared, "ledger")
    srv = Serve(d + "/data", cfg, extra=["--agent-timeout", str(TIMEOUT_S), "--fence-margin",
                                         str(MARGIN_S), "--heartbeat-ms", "200"])
    check(srv.start(), "server starts")
    for n in ("n0", "n1"):
        start_agent(srv.url, n, d)
    ids = []
    for name in ("j1", "j2"):
        st, body = http("POST", srv.url + "/v1/jobs", job(name, ledger))
        check(st == 202, "submit %s: %d" % (name, st))
        ids.append(json.loads(body)["jobs"][0]["id"])
    wait_for(lambda: runs_of(ledger, "j1") and runs_of(ledger, "j2"), 60, "both jobs to run")

    # 1. kill -9 of the agent running j1.
    victim = node_of(srv.url, ids[0])
    check(victim in ("n0", "n1"), "j1 runs on %s" % victim)
    killed_at = time.time()
    AGENTS[victim].send_signal(signal.SIGKILL)
    AGENTS[victim].wait(timeout=30)
    moved = wait_for(lambda: runs_of(ledger, "j1") >= 2, 60, "j1 to run again elsewhere")
    check(moved and node_of(srv.url, ids[0]) not in (None, victim),
          "j1 runs again, on the other node, %.1f s after the kill (lease %d + grace %d + "
          "margin %d)" % (time.time() - killed_at, TIMEOUT_S, GRACE_S, MARGIN_S))
    check(not overlaps(ledger), "no job had two live attempts after kill -9 of an agent: " +
          "; ".join(overlaps(ledger)))
    fencer_log = os.path.join(d, "agent-" + victim, "fencer.log")
    text = open(fencer_log, errors="replace").read() if os.path.exists(fencer_log) else ""
    check("its lease ran out: stopping pod" in text, "the dead agent's fencer stopped its pods")

    # 2. The server is gone longer than the lease: the live agent fences, the restarted server
    #    requeues and reruns, still no overlap. (Only one node is left: j2 waits for j1.)
    before = {name: runs_of(ledger, name) for name in ("j1", "j2")}
    srv.kill9()
    time.sleep(TIMEOUT_S + GRACE_S + 2)
    survivor = "n0" if victim == "n1" else "n1"
    log = open(os.path.join(d, "agent-%s.log" % survivor), errors="replace").read()
    check("lease expired" in log, "the agent that lost the server stopped its pods")
    frozen = attempts(ledger)
    time.sleep(0.5)
    check(attempts(ledger) == frozen, "nothing beats while the server is gone")
    check(srv.start(), "server restarts on the same data dir")
    wait_for(lambda: any(runs_of(ledger, n) > before[n] for n in before), 60,
             "a fenced job to run again")
    check(not overlaps(ledger), "no job had two live attempts across the server's death: " +
          "; ".join(overlaps(ledger)))
    total = sum(len(r) for r in attempts(ledger).values())
    finish("fencing", "%d attempts in the ledger, 0 overlapping" % total)


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in AGENTS.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in AGENTS.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
