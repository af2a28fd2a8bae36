#!/usr/bin/env python3
"""End to end: a real `sluice serve`, three real `sluice agent` processes with fake GPUs on
loopback, real child processes. Checks gang starts, preemption signals, a killed agent, a
kill -9 of the server mid-stream, auth boundaries, bad input and the metrics endpoint.

Env: SLUICE_BIN (the binary). Exit 0 pass, 1 fail. Every wait is bounded and generous."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reliability"))
from common import is_ready  # noqa: E402

BIN = os.environ.get("SLUICE_BIN", "build/sluice")
TMP = tempfile.mkdtemp(prefix="sluice-e2e-")
os.chmod(TMP, 0o711)  # pods of other users reach marks/ and their work dirs through it
PROCS = []
FAILURES = []

CONFIG = """
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: e2e}
spec:
  nodeGroups:
  - {namePrefix: n, count: 3, cpu: 16, memory: 64Gi, gpus: {count: 4, model: H100}}
---
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: e2e}
spec:
  maxPendingTotal: 400
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: low}
value: 1
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: high}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu, memory]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 12}
      - {name: cpu, nominalQuota: 48}
      - {name: memory, nominalQuota: 192Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team-a}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team-b}
spec: {clusterQueue: cq}
"""

AUTH = """
---
apiVersion: sluice.dev/v1alpha1
kind: ServerAuth
metadata: {name: tokens}
spec:
  joinToken: join-secret-12345678
  tokens:
  - {name: admin, token: admin-token-12345, role: admin}
  - {name: alice, token: alice-token-12345, role: member, namespaces: [team-a]}
  - {name: bob, token: bob-token-1234567, role: member, namespaces: [team-b]}
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILURES.append(what)
    return cond


def http(method, url, body=None, token=None, ctype="application/yaml"):
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", ctype)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers)
    except (urllib.error.URLError, ConnectionError, socket.timeout) as e:
        return 0, str(e), {}


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            v = pred()
            if v:
                return v
        except Exception:  # the server may be restarting
            pass
        time.sleep(0.1)
    check(False, "timed out waiting for " + what)
    return None


FAKE_NVML = os.environ.get("SLUICE_FAKE_NVML", "")
NVML_NODE, NVML_UTIL = "n2", "17,42,0,100"


def start(args, log, env=None):
    f = open(os.path.join(TMP, log), "ab")
    p = subprocess.Popen([BIN] + args, stdout=f, stderr=subprocess.STDOUT,
                         env=dict(os.environ, **(env or {})))
    PROCS.append(p)
    return p


class Cluster:
    def __init__(self, name, config, token=None, join=None):
        self.dir = os.path.join(TMP, name)
        os.makedirs(self.dir)
        self.cfg = os.path.join(self.dir, "config.yaml")
        with open(self.cfg, "w") as f:
            f.write(config)
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.token = token
        self.admin = token
        self.join = join
        self.agents = {}
        self.server = None

    def start_server(self):
        self.server = start(["serve", "--config", self.cfg, "--listen", "127.0.0.1:%d" % self.port,
                             "--data-dir", os.path.join(self.dir, "data"), "--agent-timeout", "3",
                             "--heartbeat-ms", "200", "--cycle-interval-ms", "200"],
                            "server-%d.log" % self.port)
        wait_for(lambda: is_ready(self.url), 30, "server ready")

    def start_agent(self, node):
        # Node n2 finds its GPUs through NVML: the test stand-in libnvidia-ml (tests/fake_nvml:
        # 4 x H100) when the build made one, so discovery and utilisation run end to end.
        gpus, env = ["--gpus", "fake:4xH100"], None
        if node == NVML_NODE and FAKE_NVML:
            gpus = ["--gpus", "auto", "--nvml-library", FAKE_NVML]
            env = {"SLUICE_FAKE_NVML_UTIL": NVML_UTIL}
        args = ["agent", "--server", self.url, "--name", node] + gpus + [
                "--state-dir", os.path.join(self.dir, "agent-" + node), "--heartbeat-ms", "200"]
        if self.join:  # never on the command line: the environment (or --join-token-file)
            env = dict(env or {}, SLUICE_JOIN_TOKEN=self.join)
        self.agents[node] = start(args, "agent-%s-%d.log" % (node, self.port), env)

    def api(self, method, path, body=None, token=None):
        return http(method, self.url + path, body, token or self.token)

    def job(self, jid):
        st, body, _ = self.api("GET", "/v1/jobs/%d" % jid)
        return json.loads(body) if st == 200 else None

    def submit(self, yaml, token=None):
        st, body, hdr = self.api("POST", "/v1/jobs", yaml, token)
        return st, (json.loads(body) if body.startswith("{") else body), hdr

    def ready_nodes(self):
        st, body, _ = self.api("GET", "/v1/nodes", token=self.admin)
        return sum(1 for n in json.loads(body)["nodes"] if n["ready"]) if st == 200 else 0


