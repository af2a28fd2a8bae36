#!/usr/bin/env python3
"""Text from a hostile server never reaches the operator's terminal as control sequences
(issue 41, item 4: `explain`, `cancel`, `release`, `requeue` printed names raw; `sluice logs`
passed ESC]52, ESC]0 and ESC[2J through).

A stand-in server on loopback answers every endpoint the commands call with names, states,
reasons, error messages, a log and a configuration that hold a clipboard write (ESC]52), a
window title (ESC]0), a screen clear (ESC[2J), an 8-bit CSI (U+009B) and a bidi override
(U+202E). Each command runs with its stdout and stderr on a pseudo-terminal: none of those
bytes may arrive, and the escaped form must (the command did print); `logs --raw`, the control,
delivers them. Then, to a pipe: free text
(an explanation, a log) passes as the server sent it, names inside a line are escaped anyway,
and --json is JSON (control characters escaped by it, the rest as sent).

No sluice server, no agent: only the `sluice` binary ($SLUICE_BIN)."""
import json
import os
import pty
import select
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BIN = os.environ.get("SLUICE_BIN")
EVIL = "x\x1b]52;c;ZXZpbA==\x07\x1b]0;owned\x07\x1b[2J\u009b31m\u202eexe"
# What a terminal must never receive: ESC, BEL, the UTF-8 of U+009B and of U+202E.
FORBIDDEN = [b"\x1b", b"\x07", "\u009b".encode(), "\u202e".encode()]


def job(i, state="pending"):
    return {"id": i, "name": EVIL, "user": EVIL, "namespace": EVIL, "queue": EVIL,
            "cluster_queue": EVIL, "state": state, "reason": EVIL, "submit_time": 1.0,
            "gpus": 1, "placement": [{"pod": 0, "node": EVIL, "gpus": [0]}]}


def answer(method, path):
    """(status, content type, body) for one request."""
    if path.startswith("/v1/jobs/3"):  # an unknown job: the server's error quotes the input
        return 404, "application/json", {"error": "no job " + EVIL, "details": [EVIL]}
    if path == "/v1/jobs" and method == "POST":
        return 202, "application/json", {"jobs": [{"id": 5, "name": EVIL, "queue": EVIL}]}
    if path.startswith("/v1/jobs/2/logs"):
        return 200, "text/plain", "epoch 1 " + EVIL + "\n"
    if path.endswith("/explain"):
        return 200, "application/json", {"explanation": "job 1 (" + EVIL + ")\nWhy: " + EVIL}
    if method == "POST" and path.startswith("/v1/jobs/1/"):
        return 200, "application/json", {"id": 1, "name": EVIL, "state": EVIL}
    if path.startswith("/v1/jobs/"):
        return 200, "application/json", job(int(path.split("/")[3]))
    if path.startswith("/v1/jobs"):
        return 200, "application/json", {"jobs": [job(1), job(2, "running")]}
    if path.startswith("/v1/history"):
        return 200, "application/json", {"jobs": [dict(job(1), exit_code=EVIL)]}
    if path.startswith("/v1/usage"):
        return 200, "application/json", {"by": "namespace", "usage": [
            {"period": EVIL, "namespace": EVIL, "gpu_hours": 1.0, "jobs": 1}]}
    if path.startswith("/v1/nodes"):
        return 200, "application/json", {"nodes": [
            {"name": EVIL, "ready": True, "gpus": 8, "model": EVIL, "hold": EVIL}]}
    if path.startswith("/v1/queues") or path.startswith("/v1/localqueues"):
        q = {"name": EVIL, "cohort": EVIL, "namespace": EVIL, "cluster_queue": EVIL}
        return 200, "application/json", {"queues": [q], "local_queues": [q]}
    if path.startswith("/v1/config"):
        return 200, "application/yaml", "metadata: {name: " + EVIL + "}\n"
    return 404, "application/json", {"error": "no route " + EVIL}


class Handler(BaseHTTPRequestHandler):
    def reply(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        status, ctype, body = answer(self.command, self.path)
        data = (body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = reply

    def log_message(self, *args):
        pass


def run(args, on_tty):
    """(exit code, what the command wrote to stdout and stderr), on a pty or on pipes."""
    cmd = [BIN] + args
    if not on_tty:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        return p.returncode, p.stdout + p.stderr
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    while True:  # bounded by the command: it exits, the pty reports EOF (EIO)
        r, _, _ = select.select([master], [], [], 60)
        if not r:
            p.kill()
            raise AssertionError(f"{args}: no output for 60 s")
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.wait(timeout=60), out


def main():
    if not BIN:
        print("SLUICE_BIN not set: skip")
        return 77
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    os.environ["SLUICE_SERVER"] = f"http://127.0.0.1:{srv.server_address[1]}"
    os.environ.pop("SLUICE_TOKEN", None)
    failures = []
    commands = [["jobs"], ["jobs", "--wide"], ["explain", "1"], ["cancel", "1"], ["cancel", "3"],
                ["release", "1"], ["hold", "1"], ["requeue", "1"], ["release", "3"],
                ["history"], ["usage"], ["nodes"], ["queues"], ["queues", "--cluster-queues"],
                ["logs", "2"], ["config", "get"], ["run", "--queue", "q", "--cpu", "1", "--", "true"]]
    # 1. To a terminal: nothing of EVIL's controls arrives, its escaped form does.
    for args in commands:
        code, out = run(args, True)
        bad = [b for b in FORBIDDEN if b in out]
        if bad or b"^[]52" not in out:
            failures.append(f"{' '.join(args)} (exit {code}) wrote {bad or 'no escaped text'}: "
                            f"{out[:300]!r}")
    # The control: `logs --raw` sends the bytes as they are, and the pty shows them.
    _, out = run(["logs", "2", "--raw"], True)
    if b"\x1b]52" not in out:
        failures.append(f"logs --raw on a terminal should pass the log's bytes: {out[:200]!r}")
    # 2. To a pipe: free text as sent, names in a line escaped anyway, --json is JSON.
    _, out = run(["explain", "1"], False)
    if "\x1b]52".encode() not in out:
        failures.append(f"explain to a pipe should pass the server's text: {out[:200]!r}")
    _, out = run(["cancel", "1"], False)
    if b"\x1b" in out or b"^[]52" not in out:
        failures.append(f"cancel to a pipe should escape the name: {out[:200]!r}")
    _, out = run(["jobs", "--json"], False)
    if b"\x1b" in out or json.loads(out)["jobs"][0]["name"] != EVIL:
        failures.append(f"jobs --json should be the server's JSON: {out[:200]!r}")
    srv.shutdown()
    for f in failures:
        print("FAIL:", f)
    print(f"hostile_text: {len(commands) + 4 - len(failures)} of {len(commands) + 4} ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
