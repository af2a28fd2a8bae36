#include "core/order/starvation.h"

#include <algorithm>
#include <limits>

namespace sluice {

namespace {
constexpr int64_t kClassHorizonFactor = 4;  // default class horizon, in aging horizons
}  // namespace

TimeNs class_horizon(const SchedulerPolicy& policy) {
  return policy.aging_horizon_ns * kClassHorizonFactor;
}

int32_t top_priority(const Config& config) {
  int32_t top = std::numeric_limits<int32_t>::min();
  for (const auto& pc : config.priority_classes) top = std::max(top, pc.value);
  return top;
}

bool claim_holds_all(const Job& holder, const SchedulerPolicy& policy, int32_t top, TimeNs now) {
  return holder.priority >= top || now - holder.submit_ns >= class_horizon(policy);
}

bool claim_holds(const Job& holder, const Job& job, const SchedulerPolicy& policy, int32_t top,
                 TimeNs now) {
  return holder.priority >= job.priority || claim_holds_all(holder, policy, top, now);
}

}  // namespace sluice
