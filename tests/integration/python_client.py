#!/usr/bin/env python3
"""The Python client (issue 18) against real servers.

1. `pip install --no-index --target DIR clients/python`: the package installs with no network
   (its build backend is in the standard library); the rest imports that installed copy. Where
   pip is missing the source tree is used and the install is reported as skipped.
2. A `sluice up` (one node, two fake GPUs) on a free loopback port with a private data dir; the
   client is given a dead URL first and must pass on to the live one (as `sluice` does). It
   submits, waits for a run, reads and follows logs, explains a pending job, plans with
   `sluice plan` on the live state (a job that would wait, then one that would be admitted),
   cancels, reads the history, and gets the server's own messages in its exceptions.
3. A `sluice serve` with tokens: no token is Unauthorized, a member submits into its namespace
   and is Forbidden elsewhere, another member does not see the job, a member may not plan.

Env: SLUICE_BIN, SLUICE_SOURCE_DIR. Exit 0 pass, 1 fail, 77 skip. Every wait is bounded;
every process started here is stopped by its PID."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reliability"))
from common import BIN, CONFIG, FAILURES, Serve, check, finish, free_port, wait_for  # noqa: E402

SOURCE = os.environ.get("SLUICE_SOURCE_DIR", os.path.join(HERE, "..", ".."))
CLIENT_SRC = os.path.join(SOURCE, "clients", "python")
TMP = tempfile.mkdtemp(prefix="sluice-pyc-")
os.chmod(TMP, 0o711)  # a root agent runs pods as another user: they reach their work dirs
TOKENS = {"admin": "admin-token-0123456789", "alice": "alice-token-0123456789",
          "bob": "bob-token-012345678901"}


def install():
    """The installed package's directory on sys.path (pip, offline), else the source tree."""
    site = os.path.join(TMP, "site")
    try:
        p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index",
                            "--disable-pip-version-check", "--no-warn-script-location",
                            "--target", site, CLIENT_SRC],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=300)
        out = p.stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        p, out = None, str(e)
    if p is None or "No module named pip" in out:
        print("skip pip install (no pip here): testing the source tree")
        sys.path.insert(0, CLIENT_SRC)
        return
    check(p.returncode == 0, "pip installs clients/python offline (%s)" % out.strip()[-300:])
    sys.path.insert(0, site)
    import sluice
    check(os.path.dirname(sluice.__file__) == os.path.join(site, "sluice"),
          "the installed copy is the one imported (%s)" % sluice.__file__)


def up_server():
    port = free_port()
    log = open(os.path.join(TMP, "up.log"), "ab")
    proc = subprocess.Popen([BIN, "up", "--nodes", "1", "--gpus", "fake:2xH100", "--listen",
                             "127.0.0.1:%d" % port, "--data-dir", os.path.join(TMP, "up"),
                             "--heartbeat-ms", "200"], stdout=log, stderr=subprocess.STDOUT)
    return proc, "http://127.0.0.1:%d" % port


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def job_text(name, gpus, script):
    return ("apiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: %s}\n"
            "spec: {queue: default, gpus: %d, command: [sh, -c, %r]}\n" % (name, gpus, script))


def jobs_and_logs(c, sluice):
    """Submit, wait, logs, follow; returns the id of the finished job."""
    a = c.submit(job_text("hello", 1, 'echo "hello from $SLUICE_JOB_ID on $SLUICE_NODE"'))
    check(len(a) == 1 and a[0].name == "hello" and a[0].queue == "default", "submit: %s" % a)
    check(c.leader == c.servers[1], "a dead first URL passes the request to the live server")
    done = c.wait(a[0].id, timeout_s=60, poll_s=0.2)
    check(done.state == "succeeded" and done.nodes == ["local-0"],
          "the job ran and succeeded on local-0 (%s %s)" % (done.state, done.nodes))
    text = c.logs(a[0].id)
    check(text == "hello from %d on local-0\n" % a[0].id, "logs: %r" % text)
    b = c.run(["sh", "-c", "for i in 1 2 3 4 5; do echo line $i; sleep 0.3; done"], gpus=1,
              queue="default", name="counter")
    running = c.wait(b.id, until=("running",), timeout_s=60, poll_s=0.1)
    check(running.state in ("running", "succeeded"), "the counter started (%s)" % running.state)
    followed = "".join(c.follow_logs(b.id, poll_s=0.2, timeout_s=60))
    check(followed == "".join("line %d\n" % i for i in range(1, 6)),
          "follow_logs yields every line once, in order, until the job ends: %r" % followed)
    return a[0].id


