#pragma once
// The preemptor: for a pending job that does not fit, the cheapest set of running jobs whose
// eviction lets it start now, as the preemptor's ClusterQueue policy allows (Kueue's
// classical preemption: within the queue by priority, reclaim of lent quota within the cohort,
// borrowWithinCohort), only among preemptible work past its minimum runtime. Works on the
// cycle's working copies of quota and capacity; reads the running jobs through VictimIndex.
#include <set>
#include <vector>

#include "core/decision/decisions.h"
#include "core/decision/records.h"
#include "core/flavor/assigner.h"
#include "core/preempt/victims.h"

namespace sluice {

class Preemptor {
 public:
  // All must outlive the preemptor.
  Preemptor(const Config& config, const FlavorAssigner& assigner);

  // Looks for running jobs to evict so that `p` starts now. True: the evictions are applied to
  // quota/alloc (the caller commits the admission in at.admission), appended to `out` and to
  // `evicted`. False: quota and alloc unchanged. Jobs in `evicted` are not candidates.
  bool preempt(const PendingRecord& p, const Tier& tier, const VictimIndex& victims,
               QuotaTree& quota, ClusterAlloc& alloc, TimeNs now, std::set<JobId>& evicted,
               FlavorAttempt& at, std::vector<Preemption>& out) const;

 private:
  struct Candidate {
    const RunningRecord* r = nullptr;
    const VictimRecord* v = nullptr;  // what the search reads without touching *r
    PreemptReason why = PreemptReason::kWithinClusterQueue;
    int64_t lost = 0;            // GPU-milli-ns since the last checkpoint
    bool other_queue = false;    // another ClusterQueue of the cohort (reclaim / borrow)
    bool borrow_victim = false;  // allowed by borrowWithinCohort (lower priority, threshold)
  };
  // When the preemptor may borrow after the evictions: always, never, or while no victim of
  // another queue above the borrowWithinCohort threshold is among them (Kueue's
  // minimalPreemptions with allowBorrowingBelowPriority).
  enum class Borrowing : uint8_t { kAllowed, kForbidden, kBelowThreshold };
  class VictimSearch;   // one search()'s working state (preemptor.cc)
  class CandidateScan;  // preempt()'s step 1: who may be evicted (preemptor.cc)
  // One victim search over `cands` (any order: it walks them cheapest first) on the working
  // state: true with the minimal set in *chosen released from quota/alloc and the preemptor's
  // admission in `trial`; false with quota/alloc unchanged.
  bool search(const PendingRecord& p, const Tier& tier, QuotaTree& quota, ClusterAlloc& alloc,
              const std::vector<Candidate>& cands, Borrowing borrowing, std::vector<size_t>* chosen,
              FlavorAttempt& trial) const;
  // Runs the searches Kueue's policy calls for on `cands` (which it may narrow): true with
  // *chosen (indexes into cands) released, as search().
  bool choose(const PendingRecord& p, const Tier& tier, QuotaTree& quota, ClusterAlloc& alloc,
              std::vector<Candidate>& cands, bool within_nominal_possible,
              std::vector<size_t>* chosen, FlavorAttempt& trial, bool* while_borrowing) const;
  class FairRun;  // one fair-sharing search (fair_preemption.cc)
  // Kueue's fair-sharing preemption (fair_preemption.cc): victims from the queues of highest
  // dominant resource share, as the configured strategies allow. As search().
  bool fair_search(const PendingRecord& p, const Tier& tier, QuotaTree& quota, ClusterAlloc& alloc,
                   const std::vector<Candidate>& cands, std::vector<size_t>* chosen,
                   FlavorAttempt& trial) const;
  // Whether the preemptor's queue is below its nominal quota now in every resource that needs
  // preemption (Kueue's queueUnderNominalInResourcesNeedingPreemption).
  bool under_nominal_now(const PendingRecord& p, const QuotaTree& quota) const;
  // Whether each pod set fits now or within the nominal quota of some flavor of each group it
  // uses, counting what earlier pod sets took of that flavor (Kueue's assigner offers
  // preemption only then, without borrowWithinCohort).
  bool fits_nominal(const PendingRecord& p, const QuotaTree& quota) const;
  // Whether evicting every same-queue candidate could bring the preemptor within its queue's
  // nominal quota (a necessary condition for search (a), checked before it).
  bool may_end_within_nominal(const PendingRecord& p, const std::vector<Candidate>& cands,
                              const QuotaTree& quota) const;

  const Config& config_;
  const FlavorAssigner& assigner_;
};

}  // namespace sluice
