#include "core/order/fairness_bounds.h"

#include <algorithm>
#include <limits>
#include <set>

namespace sluice {

namespace {
constexpr int64_t kWindowFraction = 30;  // window = aging horizon / 30
}  // namespace

FairnessBounds fairness_bounds(const Config& config, double priority_scale) {
  const SchedulerPolicy& p = config.policy;
  FairnessBounds b;
  b.window_ns = p.aging_horizon_ns > 0 ? p.aging_horizon_ns / kWindowFraction
                                       : std::numeric_limits<TimeNs>::max();
  // Smallest gap between distinct class values, as the priority term sees it.
  std::set<int32_t> values;
  for (const auto& pc : config.priority_classes) values.insert(pc.value);
  double gap = std::numeric_limits<double>::infinity();
  for (auto it = values.begin(); it != values.end() && std::next(it) != values.end(); ++it)
    gap = std::min(gap, static_cast<double>(*std::next(it) - *it));
  const double scaled = p.weights.priority * gap / priority_scale;
  b.cap = scaled > 0 ? scaled / 2 : std::numeric_limits<double>::infinity();
  return b;
}

double bounded_fairness(double penalty, const FairnessBounds& b, TimeNs waited_ns) {
  return bounded_fairness(penalty, b, waited_ns, b.window_ns);
}

double bounded_fairness(double penalty, const FairnessBounds& b, TimeNs waited_ns,
                        TimeNs window_ns) {
  if (waited_ns >= window_ns) return 0;
  return -std::min(std::max(0.0, penalty), b.cap);
}

}  // namespace sluice
