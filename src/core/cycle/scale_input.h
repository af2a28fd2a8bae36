#pragma once
// What the autoscaler (core/scale) is told about a Scheduler's state, for both of its callers
// (the simulator's Fleet, sim/autoscale.cc, and the server's node pools, server/state_pools.cc):
// the pending gangs in the autoscaler's rank order, and the queues' GPU quota headroom.
#include <algorithm>
#include <vector>

#include "core/cycle/scheduler.h"
#include "core/scale/autoscaler.h"

namespace sluice::scale {

// The pending jobs `keep(const Scheduler::PendingJob&)` admits, as gangs, in rank order:
// priority, then submit time, then id (a total order).
template <class Keep>
std::vector<PendingGang> pending_gangs(const Scheduler& sched, const Config& config, Keep&& keep) {
  std::vector<const Scheduler::PendingJob*> order;
  sched.for_each_pending([&](const Scheduler::PendingJob& p) {
    if (keep(p)) order.push_back(&p);
  });
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    if (a->job.priority != b->job.priority) return a->job.priority > b->job.priority;
    if (a->job.submit_ns != b->job.submit_ns) return a->job.submit_ns < b->job.submit_ns;
    return a->job.id < b->job.id;
  });
  std::vector<PendingGang> out;
  out.reserve(order.size());
  for (const auto* p : order)
    out.push_back(gang_of(p->job, p->queue, config.cluster_queues[static_cast<size_t>(p->queue)]));
  return out;
}

// GPU quota headroom in milli-GPU per [queue][flavor] (ScaleInput::gpu_headroom).
inline std::vector<std::vector<int64_t>> gpu_headroom(const QuotaTree& q) {
  std::vector<std::vector<int64_t>> h(static_cast<size_t>(q.num_queues()),
                                      std::vector<int64_t>(static_cast<size_t>(q.num_flavors())));
  for (QueueId c = 0; c < q.num_queues(); ++c)
    for (FlavorId f = 0; f < q.num_flavors(); ++f)
      if (q.managed(c, f, kGpu))
        h[static_cast<size_t>(c)][static_cast<size_t>(f)] = q.available(c, f, kGpu);
  return h;
}

// The running jobs with a pod on one of `nodes` (per pool: its slots, ScaleInput::nodes), as
// consolidation sees them (ScaleInput::running), in job id order.
inline std::vector<RunningGang> running_gangs(const Scheduler& sched,
                                              const std::vector<std::vector<PoolNode>>& nodes) {
  std::vector<char> pooled;
  for (const auto& pool : nodes)
    for (const PoolNode& n : pool) {
      if (n.node < 0) continue;
      if (static_cast<size_t>(n.node) >= pooled.size()) pooled.resize(n.node + 1, 0);
      pooled[static_cast<size_t>(n.node)] = 1;
    }
  const auto on_pool = [&](NodeId n) {
    return n >= 0 && static_cast<size_t>(n) < pooled.size() && pooled[static_cast<size_t>(n)];
  };
  std::vector<RunningGang> out;
  for (const auto& [id, r] : sched.running()) {
    const auto& pods = r.admission.placement.pods;
    if (std::none_of(pods.begin(), pods.end(), [&](const auto& p) { return on_pool(p.node); }))
      continue;
    RunningGang& g = out.emplace_back();
    g.job = id;
    g.preemptible = r.job.preemptible;
    g.start_ns = r.start_ns;
    g.checkpoint_ns = std::max(r.start_ns, r.checkpoint_ns);
    g.walltime_ns = r.job.walltime_ns;
    g.gpu_milli = r.job.total_requests()[kGpu];
    for (const PodPlacement& p : pods) {
      RunningPod& rp = g.pods.emplace_back();
      rp.node = p.node;
      const PodSet& ps = r.job.pod_sets[static_cast<size_t>(p.pod_set)];
      rp.cpu_milli = ps.requests[kCpu];
      rp.memory_mib = ps.requests[kMemory];
      for (const GpuShare& s : p.gpus) rp.gpus.push_back({s.gpu, s.milli, s.mig_slice >= 0});
    }
  }
  return out;
}

}  // namespace sluice::scale