def job_yaml(name, ns="team-a", pods=1, gpus=1, prio="low", cmd="sleep 1", grace="0s",
             extra=""):
    return ("apiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: %s, namespace: %s}\n"
            "spec:\n  queue: q\n  pods: %d\n  gpus: %d\n  cpu: 1\n  memory: 1Gi\n"
            "  priorityClassName: %s\n  checkpointGrace: %s\n  command: [sh, -c, %s]\n%s"
            % (name, ns, pods, gpus, prio, grace, json.dumps(cmd), extra))


def test_gang_and_preemption(c):
    marks = os.path.join(TMP, "marks")
    os.makedirs(marks)
    os.chmod(marks, 0o1777)  # a root agent runs the pods as its namespaces' uids
    # 1. A gang of 3 pods x 4 GPUs: one pod per node, all start together.
    cmd = ("echo $(date +%%s.%%N) $SLUICE_NODE $CUDA_VISIBLE_DEVICES $SLUICE_PEERS "
           "> %s/gang-$SLUICE_POD_INDEX; sleep 2" % marks)
    st, body, _ = c.submit(job_yaml("gang", pods=3, gpus=4, cmd=cmd))
    check(st == 202, "gang submitted (202)")
    gid = body["jobs"][0]["id"]
    j = wait_for(lambda: (lambda x: x if x and x["state"] == "succeeded" else None)(c.job(gid)),
                 60, "the gang to succeed")
    if j:
        lines = [open(os.path.join(marks, "gang-%d" % i)).read().split() for i in range(3)]
        starts = [float(l[0]) for l in lines]
        check(max(starts) - min(starts) < 5, "the gang's 3 pods started together (spread %.2fs)"
              % (max(starts) - min(starts)))
        check(len({l[1] for l in lines}) == 3, "one pod per node")
        check(all(l[2] == "0,1,2,3" for l in lines), "CUDA_VISIBLE_DEVICES=0,1,2,3 in every pod")
        check(all(len(l[3].split(",")) == 3 for l in lines), "SLUICE_PEERS lists the 3 pods")
    # 2. Preemption: a low-priority gang holding every GPU gets SIGTERM when a high one arrives.
    cmd = ("trap 'echo TERM > %s/term-$SLUICE_POD_INDEX; exit 0' TERM; "
           "echo up > %s/low-$SLUICE_POD_INDEX; while true; do sleep 0.2; done" % (marks, marks))
    st, body, _ = c.submit(job_yaml("low", pods=3, gpus=4, cmd=cmd, grace="5s"))
    lid = body["jobs"][0]["id"]
    wait_for(lambda: all(os.path.exists(os.path.join(marks, "low-%d" % i)) for i in range(3)), 60,
             "the low gang's processes")
    st, body, _ = c.submit(job_yaml("high", prio="high", gpus=4, cmd="sleep 1"))
    hid = body["jobs"][0]["id"]
    h = wait_for(lambda: (lambda x: x if x and x["state"] == "succeeded" else None)(c.job(hid)),
                 60, "the high-priority job to run")
    check(h is not None, "the preemptor ran")
    low = c.job(lid)
    check(low is not None and low["preemptions"] >= 1, "the victim was preempted (count %s)"
          % (low and low["preemptions"]))
    check(any(os.path.exists(os.path.join(marks, "term-%d" % i)) for i in range(3)),
          "the victim's processes got SIGTERM (their trap ran)")
    # The victim comes back once the GPUs are free; cancel it to free the cluster.
    st, _, _ = c.api("POST", "/v1/jobs/%d/cancel" % lid)
    check(st == 200, "cancel returns 200")
    st, body, _ = c.api("GET", "/v1/jobs/%d/explain" % lid)
    check(st == 200 and "cancelled" in body, "explain says cancelled")


