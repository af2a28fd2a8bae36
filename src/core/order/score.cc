#include "core/order/score.h"

#include <algorithm>
#include <cmath>

namespace sluice {

double priority_scale(const Config& config) {
  if (config.priority_classes.empty()) return 1.0;
  int32_t lo = 0, hi = 0;
  for (const auto& pc : config.priority_classes) {
    lo = std::min(lo, pc.value);
    hi = std::max(hi, pc.value);
  }
  return std::max(1.0, static_cast<double>(hi) - static_cast<double>(lo));
}

double queue_key(const Job& job, const SchedulerPolicy& policy, double scale) {
  // Kueue's queue order: priority, then submit time (the rank order's tie-break).
  if (policy.ordering == OrderingMode::kKueue) return job.priority;
  const double horizon = static_cast<double>(std::max<TimeNs>(1, policy.aging_horizon_ns));
  return policy.weights.priority * job.priority / scale -
         policy.weights.age * static_cast<double>(job.submit_ns) / horizon;
}

double age_term(const Job& job, const SchedulerPolicy& policy, TimeNs now) {
  const double horizon = static_cast<double>(std::max<TimeNs>(1, policy.aging_horizon_ns));
  const double wait = static_cast<double>(std::max<TimeNs>(0, now - job.submit_ns));
  return policy.weights.age * std::min(1.0, wait / horizon);
}

bool is_starving(const Job& job, const SchedulerPolicy& policy, TimeNs now) {
  return policy.ordering != OrderingMode::kKueue && policy.aging_horizon_ns > 0 &&
         now - job.submit_ns >= policy.aging_horizon_ns;
}

void FairnessDebt::advance(TimeNs now, int64_t gpu_milli, TimeNs half_life_ns) {
  if (!started_) {
    started_ = true;
    last_ns_ = now;
    return;
  }
  if (now <= last_ns_) return;
  const double dt = static_cast<double>(now - last_ns_);
  last_ns_ = now;
  if (half_life_ns <= 0) {
    decayed_ = 0;
    return;
  }
  // Exact integral of a constant usage u over dt with decay rate k = ln2 / half_life:
  //   D' = D e^{-k dt} + u (1 - e^{-k dt}) / k
  const double k = std::log(2.0) / static_cast<double>(half_life_ns);
  const double decay = std::exp(-k * dt);
  decayed_ = decayed_ * decay + static_cast<double>(gpu_milli) * (1.0 - decay) / k;
}

double FairnessDebt::normalized(int64_t entitled_gpu_milli, TimeNs half_life_ns) const {
  if (half_life_ns <= 0) return 0;
  // Steady state of a constant usage E is E / k.
  const double k = std::log(2.0) / static_cast<double>(half_life_ns);
  const double steady = static_cast<double>(std::max<int64_t>(entitled_gpu_milli, 1000)) / k;
  return std::min(4.0, decayed_ / steady);
}

}  // namespace sluice
