// ServerState, the node pools' side (docs/autoscaling.md): what core/scale's decide() is told
// (the pools' slots, the pending gangs that wait for room, the queues' GPU headroom), what is
// done with its answer (provisioner calls, nodes taken out of scheduling), a call's result, and
// a reclaim's notice.
#include "core/cycle/scale_input.h"
#include "server/state.h"

namespace sluice::server {

namespace {

// Pending for want of room (not of quota): more nodes would let it start.
bool capacity_bound(PendingCode code) {
  return code == PendingCode::kPlacement || code == PendingCode::kStrictFifoBlocked ||
         code == PendingCode::kHeldForStarving || code == PendingCode::kReservation;
}

}  // namespace

void ServerState::set_leaving(NodeState& n, bool leaving) {
  if (n.leaving == leaving) return;
  n.leaving = leaving;
  sched_->set_node_ready(n.id, schedulable(n));
  dirty_ = true;
}

std::vector<ProvisionCall> ServerState::pool_step(TimeNs now) {
  std::vector<ProvisionCall> calls;
  if (!pools_.active()) return calls;
  // Pods on each node that are not gone: running ones, queued ones, ones being stopped.
  std::unordered_map<std::string, int32_t> pods;
  for (const auto& [id, r] : sched_->running())
    if (const JobRecord* rec = find(id))
      for (const PodRun& p : rec->pods) pods[p.node] += p.exited ? 0 : 1;
  for (const auto& [node, a] : staged_) ++pods[node];
  const auto& pools = pools_.pools();
  auto add = [&](std::vector<ProvisionCall> more) {
    for (auto& c : more) calls.push_back(std::move(c));
  };
  // 1. Follow the nodes: joins, silences, leaving nodes that emptied.
  for (size_t p = 0; p < pools.size(); ++p) {
    if (!pools[p].provisioner.configured()) continue;
    for (size_t k = 0; k < static_cast<size_t>(pools[p].max_nodes); ++k) {
      NodeState* n = node_by_name(NodePools::node_name(pools[p], k));
      if (!n) continue;
      const int32_t here = pods[n->name] + static_cast<int32_t>(n->stopping.size() +
                                                                n->assign.size() + n->held.size());
      add(pools_.observe(p, k, SlotNode{n->registered && !n->lost, here}, now));
      const SlotPhase ph = pools_.phase(p, k);
      set_leaving(*n, ph == SlotPhase::kLeaving || ph == SlotPhase::kDeleting);
    }
  }
  // 2. Ask the autoscaler.
  scale::ScaleInput in;
  in.now = now;
  in.pools = &pools;
  for (size_t p = 0; p < pools.size(); ++p)
    in.nodes.push_back(pools[p].provisioner.configured() ? pools_.scale_view(p, now)
                                                         : std::vector<scale::PoolNode>{});
  if (sched_->pending_count() > 0) {
    in.pending = scale::pending_gangs(*sched_, *config_, [&](const Scheduler::PendingJob& p) {
      const auto pd = pending_decision(p.job.id);
      return pd && capacity_bound(pd->reason.code);
    });
    in.gpu_headroom = scale::gpu_headroom(sched_->quota());
  }
  const scale::ScaleDecision d = scale::decide(in);
  for (const scale::ScaleUp& u : d.up) {
    auto more = pools_.create(static_cast<size_t>(u.pool), u.nodes, now);
    for (const auto& c : more)
      event({{"event", "scale-up"},
             {"time", unix_s(now)},
             {"pool", c.pool_name},
             {"node", c.node},
             {"for_job", u.job}});
    add(std::move(more));
  }
  // 3. Idle nodes go: out of scheduling now (under this lock, so no pod lands on them), then
  //    deleted (they hold no pod: decide() gives back empty nodes only).
  for (const scale::ScaleDown& down : d.down) {
    const size_t p = static_cast<size_t>(down.pool), k = static_cast<size_t>(down.node);
    NodeState* n = node_by_name(NodePools::node_name(pools[p], k));
    if (!n) continue;
    pools_.leave(p, k, "idle", now, now);
    set_leaving(*n, true);
    add(pools_.observe(p, k, SlotNode{n->registered && !n->lost, 0}, now));
    event({{"event", "scale-down"},
           {"time", unix_s(now)},
           {"pool", pools[p].name},
           {"node", n->name}});
  }
  if (!calls.empty()) flush();
  return calls;
}

uint64_t ServerState::pool_done(const ProvisionResult& r, TimeNs now) {
  const bool gone = pools_.done(r, now);
  nlohmann::json e{{"event", "provisioner"},   {"time", unix_s(now)},
                   {"pool", r.call.pool_name}, {"node", r.call.node},
                   {"op", r.call.op},          {"reason", r.call.reason},
                   {"result", result_name(r)}, {"exit_code", r.exit_code},
                   {"seconds", r.seconds},     {"output", r.output}};
  if (!r.call.url.empty()) e["http_status"] = r.http_status;  // a webhook's answer
  event(std::move(e));
  if (gone) {
    if (NodeState* n = node_by_name(r.call.node)) {
      n->registered = false;
      n->lost = true;  // no silence to detect: it is gone
      n->ready = false;
      n->leaving = false;
      n->agent_id.clear();
      sched_->set_node_ready(n->id, false);
      std::lock_guard lk(creds_mu_);
      node_creds_.reset(n->name);
      write_.meta.push_back({NodeCredentials::kMetaPrefix + n->name, ""});
    }
  }
  dirty_ = true;  // a freed slot, or a node gone
  return flush();
}

int ServerState::reclaim_node(const std::string& node, TimeNs notice_ns, TimeNs now,
                              std::string* error, uint64_t* ticket) {
  NodeState* n = node_by_name(node);
  if (!n) {
    *error = "no node \"" + node + "\" is configured";
    return 404;
  }
  const std::string why =
      "node " + node + " reclaimed (notice " + std::to_string(notice_ns / kNsPerSec) + "s)";
  size_t p = 0, k = 0;
  if (pools_.locate(node, p, k) && pools_.pools()[p].provisioner.configured()) {
    pools_.leave(p, k, "reclaim", now, now + notice_ns);
    set_leaving(*n, true);
  } else {
    uint64_t t = 0;
    set_node_hold(node, "drain", why, &t);  // not a pool's: drained until an admin resumes it
  }
  std::vector<JobId> hit;
  for (const auto& [id, r] : records_)
    if (r.state == JobState::kRunning)
      for (const PodRun& pod : r.pods)
        if (pod.node == node && !pod.exited) {
          hit.push_back(id);
          break;
        }
  for (JobId id : hit) {
    JobRecord& r = rec(id);
    stop_pods(r, "reclaimed", notice_ns);
    requeue_lost(r, why, now);
    gate_until_stopped(r, now);
    touch(r);
  }
  open_gates(now);
  event({{"event", "reclaim"},
         {"time", unix_s(now)},
         {"node", node},
         {"notice_s", static_cast<double>(notice_ns) / 1e9},
         {"jobs", hit}});
  dirty_ = true;
  *ticket = flush();
  return 200;
}

}  // namespace sluice::server
