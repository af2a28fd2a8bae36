#!/usr/bin/env python3
"""Workload kinds end to end (docs/workloads.md): a real `sluice serve` and two agents with fake
GPUs on loopback, real processes.

1. A PyTorchJob (Master + 2 Workers): the three pods run at the same time (each waits for the
   others' marks), each with the torchrun environment: MASTER_ADDR and MASTER_PORT the same in
   every pod, RANK 0..2 (the Master 0), WORLD_SIZE 3, LOCAL_RANK 0.
2. An Indexed batch Job, parallelism 2, completions 5: five runs on two slots, at most two at a
   time, JOB_COMPLETION_INDEX 0..4 once each, and the job succeeds.
3. `sluice submit` prints the notes `sluice check` gives for the same file.
4. Partial admission: a batch Job of parallelism 12 (kueue.x-k8s.io/job-min-parallelism: 4) in a
   queue of 8 GPUs starts with 8 slots (it would wait forever whole), runs its 12 completions at
   most 8 at a time, and succeeds.

Env: SLUICE_BIN (the binary). Every process is stopped by its PID; waits are bounded."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reliability"))
from common import BIN, CONFIG, Serve, check, finish, http, wait_for, workdir  # noqa

AGENTS = []


def start_agent(url, node, d):
    log = open(os.path.join(d, "agent-%s.log" % node), "ab")
    p = subprocess.Popen([BIN, "agent", "--server", url, "--name", node, "--gpus", "fake:4xH100",
                          "--state-dir", os.path.join(d, "agent-" + node), "--heartbeat-ms",
                          "200"], stdout=log, stderr=log)
    AGENTS.append(p)


def ready_nodes(url):
    st, body = http("GET", url + "/v1/nodes")
    return sum(1 for n in json.loads(body)["nodes"] if n["ready"]) if st == 200 else -st


def job_state(url, jid):
    st, body = http("GET", "%s/v1/jobs/%d" % (url, jid))
    return json.loads(body)["state"] if st == 200 else None


def submit(url, text):
    st, body = http("POST", url + "/v1/jobs", text, ctype="application/yaml")
    return json.loads(body)["jobs"][0]["id"] if st == 202 else None


PYTORCH = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            command: [sh, -c, '%(script)s']
            resources: {limits: {nvidia.com/gpu: 1, cpu: 1}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: pytorch
            command: [sh, -c, '%(script)s']
            resources: {limits: {nvidia.com/gpu: 1, cpu: 1}}
"""

# Each pod writes its env, then waits (bounded) until all three have written: only pods that
# run at the same time get past the wait.
TORCH_SCRIPT = ("echo $MASTER_ADDR $MASTER_PORT $RANK $WORLD_SIZE $LOCAL_RANK $NODE_RANK "
                "> %(marks)s/pt-$RANK.tmp && mv %(marks)s/pt-$RANK.tmp %(marks)s/pt-$RANK; "
                "i=0; while [ $(ls %(marks)s | grep -c \"^pt-[0-9]$\") -lt 3 ]; do "
                "i=$((i+1)); [ $i -gt 600 ] && exit 3; sleep 0.1; done")

INDEXED = """
apiVersion: batch/v1
kind: Job
metadata: {name: ix, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  parallelism: 2
  completions: 5
  completionMode: Indexed
  template:
    spec:
      containers:
      - name: w
        command: [sh, -c, 'echo "$JOB_COMPLETION_INDEX $(date +%%s.%%N) start" >> %(marks)s/ix; sleep 0.3; echo "$JOB_COMPLETION_INDEX $(date +%%s.%%N) end" >> %(marks)s/ix']
        resources: {limits: {nvidia.com/gpu: 1}}
"""


