#include "core/order/drs.h"

#include <algorithm>
#include <cmath>

namespace sluice {

int64_t fair_weight_milli(const Config& config, int node) {
  const int nq = static_cast<int>(config.cluster_queues.size());
  const double w = node < nq ? config.cluster_queues[static_cast<size_t>(node)].fair_weight
                             : config.cohorts[static_cast<size_t>(node - nq)].fair_weight;
  return std::llround(std::max(0.0, w) * 1000.0);
}

int64_t dominant_share(const Config& config, const QuotaTree& quota, int node) {
  const int parent = quota.parent(node);
  if (parent < 0) return 0;
  int64_t borrowed[kMaxResources] = {};
  bool any = false;
  for (FlavorId f = 0; f < quota.num_flavors(); ++f)
    for (int r = 0; r < kMaxResources; ++r) {
      const auto res = static_cast<ResourceId>(r);
      const int64_t b = quota.node_usage(node, f, res) - quota.node_subtree(node, f, res);
      if (b > 0) {
        borrowed[r] += b;
        any = true;
      }
    }
  if (!any) return 0;
  const int64_t weight = fair_weight_milli(config, node);
  if (weight <= 0) return kInfiniteShare;
  int64_t share = 0;
  for (int r = 0; r < kMaxResources; ++r) {
    if (borrowed[r] <= 0) continue;
    int64_t lendable = 0;
    for (FlavorId f = 0; f < quota.num_flavors(); ++f)
      lendable += quota.node_subtree(parent, f, static_cast<ResourceId>(r));
    if (lendable > 0) share = std::max(share, borrowed[r] * 1000 / lendable);
  }
  return share * 1000 / weight;
}

int64_t dominant_share_with(const Config& config, QuotaTree& quota, QueueId q, int node,
                            const std::vector<UsageEntry>& usage, int sign) {
  for (const auto& u : usage) quota.add_usage(q, u.flavor, u.resource, sign * u.amount);
  const int64_t share = dominant_share(config, quota, node);
  for (const auto& u : usage) quota.add_usage(q, u.flavor, u.resource, -sign * u.amount);
  return share;
}

}  // namespace sluice
