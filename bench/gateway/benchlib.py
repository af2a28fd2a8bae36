"""Shared helpers for the gateway load benchmarks: start the test backends and the gateway on
loopback (ports from --port-file), run `sluice gateway replay --json`, stop everything by PID."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SLUICE = os.environ.get("SLUICE_BIN", os.path.join(ROOT, "build", "sluice"))


class Procs:
    def __init__(self):
        if not os.access(SLUICE, os.X_OK):
            sys.exit(f"no sluice binary at {SLUICE} (build first: scripts/build.sh build)")
        self.dir = tempfile.mkdtemp(prefix="sluice-gw-bench-")
        self.procs = []
        self.n = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            self.stop(p)
        shutil.rmtree(self.dir, ignore_errors=True)

    def stop(self, p):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def start(self, args):
        self.n += 1
        pf = os.path.join(self.dir, f"p{self.n}.port")
        log = open(os.path.join(self.dir, f"p{self.n}.log"), "w")
        p = subprocess.Popen([SLUICE] + args + ["--port-file", pf], stdout=log,
                             stderr=subprocess.STDOUT)
        self.procs.append(p)
        for _ in range(400):  # 20 s
            if os.path.exists(pf) and open(pf).read().strip():
                return p, int(open(pf).read())
            if p.poll() is not None:
                sys.exit(f"{args[:2]} exited: {open(log.name).read()}")
            time.sleep(0.05)
        sys.exit(f"{args[:2]} did not start")

    def backend(self, name, service_ms, concurrency, scale=1.0):
        return self.start(["gateway", "test-backend", "--name", name, "--service-ms",
                           str(service_ms), "--concurrency", str(concurrency),
                           "--service-scale", str(scale)])[1]

    def gateway(self, yaml_text):
        path = os.path.join(self.dir, f"gw{self.n + 1}.yaml")
        with open(path, "w") as f:
            f.write(yaml_text)
        return self.start(["gateway", "--config", path])


def replay(port, *args):
    out = subprocess.run([SLUICE, "gateway", "replay", "--target", f"127.0.0.1:{port}",
                          "--json", *args], capture_output=True, text=True, timeout=600)
    if out.returncode not in (0, 3):
        sys.exit(f"replay failed: {out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


HEADER = (f"{'thr':>5} {'load':>5} {'offered/s':>9} {'2xx/s':>7} {'fallbk%':>7} {'429%':>6} "
          f"{'503%':>6} {'p50 ms':>7} {'p99 ms':>7} {'crit p99':>8} {'shed 429%':>9} "
          f"{'crit 429%':>9} {'errors':>6}")


def row(thr, load, r):
    sent = max(1, r["sent"])
    ok = max(1, r["ok"])
    fb = sum(v for k, v in r["ok_by_pool"].items() if k != "main")
    cls = r.get("classes", {})

    def pct429(c):
        c = cls.get(c)
        return 100.0 * c["status_429"] / max(1, c["sent"]) if c else 0.0
    crit_p99 = cls.get("critical", {}).get("ok_p99_ms", 0.0)
    return (f"{thr:>5} {load:>4.0%} {r['offered_rps']:9.1f} {r['ok_rps']:7.1f} "
            f"{100.0 * fb / ok:7.1f} {100.0 * r['status_429'] / sent:6.1f} "
            f"{100.0 * r['status_503'] / sent:6.1f} {r['ok_p50_ms']:7.1f} {r['ok_p99_ms']:7.1f} "
            f"{crit_p99:8.1f} {pct429('sheddable'):9.1f} {pct429('critical'):9.1f} "
            f"{r['errors'] + r['unanswered']:6d}")
