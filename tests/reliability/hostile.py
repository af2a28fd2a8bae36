#!/usr/bin/env python3
"""Hostile request bodies against a real `sluice serve` (issue 13).

- The finding: a Job whose command holds the byte 0xFF was answered 500 and, a second later,
  aborted the server from its scheduling loop. Now: 400 naming the field; the server lives.
- The finding: one anchor and 10,000 aliases (70 KB) became a 300 MB job; 1 MiB of `---`
  lines cost ~170 MB per request, 4.9 GB for 32 in parallel. Now: 413, memory bounded.
- A seeded mutation fuzzer: FUZZ bodies made from valid ones by flipping, cutting, repeating
  and inserting bytes. No answer may be a 5xx, and the process must be alive at the end.

Usage: hostile.py [FUZZ] [SEED]   (CI: 5,000 bodies)."""
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import Serve, check, finish, http, job, rss_mib, workdir  # noqa: E402

FUZZ = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 1313
root, cfg = workdir("hostile")
srv = Serve(os.path.join(root, "data"), cfg)
check(srv.start(), "server starts")
url = srv.url + "/v1/jobs"
pid = srv.proc.pid


def post(body, timeout=30):
    return http("POST", url, body, timeout=timeout, ctype="application/yaml")


# 1. Invalid UTF-8 in a command, on the JSON path and the YAML path.
bad_json = job("bad").encode().replace(b'"true"', b'"echo \xff"')
st, body = post(bad_json)
check(st == 400 and "spec.command[2]: invalid UTF-8" in body, "0xFF in a command: 400 naming the "
      "field (%d %s)" % (st, body[:200]))
bad_yaml = (b"apiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: \"b\xc3\"}\n"
            b"spec: {queue: q}\n")
st, body = post(bad_yaml)
check(st == 400 and "invalid UTF-8" in body, "a bad byte in a YAML name: 400 (%d)" % st)
time.sleep(1.5)  # the crash came about a second later, from the scheduling loop
check(srv.proc.poll() is None, "the server is alive 1.5 s later")
st, body = post(job("fine"))
check(st == 202, "a valid job is still accepted (%d)" % st)

# 2. Alias expansion, documents, separators: 413 each, and the server's memory stays bounded.
bomb = ("apiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: b, namespace: team-a}\n"
        "x: &a [" + ",".join(["'" + "z" * 5000 + "'"] * 1) + "]\nspec:\n  queue: q\n"
        "  command: [" + ",".join(["*a"] * 10000) + "]\n")
check(len(bomb) < 80000, "the alias bomb is %d bytes" % len(bomb))
st, body = post(bomb)
check(st == 413 and "once aliases are expanded" in body, "10,000 aliases: 413 (%d %s)" % (st, body[:160]))
rss0 = rss_mib(pid)
answers = []


def dashes():
    answers.append(post("---\n" * (1 << 18))[0])


threads = [threading.Thread(target=dashes) for _ in range(32)]
for t in threads:
    t.start()
peak = rss0
while any(t.is_alive() for t in threads):
    peak = max(peak, rss_mib(pid))
    time.sleep(0.01)
for t in threads:
    t.join()
check(all(a == 413 for a in answers), "32 parallel bodies of 1 MiB of `---`: all 413 (%s)" %
      sorted(set(answers)))
flow = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nx: [" + ",".join(["a"] * 500000) + "]\n"
st, _ = post(flow)
check(st == 413, "a 1 MiB flow list of 500,000 nodes: 413 (%d)" % st)
peak = max(peak, rss_mib(pid))
check(peak - rss0 < 400, "server memory grew by %.0f MiB at most (from %.0f MiB)" % (peak - rss0, rss0))

# 3. Mutations of valid bodies.
rng = random.Random(SEED)
seeds = [job("s%d" % i).encode() for i in range(3)] + [
    b"apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a, labels: "
    b"{kueue.x-k8s.io/queue-name: q}}\nspec:\n  containers:\n  - name: c\n    image: x\n"
    b"    command: [sleep, '1']\n    env: [{name: A, value: b}]\n"
    b"    resources: {limits: {nvidia.com/gpu: 1}}\n",
    b"[" + job("l1").encode() + b"," + job("l2").encode() + b"]",
    b"apiVersion: v1\nkind: List\nitems:\n- " + job("k").encode() + b"\n",
]
weird = [b"\xff", b"\xc3", b"\x00", b"\x1b[2J", b"&a ", b"*a", b"---\n", b"{", b"[", b"\"",
         b"\\u0000", b"\\ud800", b"9" * 40, b"-1", b"1e999", b": ", b"\n  ", b"!!binary ", b"%YAML 1.2\n"]


def mutate(b):
    b = bytearray(b)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(5)
        i = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(i, len(b) - 1)] = rng.randrange(256)
        elif op == 1:
            b[i:i] = rng.choice(weird)
        elif op == 2:
            del b[i:i + rng.randint(1, 20)]
        elif op == 3 and b:
            j = rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randint(1, 200)] * rng.randint(1, 50)
        else:
            b = b[:i]
    return bytes(b)


codes = {}
t0 = time.time()
for n in range(FUZZ):
    st, body = post(mutate(rng.choice(seeds)), timeout=30)
    codes[st] = codes.get(st, 0) + 1
    if st >= 500 or st == 0:
        check(False, "fuzz body %d answered %d: %s" % (n, st, body[:200]))
        if srv.proc.poll() is not None:
            break
check(srv.proc.poll() is None, "the server is alive after %d mutated bodies" % FUZZ)
check(not any(c >= 500 or c == 0 for c in codes), "no 5xx and no dropped connection (%s)" %
      dict(sorted(codes.items())))
st, _ = http("GET", srv.url + "/readyz")
check(st == 200, "/readyz still ready")
srv.stop()
check(srv.proc.returncode == 0, "clean stop (exit %s)" % srv.proc.returncode)
if not os.environ.get("KEEP"):
    __import__("shutil").rmtree(root, ignore_errors=True)
finish("reliability.hostile", "%d mutated bodies in %.1f s, answers %s, peak RSS +%.0f MiB" %
       (FUZZ, time.time() - t0, dict(sorted(codes.items())), peak - rss0))
