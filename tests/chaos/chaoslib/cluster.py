"""One chaos cluster: a real `sluice serve` (SQLite store) and three `sluice agent`s with fake
GPUs on loopback, each agent talking to the server through its own Proxy (the partition
fault). Everything lives in one directory, which every process carries on its command line
(procs.py: that is how the harness finds, signals and finally stops them)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from . import procs
from .proxy import Proxy

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
BIN = os.environ.get("SLUICE_BIN") or os.path.join(_REPO, "build", "sluice")
NODES = ("n0", "n1", "n2")  # a Cluster nodeGroup `n` of 3 names its nodes n0..n2
LEASE_S = 2.0        # serve --agent-timeout: the agents' lease
MARGIN_S = 0.5       # serve --fence-margin
GRACE_S = 1.0        # every job's checkpointGrace: SIGTERM to SIGKILL
HEARTBEAT_MS = 200

CONFIG = """
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: chaos}
spec:
  nodeGroups:
  - {namePrefix: n, count: 3, cpu: 16, memory: 64Gi, gpus: {count: 4, model: H100}}
---
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: chaos}
spec:
  maxPendingTotal: 1000000
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: low}
value: 10
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
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
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu, memory]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 12}
      - {name: cpu, nominalQuota: 48}
      - {name: memory, nominalQuota: 192Gi}
  sluice: {defaultPriorityClass: low}
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


def http(method, url, body=None, timeout=2.0, headers=None):
    """(status, parsed JSON or text); status 0 when there was no answer."""
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, text = r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError) as e:
        return 0, str(e)
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def bwrap_works():
    """bwrap is installed and can make a sandbox here (user namespaces allowed)."""
    if not shutil.which("bwrap"):
        return False, "bwrap is not installed"
    r = subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"], capture_output=True)
    return (r.returncode == 0,
            "bwrap --ro-bind / / true failed: " + r.stderr.decode(errors="replace").strip())


