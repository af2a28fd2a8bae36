#pragma once
// Why each pending job waits, as the last cycles said. A cycle lists some jobs one by one (kept
// with the cycle's number) and a full cycle may summarise the rest of its walk by (queue, shape):
// a pending job's reason is its listed one unless the summary is newer and covers it.
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/cycle/scheduler.h"

namespace sluice::server {

class PendingReasons {
 public:
  void clear();
  void forget(JobId id) { listed_.erase(id); }
  // What cycle `cycle` at `now` said: the jobs it listed, and for a full cycle its summary
  // (null: an incremental cycle, which leaves older jobs' reasons as they were).
  void record(std::vector<PendingDecision>&& listed, std::vector<PendingSummary>* summary,
              uint64_t cycle, TimeNs now);
  // The reason of pending job `id`: `p` is the scheduler's record of it (null: not in the
  // scheduler), `pending_since` the cycle count when it last became pending.
  std::optional<PendingDecision> find(JobId id, const Scheduler::PendingJob* p,
                                      uint64_t pending_since, const SchedulerPolicy& policy) const;

 private:
  struct Listed {
    PendingDecision decision;
    uint64_t cycle = 0;
  };
  std::unordered_map<JobId, Listed> listed_;
  std::vector<PendingSummary> summary_;
  uint64_t summary_cycle_ = 0;
  TimeNs summary_now_ = 0;
};

}  // namespace sluice::server