def test_killed_agent(c):
    st, body, _ = c.submit(job_yaml("survivor", pods=2, gpus=4, cmd="sleep 300"))
    jid = body["jobs"][0]["id"]
    j = wait_for(lambda: (lambda x: x if x and x["state"] == "running" and x["started"] else None)
                 (c.job(jid)), 60, "the 2-pod job to start")
    if not j:
        return
    victim_node = j["placement"][0]["node"]
    c.agents[victim_node].kill()  # SIGKILL: no goodbye
    c.agents[victim_node].wait()
    j2 = wait_for(lambda: (lambda x: x if x and x["state"] == "pending" or
                           (x["state"] == "running" and victim_node not in
                            [p["node"] for p in x["placement"]]) else None)(c.job(jid)),
                  30, "the job to be requeued after its agent died")
    check(j2 is not None, "a killed agent's job was requeued as a whole")
    nodes = json.loads(c.api("GET", "/v1/nodes")[1])["nodes"]
    check(any(n["name"] == victim_node and not n["ready"] for n in nodes),
          "the dead agent's node is NotReady")
    c.api("POST", "/v1/jobs/%d/cancel" % jid)
    c.start_agent(victim_node)  # back for the next test
    wait_for(lambda: c.ready_nodes() == 3, 30, "the agent to come back")


def test_server_kill9(c):
    # A job running across the crash keeps its GPUs and its process.
    st, body, _ = c.submit(job_yaml("keeper", gpus=1, cmd="sleep 300"))
    kid = body["jobs"][0]["id"]
    before = wait_for(lambda: (lambda x: x if x and x["started"] else None)(c.job(kid)), 60,
                      "the keeper job to start")
    acked = []
    stop = threading.Event()

    def submitter():
        i = 0
        while not stop.is_set():
            st, body, _ = c.submit(job_yaml("burst-%d" % i, gpus=1, cmd="sleep 0.3"))
            if st == 202:
                acked.append(body["jobs"][0]["id"])
            i += 1

    t = threading.Thread(target=submitter)
    t.start()
    time.sleep(3)
    c.server.send_signal(signal.SIGKILL)
    c.server.wait()
    stop.set()
    t.join()
    check(len(acked) > 10, "submissions were acknowledged before the crash (%d)" % len(acked))
    c.start_server()
    missing = [jid for jid in acked if c.job(jid) is None]
    check(not missing, "every acknowledged job survived kill -9 (%d checked, missing %s)"
          % (len(acked), missing[:5]))
    time.sleep(4)  # past the agent timeout: a wrongly lost node would have requeued it by now
    after = c.job(kid)
    check(before is not None and after is not None and after["state"] == "running" and
          after["attempts"] == 1 and after["placement"] == before["placement"],
          "a job running across the crash kept its placement and was not restarted")
    c.api("POST", "/v1/jobs/%d/cancel" % kid)
    # No GPU is ever assigned twice: sample the nodes while the backlog drains.
    double = []
    deadline = time.time() + 60
    while time.time() < deadline:
        st, body, _ = c.api("GET", "/v1/nodes")
        if st == 200:
            for n in json.loads(body)["nodes"]:
                for g in n["gpus"]:
                    if len(g["jobs"]) > 1:
                        double.append((n["name"], g["index"], g["jobs"]))
        st, body, _ = c.api("GET", "/v1/jobs?state=pending,running&limit=1000")
        if st == 200 and not json.loads(body)["jobs"]:
            break
        time.sleep(0.3)
    check(not double, "no GPU held by two jobs after recovery %s" % double[:3])
    st, body, _ = c.api("GET", "/v1/jobs?state=pending,running&limit=1000")
    check(st == 200 and not json.loads(body)["jobs"], "the recovered backlog drained")


