"""--store etcd: the chaos cluster on a replicated control plane (docs/ha.md).

A private three-member etcd cluster on free loopback ports (its data on a tmpfs where root
may mount one: etcd fsyncs every commit) and REPLICAS `sluice serve --store etcd://...`
replicas; one leads, the others are standbys. Each agent is given every replica's URL
(`--server URL,URL,URL`), each URL one proxy of the harness's (a ProxyGroup per agent: the
partition and stall faults cut all of an agent's links at once). Through a proxy a standby's
not_leader answer names a URL the agent does not know, so the agent tries its next URL and
its leader watch (/readyz 200) finds the leader.

The clients (workload.py), the settle and the checker reach the API through EtcdCluster.call,
which follows the leader: on a 503 not_leader or no answer within 1 s it asks every
replica's /readyz and goes to the one that answers 200. A supervisor thread restarts a
replica that stepped down (exit 3: it lost the leadership, docs/ha.md "Fencing"), as systemd
would, and records any other exit of a replica or an etcd member that the nemesis did not
cause as a crash (it restarts those too, so the schedule goes on). Every process carries the
schedule's directory on its command line (etcd: --data-dir), so procs.kill_marked finds it."""
import base64
import json
import os
import shutil
import signal
import subprocess
import threading
import time

from . import cluster as C
from . import procs
from .cluster import Cluster, free_port, http
from .proxy import Proxy

REPLICAS = 3
ETCD_LEASE_S = 2      # the leader's etcd lease (?lease=)
TRY_S = 1.0           # an API request without an answer within this long: find the leader


def etcd_missing():
    """Why etcd mode cannot run here, or ''."""
    return "" if shutil.which("etcd") else "etcd is not installed (Debian etcd-server)"


class ProxyGroup:
    """One agent's proxies, one per replica; faulted together (set_mode)."""

    def __init__(self, ports):
        self.proxies = [Proxy(p) for p in ports]
        self.mode = "pass"

    def set_mode(self, mode):
        self.mode = mode
        for p in self.proxies:
            p.set_mode(mode)

    def close(self):
        for p in self.proxies:
            p.close()

    def urls(self):
        return ",".join("http://127.0.0.1:%d" % p.port for p in self.proxies)


class Proc:
    """A replica or an etcd member: its name, argv, log and Popen."""

    def __init__(self, name, argv, log, url=None):
        self.name, self.argv, self.log, self.url = name, argv, log, url
        self.proc = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


