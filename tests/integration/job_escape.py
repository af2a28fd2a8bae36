#!/usr/bin/env python3
"""Job escape (issue 14): a real `sluice serve` and a root `sluice agent` on loopback, two
namespaces with member tokens. A pod of team-a tries to read team-b's log and work dir, the
agent's state files, the join token (the agent's /proc environ and cmdline, a token file) and to
SIGSTOP team-b's pod. Every attempt must be refused and team-b's pod must keep running.

Needs root (a non-root agent cannot change users): exit 77 (skipped) otherwise.
Env: SLUICE_BIN. Exit 0 pass, 1 fail. Every wait is bounded and generous."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reliability"))
from common import BIN, CONFIG as COMMON_CONFIG, FAILURES, PASSES, check, free_port  # noqa: E402
from common import wait_ready  # noqa: E402
from common import http as http_json  # noqa: E402

JOIN = "join-escape-secret-0123456789"
ALICE_UID = 2001  # alice's token maps her to this unix user; team-b gets a per-namespace uid
PROCS = []

# The reliability suite's cluster (nodes n0 and n1 with 4 GPUs, queue q in team-a), team-b's
# queue, and tokens: alice maps to a unix user, bob does not.
CONFIG = COMMON_CONFIG + """---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team-b}
spec: {clusterQueue: cq}
---
apiVersion: sluice.dev/v1alpha1
kind: ServerAuth
metadata: {name: tokens}
spec:
  joinToken: %s
  tokens:
  - {name: admin, token: admin-token-0123456, role: admin}
  - {name: alice, token: alice-token-0123456, role: member, namespaces: [team-a], uid: %d}
  - {name: bob, token: bob-token-01234567, role: member, namespaces: [team-b]}
""" % (JOIN, ALICE_UID)


def http(method, url, body=None, token=None):
    return http_json(method, url, body, token, timeout=30, ctype="application/yaml")


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            v = pred()
            if v:
                return v
        except Exception:
            pass
        time.sleep(0.1)
    check(False, "timed out waiting for " + what)
    return None


def job_yaml(name, ns, script, extra=""):
    return """apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: %s, namespace: %s}
spec:
  queue: q
  cpu: 1
  memory: 256Mi
  command: [sh, -c, %s]
%s""" % (name, ns, json.dumps(script), extra)


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def pid_with_cwd(path):
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.readlink("/proc/%s/cwd" % p) == path:
                    return int(p)
            except OSError:
                pass
    return None


# The attacker: one line per attempt, "REFUSED what" or "LEAK what: evidence".
ATTACK = r"""
try() { what="$1"; shift; if out=$("$@" 2>/dev/null) && [ -n "$out" ]; then
  echo "LEAK $what: $(echo "$out" | head -c 200 | tr '\n\0' '  ')"; else echo "REFUSED $what"; fi; }
