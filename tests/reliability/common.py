"""Shared by the reliability suite (tests/reliability/*.py): real `sluice serve` processes on
free loopback ports, HTTP with bounded timeouts, checks that print one line each.

Env: SLUICE_BIN (the binary). Every process a test starts is stopped by its PID."""
import atexit
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

BIN = os.environ.get("SLUICE_BIN", "build/sluice")
FAILURES = []
STARTED = []  # every Serve started, stopped at exit whatever happened


@atexit.register
def _stop_all():
    for s in STARTED:
        s.kill9()

CONFIG = """
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: rel}
spec:
  nodeGroups:
  - {namePrefix: n, count: 2, cpu: 16, memory: 64Gi, gpus: {count: 4, model: H100}}
---
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: rel}
spec:
  maxPendingTotal: 1000000
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
  - coveredResources: [nvidia.com/gpu, cpu, memory]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8}
      - {name: cpu, nominalQuota: 32}
      - {name: memory, nominalQuota: 128Gi}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team-a}
spec: {clusterQueue: cq}
"""


def stop_processes(procs, timeout=30):
    """SIGTERM every process of `procs` still running, then SIGKILL one that outlives `timeout`."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()


def job(name, command_arg="true"):
    return json.dumps({"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
                       "metadata": {"name": name, "namespace": "team-a"},
                       "spec": {"queue": "q", "podSets": [{"resources": {"nvidia.com/gpu": 1}}],
                                "command": ["sh", "-c", command_arg]}})


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


PASSES = [0]


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILURES.append(what)
    else:
        PASSES[0] += 1
    return cond


def http(method, url, body=None, token=None, timeout=10, ctype="application/json"):
    data = body.encode("utf-8", "surrogateescape") if isinstance(body, str) else body
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", ctype)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, ConnectionError, socket.timeout, OSError) as e:
        return 0, str(e)


def all_jobs(url, token=None, query=""):
    """(status, every job the token sees): GET /v1/jobs page after page (the server gives at
    most 1000 a page and says where the next one starts)."""
    import json as _json
    jobs, after = [], None
    while True:
        page = url + "/v1/jobs?limit=1000" + query + ("&continue=" + after if after else "")
        status, body = http("GET", page, token=token, timeout=60)
        if status != 200:
            return status, jobs
        doc = _json.loads(body)
        jobs += doc["jobs"]
        after = doc.get("continue")
        if not doc.get("truncated") or not after:
            return 200, jobs


def wait_for(pred, timeout, what):
    """pred()'s first true value within `timeout` s (polled every 0.1 s); else a failed check."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    check(False, "timed out waiting for " + what)
    return None


def is_ready(url, timeout=2):
    """Whether the server at `url` says it is ready (GET /readyz answers 200)."""
    return http("GET", url + "/readyz", timeout=timeout)[0] == 200


def wait_ready(url, timeout, what="server ready"):
    """True once the server at `url` is ready, within `timeout` s; else a failed check."""
    return bool(wait_for(lambda: is_ready(url), timeout, what))


def rss_mib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


