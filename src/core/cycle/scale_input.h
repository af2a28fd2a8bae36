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

}  // namespace sluice::scale
