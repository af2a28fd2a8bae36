#!/usr/bin/env python3
"""The Python client (issue 18) against a highly available control plane (docs/ha.md): a
3-member etcd cluster and two `sluice serve --store etcd://` replicas on free loopback ports.
The client is given the standby's URL first: its requests reach the leader (the standby
answers 503 not_leader), and `leader` names it. The leader is then killed (SIGKILL); once the
other replica leads, the same client object submits and lists through it, with the jobs
acknowledged before the failover still there. A client given only the standby gets its 503
as ServiceUnavailable with the server's words.

Skipped (77) where etcd is not installed. Env: SLUICE_BIN, SLUICE_SOURCE_DIR. Every process
started here is stopped by its PID."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reliability"))
from common import (EtcdCluster, Serve, check, finish, leader_of,  # noqa: E402
                    skip_without_etcd, wait_for, workdir)

sys.path.insert(0, os.path.join(os.environ.get("SLUICE_SOURCE_DIR", os.path.join(HERE, "..", "..")),
                                "clients", "python"))
import sluice  # noqa: E402

skip_without_etcd("integration.python_client_ha")
data, cfg = workdir("pyc-ha")
JOB = {"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
       "metadata": {"name": "ha", "namespace": "team-a"},
       "spec": {"queue": "q", "gpus": 1, "command": ["true"]}}


def main():
    etcd = EtcdCluster(data)
    if not check(etcd.start(), "the etcd cluster is up"):
        return
    store = etcd.store_url("pyc")
    replicas = [Serve(os.path.join(data, "r%d" % i), cfg, extra=["--store", store])
                for i in range(2)]
    for r in replicas:
        check(r.start(), "replica %s starts" % r.url)
    lead = wait_for(lambda: leader_of(replicas), 30, "a leader")
    if not lead:
        return
    standby = [r for r in replicas if r is not lead][0]
    c = sluice.Client([standby.url, lead.url])
    first = c.submit(dict(JOB, metadata={"name": "before", "namespace": "team-a"}))
    check(len(first) == 1 and c.leader == lead.url,
          "the standby passes the request to the leader, which the client remembers")
    try:
        sluice.Client(standby.url).jobs()
        check(False, "a standby alone refuses")
    except sluice.ServiceUnavailable as e:
        check(e.status == 503 and "standby" in str(e), "a standby alone: %s" % e)

    lead.kill9()
    check(wait_for(lambda: leader_of([standby]), 60, "the standby to take over") is not None,
          "the other replica leads")

    def submitted():
        try:
            return c.submit(dict(JOB, metadata={"name": "after", "namespace": "team-a"}))
        except (sluice.ConnectionFailed, sluice.ServiceUnavailable):
            return None
    after = wait_for(submitted, 60, "a submission through the new leader")
    check(after is not None and c.leader == standby.url, "the client follows the new leader")
    names = sorted(j.name for j in c.jobs())
    check(names == ["after", "before"], "both jobs are there after the failover: %s" % names)
    for r in replicas:
        r.stop()


if __name__ == "__main__":
    main()
    finish("python_client_ha", "the Python client follows the leader across a failover")