class Serve:
    """One `sluice serve` on a data dir; start() returns once /readyz answers (or it exited)."""

    def __init__(self, data_dir, config_path, port=None, extra=()):
        self.data_dir, self.config_path = data_dir, config_path
        self.port = port or free_port()
        self.extra = list(extra)
        self.proc = None
        self.url = "http://127.0.0.1:%d" % self.port

    def argv(self):
        return [BIN, "serve", "--config", self.config_path, "--data-dir", self.data_dir,
                "--listen", "127.0.0.1:%d" % self.port, "--quiet"] + self.extra

    def start(self, timeout=30, wait_ready=True):
        STARTED.append(self)
        self.proc = subprocess.Popen(self.argv(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, errors="replace")
        deadline = time.time() + timeout
        while wait_ready and time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            if http("GET", self.url + "/healthz", timeout=2)[0] == 200:
                return True
            time.sleep(0.05)
        return not wait_ready

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill9()


def run_to_exit(argv, timeout=20):
    """Runs a command that should refuse to start: (returncode, stderr). One still running
    after `timeout` is killed (subprocess.run does) and reported as -1000."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1000, "still running after %d s (it did not refuse)" % timeout
    return p.returncode, p.stderr


def workdir(tag):
    """A fresh temp dir with the test config; removed at exit unless a check failed (kept to
    look at) or SLUICE_KEEP_TMP=1."""
    d = tempfile.mkdtemp(prefix="sluice-rel-%s-" % tag)

    def remove():
        if not FAILURES and os.environ.get("SLUICE_KEEP_TMP") != "1":
            shutil.rmtree(d, ignore_errors=True)
    atexit.register(remove)
    cfg = os.path.join(d, "config.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    return d, cfg


def finish(name, summary):
    print("%s: %s" % (name, summary), flush=True)
    print("%s: %d passed, %d failed" % (name, PASSES[0], len(FAILURES)), flush=True)
    if FAILURES:
        print("%s: %d check(s) failed: %s" % (name, len(FAILURES), "; ".join(FAILURES)))
        sys.exit(1)
    sys.exit(0)


class EtcdMember:
    """One member of an etcd cluster on loopback (EtcdCluster), stopped by its PID."""

    def __init__(self, cluster, i):
        self.cluster, self.i = cluster, i
        self.proc = None

    def start(self):
        c = self.cluster
        me_c = "http://127.0.0.1:%d" % c.client_ports[self.i]
        me_p = "http://127.0.0.1:%d" % c.peer_ports[self.i]
        log = open(os.path.join(c.dir, "etcd%d.log" % self.i), "a")
        self.proc = subprocess.Popen(
            ["etcd", "--name", "m%d" % self.i, "--data-dir", os.path.join(c.dir, "etcd%d" % self.i),
             "--listen-client-urls", me_c, "--advertise-client-urls", me_c,
             "--listen-peer-urls", me_p, "--initial-advertise-peer-urls", me_p,
             "--initial-cluster", c.initial_cluster, "--initial-cluster-state", "new",
             "--initial-cluster-token", "sluice-test-%d" % os.getpid()] + list(c.extra),
            stdout=log, stderr=log)
        STARTED.append(self)

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)


class EtcdCluster:
    """A 3-member etcd cluster on free loopback ports, its data under `dir`. Scripts that use it
    exit 77 (skipped) where `etcd` is not installed: skip_without_etcd()."""

    def __init__(self, dir, size=3, extra=()):
        self.dir, self.extra = dir, extra
        self.client_ports = [free_port() for _ in range(size)]
        self.peer_ports = [free_port() for _ in range(size)]
        self.initial_cluster = ",".join(
            "m%d=http://127.0.0.1:%d" % (k, p) for k, p in enumerate(self.peer_ports))
        self.members = [EtcdMember(self, i) for i in range(size)]

    def start(self, timeout=30):
        for m in self.members:
            m.start()
        return wait_for(lambda: http("GET", "http://127.0.0.1:%d/health" % self.client_ports[0],
                                     timeout=2)[0] == 200, timeout, "etcd health") is not None

    def store_url(self, cluster):
        return "etcd://" + ",".join("127.0.0.1:%d" % p for p in self.client_ports) + "/" + cluster


def skip_without_etcd(name):
    if not shutil.which("etcd"):
        print("%s: skipped: etcd is not installed (Debian etcd-server; scripts/deps.sh installs "
              "it)" % name)
        sys.exit(77)


def leader_of(replicas):
    """The replica whose /readyz says ready (the leader of an etcd store), else None."""
    for r in replicas:
        if is_ready(r.url):
            return r
    return None


class Ledger:
    """The acknowledged submissions (id -> name) of concurrent clients, and the checks of the
    kill tests against what the server has at the end: 0 lost, 0 duplicated, 0 reused."""

    def __init__(self):
        self.ids, self.dups, self.sent = {}, [], 0
        self.lock = threading.Lock()

    def __len__(self):
        with self.lock:
            return len(self.ids)

    def record(self, status, body, name):
        """One answer to the submission of `name`; True when it was acknowledged (202)."""
        with self.lock:
            self.sent += 1
        if status != 202:
            return False
        try:
            ids = [j["id"] for j in json.loads(body)["jobs"]]
        except (ValueError, KeyError):
            check(False, "202 without a job list: " + body[:200])
            return False
        with self.lock:
            for i in ids:
                if i in self.ids:
                    self.dups.append((i, self.ids[i], name))
                self.ids[i] = name
        return True

    def verify(self, jobs):
        """jobs: id -> name as the server lists them. Checks; returns the lost ids."""
        lost = [i for i in self.ids if i not in jobs]
        reused = [i for i in self.ids if i in jobs and jobs[i] != self.ids[i]]
        names = {}
        for i, n in jobs.items():
            names.setdefault(n, []).append(i)
        twice = [n for n, ids in names.items() if len(ids) > 1]
        check(not lost, "0 acknowledged jobs lost (lost: %s)" % lost[:10])
        check(not self.dups, "0 ids acknowledged twice (%s)" % self.dups[:5])
        check(not reused, "0 ids reused for another submission (%s)" % reused[:10])
        check(not twice, "no submission stored twice (%s)" % twice[:5])
        return lost
