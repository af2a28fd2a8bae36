#include "core/order/nominal_fairness.h"

namespace sluice {

bool fits_within_nominal(const QuotaTree& quota, QueueId q, const std::vector<int64_t>& nominal,
                         const ResourceVec& request) {
  for (int r = 0; r < kMaxResources; ++r) {
    const auto res = static_cast<ResourceId>(r);
    bool covered = false;
    int64_t used = 0;
    for (FlavorId f = 0; f < quota.num_flavors(); ++f) {
      if (!quota.managed(q, f, res)) continue;
      covered = true;
      used += quota.usage(q, f, res);
    }
    if (!covered) continue;
    const int64_t cap = static_cast<size_t>(r) < nominal.size() ? nominal[r] : 0;
    if (used + request[res] > cap) return false;
  }
  return true;
}

double nominal_fairness_factor(double scale, const QuotaTree& quota, QueueId q,
                               const std::vector<int64_t>& nominal, const ResourceVec& request) {
  if (scale >= 1) return 1;
  return fits_within_nominal(quota, q, nominal, request) ? scale : 1;
}

}  // namespace sluice
