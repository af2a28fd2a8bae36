#pragma once
// The running jobs that may ever be preempted, packed per ClusterQueue (VictimRecord): the
// victim search scans the queues a preemptor may take from. The Scheduler lists a job when it
// starts running if it is preemptible (job and queue) or admitted best-effort and under the
// per-job preemption cap (both fixed while it runs), and unlists it when it stops. Order
// within a queue's array is not meaningful: the search sorts candidates by a total order.
#include <limits>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/decision/records.h"

namespace sluice {

class VictimIndex {
 public:
  explicit VictimIndex(size_t queues) : by_queue_(queues), priorities_(queues) {}
  // `r` must stay where it is until remove() (records in a std::map do).
  void add(const RunningRecord& r);
  // False when the job was not listed.
  bool remove(JobId id, QueueId q);
  // A listed job saved its work: its cost as a victim changes. False when not listed.
  bool set_checkpoint(JobId id, QueueId q, TimeNs at);
  const std::vector<VictimRecord>& queue(QueueId q) const { return by_queue_[q]; }
  // The lowest priority among queue q's listed jobs (INT32_MAX when none): a preemptor that
  // may take only lower-priority work there skips a queue with none.
  int32_t min_priority(QueueId q) const {
    const auto& c = priorities_[q];
    return c.empty() ? std::numeric_limits<int32_t>::max() : c.begin()->first;
  }
  QueueId num_queues() const { return static_cast<QueueId>(by_queue_.size()); }
  bool empty() const { return slot_.empty(); }

 private:
  std::vector<std::vector<VictimRecord>> by_queue_;
  std::unordered_map<JobId, size_t> slot_;              // index in its queue's array
  std::vector<std::map<int32_t, int32_t>> priorities_;  // per queue: priority -> listed jobs
};

}  // namespace sluice
