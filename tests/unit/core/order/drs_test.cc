// Kueue's dominant resource share (core/order/drs.h): integer arithmetic, weights, restore.
#include "core/order/drs.h"

#include <gtest/gtest.h>

#include "../test_config.h"

namespace sluice {
namespace {

// Cohort all: a, b, c with 3 GPUs of nominal quota each (9 lendable), and d without a cohort.
std::shared_ptr<Config> world() {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(1, 8);
  testing::add_queue(*c, "a", 3);
  testing::add_queue(*c, "b", 3);
  testing::add_queue(*c, "c", 3);
  testing::add_queue(*c, "d", 3, std::nullopt, "");
  return c;
}

TEST(DominantShare, BorrowedOverLendableTimesThousandOverWeight) {
  auto config = world();
  QuotaTree quota(*config);
  quota.add_usage(1, 0, kGpu, 5 * kMilliPerGpu);      // b uses 5 of its 3: borrows 2 of 9
  EXPECT_EQ(dominant_share(*config, quota, 0), 0);    // a borrows nothing
  EXPECT_EQ(dominant_share(*config, quota, 1), 222);  // 2000 * 1000 / 9000 (integer)
  config->cluster_queues[1].fair_weight = 2;
  EXPECT_EQ(dominant_share(*config, quota, 1), 111);  // / weight 2
  config->cluster_queues[1].fair_weight = 0;
  EXPECT_EQ(dominant_share(*config, quota, 1), kInfiniteShare);  // borrowing with weight 0
  quota.add_usage(3, 0, kGpu, 8 * kMilliPerGpu);
  EXPECT_EQ(dominant_share(*config, quota, 3), 0);  // d has no cohort
}

TEST(DominantShare, WithAndWithoutRestoreTheQuota) {
  auto config = world();
  QuotaTree quota(*config);
  quota.add_usage(0, 0, kGpu, 3 * kMilliPerGpu);  // a at its nominal quota: share 0
  const std::vector<UsageEntry> job{{0, kGpu, 3 * kMilliPerGpu}};
  EXPECT_EQ(dominant_share_with(*config, quota, 0, 0, job, +1), 333);  // 3 of 9 borrowed
  EXPECT_EQ(dominant_share_with(*config, quota, 0, 0, job, -1), 0);
  EXPECT_EQ(quota.usage(0, 0, kGpu), 3 * kMilliPerGpu);  // unchanged
  // The cohort node (index 4: after the four queues) has no parent: share 0.
  EXPECT_EQ(dominant_share_with(*config, quota, 0, 4, job, +1), 0);
}

// Kueue's CompareDRS: weight 0 that borrows after everything else, among themselves by how much
// they borrow (unweighted); the others by ratio / weight, without rounding.
TEST(DominantShare, CompareDrsOrdersZeroWeightsByWhatTheyBorrow) {
  auto config = world();
  QuotaTree quota(*config);
  config->cluster_queues[0].fair_weight = 0;
  config->cluster_queues[1].fair_weight = 0;
  quota.add_usage(0, 0, kGpu, 7 * kMilliPerGpu);  // a borrows 4 of 9
  quota.add_usage(1, 0, kGpu, 4 * kMilliPerGpu);  // b borrows 1 of 9
  const Drs a = dominant_share_parts(*config, quota, 0);
  const Drs b = dominant_share_parts(*config, quota, 1);
  EXPECT_EQ(dominant_share(*config, quota, 0), dominant_share(*config, quota, 1));  // both inf
  EXPECT_GT(compare_drs(a, b), 0);  // b borrows less: b first
  EXPECT_LT(compare_drs(b, a), 0);
  EXPECT_EQ(compare_drs(a, a), 0);
  const Drs c = dominant_share_parts(*config, quota, 2);  // c borrows nothing (weight 1)
  EXPECT_LT(compare_drs(c, b), 0);
  // Huge weights: 444 / 1e6 and 111 / 1e6 round to 0 as integer shares, not here.
  config->cluster_queues[0].fair_weight = 1e6;
  config->cluster_queues[1].fair_weight = 1e6;
  EXPECT_EQ(dominant_share(*config, quota, 0), dominant_share(*config, quota, 1));
  EXPECT_GT(
      compare_drs(dominant_share_parts(*config, quota, 0), dominant_share_parts(*config, quota, 1)),
      0);
  // A borrower of weight 0 comes after one of any weight.
  config->cluster_queues[1].fair_weight = 0;
  EXPECT_GT(
      compare_drs(dominant_share_parts(*config, quota, 1), dominant_share_parts(*config, quota, 0)),
      0);
}

}  // namespace
}  // namespace sluice
