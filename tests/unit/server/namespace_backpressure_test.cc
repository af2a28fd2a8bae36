#include "server/namespace_backpressure.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace namespace_backpressure_test {

constexpr TimeNs kSec = 1'000'000'000;

TEST(NamespaceBackpressure, ThePendingCapCountsOnlyThatNamespace) {
  NamespaceBackpressure bp({.max_pending = 3, .submit_rate = 0, .submit_burst = 0});
  bp.count_pending("a", 3);
  const auto refused = bp.check({{"a", 1}}, 0);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429);
  EXPECT_EQ(refused->retry_after_s, 5);
  EXPECT_STREQ(refused->metric, "namespace-pending-cap");
  EXPECT_FALSE(bp.check({{"b", 3}}, 0));
  bp.count_pending("a", -1);
  EXPECT_FALSE(bp.check({{"a", 1}}, 0));
  EXPECT_EQ(bp.pending("a"), 2);
  bp.clear_pending();
  EXPECT_EQ(bp.pending("a"), 0);
}

TEST(NamespaceBackpressure, TheBucketRefillsAtTheRateAndSaysHowLongToWait) {
  NamespaceBackpressure bp({.max_pending = 0, .submit_rate = 10, .submit_burst = 20});
  ASSERT_FALSE(bp.check({{"a", 20}}, 0));
  bp.charge({{"a", 20}}, 0);
  auto refused = bp.check({{"a", 5}}, 0);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429);
  EXPECT_EQ(refused->retry_after_s, 1);  // 5 jobs at 10 a second
  EXPECT_FALSE(bp.check({{"b", 5}}, 0)) << "another namespace has its own bucket";
  EXPECT_FALSE(bp.check({{"a", 5}}, kSec / 2));
  refused = bp.check({{"a", 21}}, 100 * kSec);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 413) << "more than a burst can never be taken at once";
}

TEST(NamespaceBackpressure, NoRateMeansNoBucket) {
  NamespaceBackpressure bp({.max_pending = 0, .submit_rate = 0, .submit_burst = 1});
  bp.charge({{"a", 1'000'000}}, 0);
  EXPECT_FALSE(bp.check({{"a", 1'000'000}}, 0));
}

}  // namespace namespace_backpressure_test
}  // namespace sluice::server
