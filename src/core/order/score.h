#pragma once
// The composite ordering score (docs/scheduling.md, "Ordering").
//
//   score(job, now) = w_priority * priority / priority_scale
//                   + w_age      * min(1, wait / aging_horizon)
//                   - w_drf      * drf_share(queue)
//                   - w_debt     * fairness_debt(queue)
//
// A job that has waited a full aging horizon is *starving*: it ranks ahead of every non-starving
// job (oldest first) and, if it cannot start, holds back later jobs so that capacity drains
// towards it. That is the starvation-freedom guarantee: admission within the horizon plus one
// running job's runtime.
//
// Within one queue the DRF and debt terms are equal for all jobs, and for non-starving jobs
// w_priority*p/scale + w_age*(now - submit)/horizon orders jobs exactly like the time-free key
// w_priority*p/scale - w_age*submit/horizon. The scheduler keeps each queue sorted by that key
// once, instead of re-sorting every cycle.
#include <cstdint>

#include "core/model/config.h"
#include "core/model/job.h"

namespace sluice {

// Time-free ordering key inside a queue (higher first). With ordering: kueue, the priority:
// Kueue orders a queue by priority, then submit time, and knows no aging (never starving).
double queue_key(const Job& job, const SchedulerPolicy& policy, double priority_scale);
// The age term at `now`.
double age_term(const Job& job, const SchedulerPolicy& policy, TimeNs now);
bool is_starving(const Job& job, const SchedulerPolicy& policy, TimeNs now);
// Priority range of the configured classes (>= 1), used to normalise priorities to about [0, 1].
double priority_scale(const Config& config);

// Decayed usage of a queue, in GPU-milli x ns, with exponential decay of the given half-life.
class FairnessDebt {
 public:
  // Advances to `now`, with `gpu_milli` in use since the last call.
  void advance(TimeNs now, int64_t gpu_milli, TimeNs half_life_ns);
  // Debt normalised so that a queue that used exactly `entitled_gpu_milli` forever scores 1.0.
  double normalized(int64_t entitled_gpu_milli, TimeNs half_life_ns) const;
  double raw() const { return decayed_; }

 private:
  TimeNs last_ns_ = 0;
  bool started_ = false;
  double decayed_ = 0;  // GPU-milli-ns
};

}  // namespace sluice
