#!/usr/bin/env python3
"""Kueue's documentation examples against sluice (docs/config.md, "Kueue's examples").

    scripts/kueue_examples.py KUEUE/site/static/examples [--sluice build/sluice] [--wait 20]

Needs a checkout of kubernetes-sigs/kueue (nothing of it is in this repository). For every YAML
file under the directory: `sluice check` alone. Then every workload (a document with the
kueue.x-k8s.io/queue-name label) is submitted to a `sluice up` that runs the setup file which
defines its LocalQueue (the local nodes are the cluster: 2 nodes of fake:8xH100), and the
script reports whether it was admitted (running or ended) or why it waits. Images are not run
(pods run their command on the node), so an admitted job may then fail for lack of its image's
binaries: the table says so. Every process is stopped by its PID."""
import argparse
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def local_queues(text):
    """LocalQueue names a file defines (any namespace)."""
    out = []
    for doc in re.split(r"^---\s*$", text, flags=re.M):
        if re.search(r"^kind:\s*\"?LocalQueue", doc, re.M):
            m = re.search(r"^\s+name:\s*\"?([\w.-]+)", doc, re.M)
            if m:
                out.append(m.group(1))
    return out


def queue_label(text):
    m = re.search(r"kueue\.x-k8s\.io/queue-name:\s*\"?([\w.-]+)", text)
    return m.group(1) if m else None


def jobs(url):
    with urllib.request.urlopen(url + "/v1/jobs?limit=1000", timeout=10) as r:
        return json.load(r)["jobs"]


def try_setup(sluice, setup, workloads, wait_s, rows):
    tmp = tempfile.mkdtemp(prefix="kueue-examples-")
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    log = open(os.path.join(tmp, "up.log"), "w")
    up = subprocess.Popen([sluice, "up", "--config", setup, "--nodes", "2", "--listen",
                           "127.0.0.1:%d" % port, "--data-dir", os.path.join(tmp, "data"),
                           "--heartbeat-ms", "200", "--cycle-interval-ms", "200", "--quiet"],
                          stdout=log, stderr=log)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/readyz", timeout=1)
                break
            except Exception:
                time.sleep(0.1)
        for w in workloads:
            r = run([sluice, "submit", "--server", url, w])
            if r.returncode != 0:
                rows.append((w, setup, "refused: " + (r.stderr or r.stdout).strip().splitlines()[0]))
                continue
            ids = [int(x) for x in re.findall(r"submitted job (\d+)", r.stdout)]
            deadline = time.time() + wait_s
            while True:
                mine = [j for j in jobs(url) if j["id"] in ids]
                if all(j["state"] != "pending" for j in mine) or time.time() > deadline:
                    break
                time.sleep(0.2)
            # Let admitted ones run a moment so that a missing binary shows.
            time.sleep(1.0)
            mine = [j for j in jobs(url) if j["id"] in ids]
            states = sorted({j["state"] for j in mine})
            if "pending" in states:
                why = next(j.get("reason") for j in mine if j["state"] == "pending")
                rows.append((w, setup, "pending: %s" % why))
            elif "failed" in states:
                rows.append((w, setup, "admitted; failed on the node (the command is the image's)"))
            else:
                rows.append((w, setup, "admitted (%s)" % ", ".join(states)))
            for j in mine:  # free the quota for the next example
                run([sluice, "cancel", "--server", url, str(j["id"])])
    finally:
        up.terminate()
        try:
            up.wait(timeout=20)
        except subprocess.TimeoutExpired:
            up.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--sluice", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                     "sluice"))
    ap.add_argument("--wait", type=float, default=20)
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(a.dir, "**", "*.yaml"), recursive=True))
    if not files:
        sys.exit("no YAML files under %s" % a.dir)
    texts = {f: open(f).read() for f in files}
    setups = {}  # LocalQueue name -> the first setup file that defines it
    for f in files:
        for q in local_queues(texts[f]):
            setups.setdefault(q, f)
    loads = 0
    print("## sluice check (a workload with the setup that defines its LocalQueue)\n")
    for f in files:
        q = queue_label(texts[f])
        args = [setups[q], f] if q in setups and setups[q] != f else [f]
        r = run([a.sluice, "check"] + args)
        loads += r.returncode == 0
        if r.returncode != 0:
            first = (r.stderr or r.stdout).strip().splitlines()
            print("- refused: %s: %s" % (os.path.relpath(f, a.dir), first[0] if first else ""))
    print("\n%d of %d files load\n" % (loads, len(files)))
    by_setup, rows = {}, []
    for f in files:
        q = queue_label(texts[f])
        if not q:
            continue
        if q not in setups:
            rows.append((f, None, "no example defines LocalQueue %s" % q))
            continue
        by_setup.setdefault(setups[q], []).append(f)
    for setup, ws in sorted(by_setup.items()):
        try_setup(os.path.abspath(a.sluice), setup, ws, a.wait, rows)
    print("## workloads on `sluice up --config SETUP`\n")
    print("| workload | setup | outcome |\n|---|---|---|")
    for w, s, outcome in rows:
        print("| %s | %s | %s |" % (os.path.relpath(w, a.dir),
                                    os.path.relpath(s, a.dir) if s else "-", outcome))
    admitted = sum(1 for r in rows if r[2].startswith("admitted"))
    print("\n%d of %d workloads admitted" % (admitted, len(rows)))


if __name__ == "__main__":
    main()
