#!/usr/bin/env python3
"""Predicted start times (issue 19) against a real server, between tenants.

One agent with 4 fake GPUs (the configuration's second node never joins). alice (team-a) runs a
4-GPU job with walltime 600 s; her second 4-GPU job waits behind it. `sluice jobs --start` shows
the waiting job's estimate, the running job's admission + 600 s, in UTC; `sluice explain` says
the estimate and what it assumes; a held job shows `held`; a job that fits no node `never`.
bob (team-b) sees none of it: not in his `sluice jobs --start`, 404 for the job and its
explanation, in the words of a job that does not exist.

Real `sluice serve` and `sluice agent`; everything started here is stopped by its PID."""
import calendar
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))
from common import (BIN, Serve, check, finish, free_port, http, stop_processes,  # noqa: E402
                    wait_for, workdir)
sys.path.insert(0, os.path.dirname(__file__))
from tenants import TOKENS, auth_doc  # noqa: E402

JOIN = "join-token-for-predicted-start-01"
AUTH = auth_doc(JOIN, ("alice", "bob"))

PROCS = []


def job_doc(name, ns, extra=None):
    spec = {"queue": "q", "cpu": 1, "gpus": 4, "command": ["sleep", "600"]}
    spec.update(extra or {})
    return json.dumps({"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
                       "metadata": {"name": name, "namespace": ns}, "spec": spec})


def submit(url, doc, who):
    st, body = http("POST", url + "/v1/jobs", doc, token=TOKENS[who])
    check(st == 202, "%s submits (%d %s)" % (who, st, body[:160]))
    return json.loads(body)["jobs"][0]["id"] if st == 202 else 0


def cli(url, who, *args):
    env = dict(os.environ, SLUICE_SERVER=url, SLUICE_TOKEN=TOKENS[who])
    p = subprocess.run([BIN] + list(args), env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def start_column(table, job_id):
    """The START cell of job_id's row in `sluice jobs --start` output (None: no such row)."""
    lines = table.splitlines()
    if not lines or "START" not in lines[0]:
        return None
    at = lines[0].index("START")
    for line in lines[1:]:
        if re.match(r"^\s*%d\s" % job_id, line):
            return line[at:].split()[0]
    return None


def main():
    d, cfg = workdir("predicted-start")
    with open(cfg, "a") as f:
        f.write(AUTH)
    srv = Serve(d + "/data", cfg)
    check(srv.start(), "server starts with tokens")
    url = srv.url
    alog = open(os.path.join(d, "agent.log"), "ab")
    PROCS.append(subprocess.Popen(
        [BIN, "agent", "--server", url, "--name", "n0", "--gpus", "fake:4xH100", "--state-dir",
         os.path.join(d, "agent"), "--listen", "127.0.0.1:%d" % free_port(), "--heartbeat-ms",
         "200"], env=dict(os.environ, SLUICE_JOIN_TOKEN=JOIN), stdout=alog, stderr=alog))
    admin = TOKENS["admin"]
    wait_for(lambda: any(n["ready"] for n in json.loads(
        http("GET", url + "/v1/nodes", token=admin)[1])["nodes"]), 30, "the agent")

    # 1. alice: a running job with a known walltime, one waiting behind it, a held one, and one
    #    that fits no node (5 GPUs on 4-GPU nodes).
    running = submit(url, job_doc("running", "team-a", {"walltime": "600s"}), "alice")

    def admitted():
        st, body = http("GET", url + "/v1/jobs/%d" % running, token=admin)
        j = json.loads(body) if st == 200 else {}
        return j if j.get("state") == "running" else None
    view = wait_for(admitted, 30, "the first job to run")
    admit = view["admit_time"] if view else 0
    waiting = submit(url, job_doc("waiting", "team-a", {"walltime": "300s"}), "alice")
    held = submit(url, job_doc("held", "team-a", {"hold": True}), "alice")
    st, body = http("POST", url + "/v1/jobs", job_doc("huge", "team-a", {"gpus": 5}),
                    token=TOKENS["alice"])
    huge = json.loads(body)["jobs"][0]["id"] if st == 202 else 0

    def estimated():
        st, body = http("GET", url + "/v1/jobs/%d?start=1" % waiting, token=TOKENS["alice"])
        p = json.loads(body).get("predicted_start") if st == 200 else None
        return p if p and p.get("status") == "estimated" else None
    p = wait_for(estimated, 30, "an estimate for the waiting job")
    check(p is not None and abs(p["time"] - (admit + 600)) <= 2,
          "API: the waiting job starts when the running one's walltime ends (%s vs %.0f)"
          % (p and p.get("time"), admit + 600))
    check(p is not None and "walltime" in p.get("assumes", ""), "API: it says what it assumes")

    rc, out, err = cli(url, "alice", "jobs", "--start")
    check(rc == 0, "alice: sluice jobs --start (%d %s)" % (rc, err[:200]))
    want = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(round(admit + 600)))
    cell = start_column(out, waiting)
    got = calendar.timegm(time.strptime(cell, "%Y-%m-%dT%H:%M:%SZ")) if cell and cell[0] == "2" \
        else None
    check(got is not None and abs(got - (admit + 600)) <= 2,
          "START of the waiting job is the running job's end, %s (%s)\n%s" % (want, cell, out))
    check(start_column(out, running) == "-", "START of the running job: -")
    check(start_column(out, held) == "held", "START of the held job: held")
    if huge:
        check(start_column(out, huge) == "never", "START of a job that fits no node: never")
    else:
        print("note: the server refused a job that fits no node at submission (%d)" % st)

    rc, out, _ = cli(url, "alice", "explain", str(waiting))
    check(rc == 0 and "Estimated start: " in out and "walltime" in out and
          "this job's walltime: 5m00s" in out, "alice: explain gives the estimate:\n" + out)

    # 2. bob (team-b) sees none of it, in the words of a job that does not exist.
    rc, out, _ = cli(url, "bob", "jobs", "--start")
    check(rc == 0 and out.strip() == "no jobs",
          "bob's jobs --start lists none of alice's jobs:\n" + out)
    st, body = http("GET", url + "/v1/jobs?start=1", token=TOKENS["bob"])
    check(st == 200 and json.loads(body)["jobs"] == [], "bob's GET /v1/jobs?start=1 is empty")
    none = waiting + 1000
    for path in ("/v1/jobs/%d?start=1", "/v1/jobs/%d/explain"):
        st, body = http("GET", url + path % waiting, token=TOKENS["bob"])
        st2, body2 = http("GET", url + path % none, token=TOKENS["bob"])
        check(st == 404 and body.replace(str(waiting), "ID") == body2.replace(str(none), "ID"),
              "bob: %s is 404 as for no job (%d %s)" % (path % waiting, st, body[:100]))
    for i in (running, waiting, held, huge):
        if i:
            http("POST", url + "/v1/jobs/%d/cancel" % i, token=admin)
    finish("predicted_start", "estimate %s" % cell)


if __name__ == "__main__":
    try:
        main()
    finally:
        stop_processes(PROCS)
