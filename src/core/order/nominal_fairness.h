#pragma once
// Fairness only over borrowed capacity (spec.ordering.fairnessWithinNominal; 1, the default:
// off; docs/scheduling.md, "Bounded fairness").
//
// Kueue admits the work a ClusterQueue runs within its nominal quota by priority and arrival:
// its fair sharing orders heads by the dominant resource share the queue would have with the
// job admitted, which is 0 for a queue that stays within its quota. sluice's DRF and debt terms
// act on every young job, also on one whose queue has room for it: on the all-strict Philly
// variants that reorders jobs no queue borrows for, away from arrival order, and builds part of
// the strict wait tail (docs/simulator.md, issue 39). With a scale s in [0, 1), a job whose
// queue would stay within its nominal quota of every resource it covers with the job admitted
// has its fairness penalty multiplied by s (0: priority, age and arrival alone); the terms keep
// arbitrating the jobs that would borrow.
#include <cstdint>
#include <vector>

#include "core/model/resources.h"
#include "core/quota/quota_tree.h"

namespace sluice {

// Whether queue q, with `request` added to what it uses, stays within its nominal quota
// (`nominal`, per resource, summed over flavors) of every resource it covers. A resource the
// queue covers with no flavor does not count.
bool fits_within_nominal(const QuotaTree& quota, QueueId q, const std::vector<int64_t>& nominal,
                         const ResourceVec& request);

// The factor on a job's fairness penalty: `scale` when it fits within nominal, else 1.
double nominal_fairness_factor(double scale, const QuotaTree& quota, QueueId q,
                               const std::vector<int64_t>& nominal, const ResourceVec& request);

}  // namespace sluice