def can_mount_tmpfs(probe_dir):
    """Root, and `mount -t tmpfs` works here (tried once on a scratch dir)."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False, "not root (no tmpfs for a full disk)"
    os.makedirs(probe_dir, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", probe_dir],
                       capture_output=True)
    if r.returncode != 0:
        return False, "mount -t tmpfs failed: " + r.stderr.decode(errors="replace").strip()
    subprocess.run(["umount", probe_dir])
    return True, ""


class Cluster:
    def __init__(self, root, sandboxed=(), tmpfs=False, agent_args=()):
        self.root = root
        self.agent_args = list(agent_args)  # --agent-arg: appended to every agent's argv
        self.sandboxed = set(sandboxed)  # nodes whose agent runs --sandbox bwrap
        self.tmpfs = tmpfs
        self.data = os.path.join(root, "data")
        self.shared = os.path.join(root, "shared")  # the ledger: writable by every pod
        self.ledger = os.path.join(self.shared, "ledger")
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.store = "sqlite"
        self.server = None
        self.agents = {}
        self.proxies = {}
        self.ballast = None
        self.mounted = False

    # -- start and stop ---------------------------------------------------------------

    def prepare(self):
        """The schedule's directories, its shared ledger and the configuration file."""
        os.makedirs(self.data, exist_ok=True)
        # Pods run as unprivileged uids (root agent): they must traverse to the ledger.
        # Not sticky: fs.protected_regular would refuse O_CREAT on another uid's file there.
        os.chmod(self.root, 0o711)
        os.makedirs(self.shared)
        os.chmod(self.shared, 0o777)
        with open(self.ledger, "w"):
            pass
        os.chmod(self.ledger, 0o666)
        self.cfg = os.path.join(self.root, "config.yaml")
        with open(self.cfg, "w") as f:
            f.write(CONFIG)

    def start(self):
        self.prepare()
        if self.tmpfs:
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m,mode=0711", "tmpfs",
                                self.data], capture_output=True)
            self.mounted = r.returncode == 0
        if not self.start_server():
            raise RuntimeError("the server did not start: see %s/server.log" % self.root)
        for n in NODES:
            self.proxies[n] = Proxy(self.port)
            self.start_agent(n)
        if not self.wait_ready(15):
            raise RuntimeError("the nodes did not become ready: see %s" % self.root)

    def stop(self):
        """Stops every process of this cluster by PID; returns the pids that would not go."""
        for p in self.proxies.values():
            p.set_mode("pass")
        for p in list(self.agents.values()) + [self.server]:
            if p is not None:
                procs.stop_popen(p, self.root, term_wait=3)
        stuck = procs.kill_marked(self.root)
        for p in self.proxies.values():
            p.close()
        events = os.path.join(self.data, "events.jsonl")
        if self.mounted and os.path.exists(events):  # the tmpfs goes: keep its event log
            shutil.copy(events, os.path.join(self.root, "events.jsonl"))
        if self.mounted:
            if subprocess.run(["umount", self.data], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", self.data])
            self.mounted = False
        return stuck

    # -- the server ---------------------------------------------------------------------

    def start_server(self, timeout=15):
        log = open(os.path.join(self.root, "server.log"), "ab")
        self.server = procs.track(subprocess.Popen(
            [BIN, "serve", "--config", self.cfg, "--data-dir", self.data,
             "--listen", "127.0.0.1:%d" % self.port, "--agent-timeout", str(LEASE_S),
             "--fence-margin", str(MARGIN_S), "--heartbeat-ms", str(HEARTBEAT_MS),
             "--cycle-interval-ms", "200"] + self.disk_floor(), stdout=log, stderr=log))
        log.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.server.poll() is not None:
                return False
            if http("GET", self.url + "/healthz", timeout=1)[0] == 200:
                return True
            time.sleep(0.05)
        return False

    def disk_floor(self):
        """On the 32 MiB tmpfs, a free-space floor below its size (the default, 64 MiB,
        would refuse every write): the full-disk fault then meets the floor and, past it,
        ENOSPC in the store's own commits. Only for a binary that has the flag."""
        if not self.mounted:
            return []
        if not hasattr(Cluster, "_has_floor"):
            r = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True)
            Cluster._has_floor = "--min-free-disk" in r.stdout
        return ["--min-free-disk", "8"] if Cluster._has_floor else []

    def call(self, method, path, body=None, timeout=2.0, resend=True):
        """An API request to the server: (status, body) as http() answers. (EtcdCluster
        overrides it to follow the leader among replicas.)"""
        return http(method, self.url + path, body, timeout=timeout)

    def api_url(self):
        """Where API requests go now (EtcdCluster: the leader, when one is known)."""
        return self.url

    def server_crashes(self, killed):
        """Server processes found dead that the nemesis did not kill."""
        if not self.server_alive() and "server" not in killed:
            return ["the server exited by itself (status %s)" % self.server.returncode]
        return []

    def event_log(self):
        """The path of the server's event log (events.jsonl)."""
        return os.path.join(self.data, "events.jsonl")

    def server_alive(self):
        return self.server is not None and self.server.poll() is None

    def signal_server(self, sig):
        if self.server_alive():
            self.server.send_signal(sig)
            if sig == signal.SIGKILL:
                self.server.wait(timeout=10)

    # -- agents -------------------------------------------------------------------------

    def state_dir(self, node):
        return os.path.join(self.root, "agent-" + node)

    def agent_server(self, node):
        """The agent's --server: its proxy's URL."""
        return "http://127.0.0.1:%d" % self.proxies[node].port

    def start_agent(self, node):
        argv = [BIN, "agent", "--server", self.agent_server(node),
                "--name", node, "--gpus", "fake:4xH100", "--state-dir", self.state_dir(node),
                "--heartbeat-ms", str(HEARTBEAT_MS), "--drain", "--drain-grace-ms", "1000"]
        if node in self.sandboxed:
            argv += ["--sandbox", "bwrap"]
        argv += self.agent_args
        log = open(os.path.join(self.root, "agent-%s.log" % node), "ab")
        self.agents[node] = procs.track(subprocess.Popen(argv, stdout=log, stderr=log))
        log.close()

    def agent_alive(self, node):
        return self.agents[node].poll() is None

    def signal_agent(self, node, sig):
        if self.agent_alive(node):
            self.agents[node].send_signal(sig)
            if sig == signal.SIGKILL:
                self.agents[node].wait(timeout=10)

    def fencers(self, node):
        """Pids of `sluice agent-fencer --state-dir <node's dir>` (the agent's child)."""
        return procs.find(self.root, "agent-fencer", "--state-dir " + self.state_dir(node))

    def signal_fencers(self, node, sig):
        pids = self.fencers(node)
        for pid in pids:
            procs.signal_marked(pid, sig, self.root)
        return pids

    # -- a full disk --------------------------------------------------------------------

    def fill_disk(self):
        """Writes a ballast file until the data dir's tmpfs is full (no-op without one)."""
        if not self.mounted:
            return False
        self.ballast = os.path.join(self.data, "ballast")
        try:
            with open(self.ballast, "wb") as f:
                while True:
                    f.write(b"\0" * (1 << 20))
                    f.flush()
        except OSError:
            pass  # ENOSPC: full
        return True

    def unfill_disk(self):
        """Removes the ballast; a server whose store failed refuses work until restarted
        (docs/api.md "When the disk fills"), so it is restarted."""
        if self.ballast and os.path.exists(self.ballast):
            os.unlink(self.ballast)
            self.ballast = None
            if self.server_alive():
                procs.stop_popen(self.server, self.root, term_wait=5)
            return self.start_server()
        return True

    # -- health -------------------------------------------------------------------------

    def heal(self):
        """Undoes every fault: processes continued, proxies open, disk freed, the dead
        restarted. Returns the lines of what it had to do."""
        done = []
        for n, p in self.proxies.items():
            if p.mode != "pass":
                p.set_mode("pass")
                done.append("reopen net-" + n)
        if self.ballast:
            self.unfill_disk()
            done.append("free disk")
        procs.signal_marked(self.server.pid, signal.SIGCONT, self.root)
        if not self.server_alive() and self.start_server():
            done.append("restart server")
        for n in NODES:
            self.signal_fencers(n, signal.SIGCONT)
            if self.agent_alive(n):
                procs.signal_marked(self.agents[n].pid, signal.SIGCONT, self.root)
            else:
                self.start_agent(n)
                done.append("restart agent " + n)
        return done

    def nodes(self):
        st, body = self.call("GET", "/v1/nodes")
        if st != 200 or not isinstance(body, dict):
            return None
        return body.get("nodes", [])

    def wait_ready(self, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            ns = self.nodes()
            if ns and len(ns) == len(NODES) and all(n.get("ready") for n in ns):
                return True
            time.sleep(0.1)
        return False
