#pragma once
// Kueue's dominant resource share (fair sharing, docs/scheduling.md "Kueue fair sharing"): how
// much a node of the cohort tree (ClusterQueue or Cohort) borrows, relative to what its parent
// cohort can lend, divided by the node's fairSharing.weight.
//
//   borrowed(n, r) = sum over flavors f of max(0, usage(n, f, r) - subtree(n, f, r))
//   lendable(r)    = sum over flavors f of subtree(parent(n), f, r)
//   share(n)       = max over r with lendable(r) > 0 of borrowed * 1000 / lendable  (integer)
//                    * 1000 / weight_milli(n)
// 0 for a node without a parent or that borrows nothing; kInfiniteShare for a borrowing node of
// weight 0. Integer arithmetic as Kueue's, so ties are ties.
#include <cstdint>
#include <limits>
#include <vector>

#include "core/decision/decisions.h"
#include "core/model/config.h"
#include "core/quota/quota_tree.h"

namespace sluice {

inline constexpr int64_t kInfiniteShare = std::numeric_limits<int64_t>::max();

// A node's fairSharing.weight in thousandths (queues 0..Q-1, then cohorts, as QuotaTree).
int64_t fair_weight_milli(const Config& config, int node);
// The share of `node` on the quota as it is.
int64_t dominant_share(const Config& config, const QuotaTree& quota, int node);

// The share before its weight (Kueue's DRS): the borrowed ratio in thousandths and the weight.
struct Drs {
  bool borrows = false;  // uses more than its subtree quota of something
  int64_t ratio = 0;     // max over resources of borrowed * 1000 / lendable
  int64_t weight_milli = 1000;
};
Drs dominant_share_parts(const Config& config, const QuotaTree& quota, int node);
// The same with `usage` added to queue q (sign +1) or taken out (-1); the quota is restored.
Drs dominant_share_parts_with(const Config& config, QuotaTree& quota, QueueId q, int node,
                              const std::vector<UsageEntry>& usage, int sign);
// The integer share of dominant_share(): ratio * 1000 / weight, kInfiniteShare for weight 0.
int64_t rounded_share(const Drs& d);
// Kueue's CompareDRS (negative: a first for scheduling): nodes of weight 0 that borrow come
// after every other and among themselves by ratio, unweighted; the others by ratio / weight,
// compared exactly.
int compare_drs(const Drs& a, const Drs& b);
// The share of queue q's ancestors-or-self `node` with `usage` added to queue q (sign +1) or
// taken out (-1): Kueue's DominantResourceShareWith / Without. The quota is restored.
int64_t dominant_share_with(const Config& config, QuotaTree& quota, QueueId q, int node,
                            const std::vector<UsageEntry>& usage, int sign);

}  // namespace sluice