class EtcdCluster(Cluster):
    def __init__(self, root, replicas=REPLICAS, etcd_tmpfs=False, **kw):
        kw["tmpfs"] = False  # no full-disk fault: the replicas keep nothing in a data dir
        super().__init__(root, **kw)
        self.store = "etcd"
        self.etcd_tmpfs = etcd_tmpfs
        self.edir = os.path.join(root, "etcd")
        self.lock = threading.RLock()
        self.killed = set()          # the nemesis's set (nemesis.Nemesis replaces it)
        self.crash_lines = []        # exits nobody caused (supervisor)
        self.stepdowns = 0
        self.leader_url = None
        self.stopping = threading.Event()
        cports = [free_port() for _ in range(3)]
        pports = [free_port() for _ in range(3)]
        initial = ",".join("m%d=http://127.0.0.1:%d" % (i, p) for i, p in enumerate(pports))
        self.members = []
        for i in range(3):
            me_c, me_p = "http://127.0.0.1:%d" % cports[i], "http://127.0.0.1:%d" % pports[i]
            self.members.append(Proc("m%d" % i, [
                "etcd", "--name", "m%d" % i, "--data-dir", os.path.join(self.edir, "m%d" % i),
                "--listen-client-urls", me_c, "--advertise-client-urls", me_c,
                "--listen-peer-urls", me_p, "--initial-advertise-peer-urls", me_p,
                "--initial-cluster", initial, "--initial-cluster-state", "new",
                "--initial-cluster-token", "chaos-" + os.path.basename(root),
                "--log-level", "warn"], os.path.join(root, "etcd-m%d.log" % i), me_c))
        self.store_url = "etcd://%s/chaos?lease=%d" % (
            ",".join("127.0.0.1:%d" % p for p in cports), ETCD_LEASE_S)
        self.replicas = []
        for i in range(replicas):
            port = free_port()
            self.replicas.append(Proc("r%d" % i, [
                C.BIN, "serve", "--config", os.path.join(root, "config.yaml"),
                "--store", self.store_url, "--data-dir", os.path.join(root, "r%d" % i),
                "--listen", "127.0.0.1:%d" % port, "--agent-timeout", str(C.LEASE_S),
                "--fence-margin", str(C.MARGIN_S), "--heartbeat-ms", str(C.HEARTBEAT_MS),
                "--cycle-interval-ms", "200"], os.path.join(root, "r%d.log" % i),
                "http://127.0.0.1:%d" % port))
        self.url = self.replicas[0].url  # the first guess; call() follows the leader

    # -- start and stop ---------------------------------------------------------------

    def start(self):
        self.prepare()
        os.makedirs(self.edir)
        if self.etcd_tmpfs:  # etcd fsyncs each commit: on the disk of a busy VM, seconds
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512m,mode=0700", "tmpfs",
                                self.edir], capture_output=True)
            self.mounted = r.returncode == 0
        for m in self.members:
            self._spawn(m)
        deadline = time.time() + 30
        while http("GET", self.members[0].url + "/health", timeout=1)[0] != 200:
            if time.time() > deadline:
                raise RuntimeError("etcd did not become healthy: see %s/etcd-m*.log" % self.root)
            time.sleep(0.1)
        for r in self.replicas:
            if not self._start_replica(r):
                raise RuntimeError("replica %s did not start: see %s" % (r.name, r.log))
        if self.find_leader(timeout=20) is None:
            raise RuntimeError("no replica became the leader: see %s/r*.log" % self.root)
        for n in C.NODES:
            self.proxies[n] = ProxyGroup([int(r.url.rsplit(":", 1)[1]) for r in self.replicas])
            self.start_agent(n)
        threading.Thread(target=self._supervise, daemon=True).start()
        if not self.wait_ready(20):
            raise RuntimeError("the nodes did not become ready: see %s" % self.root)

    def stop(self):
        self.stopping.set()
        for p in self.proxies.values():
            p.set_mode("pass")
        with self.lock:
            for p in list(self.agents.values()):
                procs.stop_popen(p, self.root, term_wait=3)
            for x in self.replicas + self.members:
                if x.proc is not None:
                    procs.stop_popen(x.proc, self.root, term_wait=3)
        try:
            self.dump_events()
        except Exception:  # noqa: BLE001 - etcd is gone: the log stays as last dumped
            pass
        stuck = procs.kill_marked(self.root)
        for p in self.proxies.values():
            p.close()
        if self.mounted:
            if subprocess.run(["umount", self.edir], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", self.edir])
            self.mounted = False
        return stuck

    def _spawn(self, x):
        log = open(x.log, "ab")
        x.proc = procs.track(subprocess.Popen(x.argv, stdout=log, stderr=log))
        log.close()

    def _start_replica(self, r, timeout=15):
        self._spawn(r)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if r.proc.poll() is not None:
                return False
            if http("GET", r.url + "/healthz", timeout=1)[0] == 200:
                return True
            time.sleep(0.05)
        return False

    def _supervise(self):
        """A replica that stepped down (exit 3) is restarted as a standby, as a supervisor
        would; any other exit nobody caused is a crash (recorded, and restarted)."""
        while not self.stopping.wait(0.2):
            if procs.STOPPING.is_set():
                return
            with self.lock:
                for x in self.replicas + self.members:
                    if x.proc is None or x.proc.poll() is None or x.name in self.killed:
                        continue
                    rc = x.proc.returncode
                    if x in self.replicas and rc == 3:
                        self.stepdowns += 1
                    else:
                        self.crash_lines.append("%s %s exited by itself (status %s)" % (
                            "replica" if x in self.replicas else "etcd member", x.name, rc))
                    try:
                        self._spawn(x)
                    except RuntimeError:
                        return

    # -- the API through the leader ----------------------------------------------------

    def find_leader(self, timeout=3.0, avoid=None):
        """The URL of the replica whose /readyz answers 200 (1 s each), trying `avoid` last;
        None when none does within `timeout`."""
        deadline = time.time() + timeout
        while True:
            order = sorted(self.replicas, key=lambda r: r.url == avoid)
            for r in order:
                if r.alive() and http("GET", r.url + "/readyz", timeout=TRY_S)[0] == 200:
                    self.leader_url = r.url
                    return r.url
            if time.time() > deadline:
                return None
            time.sleep(0.1)

    def api_url(self):
        return self.leader_url or self.find_leader(timeout=1.0)

    def call(self, method, path, body=None, timeout=2.0, resend=True):
        """An API request to the leader. On a 503 not_leader, a refused connection or no
        answer within TRY_S, it finds the leader (/readyz 200) and sends it again there, for
        up to `timeout` + 3 s; with resend=False (a submission) only when the request
        certainly did not reach a server (refused, or not_leader)."""
        deadline = time.time() + timeout + 3.0
        url = self.leader_url
        while True:
            if url is None:
                url = self.find_leader(timeout=max(0.0, deadline - time.time()))
                if url is None:
                    return 0, "no replica leads"
            # The harness's own reads (settle, checks) may take their time; the clients'
            # changes get TRY_S.
            st, b = http(method, url + path, body,
                         timeout=max(TRY_S, timeout) if method == "GET" else TRY_S)
            not_leader = st == 503 and isinstance(b, dict) and b.get("code") == "not_leader"
            if st != 0 and not not_leader:
                return st, b
            self.leader_url = None
            sent = st == 0 and "refused" not in str(b)  # it may have reached the server
            if (sent and not resend) or time.time() > deadline:
                return st, b
            url = self.find_leader(timeout=max(0.0, deadline - time.time()), avoid=url)
            if url is None:
                return st, b

    # -- faults -------------------------------------------------------------------------

    def replica(self, name):
        return next(r for r in self.replicas if r.name == name)

    def signal_leader(self, sig):
        """Sends `sig` to the leading replica: (its name, a note); (None, note) without one."""
        url = self.find_leader(timeout=2.0)
        if url is None:
            return None, "no replica leads: nothing faulted"
        r = next(x for x in self.replicas if x.url == url)
        with self.lock:
            if not r.alive():
                return None, "the leader %s is gone already" % r.name
            if sig == signal.SIGKILL:
                self.killed.add(r.name)
            r.proc.send_signal(sig)
            if sig == signal.SIGKILL:
                r.proc.wait(timeout=10)
        self.leader_url = None
        return r.name, "the leader %s (pid %d)" % (r.name, r.proc.pid)

    def signal_replica(self, name, sig):
        r = self.replica(name)
        if r.alive():
            procs.signal_marked(r.proc.pid, sig, self.root)

    def start_replica(self, name):
        """Restarts a replica the nemesis killed (it comes back as a standby)."""
        r = self.replica(name)
        with self.lock:
            self.killed.discard(name)
            if r.alive():
                return True  # the supervisor was first
            self._spawn(r)
        return self._wait_healthy(r)

    def _wait_healthy(self, r, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if http("GET", r.url + "/healthz", timeout=1)[0] == 200:
                return True
            time.sleep(0.05)
        return False

    def signal_member(self, target, sig):
        name = target.split("-", 1)[1]
        m = next(x for x in self.members if x.name == name)
        with self.lock:
            if not m.alive():
                return "etcd member %s is not running" % name
            self.killed.add(target.split("-", 1)[1])
            m.proc.send_signal(sig)
            m.proc.wait(timeout=10)
        return "pid %d" % m.proc.pid

    def start_member(self, target):
        name = target.split("-", 1)[1]
        m = next(x for x in self.members if x.name == name)
        with self.lock:
            self.killed.discard(name)
            if not m.alive():
                self._spawn(m)
        return "etcd member %s restarted" % name

    # -- what Cluster's callers use ----------------------------------------------------

    def agent_server(self, node):
        return self.proxies[node].urls()

    def server_alive(self):
        return any(r.alive() for r in self.replicas)

    def server_crashes(self, killed):
        with self.lock:
            out = list(self.crash_lines)
            for x in self.replicas + self.members:
                if not x.alive() and x.name not in killed and x.proc is not None:
                    rc = x.proc.returncode
                    if not (x in self.replicas and rc == 3):
                        line = "%s %s exited by itself (status %s)" % (
                            "replica" if x in self.replicas else "etcd member", x.name, rc)
                        if line not in out:
                            out.append(line)
        return out

    def heal(self):
        done = []
        for n, p in self.proxies.items():
            if p.mode != "pass":
                p.set_mode("pass")
                done.append("reopen net-" + n)
        with self.lock:
            for x in self.members + self.replicas:
                if x.alive():
                    procs.signal_marked(x.proc.pid, signal.SIGCONT, self.root)
                else:
                    self.killed.discard(x.name)
                    self._spawn(x)
                    done.append("restart " + x.name)
        for n in C.NODES:
            self.signal_fencers(n, signal.SIGCONT)
            if self.agent_alive(n):
                procs.signal_marked(self.agents[n].pid, signal.SIGCONT, self.root)
            else:
                self.start_agent(n)
                done.append("restart agent " + n)
        if self.stepdowns:
            done.append("%d step-down(s) restarted meanwhile" % self.stepdowns)
        return done

    def dump_events(self):
        """Copies the event log (etcd keys /sluice/chaos/events/) to events.jsonl, through
        etcd's JSON gateway."""
        prefix = b"/sluice/chaos/events/"
        end = prefix[:-1] + bytes([prefix[-1] + 1])
        for m in self.members:
            st, body = http("POST", m.url + "/v3/kv/range", json.dumps({
                "key": base64.b64encode(prefix).decode(),
                "range_end": base64.b64encode(end).decode()}), timeout=5)
            if st == 200 and isinstance(body, dict):
                kvs = body.get("kvs", [])
                kvs.sort(key=lambda kv: int(base64.b64decode(kv["key"])[len(prefix):] or 0))
                with open(os.path.join(self.root, "events.jsonl"), "wb") as f:
                    for kv in kvs:
                        f.write(base64.b64decode(kv["value"]).rstrip(b"\n") + b"\n")
                return True
        return False

    def event_log(self):
        self.dump_events()
        return os.path.join(self.root, "events.jsonl")
