#!/usr/bin/env python3
"""Who may call what (issue 14; docs/api.md "Trust model"): every endpoint of the server and of
an agent, called with no token, a wrong token, another namespace's member, the member, an
admin, the join token, and the credential of another node, against the expected status.

Then impersonation: a second agent with the join token cannot take a live node's name, a
forged sync is refused and changes nothing, and the server never dials an address a peer gave
it (logs come through the agent's own channel). Last, configurations and flags that would
weaken this are refused at start.

Real `sluice serve` and two real `sluice agent` processes on loopback; everything started here
is stopped by its PID."""
import json
import re
import os
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))
from common import (BIN, CONFIG, Serve, check, finish, free_port, http, run_to_exit,  # noqa
                    wait_for, workdir)
sys.path.insert(0, os.path.dirname(__file__))
from tenants import TOKENS, auth_doc  # noqa: E402

JOIN = "join-token-for-the-matrix-0123"
AUTH = auth_doc(JOIN, ("alice", "bob"))

AGENTS = []


def start_agent(url, node, state, port, token=JOIN, extra=()):
    env = dict(os.environ, SLUICE_JOIN_TOKEN=token)
    log = open(state + ".log", "ab")
    p = subprocess.Popen([BIN, "agent", "--server", url, "--name", node, "--gpus", "fake:4xH100",
                          "--state-dir", state, "--listen", "127.0.0.1:%d" % port,
                          "--heartbeat-ms", "200", "--drain", "--drain-grace-ms", "2000"] +
                         list(extra), env=env, stdout=log, stderr=log)
    AGENTS.append(p)
    return p


def stop_agents():
    for p in AGENTS:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in AGENTS:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()


def job(name, ns, script):
    return json.dumps({"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
                       "metadata": {"name": name, "namespace": ns},
                       "spec": {"queue": "q", "podSets": [{"resources": {"nvidia.com/gpu": 1}}],
                                "command": ["sh", "-c", script]}})


def submit(url, token, name, ns, script):
    st, body = http("POST", url + "/v1/jobs", job(name, ns, script), token=token)
    check(st == 202, "%s submits %s: %d %s" % (name, ns, st, body[:200]))
    return json.loads(body)["jobs"][0]["id"] if st == 202 else None


EVICTION = '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"nosuch-0"}}'
KUEUE = "/apis/kueue.x-k8s.io/v1beta1/"
FLAVOR = json.dumps({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
                     "metadata": {"name": "matrix-flavor"}})
STALE_CQ = json.dumps({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
                       "metadata": {"name": "cq", "resourceVersion": "1"}, "spec": {}})
# A Job's update at a resourceVersion the server never reached: 409 whoever may write; a Job
# named otherwise than its path.
OTHER_JOB = json.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "b"}})
STALE_JOB = json.dumps({"apiVersion": "batch/v1", "kind": "Job",
                        "metadata": {"name": "a", "resourceVersion": "999999999"}, "spec": {}})


def access_review(ns, verb="create", resource="jobs", group="batch"):
    return json.dumps({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                       "spec": {"resourceAttributes": {"namespace": ns, "verb": verb,
                                                       "group": group, "resource": resource}}})


def read(path):
    with open(path) as f:
        return f.read().strip()


def matrix(rows, callers):
    """rows: (label, method, url, body, {caller: expected status}[, content type]); one check
    per cell."""
    bad = []
    cells = 0
    for label, method, url, body, want, *ctype in rows:
        for caller, token in callers.items():
            if caller not in want:
                continue
            st, text = http(method, url, body, token=token, timeout=15,
                            ctype=ctype[0] if ctype else "application/json")
            cells += 1
            if st != want[caller]:
                bad.append("%s as %s: %d, expected %d (%s)" % (label, caller, st, want[caller],
                                                                text[:120]))
    check(not bad, "%d cells of the trust matrix as expected%s" % (
        cells, "" if not bad else ": " + "; ".join(bad)))
    return cells