def test_bad_input(c):
    st, body, _ = c.submit("kind: Job\nspec: [unclosed")
    check(st == 400 and "error" in body, "malformed YAML -> 400 with the parser's message")
    st, body, _ = c.submit(job_yaml("x").replace("queue: q", "queue: nope"))
    check(st == 404 and "nope" in body["error"], "unknown queue -> 404 naming it")
    st, body, _ = c.submit(job_yaml("x", gpus=-2))
    check(st == 400, "a negative request -> 400")
    st, _, _ = c.api("POST", "/v1/jobs", "x" * (2 << 20))
    check(st == 413, "a body over 1 MiB -> 413")
    st, body, _ = c.api("GET", "/v1/jobs/999999")
    check(st == 404, "unknown job -> 404")
    # A pending cap: 400 is the cluster-wide cap in the config; a job that never fits piles up.
    docs = "---\n".join(job_yaml("big-%d" % i, gpus=64) for i in range(400))
    st, body, _ = c.submit(docs)
    check(st == 202, "400 never-fitting jobs accepted (%d)" % st)
    st, body, hdr = c.submit(job_yaml("one-too-many", gpus=64))
    check(st == 429 and "Retry-After" in hdr, "the pending cap answers 429 with Retry-After")
    st, body, _ = c.api("GET", "/healthz")
    check(st == 200, "the server is still healthy")


def test_metrics(c):
    st, body, _ = c.api("GET", "/metrics")
    check(st == 200 and "sluice_pending_jobs" in body and "sluice_admission_wait_seconds_bucket"
          in body, "/metrics serves the Prometheus text format")
    if shutil.which("promtool"):
        p = subprocess.run(["promtool", "check", "metrics"], input=body.encode(),
                           capture_output=True)
        check(p.returncode == 0, "promtool check metrics passes: %s" %
              (p.stdout + p.stderr).decode()[:300])
    if FAKE_NVML:
        line = 'sluice_node_gpu_utilization_ratio{node="%s",gpu="1"} 0.42' % NVML_NODE
        ok = wait_for(lambda: line in c.api("GET", "/metrics")[1], 15, "NVML utilisation")
        check(ok, "GPU utilisation sampled through NVML reaches /metrics")


def test_prometheus_scrape(c):
    """A real Prometheus server scrapes /metrics and answers a query over it."""
    if not shutil.which("prometheus"):
        print("skip real Prometheus scrape: prometheus is not installed")
        return
    d = os.path.join(TMP, "prometheus")
    os.makedirs(d)
    with open(os.path.join(d, "prometheus.yml"), "w") as f:
        f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                "scrape_configs:\n- job_name: sluice\n  static_configs:\n"
                "  - targets: ['127.0.0.1:%d']\n" % c.port)
    port = free_port()
    p = subprocess.Popen(["prometheus", "--config.file=" + os.path.join(d, "prometheus.yml"),
                          "--storage.tsdb.path=" + os.path.join(d, "data"),
                          "--web.listen-address=127.0.0.1:%d" % port],
                         stdout=open(os.path.join(TMP, "prometheus.log"), "ab"),
                         stderr=subprocess.STDOUT)
    PROCS.append(p)
    q = "http://127.0.0.1:%d/api/v1/query?query=sum(sluice_node_gpus)" % port

    def scraped():
        st, body, _ = http("GET", q)
        if st != 200:
            return None
        res = json.loads(body)["data"]["result"]
        return res[0]["value"][1] if res else None
    v = wait_for(scraped, 60, "Prometheus to scrape sluice")
    check(v == "12", "a real Prometheus scraped /metrics: sum(sluice_node_gpus) = %s" % v)


