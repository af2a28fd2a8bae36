"""Debian's python3-kubernetes against `sluice serve` (issue 36; docs/kubernetes.md).

Run by kube_python.sh, which starts the server, its agent and the TLS terminator
(lib/kubectl_env.sh) and passes the kubeconfigs: alice's (a member of default) and bob's (a
member of team-b). The client deserializes every answer into its typed models (V1Job, V1Pod,
V1Node...), so a date that is not RFC 3339 or a required field missing fails here.
"""

import sys
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

ALICE, BOB = sys.argv[1], sys.argv[2]
NS = "default"
KUEUE = ("kueue.x-k8s.io", "v1beta1")


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def api(kubeconfig):
    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    return client.ApiClient(configuration)


def job(name, seconds, pods=1):
    labels = {"kueue.x-k8s.io/queue-name": "user-queue"}
    container = client.V1Container(
        name="main", image="busybox",
        command=["sh", "-c", "echo hello from %s; sleep %d" % (name, seconds)],
        resources=client.V1ResourceRequirements(requests={"cpu": "1", "memory": "100Mi"}))
    return client.V1Job(
        api_version="batch/v1", kind="Job",
        metadata=client.V1ObjectMeta(name=name, namespace=NS, labels=labels),
        spec=client.V1JobSpec(
            parallelism=pods, completions=pods,
            template=client.V1PodTemplateSpec(spec=client.V1PodSpec(
                containers=[container], restart_policy="Never"))))


def status_of(call):
    try:
        call()
    except ApiException as e:
        return e.status
    return 200


def condition(obj, kind):
    conds = (obj.status.conditions if obj.status else None) or []
    return next((c.status for c in conds if c.type == kind), None)