def pending_plan_cancel(c, sluice):
    """A job holding both GPUs; one that waits for them: explain, plan, cancel."""
    hog = c.run(["sleep", "300"], gpus=2, queue="default", name="hog")
    check(c.wait(hog.id, until=("running",), timeout_s=60, poll_s=0.1).state == "running",
          "the 2-GPU job runs")
    waiter = c.run(["true"], gpus=1, queue="default", name="waiter")
    why = c.explain(waiter.id)
    check(why.state == "pending" and "pending" in str(why) and "waiter" in str(why),
          "explain says why the job waits: %r" % str(why))
    one = sluice.make_job(["true"], gpus=1, queue="default", name="what-if")
    plan = c.plan(one, sluice_bin=BIN)
    check("what-if" not in plan.admitted_jobs() and
          any(p.get("job") == "what-if" for p in plan.pending),
          "plan: a 1-GPU job would wait while the GPUs are taken (%s)" % plan.raw)
    gone = c.cancel(hog.id)
    check(gone.state == "cancelled", "cancel answers the cancelled job (%s)" % gone.state)
    check(c.wait(waiter.id, timeout_s=60, poll_s=0.2).state == "succeeded",
          "the waiting job ran once the GPUs were free")
    plan = c.plan([one], sluice_bin=BIN)
    adm = [a for a in plan.admitted if a.get("job") == "what-if"]
    check(len(adm) == 1 and adm[0]["placement"][0]["node"] == "local-0",
          "plan: with the GPUs free it would be admitted on local-0 (%s)" % plan.raw)
    check(not any(j.name == "what-if" for j in c.jobs()), "plan submitted nothing")
    return hog.id


def errors(c, sluice):
    try:
        c.submit(job_text("lost", 1, "true").replace("queue: default", "queue: trian"))
        check(False, "an unknown queue is refused")
    except sluice.NotFound as e:
        check('"trian"' in e.error and str(e).startswith("HTTP 404 Not Found: "),
              "NotFound carries the server's message: %s" % e)
    try:
        c.job(987654)
        check(False, "an unknown job is refused")
    except sluice.NotFound as e:
        check("987654" in str(e), "no such job: %s" % e)
    try:
        c.submit("kind: Job\nspec: [oops\n")
        check(False, "a malformed document is refused")
    except sluice.BadRequest as e:
        check("malformed YAML" in str(e), "BadRequest names the parse error: %s" % e)


def history(c, sluice, hello_id, hog_id):
    """history(): GET /v1/history where the server has it, else rows of the jobs it holds."""
    recs = c.history()
    print("history: %d rows, from the event log: %s" % (len(recs), recs.from_event_log))
    by = {r.id: r for r in recs}
    h = by.get(hello_id)
    check(h is not None and h.state == "succeeded" and h.exit_code == 0,
          "history has the finished job with its exit code")
    check(h is not None and h.elapsed_s >= 0 and h.gpus == 1.0 and h.wait_s is not None and
          h.wait_s >= 0, "elapsed, wait and GPUs: %s" % h)
    check([r.id for r in c.history(state="cancelled")] == [hog_id], "history by state")
    last = max(r.end_time or 0 for r in recs)
    check(c.history(since=last + 1) == [] and len(c.history(until=last + 1)) == len(recs),
          "history by the window jobs lived in")
    try:
        rows = c.usage("all")
        check(sum(r.jobs for r in rows) >= 1 and all(r.gpu_hours >= 0 for r in rows),
              "usage: GPU-hours per namespace (%s)" % rows)
    except sluice.NotFound as e:
        print("note: this server has no /v1/usage (%s)" % e.error)


