#!/usr/bin/env python3
"""etcd losing its quorum under replicated `sluice serve --store etcd://` (issue 16, docs/ha.md).

A 3-member etcd cluster and 2 sluice replicas. With two of three etcd members killed, no
submission is acknowledged (503 or no answer: never a 202) and the leader steps down (exit 3);
when the members are back, a replica leads again and submissions are acknowledged, and every
one acknowledged before is still there.

Skipped (exit 77) where `etcd` is not installed."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import (EtcdCluster, Serve, all_jobs, check, finish, http, job, leader_of,  # noqa: E402
                    skip_without_etcd, wait_for, workdir)

skip_without_etcd("reliability.etcd_quorum")
data, cfg = workdir("quorum")
etcd = EtcdCluster(data)
acked, during = [], []
check(etcd.start(), "the etcd cluster is up")
replicas = [Serve(os.path.join(data, "r%d" % i), cfg, extra=["--store", etcd.store_url("q")])
            for i in range(2)]
for r in replicas:
    check(r.start(), "replica %s starts" % r.url)


def supervised_leader():
    """The leader, restarting (as a supervisor would) a replica that stepped down."""
    for r in replicas:
        if r.proc.poll() is not None:
            r.start()
    return leader_of(replicas)


def submit(url, name, timeout=30):
    status, body = http("POST", url + "/v1/jobs", job(name), timeout=timeout)
    return [j["id"] for j in json.loads(body)["jobs"]] if status == 202 else None, status


lead = wait_for(supervised_leader, 30, "a leader")
for k in range(5):
    ids, _ = submit(lead.url, "before-%d" % k)
    if check(ids is not None, "submission %d acknowledged with a quorum" % k):
        acked.extend(ids)

# Two of three members gone: nothing may be acknowledged.
etcd.members[1].kill9()
etcd.members[2].kill9()
t0 = time.time()
for k in range(3):
    ids, status = submit(lead.url, "during-%d" % k, timeout=30)
    during.append(status)
check(all(s != 202 for s in during), "no submission acknowledged without a quorum (%s)" % during)
check(wait_for(lambda: lead.proc.poll() is not None, 30, "the leader to step down") is not None
      and lead.proc.returncode == 3, "the leader stepped down (exit 3)")
outage = time.time() - t0

# Back: a leader again, new submissions acknowledged, the old ones all there.
etcd.members[1].start()
etcd.members[2].start()
lead = wait_for(supervised_leader, 60, "a leader after the quorum returned")
check(lead is not None, "a replica leads again once etcd has its quorum")
if lead:
    ids, status = wait_for(lambda: (lambda r: r if r[0] else None)(submit(lead.url, "after")),
                           30, "an acknowledged submission") or (None, 0)
    check(ids is not None, "submissions are acknowledged again")
    status, got = all_jobs(lead.url)
    have = {j["id"] for j in got}
    check(all(i in have for i in acked), "every job acknowledged before the outage is there")
for r in replicas:
    r.stop()
for m in etcd.members:
    m.kill9()
finish("reliability.etcd_quorum", "%d acknowledged before, answers without a quorum %s, "
       "outage handled in %.1f s" % (len(acked), during, outage))