PARTIAL = """
apiVersion: batch/v1
kind: Job
metadata:
  name: pa
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: q}
  annotations: {kueue.x-k8s.io/job-min-parallelism: "4"}
spec:
  parallelism: 12
  completions: 12
  template:
    spec:
      containers:
      - name: w
        command: [sh, -c, 'echo "$(date +%%s.%%N) start" >> %(marks)s/pa; sleep 0.3; echo "$(date +%%s.%%N) end" >> %(marks)s/pa']
        resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_partial(url, marks):
    jid = submit(url, PARTIAL % {"marks": marks})
    check(jid is not None, "partially admissible Job submitted")
    done = wait_for(lambda: job_state(url, jid) in ("succeeded", "failed"), 90,
                    "the partially admitted Job to end")
    check(done and job_state(url, jid) == "succeeded",
          "the Job of parallelism 12 ran in a queue of 8 GPUs and succeeded (%s)"
          % job_state(url, jid))
    path = os.path.join(marks, "pa")
    events = [l.split() for l in open(path)] if os.path.exists(path) else []
    check(sum(1 for e in events if e[1] == "start") == 12, "12 completions ran (%d)" % len(events))
    running, most = 0, 0
    for e in sorted(events, key=lambda e: (float(e[0]), e[1] == "start")):
        running += 1 if e[1] == "start" else -1
        most = max(most, running)
    check(4 <= most <= 8, "4 to 8 slots at a time, never 12 (%d)" % most)


def test_pytorch(url, marks):
    jid = submit(url, PYTORCH % {"script": TORCH_SCRIPT % {"marks": marks}})
    check(jid is not None, "PyTorchJob submitted")
    done = wait_for(lambda: job_state(url, jid) in ("succeeded", "failed"), 90,
                    "the PyTorchJob to end")
    check(done and job_state(url, jid) == "succeeded",
          "the PyTorchJob's 3 pods ran at the same time and succeeded (%s)" % job_state(url, jid))
    rows = {}
    for r in range(3):
        path = os.path.join(marks, "pt-%d" % r)
        if os.path.exists(path):
            rows[r] = open(path).read().split()
    check(sorted(rows) == [0, 1, 2], "RANK 0, 1, 2 once each (%s)" % sorted(rows))
    if len(rows) == 3:
        check(len({(v[0], v[1]) for v in rows.values()}) == 1 and rows[0][0] == "127.0.0.1"
              and rows[0][1].isdigit(), "one MASTER_ADDR:MASTER_PORT in every pod (%s)" % rows)
        check(all(v[3] == "3" and v[4] == "0" and v[5] == v[2] for v in rows.values()),
              "WORLD_SIZE 3, LOCAL_RANK 0, NODE_RANK = RANK (%s)" % rows)


def test_indexed(url, marks):
    jid = submit(url, INDEXED % {"marks": marks})
    check(jid is not None, "Indexed Job submitted")
    done = wait_for(lambda: job_state(url, jid) in ("succeeded", "failed"), 90,
                    "the Indexed Job to end")
    check(done and job_state(url, jid) == "succeeded", "the Indexed Job succeeded")
    path = os.path.join(marks, "ix")
    events = [l.split() for l in open(path)] if os.path.exists(path) else []
    starts = sorted(int(e[0]) for e in events if e[2] == "start")
    check(starts == [0, 1, 2, 3, 4], "JOB_COMPLETION_INDEX 0..4 once each (%s)" % starts)
    running, most = 0, 0
    for e in sorted(events, key=lambda e: (float(e[1]), e[2] == "start")):
        running += 1 if e[2] == "start" else -1
        most = max(most, running)
    check(most <= 2, "at most parallelism=2 runs at a time (%d)" % most)


def test_submit_notes(url, d):
    path = os.path.join(d, "job.yaml")
    with open(path, "w") as f:
        f.write("apiVersion: batch/v1\nkind: Job\nmetadata: {name: n, namespace: team-a, "
                "labels: {kueue.x-k8s.io/queue-name: q}}\nspec:\n  backoffLimit: 2\n"
                "  template:\n    spec:\n      containers: [{name: w, command: [true], "
                "resources: {limits: {cpu: 1}}}]\n")
    p = subprocess.run([BIN, "submit", "--server", url, path], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 0, "submit of a Job with an ignored field succeeds (%s)" % p.stderr)
    check(("note: %s:1: ignored fields: spec.backoffLimit" % path) in p.stderr,
          "submit prints check's note, with the file's name (%r)" % p.stderr)


DUP = """
apiVersion: batch/v1
kind: Job
metadata: {%s: dup, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  template:
    spec:
      containers: [{name: w, command: [sleep, "120"], resources: {limits: {cpu: 1}}}]
"""


def test_unique_names(url):
    first = submit(url, DUP % "name")
    check(first is not None, "a batch/v1 Job named dup submitted")
    st, body = http("POST", url + "/v1/jobs", DUP % "name", ctype="application/yaml")
    check(st == 409 and "already exists" in body,
          "a second Job named dup while the first is unfinished: 409 AlreadyExists (%d %s)"
          % (st, body[:200]))
    gen = [submit(url, DUP % "generateName") for _ in range(2)]
    check(all(gen), "generateName: dup-xxxxx twice, both accepted (%s)" % gen)
    for jid in [first] + gen:
        http("POST", "%s/v1/jobs/%d/cancel" % (url, jid))
    wait_for(lambda: job_state(url, first) == "cancelled", 30, "the first dup cancelled")
    again = submit(url, DUP % "name")
    check(again is not None, "once it has ended, the name can be used again")
    if again:
        http("POST", "%s/v1/jobs/%d/cancel" % (url, again))


def main():
    d, cfg = workdir("workloads")
    marks = os.path.join(d, "marks")
    os.makedirs(marks)
    os.chmod(d, 0o711)
    os.chmod(marks, 0o1777)  # a root agent runs pods as its namespaces' uids
    serve = Serve(os.path.join(d, "data"), cfg,
                  extra=["--heartbeat-ms", "200", "--cycle-interval-ms", "200"])
    try:
        check(serve.start(), "server started")
        for node in ("n0", "n1"):
            start_agent(serve.url, node, d)
        wait_for(lambda: ready_nodes(serve.url) == 2, 60, "two agents")
        test_pytorch(serve.url, marks)
        test_indexed(serve.url, marks)
        test_submit_notes(serve.url, d)
        test_unique_names(serve.url)
        test_partial(serve.url, marks)
    finally:
        for p in AGENTS:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
        serve.kill9()
        # Pods run in their own process groups with a working directory under d: end them too.
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    if os.readlink("/proc/%s/cwd" % pid).startswith(d):
                        os.kill(int(pid), 9)
                except OSError:
                    pass
    finish("workloads_e2e",
           "PyTorchJob gang env, Indexed completions, submit notes, unique Job names, "
           "partial admission")


if __name__ == "__main__":
    main()