def test_web_ui(c):
    """The dashboard rendered by a real browser (headless Chromium): queues, nodes, jobs. The
    dashboard's own test is integration.dashboard (dashboard.py)."""
    from browser import Browser, find_chromium
    if not find_chromium():
        print("skip web UI check: chromium is not installed")
        return
    with Browser(os.path.join(TMP, "chromium")) as b:
        page = b.new_page()
        page.goto(c.url + "/")
        page.wait_for("document.querySelectorAll('#queues tbody tr').length > 0 && "
                      "document.querySelectorAll('#nodes tbody tr').length > 0", 60, "the tables")
        queues = page.eval("document.getElementById('queues').textContent")
        nodes = page.eval("document.getElementById('nodes').textContent")
        check("cq" in queues and "n0" in nodes and "n2" in nodes,
              "the dashboard lists the queue and the nodes")
        page.goto(c.url + "/#/jobs")
        jobs = page.wait_for("document.querySelectorAll('#jobs tbody tr a').length > 0 && "
                             "document.getElementById('jobs').textContent", 60, "the jobs table")
        check("succeeded" in jobs or "cancelled" in jobs, "the jobs view lists jobs with their state")
        check(not page.errors, "no console errors (%s)" % page.errors)


def test_auth():
    c = Cluster("auth", CONFIG + AUTH, join="join-secret-12345678")
    c.admin = "admin-token-12345"
    c.start_server()
    st, _, _ = c.api("GET", "/v1/jobs")
    check(st == 401, "no token -> 401")
    st, body, _ = c.submit(job_yaml("a1", cmd="sleep 300"), token="alice-token-12345")
    check(st == 202, "alice submits to team-a")
    aid = body["jobs"][0]["id"] if st == 202 else 0
    st, _, _ = c.submit(job_yaml("b1", ns="team-b"), token="alice-token-12345")
    check(st == 403, "alice may not submit to team-b (403)")
    st, _, _ = c.api("GET", "/v1/jobs/%d" % aid, token="bob-token-1234567")
    check(st == 404, "bob cannot see alice's job")
    st, _, _ = c.api("POST", "/v1/jobs/%d/cancel" % aid, token="bob-token-1234567")
    check(st == 404, "bob cannot cancel alice's job")
    st, body, _ = c.api("GET", "/v1/jobs", token="bob-token-1234567")
    check(st == 200 and not json.loads(body)["jobs"], "bob's listing does not show team-a")
    st, _, _ = c.api("PUT", "/v1/config", CONFIG + AUTH, token="alice-token-12345")
    check(st == 403, "a member may not change the configuration")
    st, body, _ = c.api("PUT", "/v1/config", "kind: ClusterQueue\nspec: 3", token="admin-token-12345")
    check(st == 400, "a bad configuration is refused with 400 (%d)" % st)
    st, body, _ = c.api("PUT", "/v1/config", CONFIG + AUTH, token="admin-token-12345")
    check(st == 200, "an admin applies a configuration (%d %s)" % (st, body[:200]))
    st, _, _ = http("POST", c.url + "/v1/agents/register", json.dumps({"node": "n0"}),
                    ctype="application/json")
    check(st == 401, "an agent without the join token -> 401")
    c.start_agent("n0")
    wait_for(lambda: c.ready_nodes() == 1, 30, "an agent with the join token to register")
    st, _, _ = c.api("POST", "/v1/jobs/%d/cancel" % aid, token="alice-token-12345")
    check(st == 200, "alice cancels her own job")


def main():
    try:
        c = Cluster("main", CONFIG)
        c.start_server()
        for n in ("n0", "n1", "n2"):
            c.start_agent(n)
        wait_for(lambda: c.ready_nodes() == 3, 30, "three agents to register")
        test_gang_and_preemption(c)
        test_killed_agent(c)
        test_server_kill9(c)
        test_metrics(c)
        test_prometheus_scrape(c)
        test_web_ui(c)
        test_bad_input(c)
        test_auth()
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
        # Pods run in their own process groups with a working directory under TMP: end them too.
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    if os.readlink("/proc/%s/cwd" % pid).startswith(TMP):
                        os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
    if FAILURES:
        print("\n%d failure(s); logs in %s" % (len(FAILURES), TMP))
        for name in sorted(os.listdir(TMP)):
            if name.endswith(".log"):
                print("--- " + name)
                print(open(os.path.join(TMP, name), errors="replace").read()[-3000:])
        return 1
    shutil.rmtree(TMP, ignore_errors=True)
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