def with_tokens(sluice):
    d = os.path.join(TMP, "auth")
    os.makedirs(d)
    cfg = os.path.join(d, "config.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG + """---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: team-b}
spec: {clusterQueue: cq}
---
apiVersion: sluice.dev/v1alpha1
kind: ServerAuth
metadata: {name: tokens}
spec:
  joinToken: join-token-for-the-client-0123
  tokens:
  - {name: admin, token: %(admin)s, role: admin}
  - {name: alice, token: %(alice)s, role: member, namespaces: [team-a]}
  - {name: bob, token: %(bob)s, role: member, namespaces: [team-b]}
""" % TOKENS)
    s = Serve(os.path.join(d, "data"), cfg)
    if not check(s.start(), "sluice serve with tokens starts"):
        return
    try:
        try:
            sluice.Client(s.url, token="").jobs()
            check(False, "no token is refused")
        except sluice.Unauthorized as e:
            check("SLUICE_TOKEN" in str(e) and e.status == 401, "Unauthorized: %s" % e)
        alice = sluice.Client(s.url, token=TOKENS["alice"])
        mine = alice.run(["true"], gpus=1, queue="q", namespace="team-a", name="alices")
        check([j.id for j in alice.jobs()] == [mine.id] and alice.job(mine.id).user == "alice",
              "a member submits into its namespace; the job records the token's name")
        try:
            alice.run(["true"], gpus=1, queue="q", namespace="team-b")
            check(False, "another namespace is refused")
        except sluice.Forbidden as e:
            check("not allowed" in str(e), "Forbidden: %s" % e)
        bob = sluice.Client(s.url, token=TOKENS["bob"])
        try:
            bob.explain(mine.id)
            check(False, "bob does not see alice's job")
        except sluice.NotFound:
            check(True, "another member is answered 404 for the job")
        try:
            alice.plan(None, sluice_bin=BIN)
            check(False, "a member may not read the live state")
        except sluice.Forbidden:
            check(True, "plan needs an admin token (403 for a member)")
        admin = sluice.Client(s.url, token=TOKENS["admin"])
        check(admin.cancel(mine.id).state == "cancelled", "an admin cancels alice's job")
    finally:
        s.stop()


def main():
    if not os.access(BIN, os.X_OK):
        print("skip: SLUICE_BIN (%s) is not an executable" % BIN)
        sys.exit(77)
    install()
    import sluice
    up, url = up_server()
    try:
        dead = "http://127.0.0.1:%d" % free_port()
        c = sluice.Client([dead, url], connect_timeout_s=2)

        def node_ready():
            try:
                return any(n.get("ready") for n in c.nodes())
            except sluice.ConnectionFailed:
                return False
        if not wait_for(node_ready, 60, "sluice up and its node"):
            return
        hello = jobs_and_logs(c, sluice)
        hog = pending_plan_cancel(c, sluice)
        errors(c, sluice)
        history(c, sluice, hello, hog)
    finally:
        stop(up)
    with_tokens(sluice)


if __name__ == "__main__":
    try:
        main()
    finally:
        if FAILURES and os.path.exists(os.path.join(TMP, "up.log")):
            print("--- up.log")
            sys.stdout.write(open(os.path.join(TMP, "up.log"), errors="replace").read()[-4000:])
        if not FAILURES or os.environ.get("SLUICE_KEEP_TMP") != "1":
            shutil.rmtree(TMP, ignore_errors=True)
    finish("python_client", "the Python client against sluice up and a server with tokens")