def main():
    d, cfg = workdir("trust")
    with open(cfg, "a") as f:
        f.write(AUTH)
    srv = Serve(d + "/data", cfg)
    check(srv.start(), "server starts with tokens")
    url = srv.url
    ports = {"n0": free_port(), "n1": free_port()}
    for n in ("n0", "n1"):
        start_agent(url, n, os.path.join(d, "agent-" + n), ports[n])
    admin = TOKENS["admin"]
    wait_for(lambda: sum(n["ready"] for n in json.loads(
        http("GET", url + "/v1/nodes", token=admin)[1])["nodes"]) == 2, 30, "both agents")
    creds = {n: read(os.path.join(d, "agent-" + n, "node-credential")) for n in ("n0", "n1")}
    mode = os.stat(os.path.join(d, "agent-n1", "node-credential")).st_mode & 0o777
    check(mode == 0o600, "node-credential is 0600 (%o)" % mode)

    # Jobs: A (alice, team-a) prints its checkpoint token and runs; B (bob, team-b) runs.
    a = submit(url, TOKENS["alice"], "a", "team-a",
               'echo "token=$SLUICE_CHECKPOINT_TOKEN"; exec sleep 300')
    b = submit(url, TOKENS["bob"], "b", "team-b",
               'echo "token=$SLUICE_CHECKPOINT_TOKEN"; exec sleep 300')
    doomed = submit(url, TOKENS["alice"], "c", "team-a", "exec sleep 300")

    def running(i):
        st, body = http("GET", url + "/v1/jobs/%d" % i, token=admin)
        return st == 200 and json.loads(body)["state"] == "running"
    wait_for(lambda: running(a) and running(b), 60, "jobs a and b to run")

    def token_of(i, who):
        st, body = http("GET", url + "/v1/jobs/%d/logs" % i, token=TOKENS[who], timeout=15)
        return body.split("token=", 1)[1].strip() if st == 200 and "token=" in body else None
    tok_a = wait_for(lambda: token_of(a, "alice"), 30, "a's log through the server")
    tok_b = wait_for(lambda: token_of(b, "bob"), 30, "b's log through the server")
    check(tok_a and tok_b and tok_a != tok_b, "each pod has its own checkpoint token")
    node_a = json.loads(http("GET", url + "/v1/jobs/%d" % a, token=admin)[1])["placement"][0]["node"]
    other = "n1" if node_a == "n0" else "n0"
    agent_a = "http://127.0.0.1:%d" % ports[node_a]

    callers = {"none": None, "wrong": "wrong-token-0123456789", "other-member": TOKENS["bob"],
               "member": TOKENS["alice"], "admin": admin, "join": JOIN,
               "other-node": creds[other]}
    U = {"none": 401, "wrong": 401, "join": 401, "other-node": 401}  # not a user at all

    def users(other_member, member, adm):
        return dict(U, **{"other-member": other_member, "member": member, "admin": adm})
    anyone = {c: 200 for c in callers}
    nobody = {c: 401 for c in callers}
    with open(cfg) as f:
        config_text = f.read()
    reg = json.dumps({"node": node_a, "address": "http://127.0.0.1:9", "agent_id": "x",
                      "credential": "impostor-credential-0123456789abcdef",
                      "gpus": [{"index": i, "model": "H100"} for i in range(4)]})
    rows = [
        ("GET /healthz", "GET", url + "/healthz", None, anyone),
        ("GET /readyz", "GET", url + "/readyz", None, anyone),
        # Anyone but a wrong token gets 200; the namespaces' series only with a user token
        # (checked below).
        ("GET /metrics", "GET", url + "/metrics", None, dict(anyone, **dict(U, none=200))),
        ("GET /", "GET", url + "/", None, anyone),
        ("GET /ui/app.js", "GET", url + "/ui/app.js", None, anyone),
        # Anyone gets 200; without a user token it holds no data (checked below).
        ("GET /v1/dashboard", "GET", url + "/v1/dashboard", None, anyone),
        ("GET /v1/jobs", "GET", url + "/v1/jobs", None, users(200, 200, 200)),
        ("POST /v1/jobs team-a", "POST", url + "/v1/jobs", job("m", "team-a", "true"),
         users(403, 202, 202)),
        ("GET job a", "GET", url + "/v1/jobs/%d" % a, None, users(404, 200, 200)),
        ("GET job a explain", "GET", url + "/v1/jobs/%d/explain" % a, None, users(404, 200, 200)),
        ("GET job a logs", "GET", url + "/v1/jobs/%d/logs" % a, None, users(404, 200, 200)),
        # a has no terminal: its owner and an admin get as far as 409 (tests/security/
        # tenant_jobs.py types into a real session).
        ("POST job a tty", "POST", url + "/v1/jobs/%d/tty" % a, "ls\r", users(404, 409, 409)),
        ("POST cancel job c", "POST", url + "/v1/jobs/%d/cancel" % doomed, None,
         dict(U, **{"other-member": 404})),
        ("GET /v1/queues", "GET", url + "/v1/queues", None, users(200, 200, 200)),
        ("GET /v1/nodes", "GET", url + "/v1/nodes", None, users(200, 200, 200)),
        ("GET /v1/config", "GET", url + "/v1/config", None, users(403, 403, 200)),
        ("GET /v1/state", "GET", url + "/v1/state", None, users(403, 403, 200)),
        ("PUT /v1/config", "PUT", url + "/v1/config", config_text, users(403, 403, 200)),
        ("POST reset-credential", "POST", url + "/v1/nodes/%s/reset-credential" % node_a, None,
         dict(U, **{"other-member": 403, "member": 403})),  # an admin's reset: unit tests
        # A reclaim (docs/autoscaling.md) is the admin's; of no node, so that it changes nothing.
        ("POST reclaim", "POST", url + "/v1/nodes/nosuch/reclaim", '{"notice": "1s"}',
         users(403, 403, 404)),
        ("GET /v1/pools", "GET", url + "/v1/pools", None, users(200, 200, 200)),
        ("GET /v1/advise", "GET", url + "/v1/advise", None, users(200, 200, 200)),
        ("POST /v1/agents/register as a live node", "POST", url + "/v1/agents/register", reg,
         dict(nobody, join=403)),
        ("POST sync of another node", "POST", url + "/v1/agents/%s/sync" % node_a, "{}", nobody),
        ("POST log upload of another node", "POST",
         url + "/v1/agents/%s/logs/1?status=200" % node_a, "forged", nobody),
        # Kubernetes API watches (docs/kubernetes.md): a stream that timeoutSeconds ends.
        ("watch jobs.batch team-a", "GET",
         url + "/apis/batch/v1/namespaces/team-a/jobs?watch=true&timeoutSeconds=1", None,
         users(403, 200, 200)),
        ("watch workloads team-a", "GET", url + "/apis/kueue.x-k8s.io/v1beta1/namespaces/team-a/"
         "workloads?watch=true&timeoutSeconds=1", None, users(403, 200, 200)),
        ("watch jobs.batch, every namespace", "GET",
         url + "/apis/batch/v1/jobs?watch=true&timeoutSeconds=1", None, users(200, 200, 200)),
        ("watch pods team-a", "GET",
         url + "/api/v1/namespaces/team-a/pods?watch=true&timeoutSeconds=1", None,
         users(403, 200, 200)),
        ("watch nodes", "GET", url + "/api/v1/nodes?watch=true&timeoutSeconds=1", None,
         users(200, 200, 200)),
        ("watch clusterqueues", "GET", url + "/apis/kueue.x-k8s.io/v1beta1/clusterqueues?"
         "watch=true&timeoutSeconds=1", None, users(200, 200, 200)),
        # Kueue's visibility API: a member sees its namespaces' pending workloads only
        # (docs/kubernetes.md "Pending workloads"); another namespace's LocalQueue is Forbidden.
        ("GET pendingworkloads of a ClusterQueue", "GET",
         url + "/apis/visibility.kueue.x-k8s.io/v1beta1/clusterqueues/cq/pendingworkloads", None,
         users(200, 200, 200)),
        ("GET pendingworkloads of team-a's LocalQueue", "GET",
         url + "/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/team-a/localqueues/q/"
         "pendingworkloads", None, users(403, 200, 200)),
        # kubectl patch job a -p '{"spec":{"suspend":false}}': a has no hold, nothing changes.
        ("PATCH jobs.batch a (spec.suspend)", "PATCH",
         url + "/apis/batch/v1/namespaces/team-a/jobs/a", '{"spec":{"suspend":false}}',
         users(403, 200, 200), "application/strategic-merge-patch+json"),
        # kubectl label job a trust=checked: the Job's own labels (its owner's and an admin's;
        # the same value each time, so the cells do not depend on their order).
        ("PATCH jobs.batch a (metadata.labels)", "PATCH",
         url + "/apis/batch/v1/namespaces/team-a/jobs/a", '{"metadata":{"labels":{"trust":"checked"}}}',
         users(403, 200, 200), "application/merge-patch+json"),
        # kubectl replace of job a read long ago: its resourceVersion is stale, so 409 before
        # anything is read or changed (docs/kubernetes.md "Update").
        ("PUT jobs.batch a, stale", "PUT", url + "/apis/batch/v1/namespaces/team-a/jobs/a",
         STALE_JOB, users(403, 409, 409), "application/json"),
        # kubectl apply --server-side of a manifest named otherwise than the path: 400 before
        # anything is read or changed.
        ("PATCH jobs.batch a (server-side apply)", "PATCH",
         url + "/apis/batch/v1/namespaces/team-a/jobs/a?fieldManager=t", OTHER_JOB,
         users(403, 400, 400), "application/apply-patch+yaml"),
        # kubectl uncordon of a node that is not cordoned: the admin's only, a no-op here.
        ("PATCH node (spec.unschedulable)", "PATCH", url + "/api/v1/nodes/" + other,
         '{"spec":{"unschedulable":null}}', users(403, 403, 200),
         "application/strategic-merge-patch+json"),
        # kubectl drain's eviction (docs/kubernetes.md "Drain") of a pod that does not exist,
        # so that the cells change nothing: whoever may act in team-a gets as far as 404.
        ("POST pods/eviction team-a", "POST",
         url + "/api/v1/namespaces/team-a/pods/nosuch-0/eviction", EVICTION,
         users(403, 404, 404)),
        # kubectl describe's events; kubectl drain's list of a node's pods.
        ("GET events team-a", "GET", url + "/api/v1/namespaces/team-a/events", None,
         users(403, 200, 200)),
        ("GET events, every namespace", "GET", url + "/api/v1/events", None,
         users(200, 200, 200)),
        ("GET pods on a node", "GET",
         url + "/api/v1/pods?fieldSelector=spec.nodeName%3D" + node_a, None,
         users(200, 200, 200)),
        # Kueue's configuration through the Kubernetes API (kubectl apply, edit, delete of
        # ClusterQueues and kin): an admin's only. The cells change nothing: a dry run, an empty
        # patch, a stale resourceVersion (409 before anything is read), a name that is not there.
        ("POST resourceflavors dryRun=All", "POST",
         url + KUEUE + "resourceflavors?dryRun=All", FLAVOR, users(403, 403, 201)),
        ("PATCH localqueues q team-a (nothing)", "PATCH",
         url + KUEUE + "namespaces/team-a/localqueues/q", "{}", users(403, 403, 200),
         "application/merge-patch+json"),
        ("PUT clusterqueues cq, stale", "PUT", url + KUEUE + "clusterqueues/cq", STALE_CQ,
         users(403, 403, 409)),
        ("DELETE clusterqueues nosuch", "DELETE", url + KUEUE + "clusterqueues/nosuch", None,
         users(403, 403, 404)),
        # JobSets, PyTorchJobs, MPIJobs (a member's in its namespaces, as its Jobs).
        ("GET jobsets team-a", "GET", url + "/apis/jobset.x-k8s.io/v1alpha2/namespaces/team-a/jobsets",
         None, users(403, 200, 200)),
        ("DELETE pytorchjobs nosuch team-a", "DELETE",
         url + "/apis/kubeflow.org/v1/namespaces/team-a/pytorchjobs/nosuch", None,
         users(403, 404, 404)),
        ("PATCH pytorchjobs nosuch team-a (runPolicy.suspend)", "PATCH",
         url + "/apis/kubeflow.org/v1/namespaces/team-a/pytorchjobs/nosuch",
         '{"spec":{"runPolicy":{"suspend":true}}}', users(403, 404, 404),
         "application/merge-patch+json"),
        ("watch mpijobs team-a", "GET",
         url + "/apis/kubeflow.org/v2beta1/namespaces/team-a/mpijobs?watch=true&timeoutSeconds=1",
         None, users(403, 200, 200)),
        # Cohorts and Topologies (the same path): anyone reads them, an admin writes them.
        ("GET cohorts", "GET", url + KUEUE + "cohorts", None, users(200, 200, 200)),
        ("GET topologies", "GET", url + KUEUE + "topologies", None, users(200, 200, 200)),
        ("DELETE cohorts nosuch", "DELETE", url + KUEUE + "cohorts/nosuch", None,
         users(403, 403, 404)),
        ("DELETE topologies nosuch", "DELETE", url + KUEUE + "topologies/nosuch", None,
         users(403, 403, 404)),
        # kubectl auth can-i: any user may ask about itself (the answers are checked below).
        ("POST selfsubjectaccessreviews", "POST",
         url + "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", access_review("team-a"),
         users(201, 201, 201)),
        ("POST selfsubjectrulesreviews", "POST",
         url + "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
         '{"spec":{"namespace":"team-a"}}', users(201, 201, 201)),
        ("agent GET /healthz", "GET", agent_a + "/healthz", None, anyone),
        ("agent GET /v1/pods", "GET", agent_a + "/v1/pods", None, nobody),
        ("agent GET /v1/logs of b", "GET", agent_a + "/v1/logs/%d/0" % b, None, nobody),
        ("agent POST checkpoint of a", "POST", agent_a + "/v1/checkpoint/%d/0" % a, None, nobody),
    ]
    cells = matrix(rows, callers)
    # The node itself, and the pods' own narrow credentials.
    own = {"node": creds[node_a], "pod-a": tok_a, "pod-b": tok_b}
    cells += matrix([
        ("agent GET /v1/pods", "GET", agent_a + "/v1/pods", None,
         {"node": 200, "pod-a": 401, "pod-b": 401}),
        ("agent POST checkpoint of a", "POST", agent_a + "/v1/checkpoint/%d/0" % a, None,
         {"node": 401, "pod-a": 200, "pod-b": 401}),
    ], own)
    st, body = http("GET", url + "/v1/jobs", token=TOKENS["bob"])
    names = sorted(j["name"] for j in json.loads(body)["jobs"]) if st == 200 else []
    check(names == ["b"], "bob lists only team-b's jobs: %s" % names)
    st, body = http("GET", url + "/apis/batch/v1/jobs?watch=true&resourceVersion=0&"
                    "timeoutSeconds=1", token=TOKENS["bob"], timeout=15)
    watched = sorted(json.loads(l)["object"]["metadata"]["name"] for l in body.splitlines()
                     if l.strip()) if st == 200 else None
    check(watched == ["b"], "bob's watch across namespaces shows only team-b's jobs: %s" % watched)
    # kubectl auth can-i answers as the rules are: a member in its namespace, not in another's.
    def allowed(token, body):
        st, text = http("POST", url + "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                        body, token=token)
        return json.loads(text)["status"]["allowed"] if st == 201 else None
    answers = {(who, ns): allowed(TOKENS[who], access_review(ns))
               for who in ("alice", "bob") for ns in ("team-a", "team-b")}
    check(answers == {("alice", "team-a"): True, ("alice", "team-b"): False,
                      ("bob", "team-a"): False, ("bob", "team-b"): True},
          "can-i create jobs answers from the tokens' namespaces: %s" % answers)
    check(allowed(TOKENS["alice"], access_review("", "patch", "nodes", "")) is False and
          allowed(admin, access_review("", "patch", "nodes", "")) is True,
          "can-i patch nodes: an admin's only")
    # Events and a node's pods across namespaces: bob sees team-b's only.
    st, body = http("GET", url + "/api/v1/events", token=TOKENS["bob"])
    spaces = sorted({e["metadata"]["namespace"] for e in json.loads(body)["items"]}) if st == 200 else None
    check(spaces == ["team-b"], "bob's events across namespaces: team-b's only (%s)" % spaces)
    st, body = http("GET", url + "/api/v1/pods?fieldSelector=spec.nodeName%3D" + node_a,
                    token=TOKENS["bob"])
    spaces = {p["metadata"]["namespace"] for p in json.loads(body)["items"]} if st == 200 else None
    check(spaces is not None and spaces <= {"team-b"},
          "bob's pods on %s: team-b's only (%s)" % (node_a, spaces))
    # The dashboard's history: no samples without a user token; a member's only its namespaces.
    for who in ("none", "wrong", "join", "other-node"):
        body = json.loads(http("GET", url + "/v1/dashboard", token=callers[who])[1])
        check(body["caller"] is None and body["samples"] == [],
              "/v1/dashboard with %s token: no data" % who)
    # /metrics: the namespaces' GPU-seconds only for the scraper's token (issue 41).
    def metric_namespaces(token):
        text = http("GET", url + "/metrics", token=token)[1]
        return sorted(set(re.findall(r'^sluice_namespace_gpu_seconds_total\{namespace="([^"]+)"',
                                     text, re.M)))
    check(metric_namespaces(None) == [], "/metrics without a token: no namespace's GPU-seconds")
    check(metric_namespaces(TOKENS["bob"]) == ["team-b"],
          "/metrics with bob's token: team-b's only (%s)" % metric_namespaces(TOKENS["bob"]))
    check({"team-a", "team-b"} <= set(metric_namespaces(admin)),
          "/metrics with the admin's token: every namespace (%s)" % metric_namespaces(admin))
    body = json.loads(http("GET", url + "/v1/dashboard", token=TOKENS["bob"])[1])
    seen = set().union(*[set(s["namespaces"]) for s in body["samples"]] or [set()])
    check(seen <= {"team-b"}, "bob's dashboard history: only team-b's GPU-hours (%s)" % sorted(seen))
    # Right-sizing (GET /v1/advise): a member's report holds its namespaces' jobs only.
    def advised(token):
        body = json.loads(http("GET", url + "/v1/advise", token=token)[1])
        return sorted({t["namespace"] for t in body["totals"]})
    check(advised(TOKENS["bob"]) == ["team-b"], "bob's /v1/advise: team-b's only (%s)" % advised(TOKENS["bob"]))
    check("team-a" in advised(admin), "the admin's /v1/advise: team-a's too (%s)" % advised(admin))
    st, _ = http("GET", url + "/v1/advise?headroom=101", token=admin)
    check(st == 400, "/v1/advise?headroom=101: 400 (%s)" % st)

    # --- Impersonation -------------------------------------------------------------------------
    # A listener where an impostor says it is: the server must never connect to it.
    trap = socket.socket()
    trap.bind(("127.0.0.1", 0))
    trap.listen(16)
    trap.settimeout(0.2)
    trap_port = trap.getsockname()[1]
    dialed = []

    def watch():
        end = time.time() + 20
        while time.time() < end:
            try:
                c, _ = trap.accept()
                dialed.append(1)
                c.close()
            except OSError:
                pass
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    impostor = start_agent(url, node_a, os.path.join(d, "impostor"), free_port(),
                           extra=["--advertise", "http://127.0.0.1:%d" % trap_port])
    time.sleep(3)
    log = open(os.path.join(d, "impostor.log"), errors="replace").read()
    check("already belongs to the agent holding its credential" in log,
          "a second agent with the join token cannot take node %s" % node_a)
    impostor.send_signal(signal.SIGTERM)
    impostor.wait(timeout=30)
    nodes = json.loads(http("GET", url + "/v1/nodes", token=admin)[1])["nodes"]
    mine = [n for n in nodes if n["name"] == node_a][0]
    check(mine["agent"] == agent_a and mine["ready"],
          "node %s still served by its own agent (%s)" % (node_a, mine["agent"]))
    forged = json.dumps({"agent_id": "x", "running": [],
                         "exits": [{"job": a, "pod": 0, "exit_code": 0, "reason": "exited"}]})
    for who, tok in (("join token", JOIN), ("other node", creds[other])):
        st, _ = http("POST", url + "/v1/agents/%s/sync" % node_a, forged, token=tok)
        check(st == 401, "a forged sync with the %s is refused (%d)" % (who, st))
    time.sleep(1)
    check(running(a), "job a still runs after the forged syncs")
    st, body = http("GET", url + "/v1/jobs/%d/logs" % a, token=TOKENS["alice"], timeout=15)
    check(st == 200 and "token=" in body, "logs come through the agent's channel (%d)" % st)
    watcher.join()
    check(not dialed, "the server never dialed the address an impostor gave (%d)" % len(dialed))
    # A log larger than the server's 1 MiB body limit comes through the agent's channel: only
    # the node's own credential may send the server such a body.
    big = submit(url, TOKENS["alice"], "big", "team-a",
                 "head -c 3145728 /dev/zero | tr '\\0' x; exec sleep 300")
    wait_for(lambda: running(big), 60, "the big-log job to run")

    def big_log():
        st, body = http("GET", url + "/v1/jobs/%d/logs?tail_bytes=4000000" % big,
                        token=TOKENS["alice"], timeout=30)
        return (st, len(body)) if st == 200 and len(body) >= 3145728 else None
    got = wait_for(big_log, 30, "a 3 MiB log")
    check(got == (200, 3145728), "a 3 MiB log through the agent's channel: %s" % (got,))

    stop_agents()
    srv.stop()

    # --- Refused at start -----------------------------------------------------------------------
    weak = cfg + ".weak"
    with open(weak, "w") as f:
        f.write(CONFIG + AUTH.replace(TOKENS["bob"], "short-123"))
    rc, err = run_to_exit([BIN, "serve", "--config", weak, "--data-dir", d + "/weak",
                           "--listen", "127.0.0.1:%d" % free_port()])
    check(rc != 0 and "at least 16 characters" in err, "a 9-character token is refused: " +
          err.strip()[:160])
    nojoin = cfg + ".nojoin"
    with open(nojoin, "w") as f:
        f.write(CONFIG + "\n".join(l for l in AUTH.splitlines() if "joinToken" not in l))
    rc, err = run_to_exit([BIN, "serve", "--config", nojoin, "--data-dir", d + "/nojoin",
                           "--listen", "127.0.0.1:%d" % free_port()])
    check(rc != 0 and "joinToken: required" in err,
          "user tokens without a join token are refused: " + err.strip()[:160])
    rc, err = run_to_exit([BIN, "agent", "--name", "n1", "--gpus", "fake:4xH100",
                           "--state-dir", d + "/cli", "--join-token", JOIN])
    check(rc == 2 and "--join-token-file" in err, "--join-token on the command line is refused")
    tf = os.path.join(d, "join.txt")
    with open(tf, "w") as f:
        f.write(JOIN + "\n")
    os.chmod(tf, 0o644)
    rc, err = run_to_exit([BIN, "agent", "--name", "n1", "--gpus", "fake:4xH100",
                           "--state-dir", d + "/cli", "--join-token-file", tf])
    check(rc == 2 and "chmod 600" in err, "a join token file others can read is refused")
    finish("trust_matrix", "%d matrix cells" % cells)


if __name__ == "__main__":
    try:
        main()
    finally:
        stop_agents()
