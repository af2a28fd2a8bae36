#!/usr/bin/env python3
"""`sluice run --pty` as a Slurm user runs `srun --pty bash` (issue 17; docs/cli.md "Interactive
sessions"), on `sluice up`, from a real pseudo-terminal (pty_session.py):

1. a bash session: commands typed and their output back, the window size at start and after a
   resize (SIGWINCH), Ctrl-C interrupting a command in the pod (its own controlling terminal),
   `exit 7` ending the job with `sluice run`'s exit status 7, the user's terminal restored;
   the session's transcript in `sluice logs`;
2. Ctrl-D ends a session with status 0; a job that cannot start is an error;
3. the tty endpoint refuses what it must: a job without a terminal (409), too many bytes (413),
   a bad size (400), an ended session (409); `--pty` with --array is refused;
4. held and dependent jobs in sluice_gated_jobs.

Env: SLUICE_BIN. Everything started here is stopped by its PID."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reliability"))
from common import BIN, FAILURES, check, finish, free_port, http, wait_ready  # noqa: E402
from pty_session import PtySession  # noqa: E402


def sluice(*args, env=None, cwd=None):
    return subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=120,
                          env=env, cwd=cwd)


def newest_job(url, name):
    jobs = json.loads(http("GET", url + "/v1/jobs")[1])["jobs"]
    return next((j for j in jobs if j["name"] == name), None)


def main():
    tmp = tempfile.mkdtemp(prefix="sluice-pty-")
    os.chmod(tmp, 0o711)  # a root agent's pods (another uid) start in this directory
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    env = dict(os.environ, SLUICE_SERVER=url, TERM="xterm")
    log = open(os.path.join(tmp, "up.log"), "ab")
    up = subprocess.Popen([BIN, "up", "--nodes", "1", "--gpus", "fake:2xH100", "--listen",
                           "127.0.0.1:%d" % port, "--data-dir", os.path.join(tmp, "data"),
                           "--heartbeat-ms", "100"], stdout=log, stderr=subprocess.STDOUT)
    sessions = []
    try:
        if not wait_ready(url, 60, "sluice up"):
            return

        # 1. bash on the allocation.
        s = PtySession([BIN, "run", "--pty", "--cpu", "1", "--name", "shell", "--",
                        "bash", "--norc", "--noprofile", "-i"], env=env, rows=30, cols=100,
                       cwd=tmp)
        sessions.append(s)
        check(s.expect(rb"[$#] ", 90) is not None, "the pod's shell prompts: %r" % s.text()[-300:])
        s.send("echo sum=$((6*7))\r")
        check(s.expect(rb"sum=42") is not None, "typed command's output comes back")
        s.send("stty size; tty\r")
        check(s.expect(rb"30 100") is not None, "the pod's terminal has the user's size")
        check(s.expect(rb"/dev/pts/\d+") is not None, "the pod's stdin is a terminal")
        s.resize(40, 120)
        time.sleep(1)  # SIGWINCH -> the CLI -> the server -> the agent
        s.send("stty size\r")
        check(s.expect(rb"40 120", 30) is not None, "a resize reaches the pod: %r"
              % s.text()[-200:])
        s.send("sleep 600\r")
        time.sleep(1)
        s.send(b"\x03")  # Ctrl-C: the pod's terminal signals its foreground command
        time.sleep(1)
        s.send("echo status=$? still-$((2+3))\r")
        check(s.expect(rb"status=130 still-5", 30) is not None,
              "Ctrl-C interrupts the command in the pod (status 130), not the session: %r"
              % s.text()[-300:])
        s.send("exit 7\r")
        rc = s.wait(60)
        check(rc == 7, "exit 7 ends `sluice run --pty` with status 7 (%r)" % rc)
        check(s.terminal_restored(), "the user's terminal modes are restored")
        job = newest_job(url, "shell")
        check(job is not None and job["state"] == "failed" and job["exit_code"] == 7
              and job["tty"], "the job ended with the shell's status: %s" % job)
        out = sluice("logs", str(job["id"]), env=env)
        check(out.returncode == 0 and "sum=42" in out.stdout and "still-5" in out.stdout,
              "the session's transcript is the job's log")
        st, body = http("POST", url + "/v1/jobs/%d/tty" % job["id"], b"ls\r")
        check(st == 409 and "is failed" in body, "an ended session takes no input (%d %s)"
              % (st, body[:120]))

        # 2. Ctrl-D ends the shell: status 0. A plain command runs under the terminal too.
        s = PtySession([BIN, "run", "--pty", "--cpu", "1", "--name", "ctrl-d", "--", "bash",
                        "--norc", "--noprofile", "-i"], env=env, cwd=tmp)
        sessions.append(s)
        check(s.expect(rb"[$#] ", 90) is not None, "second session prompts")
        s.send(b"\x04")
        check(s.wait(60) == 0, "Ctrl-D ends the session with status 0")
        check(s.terminal_restored(), "terminal restored after Ctrl-D")
        s = PtySession([BIN, "run", "--pty", "--cpu", "1", "--", "sh", "-c",
                        "test -t 0 && test -t 1 && echo both-terminals; exit 120"], env=env, cwd=tmp)
        sessions.append(s)
        check(s.expect(rb"both-terminals", 90) is not None and s.wait(60) == 120,
              "a command's status (120: not CLI11's range, kept as it is) and output")
        # Waiting as srun does: said once; cancelled meanwhile: an error. A signal while waiting
        # cancels the job.
        for name, how in (("never", "cancel"), ("sigterm", "signal")):
            s = PtySession([BIN, "run", "--pty", "--gpus", "2", "--cpu", "1", "--name", name,
                            "--hold", "--", "bash"], env=env, cwd=tmp)
            sessions.append(s)
            check(s.expect(rb"queued and waiting for resources", 60) is not None,
                  "a held --pty job waits, and says so: %r" % s.text()[-200:])
            job = newest_job(url, name)
            if how == "cancel":
                sluice("cancel", str(job["id"]), env=env)
                rc = s.wait(60)
                check(rc == 1 and "cancelled before it started" in s.text(),
                      "cancelled while waiting: an error (%r: %s)" % (rc, s.text()[-300:]))
            else:
                s.proc.send_signal(signal.SIGTERM)
                rc = s.wait(60)
                check(rc == 128 + signal.SIGTERM and "job %d cancelled" % job["id"] in s.text(),
                      "SIGTERM while waiting cancels the job (%r: %s)" % (rc, s.text()[-300:]))
                check(newest_job(url, name)["state"] == "cancelled", "... and it is cancelled")
            check(s.terminal_restored(), "terminal untouched when no session began")

        # 3. What the tty endpoint refuses.
        out = sluice("run", "--cpu", "1", "--name", "batch", "--", "sleep", "600", env=env, cwd=tmp)
        batch = newest_job(url, "batch")["id"]
        st, body = http("POST", url + "/v1/jobs/%d/tty" % batch, b"x")
        check(st == 409 and "not interactive" in body, "batch job: 409 (%d %s)" % (st, body[:120]))
        st, _ = http("POST", url + "/v1/jobs/%d/tty" % batch, b"x" * 5000)
        check(st == 413, "5000 bytes of keystrokes: 413 (%d)" % st)
        for q in ("rows=0&cols=80", "rows=abc&cols=80", "rows=20", "rows=99999&cols=80"):
            st, _ = http("POST", url + "/v1/jobs/%d/tty?%s" % (batch, q), b"")
            check(st == 400, "size %s: 400 (%d)" % (q, st))
        st, _ = http("POST", url + "/v1/jobs/424242/tty", b"x")
        check(st == 404, "no such job: 404 (%d)" % st)
        out = sluice("run", "--pty", "--array", "0-1", "--cpu", "1", "--", "bash", env=env)
        check(out.returncode == 1 and "--pty is one terminal" in out.stderr,
              "--pty --array is refused: %s" % out.stderr.strip())
        sluice("cancel", str(batch), env=env)

        # 4. Held and dependent jobs are in the gated gauge, not the scheduler's pending depth.
        sluice("run", "--cpu", "1", "--hold", "--name", "held", "--", "true", env=env, cwd=tmp)
        # (From tmp: a pod starts in the submitter's directory as another uid, and the build
        # directory of a fresh clone under a mode-700 mktemp dir is closed to it; the blocker
        # then failed at once and its dependent was cancelled before the gauge was read.)
        blocker = json.loads(sluice("run", "--cpu", "1", "--json", "--", "sleep", "600",
                                    env=env, cwd=tmp).stdout)["jobs"][0]["id"]
        sluice("run", "--cpu", "1", "-d", "afterok:%d" % blocker, "--", "true", env=env, cwd=tmp)
        metrics = http("GET", url + "/metrics")[1]
        check('sluice_gated_jobs{cluster_queue="default",reason="held"} 1' in metrics
              and 'sluice_gated_jobs{cluster_queue="default",reason="dependency"} 1' in metrics,
              "sluice_gated_jobs counts the held and the dependent job: %s" % [
                  line for line in metrics.splitlines() if line.startswith("sluice_gated")])
        sluice("cancel", "--state", "pending,running", env=env)
    finally:
        for s in sessions:
            s.close()
        up.send_signal(signal.SIGTERM)
        try:
            up.wait(30)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
        if FAILURES:
            with open(os.path.join(tmp, "up.log"), errors="replace") as f:
                print("--- up.log (end)\n" + f.read()[-4000:])
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if shutil.which("bash") is None:
        print("slurm_pty: skipped: no bash")
        sys.exit(77)
    main()
    finish("slurm_pty", "sessions on sluice up")
