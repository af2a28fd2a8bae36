#include "core/order/deadline_term.h"

#include <algorithm>

namespace sluice {

namespace {
constexpr TimeNs kDefaultHorizonNs = 3600 * kNsPerSec;  // without aging: one hour
}  // namespace

double deadline_term(const Job& job, const SchedulerPolicy& policy, double cap) {
  const double w = policy.weights.deadline;
  if (policy.ordering == OrderingMode::kKueue || job.complete_by_ns <= 0 || !(w > 0) || !(cap > 0))
    return 0;
  const double horizon = static_cast<double>(policy.aging_horizon_ns > 0 ? policy.aging_horizon_ns
                                                                         : kDefaultHorizonNs);
  // The window: as wide as the horizon, narrower where w x window / horizon would pass the cap.
  const double window = std::min(horizon, cap * horizon / w);
  const double slack0 = static_cast<double>(job.complete_by_ns - job.walltime_ns - job.submit_ns);
  return w * std::clamp(window - slack0, 0.0, window) / horizon;
}

}  // namespace sluice
