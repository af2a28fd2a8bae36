// ServerState: the Kubernetes API's eviction of a job's pod (POST pods/NAME/eviction, which
// `kubectl drain` sends for each pod on the node; docs/kubernetes.md "Drain"). sluice runs a
// job's pods as a gang, whole or not at all, so an eviction cannot take one pod away and
// leave the others running, as the API server does with a Job's pod: evicting a pod of a
// running job sends the whole job back to its queue, as a preemption does (its pods stop with
// the job's checkpoint grace, and it queues again once none of them can be alive; on a
// cordoned node it then runs elsewhere, or waits). A pod that ended holds nothing on its node:
// it is deleted from the API's view, as an evicted pod is deleted.
#include "server/state.h"

namespace sluice::server {

int ServerState::evict_pod(JobId id, size_t pod, const std::string& reason, TimeNs now,
                           std::string* error, uint64_t* ticket) {
  auto it = records_.find(id);
  if (it == records_.end() || pod >= it->second.pods.size() || it->second.pods[pod].deleted) {
    *error = "no such pod";
    return 404;
  }
  JobRecord& r = it->second;
  PodRun& p = r.pods[pod];
  if (r.state == JobState::kPending) {
    // Its last run's pod: already stopping (a preemption, a requeue, an earlier eviction of
    // another pod of the gang), or gone.
    if (pod_may_be_alive(r, pod, now)) return 200;
    *error = "no such pod";
    return 404;
  }
  if (r.state == JobState::kRunning && !p.exited) {
    stop_pods(r, reason, r.job.checkpoint_grace_ns);
    requeue_lost(r, reason, now);
    gate_until_stopped(r, now);
    touch(r);
    open_gates(now);
    dirty_ = true;
    *ticket = flush();
    return 200;
  }
  // Ended: the pod of an ended job, or a completed pod of a running one (a completion slot).
  p.deleted = true;
  return 200;
}

}  // namespace sluice::server
