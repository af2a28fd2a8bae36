#!/usr/bin/env python3
"""A pod is a boundary: it stops when told, runs once, and its processes end with it (issue 35).

Every pod appends "beat <job> <run> <node> <time>" to a shared ledger every 0.1 s ($SLUICE_RUN:
the job's attempt) and leaves a background `sleep 3000N` behind, which must die with the pod.

1. Sandboxed pods (--sandbox bwrap): a cancel reaches the pod's command with its grace (its TERM
   trap finishes) and ends its background process; so do a normal end and a walltime; after
   kill -9 of the agent its fencer ends the sandbox. Before: the inner bwrap left the pod's
   process group (--new-session) and lived on, reparented to PID 1.
2. Descriptors: the fencer holds no socket of the agent's (it kept the agent's port bound after
   a kill -9), a pod holds only its stdin, stdout and stderr.
3. A frozen agent (SIGSTOP past the lease): its fencer stops its pods before the server
   requeues the job elsewhere; the two runs never overlap. Before: the fencer waited for the
   agent's lock, which a stopped process holds.
4. A frozen server (SIGSTOP past the lease): on resume it requeues the fenced jobs, and the
   agents' answers to stale stop orders do not end the new runs. Before: the job was marked
   failed while its new pod ran untracked.
5. Limits (a root agent, no sandbox): a pod sees its own /proc (not the agent's or another
   namespace's processes), its log is held to --pod-log-max-mib, and a fork bomb to its
   namespace's --pod-max-procs while another namespace's pod still forks.
6. A state directory wiped while its pod runs, the node's credential reset, a new agent: the
   pod is found and adopted, and its job does not run a second time beside it.
6b. kill -9 of a sandboxed node's agent and a restart at once: the sandbox runs on and is
   adopted.
7. kill -9 of an agent and a restart at once on the same port: it listens (the fencer holds
   no copy of the listening socket).

Real processes on loopback, stopped by their PIDs. Exit 77 without bwrap."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))
from common import (BIN, Serve, check, finish, free_port, http, stop_processes,  # noqa: E402
                    wait_for, workdir)

TIMEOUT_S, GRACE_S, MARGIN_S = 2, 1, 1
AGENTS = {}
WORKDIR = []  # the test's directory: every process whose command line names it is ours
# The pods' background `sleep N`: numbers of this test run's own.
MARK = 1_000_000 + (os.getpid() % 100_000) * 10


def start_agent(url, node, d, sandbox, extra=()):
    log = open(os.path.join(d, "agent-%s.log" % node), "ab")
    argv = [BIN, "agent", "--server", url, "--name", node, "--gpus", "fake:4xH100",
            "--state-dir", os.path.join(d, "agent-" + node), "--heartbeat-ms", "200"]
    argv += list(extra)
    if sandbox:
        argv += ["--sandbox", "bwrap"]
    AGENTS[node] = subprocess.Popen(argv, stdout=log, stderr=log)
    return AGENTS[node]


def job(name, shared, body, walltime=None):
    # A run is $SLUICE_RUN (the job's attempt); agents from before it: the pod's pid.
    beat = ('while :; do echo "beat %s ${SLUICE_RUN:-pid$$} $SLUICE_NODE $(date +%%s.%%N)" '
            '>> %s/ledger; '
            'sleep 0.1; done' % (name, shared))
    script = body + " " + beat if body.rstrip().endswith("&") else body + "; " + beat
    spec = {"queue": "q", "checkpointGrace": "%ds" % GRACE_S, "workingDir": shared,
            "podSets": [{"resources": {"nvidia.com/gpu": 1}}], "command": ["sh", "-c", script]}
    if walltime:
        spec["walltime"] = walltime
    return json.dumps({"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
                       "metadata": {"name": name, "namespace": "team-a"}, "spec": spec})


def trap(name, shared, marker):
    """A TERM trap that takes 0.3 s (a checkpoint) and a background process that would outlive
    a pod whose stop misses part of it."""
    return ("trap 'echo term %s >> %s/ledger; sleep 0.3; echo done %s >> %s/ledger; exit 0' TERM; "
            "sleep %d & " % (name, shared, name, shared, marker))


def submit(url, body):
    st, text = http("POST", url + "/v1/jobs", body)
    check(st == 202, "submit: %d %s" % (st, text[:200]))
    return json.loads(text)["jobs"][0]["id"] if st == 202 else None


def job_view(url, i):
    st, body = http("GET", url + "/v1/jobs/%d" % i)
    return json.loads(body) if st == 200 else {}


def beats(shared):
    """{job: {run: [(node, t), ...]}} and the other ledger lines."""
    out, lines = {}, []
    path = os.path.join(shared, "ledger")
    if not os.path.exists(path):
        return out, lines
    with open(path, errors="replace") as f:
        for line in f:
            p = line.split()
            lines.append(line.strip())
            if len(p) == 5 and p[0] == "beat":
                try:
                    out.setdefault(p[1], {}).setdefault(p[2], []).append((p[3], float(p[4])))
                except ValueError:
                    pass
    return out, lines


def alive_with(marker):
    """Pids of live processes whose command line holds `sleep <marker>`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
            with open("/proc/%s/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv[:2] == [b"sleep", str(marker).encode()] and state not in ("Z", "X"):
            found.append(int(pid))
    return found


def fencer_pid(state_dir):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0")]
        except OSError:
            continue
        if "agent-fencer" in argv and state_dir in argv:
            return int(pid)
    return None


def descriptors(pid):
    out = {}
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                out[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                pass
    except OSError:
        pass
    return out


def last_beat(shared, name, run=None):
    runs = beats(shared)[0].get(name, {})
    ts = [t for r, bs in runs.items() if run is None or r == run for _, t in bs]
    return max(ts) if ts else None


def sandboxed_stops(url, d, shared):
    """Part 1 and 2: on the sandboxed node n0 (the only one up)."""
    # a. Cancel: the TERM reaches the command, its trap finishes, the sandbox is gone.
    c1 = submit(url, job("c1", shared, trap("c1", shared, MARK + 1)))
    wait_for(lambda: last_beat(shared, "c1"), 30, "c1 to run in the sandbox")
    check(len(alive_with(MARK + 1)) == 1, "c1's background process runs (in its sandbox)")
    check(http("POST", url + "/v1/jobs/%d/cancel" % c1)[0] == 200, "cancel c1")
    cancelled_at = time.time()
    wait_for(lambda: not alive_with(MARK + 1), 10, "c1's background process to end")
    time.sleep(0.5)
    lines = beats(shared)[1]
    check("done c1" in lines, "the cancel's SIGTERM reached c1's command and its 0.3 s trap "
          "finished within the %d s grace" % GRACE_S)
    check(not alive_with(MARK + 1), "nothing of the cancelled sandboxed pod is left")
    lb = last_beat(shared, "c1")
    check(lb is not None and lb < cancelled_at + GRACE_S + 0.5,
          "c1 beat last %.2f s after the cancel" % ((lb or 0) - cancelled_at))
    # b. A normal end that leaves a background process behind; the pod's descriptors.
    e1 = submit(url, json.dumps({
        "apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
        "metadata": {"name": "e1", "namespace": "team-a"},
        "spec": {"queue": "q", "workingDir": shared,
                 "podSets": [{"resources": {"nvidia.com/gpu": 1}}],
                 "command": ["sh", "-c", "sleep %d & ls -l /proc/$$/fd > %s/fds; exit 0"
                             % (MARK + 2, shared)]}}))
    wait_for(lambda: job_view(url, e1).get("state") == "succeeded", 30, "e1 to succeed")
    wait_for(lambda: not alive_with(MARK + 2), 5, "e1's background process to end")
    check(not alive_with(MARK + 2), "a sandboxed pod's background process ends with its command")
    # The shell's descriptors while `ls` runs: its stdin, its log as stdout and stderr, the file
    # it redirects to (dash keeps the log's copy above 9 meanwhile); no socket, pipe or other
    # file of the agent's.
    path = os.path.join(shared, "fds")
    lines = open(path).read().split("\n") if os.path.exists(path) else []
    held = dict(ln.split()[-3::2] for ln in lines if " -> " in ln)
    stray = {fd: t for fd, t in held.items()
             if t not in ("/dev/null", path) and not t.endswith("/logs/%d-0.log" % e1)}
    check({"0", "1", "2"} <= set(held) and not stray,
          "a pod holds only its stdin, stdout and stderr: %s" % held)
    # c. Walltime.
    w1 = submit(url, job("w1", shared, trap("w1", shared, MARK + 3), walltime="2s"))
    wait_for(lambda: job_view(url, w1).get("state") in ("failed", "succeeded"), 30,
             "w1 to reach its walltime")
    wait_for(lambda: not alive_with(MARK + 3), 5, "w1's background process to end")
    check(not alive_with(MARK + 3), "nothing of a sandboxed pod past its walltime is left")
    check("done w1" in beats(shared)[1], "the walltime's SIGTERM reached w1's command")
    # d. The fencer holds no socket; kill -9 of the agent: the fencer ends the sandbox.
    state0 = os.path.join(d, "agent-n0")
    fp = wait_for(lambda: fencer_pid(state0), 10, "n0's fencer")
    held = descriptors(fp) if fp else {}
    sockets = {fd: t for fd, t in held.items() if t.startswith("socket:")}
    check(fp and not sockets and all(fd <= 2 or "fencer" in t for fd, t in held.items()),
          "the fencer holds no descriptor of the agent's: %s" % held)
    f1 = submit(url, job("f1", shared, trap("f1", shared, MARK + 4)))
    wait_for(lambda: last_beat(shared, "f1"), 30, "f1 to run")
    AGENTS["n0"].send_signal(signal.SIGKILL)
    AGENTS["n0"].wait(timeout=30)
    killed_at = time.time()
    wait_for(lambda: not alive_with(MARK + 4), TIMEOUT_S + GRACE_S + 10,
             "the fencer to end f1's sandbox")
    check(not alive_with(MARK + 4), "the fencer ended the sandboxed pod of a killed agent")
    lb = last_beat(shared, "f1")
    check(lb is not None and lb < killed_at + TIMEOUT_S + GRACE_S + MARGIN_S,
          "f1 beat last %.2f s after the kill (lease %d + grace %d)"
          % ((lb or 0) - killed_at, TIMEOUT_S, GRACE_S))
    http("POST", url + "/v1/jobs/%d/cancel" % f1)  # it would run again in the next parts


def plain_job(name, namespace, shared, command):
    return json.dumps({"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
                       "metadata": {"name": name, "namespace": namespace},
                       "spec": {"queue": "q", "workingDir": shared,
                                "podSets": [{"resources": {"nvidia.com/gpu": 1}}],
                                "command": ["sh", "-c", command]}})


def pod_limits(url, d, shared):
    """Part 5, on the plain node n2 (the only one up; `--pod-log-max-mib 1 --pod-max-procs 64`):
    a pod's view of other processes, its log's cap, its namespace's process limit."""
    root = os.geteuid() == 0
    # a. Its own /proc: the agent (root) and other uids' processes are invisible.
    agent_pid = AGENTS["n2"].pid
    v1 = submit(url, plain_job("v1", "lim-a", shared,
                               "ls /proc/%d >/dev/null 2>&1 && echo visible > %s/view || "
                               "echo hidden > %s/view" % (agent_pid, shared, shared)))
    wait_for(lambda: job_view(url, v1).get("state") == "succeeded", 30, "v1 to succeed")
    seen = open(os.path.join(shared, "view")).read().strip() if os.path.exists(
        os.path.join(shared, "view")) else "?"
    check(seen == ("hidden" if root else "visible"),
          "a pod %s the agent's process in /proc (%s)"
          % ("does not see" if root else "(non-root agent) sees", seen))
    # b. The log's cap: 3 MB written at once, the log cut back, the exit says so.
    b1 = submit(url, plain_job("b1", "lim-a", shared,
                               "head -c 3000000 /dev/zero | tr '\\0' x; echo; sleep 1; "
                               "echo the end"))
    wait_for(lambda: job_view(url, b1).get("state") == "succeeded", 30, "b1 to succeed")
    log = os.path.join(d, "agent-n2", "logs", "%d-0.log" % b1)
    size = os.path.getsize(log) if os.path.exists(log) else -1
    text = open(log, errors="replace").read() if size >= 0 else ""
    check(0 < size <= (1 << 20) + 4096 and "this log passed its cap" in text and
          text.rstrip().endswith("the end"),
          "a 3 MB log is held to the 1 MiB cap, with its head, a marker and its end (%d bytes)"
          % size)
    check("bytes were dropped" in json.dumps(job_view(url, b1)),
          "the job records that its log was cut")
    if not root:
        print("pod_boundary: process limit part skipped: the agent is not root")
        return
    # c. A fork bomb of lim-a is held to 64 processes; lim-b's pod still starts and forks.
    f2 = submit(url, plain_job("f2", "lim-a", shared,
                               # dash exits when a fork fails: the loop runs in a subshell
                               "(i=0; while [ $i -lt 300 ]; do sleep %d & i=$((i+1)); done) "
                               "2>/dev/null; exec sleep 300" % (MARK + 6)))
    wait_for(lambda: len(alive_with(MARK + 6)) >= 40, 30, "f2 to fork")
    time.sleep(1)
    held = len(alive_with(MARK + 6))
    check(0 < held <= 64, "lim-a's fork bomb is held to its 64 processes (%d)" % held)
    g1 = submit(url, plain_job("g1", "lim-b", shared,
                               "sleep 0.1 & wait; echo forked > %s/g1" % shared))
    wait_for(lambda: job_view(url, g1).get("state") in ("succeeded", "failed"), 30,
             "lim-b's pod to end")
    check(job_view(url, g1).get("state") == "succeeded" and
          os.path.exists(os.path.join(shared, "g1")),
          "lim-b's pod forks while lim-a's pods are at their limit")
    http("POST", url + "/v1/jobs/%d/cancel" % f2)
    wait_for(lambda: not alive_with(MARK + 6), 15, "f2's processes to end")
    check(not alive_with(MARK + 6), "nothing of the cancelled fork bomb is left")


def overlapping(shared):
    bad = []
    for name, runs in beats(shared)[0].items():
        spans = sorted((min(t for _, t in bs), max(t for _, t in bs), r) for r, bs in runs.items())
        for x, y in zip(spans, spans[1:]):
            if y[0] <= x[1]:
                bad.append("%s: run %s started at %.3f while run %s beat until %.3f" %
                           (name, y[2], y[0], x[2], x[1]))
    return bad


def runs_of(shared, name):
    """The job's runs in the order they first beat."""
    runs = beats(shared)[0].get(name, {})
    return sorted(runs, key=lambda r: min(t for _, t in runs[r]))


def frozen_agent(url, d, shared):
    """Part 3: a job on n1 (plain); its agent frozen past the lease; it runs again on n0."""
    z1 = submit(url, job("z1", shared, "sleep %d &" % (MARK + 5)))
    wait_for(lambda: job_view(url, z1).get("placement"), 30, "z1 to be placed")
    node = job_view(url, z1)["placement"][0]["node"]
    wait_for(lambda: last_beat(shared, "z1"), 30, "z1 to run")
    AGENTS[node].send_signal(signal.SIGSTOP)
    frozen_at = time.time()
    try:
        moved = wait_for(lambda: len(runs_of(shared, "z1")) >= 2, 60, "z1 to run again")
        check(moved, "z1 runs again %.1f s after its agent froze" % (time.time() - frozen_at))
        first = runs_of(shared, "z1")[0]
        check(len(alive_with(MARK + 5)) <= 1,
              "the frozen node's pod is gone, only the new run's is left: %s"
              % alive_with(MARK + 5))
        check(not overlapping(shared), "no overlap with a frozen agent: %s" % overlapping(shared))
    finally:
        AGENTS[node].send_signal(signal.SIGCONT)
    time.sleep(2)
    check(last_beat(shared, "z1", first) < frozen_at + TIMEOUT_S + GRACE_S + MARGIN_S,
          "the frozen node's run stayed dead after SIGCONT")
    log = open(os.path.join(d, "agent-%s.log" % node), errors="replace").read()
    check("fenced" in log, "the resumed agent reports its pod fenced")
    view = job_view(url, z1)
    check(view.get("state") == "running", "z1 still runs after the agent resumed: %s"
          % view.get("state"))
    return z1


def frozen_server(srv, shared, z1):
    """Part 4: the server frozen past the lease; on resume the job runs again, once."""
    before = len(runs_of(shared, "z1"))
    srv.proc.send_signal(signal.SIGSTOP)
    try:
        time.sleep(TIMEOUT_S + GRACE_S + MARGIN_S + 3)
    finally:
        srv.proc.send_signal(signal.SIGCONT)
    wait_for(lambda: len(runs_of(shared, "z1")) > before, 60, "z1 to run again after the freeze")
    time.sleep(3)  # the stale stop orders' answers arrive meanwhile
    view = job_view(srv.url, z1)
    check(view.get("state") == "running",
          "z1 runs after the server's freeze (not failed by a stale stop answer): %s %s"
          % (view.get("state"), view.get("reason", "")))
    latest = runs_of(shared, "z1")[-1]
    check(str(view.get("attempts")) == latest,
          "the server tracks the run that beats (attempt %s, ledger run %s)"
          % (view.get("attempts"), latest))
    lb = last_beat(shared, "z1", latest)
    check(lb is not None and time.time() - lb < 1.5, "the tracked run is alive")
    check(not overlapping(shared), "no overlap across the server's freeze: %s"
          % overlapping(shared))


def wiped_state_dir(srv, d, shared, z1):
    """Part 6: the agent of z1's node killed, its state directory wiped, the node's credential
    reset, a new agent on the same directory: it finds z1's pod by its environment and adopts
    it, and the job does not start a second run beside it. Before: the new agent reported no
    pods, the server requeued the job as lost and ran it again on the same GPUs."""
    node = job_view(srv.url, z1)["placement"][0]["node"]
    before = runs_of(shared, "z1")
    AGENTS[node].send_signal(signal.SIGKILL)
    AGENTS[node].wait(timeout=30)
    state = os.path.join(d, "agent-" + node)
    shutil.rmtree(state)
    check(http("POST", srv.url + "/v1/nodes/%s/reset-credential" % node, "{}")[0] == 200,
          "reset-credential " + node)
    start_agent(srv.url, node, d, sandbox=(node == "n0"))
    time.sleep(TIMEOUT_S + GRACE_S + MARGIN_S + 2)
    check(runs_of(shared, "z1") == before, "no new run of z1 after its state dir was wiped: %s -> %s"
          % (before, runs_of(shared, "z1")))
    lb = last_beat(shared, "z1", before[-1])
    check(lb is not None and time.time() - lb < 1.5, "z1's pod beats on, adopted")
    log = open(os.path.join(d, "agent-%s.log" % node), errors="replace").read()
    check("no state file lists it" in log, "the new agent says it adopted a pod it found")
    check(job_view(srv.url, z1).get("state") == "running", "z1 still runs")
    check(http("POST", srv.url + "/v1/jobs/%d/cancel" % z1)[0] == 200, "cancel z1")
    wait_for(lambda: last_beat(shared, "z1") < time.time() - 1, 15, "z1 to stop")
    check(not alive_with(MARK + 5), "the adopted pod stopped on the cancel")
    check(not overlapping(shared), "no overlap after the wiped state dir: %s" % overlapping(shared))


def sandboxed_pod_outlives_its_agent(srv, d, shared):
    """Part 6b: a sandboxed pod keeps running across kill -9 of its agent and a restart at once,
    and the new agent adopts it (bwrap's --die-with-parent had tied the sandbox to the agent)."""
    check(http("POST", srv.url + "/v1/nodes/n1/cordon", "{}")[0] == 200, "n1 cordoned")
    z2 = submit(srv.url, job("z2", shared, "sleep %d &" % (MARK + 7)))
    wait_for(lambda: last_beat(shared, "z2"), 30, "z2 to run on n0")
    check(job_view(srv.url, z2)["placement"][0]["node"] == "n0", "z2 runs on the sandboxed n0")
    AGENTS["n0"].send_signal(signal.SIGKILL)
    AGENTS["n0"].wait(timeout=30)
    start_agent(srv.url, "n0", d, sandbox=True)
    time.sleep(1.5)
    lb = last_beat(shared, "z2")
    check(lb is not None and time.time() - lb < 1.0, "the sandboxed pod beats on after its agent "
          "was killed and restarted")
    log = open(os.path.join(d, "agent-n0.log"), errors="replace").read()
    check("adopted pod %d/0" % z2 in log, "the restarted agent adopted it")
    check(http("POST", srv.url + "/v1/jobs/%d/cancel" % z2)[0] == 200, "cancel z2")
    wait_for(lambda: not alive_with(MARK + 7), 15, "z2's sandbox to end")
    check(not alive_with(MARK + 7), "the adopted sandbox ended on the cancel")
    check(http("POST", srv.url + "/v1/nodes/n1/resume", "{}")[0] == 200, "n1 resumed")


def restart_on_the_same_port(srv, d, shared, port):
    """Part 7: kill -9 of an agent and an immediate restart on the same --listen port, while its
    fencer still runs. Before: the fencer had inherited the listening socket, and the new agent
    failed with "address already in use" for ~10 s. n1 runs a pod when it is killed: a fencer
    with no live pod to guard exits soon after its agent, by design."""
    check(http("POST", srv.url + "/v1/nodes/n0/cordon", "{}")[0] == 200, "n0 cordoned")
    z3 = submit(srv.url, job("z3", shared, "sleep %d &" % (MARK + 9)))
    wait_for(lambda: last_beat(shared, "z3"), 30, "z3 to run on n1")
    check(job_view(srv.url, z3)["placement"][0]["node"] == "n1", "z3 runs on n1")
    AGENTS["n1"].send_signal(signal.SIGKILL)
    AGENTS["n1"].wait(timeout=30)
    check(fencer_pid(os.path.join(d, "agent-n1")) is not None, "n1's fencer outlives its agent")
    p = start_agent(srv.url, "n1", d, sandbox=False, extra=["--listen", "127.0.0.1:%d" % port])
    up = wait_for(lambda: p.poll() is not None or
                  http("GET", "http://127.0.0.1:%d/healthz" % port, timeout=1)[0] == 200, 15,
                  "the restarted agent to answer on its port")
    check(up and p.poll() is None, "an agent restarted at once after kill -9 listens on its port")
    check(http("POST", srv.url + "/v1/jobs/%d/cancel" % z3)[0] == 200, "cancel z3")
    wait_for(lambda: not alive_with(MARK + 9), 15, "z3 to end")
    check(not alive_with(MARK + 9), "z3 ended on the cancel")


def main():
    if not shutil.which("bwrap") or subprocess.run(
            ["bwrap", "--ro-bind", "/", "/", "--unshare-pid", "true"],
            capture_output=True).returncode != 0:
        print("pod_boundary: skipped: bubblewrap missing or unusable here")
        sys.exit(77)
    d, cfg = workdir("pod-boundary")
    WORKDIR.append(d)
    # Three nodes; part 5 runs on n2 alone, in namespaces of its own (lim-a, lim-b): the process
    # limit counts every process of a uid on the machine, and other tests' team-a pods share
    # team-a's uid.
    text = open(cfg).read().replace("count: 2", "count: 3").replace(
        "{name: nvidia.com/gpu, nominalQuota: 8}", "{name: nvidia.com/gpu, nominalQuota: 12}")
    for ns in ("lim-a", "lim-b"):
        text += ("---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
                 "metadata: {name: q, namespace: %s}\nspec: {clusterQueue: cq}\n" % ns)
    with open(cfg, "w") as f:
        f.write(text)
    os.chmod(d, 0o711)
    shared = os.path.join(d, "shared")
    os.makedirs(shared)
    os.chmod(shared, 0o1777)
    srv = Serve(d + "/data", cfg, extra=["--agent-timeout", str(TIMEOUT_S), "--fence-margin",
                                         str(MARGIN_S), "--heartbeat-ms", "200"])
    check(srv.start(), "server starts")
    start_agent(srv.url, "n0", d, sandbox=True)
    sandboxed_stops(srv.url, d, shared)
    start_agent(srv.url, "n2", d, sandbox=False,
                extra=["--pod-log-max-mib", "1", "--pod-max-procs", "64", "--drain",
                       "--drain-grace-ms", "1000"])
    pod_limits(srv.url, d, shared)
    stop_processes([AGENTS.pop("n2")])  # drained: nothing of part 5 runs on
    check(http("POST", srv.url + "/v1/nodes/n2/cordon", "{}")[0] == 200, "n2 cordoned")
    start_agent(srv.url, "n0", d, sandbox=True)
    n1_port = free_port()
    start_agent(srv.url, "n1", d, sandbox=False, extra=["--listen", "127.0.0.1:%d" % n1_port])
    z1 = frozen_agent(srv.url, d, shared)
    frozen_server(srv, shared, z1)
    wiped_state_dir(srv, d, shared, z1)
    sandboxed_pod_outlives_its_agent(srv, d, shared)
    restart_on_the_same_port(srv, d, shared, n1_port)
    finish("pod_boundary", "sandboxed stops, fencer descriptors, frozen agent, frozen server")


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in AGENTS.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)  # a frozen one must be able to exit
        stop_processes(AGENTS.values())
        # What a failed stop left behind (the pods of this test only), so that nothing outlives
        # the test whatever it found.
        for pid in os.listdir("/proc"):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    mine = WORKDIR and WORKDIR[0].encode() in f.read()
                if mine and pid.isdigit() and int(pid) != os.getpid():
                    os.kill(int(pid), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        for k in range(1, 8):
            for pid in alive_with(MARK + k):
                os.kill(pid, signal.SIGKILL)
