// kubectl drain through the Kubernetes API (docs/kubernetes.md "Drain"): kubectl cordons the
// node (kube_core.cc), lists its pods (fieldSelector spec.nodeName), POSTs a policy/v1
// Eviction to each pod's eviction subresource and waits until each pod is gone (NotFound, or
// another uid under its name). An eviction is ServerState::evict_pod: a running job goes back
// to its queue as a preempted one does, whole (a gang runs whole or not at all); an ended pod
// is deleted from view. An admin's eviction from a cordoned node makes the cordon sluice's
// drain, as `sluice nodes drain` would have (`sluice nodes` then says draining, drained).
#include "server/http/kube.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

// POST /api/v1/namespaces/{ns}/pods/{name}/eviction: 201 with a Success Status, as the API
// server answers; 404 for a pod that is gone (kubectl counts it evicted). Who may: whoever may
// act in the namespace (kube_serve refuses the others with Forbidden): an admin, or a member
// evicting a pod of its own namespace's job, as it may `sluice requeue` that job.
void Server::kube_evict(const kube::Call& c, net::Response& res) {
  kube::BodyRefusal why;
  const auto eviction =
      kube::read_eviction(c.req.header("Content-Type"), c.req.body, c.path.name, c.path.ns, &why);
  if (!eviction) return reply(res, why.code, kube::patch_refusal(c, why));
  if (!kube_may_write(c, res, eviction->dry_run)) return;
  uint64_t ticket = 0, hold_ticket = 0;
  std::string node, what;
  {
    std::lock_guard lk(state_->mu());
    const TimeNs now = now_ns();
    const auto split = kube::split_pod_name(c.path.name);
    const JobRecord* r = split ? kube_job_named(c.path.ns, split->first) : nullptr;
    const auto stopping = [&](size_t i) { return state_->pod_may_be_alive(*r, i, now); };
    if (!r || !kube::pod_shown(*r, split->second, stopping))
      return reply(res, 404, kube::not_found(c, c.path.name));
    const size_t i = split->second;
    if (!eviction->uid.empty()) {
      const std::string uid = kube::pod_object(*r, i, state_->config())["metadata"]["uid"];
      if (uid != eviction->uid)
        return kube::fail_status(res, 409,
                                 "Precondition failed: UID in precondition: " + eviction->uid +
                                     ", UID in object meta: " + uid,
                                 "Conflict");
    }
    node = r->pods[i].node;
    what = r->state == JobState::kRunning && !r->pods[i].exited
               ? "job " + std::to_string(r->job.id) + " requeued"
               : "pod deleted from view";
    const std::string reason = "its pod " + c.path.name + " on node " + node + " was evicted by " +
                               c.caller.name + " (Kubernetes API)";
    std::string err;
    if (state_->evict_pod(r->job.id, i, reason, now, &err, &ticket) != 200)
      return reply(res, 404, kube::not_found(c, c.path.name));
    // kubectl drain: it cordoned the node first; its evictions make that sluice's drain.
    if (c.caller.admin && state_->node_hold(node) == "cordon")
      state_->set_node_hold(node, "drain", "kubectl drain", &hold_ticket);
  }
  for (const uint64_t t : {ticket, hold_ticket})
    if (t && !store_->wait(t))
      return kube::fail_status(res, 503, "the eviction could not be written: " + refusal());
  if (!ticket && !hold_ticket) return reply(res, 201, kube::status_object(201, ""));
  kick();
  log("pod " + c.path.ns + "/" + c.path.name + " on node " + node + ": evicted by " +
      c.caller.name + " (" + what + (hold_ticket ? "; node " + node + " drained" : "") + ")");
  reply(res, 201, kube::status_object(201, ""));
}

}  // namespace sluice::server
