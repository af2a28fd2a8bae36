"""The jobs and the clients: what the pods write to the ledger, and the client operations
(submit, cancel, hold, release, requeue, preempting submissions) a schedule makes.

Ledger lines (one write each, O_APPEND, well under PIPE_BUF, so lines never interleave):
  beat <job> <node> <run> <pod> <CUDA_VISIBLE_DEVICES> <pid> <unix time>
  child <job> <run> <pid> <node> <pod>
<run> is $SLUICE_RUN (the job's attempt, the same for every pod of one run) when the agent
sets it, else <node>:<pid> (then only 1-pod jobs are submitted: a gang's pods could not be
told apart from two runs). The time is bash's $EPOCHREALTIME read just before the write: an
instant at which the pod was certainly alive (checker.py relies on this)."""
import json
import threading

from .cluster import GRACE_S

# $1 ledger  $2 job  $3 checkpoint delay (us)  $4 stubborn  $5 child  $6 life (s, 0: forever)
# $7 the harness's mark (argv[0] of the background child, so it is found in /proc even
# inside a PID namespace, where the $! it logs is not a host pid).
POD_SCRIPT = r'''
L=$1; job=$2; ckpt=$3; stubborn=$4; child=$5; life=$6; mark=$7
run=${SLUICE_RUN:-$SLUICE_NODE:$$}; dev=${CUDA_VISIBLE_DEVICES:--}
beat() { echo "beat $job $SLUICE_NODE $run $SLUICE_POD_INDEX $dev $$ $EPOCHREALTIME" >> "$L"; }
if [ "$child" = 1 ]; then
  (exec -a "$mark/child:$job:$run" sleep 300) &
  echo "child $job $run $! $SLUICE_NODE $SLUICE_POD_INDEX" >> "$L"
fi
term=0
if [ "$stubborn" = 1 ]; then trap '' TERM; else trap 'term=1' TERM; fi
t=${EPOCHREALTIME/./}; start=$((10#$t)); stop_at=0
while :; do
  beat
  t=${EPOCHREALTIME/./}; t=$((10#$t))  # microseconds, without a fork
  # A stop: keep beating while "checkpointing" for a moment, then exit 0 (within the grace).
  if [ $term = 1 ] && [ $stop_at = 0 ]; then stop_at=$((t + ckpt)); fi
  if [ $stop_at != 0 ] && [ $t -ge $stop_at ]; then exit 0; fi
  if [ "$life" != 0 ] && [ $((t - start)) -ge $((life * 1000000)) ]; then exit 0; fi
  sleep 0.2
done
'''


def job_doc(name, ns, params, ledger_dir, mark):
    """A sluice Job for one submission; `params` come from the schedule's generator."""
    spec = {"queue": "q", "priorityClassName": params["prio"],
            "checkpointGrace": "%gs" % GRACE_S, "workingDir": ledger_dir,
            "podSets": [{"count": params["pods"],
                         "resources": {"nvidia.com/gpu": params["gpus"]}}],
            "command": ["bash", "-c", POD_SCRIPT, "chaos-pod", ledger_dir + "/ledger", name,
                        str(params["ckpt_us"]), str(int(params["stubborn"])),
                        str(int(params["child"])), str(params["life"]), mark]}
    if params["walltime"]:
        spec["walltime"] = params["walltime"]
    return json.dumps({"apiVersion": "sluice.dev/v1alpha1", "kind": "Job",
                       "metadata": {"name": name, "namespace": ns}, "spec": spec})


def job_params(rng, gangs, high=False):
    """Draws one job's shape. Low-priority jobs are the preemption victims."""
    return {"pods": 2 if gangs and rng.random() < 0.35 else 1,
            "gpus": rng.choice((1, 1, 2)),
            "ns": rng.choice(("team-a", "team-b")),
            "prio": "high" if high else "low",
            # 15% run into a hard walltime (the agent's SIGTERM + SIGKILL)
            "walltime": rng.choice((2, 3, 4)) if rng.random() < 0.15 else 0,
            # 20% end by themselves (succeeded), the rest run until stopped
            "life": rng.choice((1, 2, 4)) if rng.random() < 0.2 else 0,
            "ckpt_us": rng.randrange(0, int(GRACE_S * 600000)),  # exits within 60% of grace
            "stubborn": rng.random() < 0.15,  # ignores SIGTERM: only SIGKILL ends it
            "child": rng.random() < 0.4}       # a `sleep 300` the stop must reach too


class Client:
    """Runs a schedule's client operations against the server and remembers what the server
    acknowledged: name -> job id for every 2xx submission (check (b))."""

    def __init__(self, cluster, tag, log):
        self.cluster, self.tag, self.log = cluster, tag, log
        self.acked = {}      # job name -> id
        self.by_index = {}   # submission index -> job name
        self.lock = threading.Lock()

    def name(self, index):
        return "%s-j%d" % (self.tag, index)

    def do(self, op):
        """One operation of the schedule: ("submit", index, params) or (verb, index)."""
        verb, index = op[0], op[1]
        if verb == "submit":
            return self.submit(index, op[2])
        with self.lock:
            name = self.by_index.get(index)
            jid = self.acked.get(name)
        if jid is None:
            return "%s j%d: not acknowledged, skipped" % (verb, index)
        path = {"cancel": "/cancel", "hold": "/hold", "release": "/release",
                "requeue": "/requeue"}[verb]
        st, _ = self.cluster.call("POST", "/v1/jobs/%d%s" % (jid, path))
        return "%s %s (id %d): %s" % (verb, name, jid, st or "no answer")

    def submit(self, index, params):
        name = self.name(index)
        with self.lock:
            self.by_index[index] = name
        doc = job_doc(name, params["ns"], params, self.cluster.shared, self.cluster.root)
        # resend=False: a submission that may have reached a server is never sent again (a
        # second copy would be a second job of one name, which the ledger cannot tell apart).
        st, body = self.cluster.call("POST", "/v1/jobs", doc, timeout=3, resend=False)
        if 200 <= st < 300:
            try:
                jid = body["jobs"][0]["id"]
            except (TypeError, KeyError, IndexError):
                return "submit %s: %d without a job id: %r" % (name, st, body)
            with self.lock:
                self.acked[name] = jid
            return "submit %s (%s, %dx%d GPU%s): id %d" % (
                name, params["prio"], params["pods"], params["gpus"],
                ", walltime %ds" % params["walltime"] if params["walltime"] else "", jid)
        return "submit %s: %s (not acknowledged)" % (name, st or "no answer")

    def cancel_all(self):
        """Cancels every job of the server that may still run (the cluster is this
        schedule's alone: a submission whose answer was lost may have been stored and run
        too). Returns the ids whose cancellation got no 200, for the caller to retry."""
        st, body = self.cluster.call("GET", "/v1/jobs?state=pending,running&limit=1000")
        if st != 200:
            return None
        failed = []
        for j in body.get("jobs", []):
            st, _ = self.cluster.call("POST", "/v1/jobs/%d/cancel" % j["id"])
            if st != 200:
                failed.append(j["id"])
        return failed