echo "UID $(id -u) GID $(id -g)"
try "b-log" cat {b_log}
try "logs-glob" sh -c 'cat ../../logs/*.log'
try "b-workdir-list" ls -A {b_work}
try "b-workdir-file" cat {b_work}/secret.txt
try "state-dir-list" sh -c 'ls -A {state} | grep -v "^work$"'
try "pods.json" cat {state}/pods.json.0 {state}/pods.json.1
try "exits.json" cat {state}/exits.json.0 {state}/exits.json.1
try "uids.json" cat {state}/uids.json.0 {state}/uids.json.1
try "logs-dir-list" ls -A {state}/logs
try "work-dir-list" sh -c 'ls -A {state}/work | grep -v "^$SLUICE_JOB_ID-0$"'
try "agent-environ" cat /proc/{agent_pid}/environ
try "agent-cmdline-token" grep -a -o {join} /proc/{agent_pid}/cmdline
try "agent-fds" ls /proc/{agent_pid}/fd
try "token-file" cat {token_file}
try "server-db" grep -a -o bob-token-01234567 {data}/sluice.db {data}/sluice.db-wal
try "own-env-token" sh -c 'env | grep -e {join} -e SLUICE_JOIN'
try "signal-b" sh -c 'kill -STOP {b_pid} && echo sent'
try "agent-http-b-log" curl -sf "$SLUICE_AGENT_URL/v1/logs/{b_id}/0"
try "agent-http-pods" curl -sf "$SLUICE_AGENT_URL/v1/pods"
try "agent-http-b-checkpoint" curl -sf -X POST -H "Authorization: Bearer $SLUICE_CHECKPOINT_TOKEN" "$SLUICE_AGENT_URL/v1/checkpoint/{b_id}/0"
try "node-credential" cat {state}/node-credential
try "pod-token-key" cat {state}/pod-token.key
try "signal-agent" sh -c 'kill -0 {agent_pid} && echo sent'
"""


def registrations(log_path):
    with open(log_path, errors="replace") as f:
        return f.read().count(": registered with ")


def start_agent(url, node, state, port, log, extra=()):
    """The node's agent, as root, with the join token in its environment (and in `extra`).
    Returns once this agent (not an earlier one the node still counts as ready) registered."""
    before = registrations(log.name)
    p = subprocess.Popen(
        [BIN, "agent", "--server", url, "--name", node, "--gpus", "fake:4xH100", "--state-dir",
         state, "--listen", "127.0.0.1:%d" % port, "--heartbeat-ms", "200"] + list(extra),
        stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, SLUICE_JOIN_TOKEN=JOIN))
    PROCS.append(p)

    wait_for(lambda: registrations(log.name) > before, 30, "the agent to register")
    return p


def attack(url, state, name, script, subs, what, extra=""):
    """Runs `script` (placeholders {k} from subs) as alice's pod; checks every attempt it
    reports is REFUSED and returns its log."""
    for k, v in subs.items():
        script = script.replace("{%s}" % k, str(v))
    st, body = http("POST", url + "/v1/jobs", job_yaml(name, "team-a", script, extra),
                    "alice-token-0123456")
    if not check(st == 202, "alice submits %s (%d %s)" % (what, st, body[:160])):
        return ""
    jid = json.loads(body)["jobs"][0]["id"]

    def done():
        st, body = http("GET", url + "/v1/jobs/%d" % jid, token="alice-token-0123456")
        return st == 200 and json.loads(body)["state"] in ("succeeded", "failed")
    if not wait_for(done, 60, what + " to finish"):
        return ""
    with open(os.path.join(state, "logs", "%d-0.log" % jid)) as f:
        out = f.read()
    print(out, end="", flush=True)
    lines = [l for l in out.splitlines() if l.startswith(("REFUSED", "LEAK"))]
    check(len(lines) == script.count('\ntry "'), "%s: every attempt reported (%d)" %
          (what, len(lines)))
    for l in lines:
        check(l.startswith("REFUSED"), "%s: %s" % (what, l))
    return out


# More for a sandboxed pod: the host's /tmp, other processes, writes to the host.
SANDBOXED = r"""
try "host-tmp" cat {host_tmp}
try "b-process-visible" sh -c 'test -d /proc/{b_pid} && echo visible'
try "write-host" sh -c 'echo x > /usr/local/sluice-escape && echo wrote'
"""


def main():
    if os.geteuid() != 0:
        print("job_escape: skipped: needs root (pods run as other users only under a root "
              "agent; CI runs as root)")
        return 77
    tmp = tempfile.mkdtemp(prefix="sluice-escape-")
    os.chmod(tmp, 0o711)  # pods of other users reach their work dirs through it
    state = os.path.join(tmp, "agent")
    port, agent_port = free_port(), free_port()
    url = "http://127.0.0.1:%d" % port
    cfg = os.path.join(tmp, "config.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    os.chmod(cfg, 0o600)
    # The join token as an admin would keep it on disk (the agent's --join-token-file).
    token_file = os.path.join(tmp, "join-token")
    with open(token_file, "w") as f:
        f.write(JOIN + "\n")
    os.chmod(token_file, 0o600)
    try:
        log = open(os.path.join(tmp, "server.log"), "ab")
        PROCS.append(subprocess.Popen(
            [BIN, "serve", "--config", cfg, "--listen", "127.0.0.1:%d" % port, "--data-dir",
             os.path.join(tmp, "data"), "--heartbeat-ms", "200"],
            stdout=log, stderr=subprocess.STDOUT))
        wait_ready(url, 30)
        # The join token reaches the agent both ways an admin may pass it: its environment and
        # a token file (the command line is refused). Neither may reach a pod.
        alog = open(os.path.join(tmp, "agent.log"), "ab")
        agent = start_agent(url, "n0", state, agent_port, alog, ["--join-token-file", token_file])

        # 1. Who may run as whom.
        st, body = http("POST", url + "/v1/jobs", job_yaml(
            "root", "team-a", "id", "  securityContext: {runAsUser: 0}\n"), "alice-token-0123456")
        check(st == 403, "alice's runAsUser 0 is refused (%d %s)" % (st, body[:160]))
        st, body = http("POST", url + "/v1/jobs", job_yaml(
            "other", "team-a", "id", "  securityContext: {runAsUser: 3000}\n"), "alice-token-0123456")
        check(st == 403 and "may not run pods as uid 3000" in body,
              "alice's runAsUser of someone else is refused (%d %s)" % (st, body[:160]))

        # 2. team-b's pod on n0 (the only node with an agent yet), holding its 4 GPUs: a secret in
        #    its work dir and its log, then it waits.
        st, body = http("POST", url + "/v1/jobs", job_yaml(
            "victim", "team-b",
            "echo b-secret-data > secret.txt; echo b-log-secret; exec sleep 300", "  gpus: 4\n"),
            "bob-token-01234567")
        check(st == 202, "bob submits team-b's job (%d %s)" % (st, body[:160]))
        b_id = json.loads(body)["jobs"][0]["id"]
        b_work = os.path.join(state, "work", "%d-0" % b_id)
        b_log = os.path.join(state, "logs", "%d-0.log" % b_id)
        b_pid = wait_for(lambda: os.path.exists(os.path.join(b_work, "secret.txt")) and
                         pid_with_cwd(b_work), 60, "team-b's pod to start")
        b_uid = os.stat(b_work).st_uid
        check(60000 <= b_uid <= 65535, "team-b's pod runs as its namespace's uid (%d)" % b_uid)
        check(os.stat("/proc/%d" % b_pid).st_uid == b_uid, "team-b's process is that uid")
        check(oct(os.stat(b_work).st_mode & 0o777) == "0o700", "its work dir is 0700")
        check(oct(os.stat(b_log).st_mode & 0o777) == "0o600", "its log is 0600")

        # 3. team-a's attacker.
        subs = {"b_log": b_log, "b_work": b_work, "state": state, "agent_pid": agent.pid,
                "join": JOIN, "token_file": token_file, "b_pid": b_pid, "b_id": b_id,
                "data": os.path.join(tmp, "data")}
        out = attack(url, state, "attacker", ATTACK, subs, "team-a's pod")
        check("UID %d GID %d" % (ALICE_UID, ALICE_UID) in out,
              "alice's pod runs as her token's uid")

        # 4. team-b's pod is unaffected.
        check(proc_state(b_pid) not in (None, "T", "Z"),
              "team-b's pod still runs, not stopped (%s)" % proc_state(b_pid))
        st, body = http("GET", url + "/v1/jobs/%d" % b_id, token="bob-token-01234567")
        check(st == 200 and json.loads(body)["state"] == "running", "team-b's job is running")
        with open(b_log) as f:
            check("b-log-secret" in f.read(), "team-b's log is intact")

        # 5. A second node's agent with the bubblewrap sandbox. The sandboxed attacker asks for
        #    a GPU, so it can only run there (team-b holds n0's): no host /tmp, no other
        #    processes, no host writes, and still none of the above.
        if not shutil.which("bwrap"):
            print("job_escape: sandbox part skipped: bwrap not installed (Debian bubblewrap)")
        else:
            state1 = os.path.join(tmp, "agent-n1")
            boxed_agent = start_agent(url, "n1", state1, free_port(), alog, ["--sandbox", "bwrap"])
            host_tmp = "/tmp/sluice-escape-host-%d" % os.getpid()
            with open(host_tmp, "w") as f:
                f.write("host tmp\n")
            subs.update(agent_pid=boxed_agent.pid, host_tmp=host_tmp)
            attack(url, state1, "boxed", ATTACK + SANDBOXED, subs, "team-a's sandboxed pod",
                   "  gpus: 1\n")
            os.unlink(host_tmp)

        # 6. n0's agent restarted: it adopts team-b's pod, which runs as another uid.
        agent.send_signal(signal.SIGTERM)  # pods keep running
        agent.wait(timeout=30)
        agent = start_agent(url, "n0", state, agent_port, alog)
        with open(alog.name, errors="replace") as f:
            check("adopted pod %d/0" % b_id in f.read(), "the restarted agent adopts team-b's pod")
        check(proc_state(b_pid) not in (None, "T", "Z"), "team-b's pod still runs")
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
        # Pods outlive a killed agent by design: end the ones with a work dir under tmp.
        for p in os.listdir("/proc"):
            if p.isdigit():
                try:
                    if os.readlink("/proc/%s/cwd" % p).startswith(tmp):
                        os.killpg(int(p), signal.SIGKILL)
                except OSError:
                    pass
        if FAILURES:
            for name in ("server.log", "agent.log"):
                with open(os.path.join(tmp, name), errors="replace") as f:
                    print("--- %s\n%s" % (name, f.read()[-4000:]))
        shutil.rmtree(tmp, ignore_errors=True)
    print("job_escape: %d passed, %d failed" % (PASSES[0], len(FAILURES)), flush=True)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
