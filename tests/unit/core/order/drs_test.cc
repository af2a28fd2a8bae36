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

}  // namespace
}  // namespace sluice
