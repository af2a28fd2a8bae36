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

Drs dominant_share_parts(const Config& config, const QuotaTree& quota, int node) {
  Drs d;
  const int parent = quota.parent(node);
  if (parent < 0) return d;
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
  if (!any) return d;
  d.borrows = true;
  d.weight_milli = fair_weight_milli(config, node);
  for (int r = 0; r < kMaxResources; ++r) {
    if (borrowed[r] <= 0) continue;
    int64_t lendable = 0;
    for (FlavorId f = 0; f < quota.num_flavors(); ++f)
      lendable += quota.node_subtree(parent, f, static_cast<ResourceId>(r));
    if (lendable > 0) d.ratio = std::max(d.ratio, borrowed[r] * 1000 / lendable);
  }
  return d;
}

int64_t dominant_share(const Config& config, const QuotaTree& quota, int node) {
  return rounded_share(dominant_share_parts(config, quota, node));
}

int64_t rounded_share(const Drs& d) {
  if (!d.borrows) return 0;
  if (d.weight_milli <= 0) return kInfiniteShare;
  return d.ratio * 1000 / d.weight_milli;
}

int compare_drs(const Drs& a, const Drs& b) {
  const bool za = a.weight_milli <= 0 && a.borrows, zb = b.weight_milli <= 0 && b.borrows;
  if (za != zb) return za ? 1 : -1;
  if (za) return a.ratio < b.ratio ? -1 : (a.ratio > b.ratio ? 1 : 0);
  // a.ratio / a.weight against b.ratio / b.weight, without rounding.
  __extension__ typedef __int128 Wide;
  const Wide x = static_cast<Wide>(a.ratio) * b.weight_milli;
  const Wide y = static_cast<Wide>(b.ratio) * a.weight_milli;
  return x < y ? -1 : (x > y ? 1 : 0);
}

int64_t dominant_share_with(const Config& config, QuotaTree& quota, QueueId q, int node,
                            const std::vector<UsageEntry>& usage, int sign) {
  return rounded_share(dominant_share_parts_with(config, quota, q, node, usage, sign));
}

Drs dominant_share_parts_with(const Config& config, QuotaTree& quota, QueueId q, int node,
                              const std::vector<UsageEntry>& usage, int sign) {
  for (const auto& u : usage) quota.add_usage(q, u.flavor, u.resource, sign * u.amount);
  const Drs share = dominant_share_parts(config, quota, node);
  for (const auto& u : usage) quota.add_usage(q, u.flavor, u.resource, -sign * u.amount);
  return share;
}

}  // namespace sluice
