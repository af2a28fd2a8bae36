#include "server/pending_reasons.h"

#include "core/order/score.h"

namespace sluice::server {

void PendingReasons::clear() {
  listed_.clear();
  summary_.clear();
}

void PendingReasons::record(std::vector<PendingDecision>&& listed,
                            std::vector<PendingSummary>* summary, uint64_t cycle, TimeNs now) {
  for (auto& pd : listed) {
    Listed& l = listed_[pd.job];
    l.decision = std::move(pd);
    l.cycle = cycle;
  }
  if (!summary) return;
  summary_ = std::move(*summary);
  summary_cycle_ = cycle;
  summary_now_ = now;
}

std::optional<PendingDecision> PendingReasons::find(JobId id, const Scheduler::PendingJob* p,
                                                    uint64_t pending_since,
                                                    const SchedulerPolicy& policy) const {
  auto it = listed_.find(id);
  const bool listed = it != listed_.end();
  if (listed && it->second.cycle >= summary_cycle_) return it->second.decision;
  // The last full cycle summarised it if it was pending then and its queue has a summary.
  if (p && pending_since < summary_cycle_)
    if (const PendingReason* why = summarized_reason(summary_, p->queue, p->shape))
      return PendingDecision{id, *why, is_starving(p->job, policy, summary_now_)};
  if (listed) return it->second.decision;
  return std::nullopt;
}

}  // namespace sluice::server
