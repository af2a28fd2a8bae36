#include "core/quota/quota_tree.h"

#include <gtest/gtest.h>

#include "../test_config.h"

namespace sluice {
namespace {

constexpr int64_t G = kMilliPerGpu;

TEST(QuotaTree, NominalOnlyWithoutCohort) {
  Config c;
  testing::add_queue(c, "a", 8, std::nullopt, "");
  QuotaTree t(c);
  EXPECT_EQ(t.available(0, 0, kGpu), 8 * G);
  t.add_usage(0, 0, kGpu, 6 * G);
  EXPECT_EQ(t.available(0, 0, kGpu), 2 * G);
  EXPECT_EQ(t.borrowed(0, 0, kGpu), 0);
  EXPECT_FALSE(t.managed(0, 0, kCpu));  // not covered: unlimited
  EXPECT_EQ(t.available(0, 0, kCpu), kUnlimited);
}

TEST(QuotaTree, BorrowingLimit) {
  Config c;
  testing::add_queue(c, "a", 8, 4);  // may borrow 4
  testing::add_queue(c, "b", 8);
  QuotaTree t(c);
  EXPECT_EQ(t.available(0, 0, kGpu), 12 * G);  // 8 own + 4 borrowable
  EXPECT_EQ(t.available(1, 0, kGpu), 16 * G);  // no limit: the whole cohort
  t.add_usage(0, 0, kGpu, 12 * G);
  EXPECT_EQ(t.available(0, 0, kGpu), 0);
  EXPECT_EQ(t.borrowed(0, 0, kGpu), 4 * G);
  EXPECT_EQ(t.available(1, 0, kGpu), 4 * G);  // b lent 4
  EXPECT_EQ(t.max_available(0, 0, kGpu), 12 * G);
  t.add_usage(0, 0, kGpu, -12 * G);
  EXPECT_EQ(t.available(1, 0, kGpu), 16 * G);  // release is exact
}

TEST(QuotaTree, LendingLimitKeepsGuaranteedQuota) {
  Config c;
  testing::add_queue(c, "a", 8);
  testing::add_queue(c, "b", 8);
  c.cluster_queues[1].resource_groups[0].flavors[0].resources[0].lending_limit = 2 * G;
  QuotaTree t(c);
  // b keeps 6 guaranteed; the cohort pool is 8 (a) + 2 (b lends) = 10.
  EXPECT_EQ(t.available(0, 0, kGpu), 10 * G);
  EXPECT_EQ(t.available(1, 0, kGpu), 16 * G);  // 6 guaranteed + 10 in the cohort
  t.add_usage(0, 0, kGpu, 10 * G);
  EXPECT_EQ(t.available(1, 0, kGpu), 6 * G);  // guaranteed part is still there
  EXPECT_EQ(t.available(0, 0, kGpu), 0);
}

TEST(QuotaTree, NestedCohortsWithCohortBorrowingLimit) {
  Config c;
  testing::add_queue(c, "v1", 4, std::nullopt, "vision");
  testing::add_queue(c, "n1", 16, std::nullopt, "nlp");
  c.cohorts.push_back({"org", std::nullopt, {}, false});
  c.cohorts[0].parent = 2;  // vision -> org
  c.cohorts[1].parent = 2;  // nlp -> org
  QuotaTree t(c);
  EXPECT_EQ(t.available(0, 0, kGpu), 20 * G);
  t.add_usage(1, 0, kGpu, 14 * G);
  EXPECT_EQ(t.available(0, 0, kGpu), 6 * G);  // 20 - 14
  EXPECT_EQ(t.available(1, 0, kGpu), 6 * G);
  EXPECT_EQ(t.root(0), t.root(1));
}

}  // namespace
}  // namespace sluice