def main():
    alice = api(ALICE)
    core, batch = client.CoreV1Api(alice), client.BatchV1Api(alice)
    custom = client.CustomObjectsApi(alice)

    # Nodes (once the agent registered), namespaces.
    for _ in range(300):
        nodes = core.list_node().items
        if nodes and condition(nodes[0], "Ready") == "True":
            break
        time.sleep(0.1)
    node = core.read_node("n0")
    if condition(node, "Ready") != "True" or node.status.capacity.get("nvidia.com/gpu") != "4":
        fail("node n0: %s" % node.status)
    if NS not in [n.metadata.name for n in core.list_namespace().items]:
        fail("namespaces: %s" % core.list_namespace())

    # Create a typed V1Job, then watch it from the list's resourceVersion (as an informer
    # does) until its Complete condition.
    listed = batch.list_namespaced_job(NS)
    created = batch.create_namespaced_job(NS, job("py-1", 1, pods=2))
    if created.metadata.name != "py-1" or created.metadata.creation_timestamp is None:
        fail("created: %s" % created.metadata)
    done = None
    w = watch.Watch()
    for event in w.stream(batch.list_namespaced_job, NS, field_selector="metadata.name=py-1",
                          resource_version=listed.metadata.resource_version,
                          timeout_seconds=120):
        if event["type"] in ("ADDED", "MODIFIED") and condition(event["object"], "Complete") == "True":
            done = event["object"]
            w.stop()
    if done is None or done.status.succeeded != 2 or done.status.completion_time is None:
        fail("py-1 not seen Complete: %s" % batch.read_namespaced_job("py-1", NS))

    # Its pods (by the label a Job's pods carry) and a pod's log.
    pods = core.list_namespaced_pod(NS, label_selector="job-name=py-1").items
    if sorted(p.metadata.name for p in pods) != ["py-1-0", "py-1-1"]:
        fail("pods of py-1: %s" % [p.metadata.name for p in pods])
    if any(p.status.phase != "Succeeded" or p.spec.node_name != "n0" for p in pods):
        fail("pods: %s" % pods)
    log = core.read_namespaced_pod_log("py-1-1", NS)
    if log != "hello from py-1\n":
        fail("log: %r" % log)
    if not core.list_pod_for_all_namespaces().items:
        fail("no pods across namespaces")

    # Watches of pods and nodes into typed V1Pod and V1Node: a new job's pod from a list's
    # version until it Succeeded; the nodes' initial ADDED events.
    pods_rv = core.list_namespaced_pod(NS).metadata.resource_version
    batch.create_namespaced_job(NS, job("py-w", 1))
    phases = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, NS, label_selector="job-name=py-w",
                          resource_version=pods_rv, timeout_seconds=120):
        phases.append((event["type"], event["object"].metadata.name, event["object"].status.phase))
        if event["object"].status.phase == "Succeeded":
            w.stop()
    if not phases or phases[0][:2] != ("ADDED", "py-w-0") or phases[-1][2] != "Succeeded":
        fail("pods watch: %s" % phases)
    w = watch.Watch()
    seen = []
    for event in w.stream(core.list_node, timeout_seconds=30):
        seen.append((event["type"], event["object"].metadata.name))
        w.stop()
    if seen != [("ADDED", "n0")]:
        fail("nodes watch: %s" % seen)
    batch.delete_namespaced_job("py-w", NS)

    # Kueue's kinds and the job's Workload.
    cqs = custom.list_cluster_custom_object(*KUEUE, "clusterqueues")["items"]
    lqs = custom.list_namespaced_custom_object(*KUEUE, NS, "localqueues")["items"]
    if [q["metadata"]["name"] for q in cqs] != ["cluster-queue"] or \
            [q["spec"]["clusterQueue"] for q in lqs] != ["cluster-queue"]:
        fail("queues: %s %s" % (cqs, lqs))
    wls = custom.list_namespaced_custom_object(*KUEUE, NS, "workloads")["items"]
    wl = next((x for x in wls if x["metadata"]["name"].startswith("job-py-1-")), None)
    if wl is None or wl["spec"]["queueName"] != "user-queue":
        fail("workloads: %s" % wls)
    finished = [c for c in wl["status"]["conditions"] if c["type"] == "Finished"]
    if not finished or finished[0]["reason"] != "Succeeded":
        fail("workload not Finished: %s" % wl["status"])
    one = custom.get_namespaced_custom_object(*KUEUE, NS, "workloads", wl["metadata"]["name"])
    if one["metadata"]["uid"] != wl["metadata"]["uid"]:
        fail("get workload: %s" % one)

    # Label selectors (on sluice's own labels here), and pages with limit and continue.
    ids = {}
    for i in range(2, 6):
        made = batch.create_namespaced_job(NS, job("py-%d" % i, 0))
        ids["py-%d" % i] = made.metadata.labels["sluice.dev/job-id"]
    selected = batch.list_namespaced_job(NS, label_selector="sluice.dev/job-id=" + ids["py-3"])
    if [j.metadata.name for j in selected.items] != ["py-3"]:
        fail("label selector job-id=: %s" % [j.metadata.name for j in selected.items])
    others = batch.list_namespaced_job(
        NS, label_selector="kueue.x-k8s.io/queue-name=user-queue,sluice.dev/job-id!=" + ids["py-3"])
    if sorted(j.metadata.name for j in others.items) != ["py-1", "py-2", "py-4", "py-5"]:
        fail("label selector job-id!=: %s" % [j.metadata.name for j in others.items])
    # Update (replace_namespaced_job, a PUT): a Job read, its labels changed, written back;
    # the same object again is 409 Conflict (its resourceVersion is stale).
    read = batch.read_namespaced_job("py-2", NS)
    read.metadata.labels["team"] = "py"
    replaced = batch.replace_namespaced_job("py-2", NS, read)
    if replaced.metadata.labels.get("team") != "py" or \
            replaced.metadata.resource_version == read.metadata.resource_version:
        fail("replace: %s" % replaced.metadata)
    if [j.metadata.name for j in batch.list_namespaced_job(NS, label_selector="team=py").items] \
            != ["py-2"]:
        fail("label selector after replace")
    code = status_of(lambda: batch.replace_namespaced_job("py-2", NS, read))
    if code != 409:
        fail("a stale replace: %s" % code)
    names, token, pages = [], None, 0
    while True:
        page = batch.list_namespaced_job(NS, limit=2, _continue=token)
        names += [j.metadata.name for j in page.items]
        pages += 1
        token = page.metadata._continue
        if not token or pages > 10:
            break
    if sorted(names) != ["py-%d" % i for i in range(1, 6)] or pages != 3:
        fail("pages of 2: %s in %d pages" % (names, pages))
    if len(batch.list_job_for_all_namespaces().items) != 5:
        fail("jobs across namespaces")

    # Delete: the job is gone (404), and its Workload with it.
    batch.delete_namespaced_job("py-1", NS)
    code = status_of(lambda: batch.read_namespaced_job("py-1", NS))
    if code != 404:
        fail("py-1 after delete: %s" % code)

    # Another namespace's member: Forbidden in default, an empty list in its own.
    bob = client.BatchV1Api(api(BOB))
    code = status_of(lambda: bob.list_namespaced_job(NS))
    if code != 403:
        fail("bob lists default's jobs: %s" % code)
    code = status_of(lambda: bob.create_namespaced_job(NS, job("bob-1", 0)))
    if code != 403:
        fail("bob creates in default: %s" % code)
    if bob.list_namespaced_job("team-b").items:
        fail("bob's own namespace not empty")
    print("PASS")


if __name__ == "__main__":
    main()
