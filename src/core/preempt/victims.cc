#include "core/preempt/victims.h"

namespace sluice {

void VictimIndex::add(const RunningRecord& r) {
  VictimRecord v;
  v.id = r.job.id;
  v.start_ns = r.start_ns;
  v.checkpoint_ns = r.checkpoint_ns;
  v.submit_ns = r.job.submit_ns;
  v.latest_start_ns = r.job.complete_by_ns > 0 ? r.job.complete_by_ns - r.job.walltime_ns
                                               : std::numeric_limits<TimeNs>::max();
  for (const auto& ps : r.job.pod_sets) v.gpu_milli += ps.requests[kGpu] * ps.count;
  v.priority = r.job.priority;
  if (r.admission.placement.pods.size() == 1) {
    v.node = r.admission.placement.pods[0].node;
    for (const auto& g : r.admission.placement.pods[0].gpus) v.node_gpu_milli += g.milli;
  }
  for (const auto& u : r.admission.usage) {
    const int bit = usage_bit(u.flavor, u.resource);
    v.usage_bits |= bit < 0 ? VictimRecord::kUsageInexact : uint64_t{1} << bit;
  }
  v.r = &r;
  ++priorities_[r.admission.queue][v.priority];
  auto& vs = by_queue_[r.admission.queue];
  slot_[v.id] = vs.size();
  vs.push_back(v);
}

bool VictimIndex::remove(JobId id, QueueId q) {
  auto it = slot_.find(id);
  if (it == slot_.end()) return false;
  auto& vs = by_queue_[q];
  auto& count = priorities_[q];
  if (auto c = count.find(vs[it->second].priority); c != count.end() && --c->second == 0)
    count.erase(c);
  if (it->second + 1 != vs.size()) {  // move the last one into the hole
    vs[it->second] = vs.back();
    slot_[vs[it->second].id] = it->second;
  }
  vs.pop_back();
  slot_.erase(it);
  return true;
}

bool VictimIndex::set_checkpoint(JobId id, QueueId q, TimeNs at) {
  auto it = slot_.find(id);
  if (it == slot_.end()) return false;
  by_queue_[q][it->second].checkpoint_ns = at;
  return true;
}

}  // namespace sluice
