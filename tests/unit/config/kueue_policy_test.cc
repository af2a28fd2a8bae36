// SchedulerPolicy's Kueue knobs (ordering: kueue, fairSharing) and Cohort fairSharing weights.
#include <gtest/gtest.h>

#include "config_test_util.h"

namespace sluice {
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::load_one;
using testing_config::yaml;

TEST(KueuePolicy, OrderingScalarAndMap) {
  auto scalar = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: p}
spec: {ordering: kueue}
)"));
  ASSERT_TRUE(scalar.ok()) << dump(scalar.errors);
  EXPECT_EQ(scalar.config.policy.ordering, OrderingMode::kKueue);
  auto map = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: p}
spec:
  ordering: {mode: composite, agingHorizon: 2h}
)"));
  ASSERT_TRUE(map.ok()) << dump(map.errors);
  EXPECT_EQ(map.config.policy.ordering, OrderingMode::kComposite);
  EXPECT_EQ(map.config.policy.aging_horizon_ns, 2 * 3600 * kNsPerSec);
  // Default: sluice's composite score, fair sharing off with Kueue's default strategies.
  auto none = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: p}
)"));
  ASSERT_TRUE(none.ok()) << dump(none.errors);
  EXPECT_EQ(none.config.policy.ordering, OrderingMode::kComposite);
  EXPECT_FALSE(none.config.policy.fair_sharing.enable);
  EXPECT_EQ(none.config.policy.fair_sharing.strategies.size(), 2u);
}

TEST(KueuePolicy, OrderingUnknownModeIsAnErrorWithLine) {
  auto out = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: p}
spec: {ordering: fifo}
)"));
  EXPECT_FALSE(out.ok());
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:4", "spec.ordering", "kueue"}))
      << dump(out.errors);
}

TEST(KueuePolicy, FairSharingStrategies) {
  auto one = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: p}
spec:
  fairSharing: {enable: true, preemptionStrategies: [LessThanInitialShare]}
)"));
  ASSERT_TRUE(one.ok()) << dump(one.errors);
  EXPECT_TRUE(one.config.policy.fair_sharing.enable);
  EXPECT_EQ(one.config.policy.fair_sharing.strategies,
            std::vector<FairStrategy>{FairStrategy::kLessThanInitialShare});
  // Kueue accepts two strategies only as [LessThanOrEqualToFinalShare, LessThanInitialShare].
  auto reversed = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: p}
spec:
  fairSharing:
    enable: true
    preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]
)"));
  EXPECT_FALSE(reversed.ok());
  EXPECT_TRUE(any_contains(reversed.errors, {"test.yaml:7", "preemptionStrategies"}))
      << dump(reversed.errors);
  auto unknown = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: p}
spec:
  fairSharing: {enable: true, preemptionStrategies: [Always]}
)"));
  EXPECT_FALSE(unknown.ok());
  auto empty = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: p}
spec:
  fairSharing: {enable: true, preemptionStrategies: []}
)"));
  EXPECT_FALSE(empty.ok());
}

TEST(KueuePolicy, CohortFairSharingWeightIsReadWithoutWarning) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: research}
spec:
  fairSharing: {weight: 500m}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  ASSERT_EQ(out.config.cohorts.size(), 1u);
  EXPECT_DOUBLE_EQ(out.config.cohorts[0].fair_weight, 0.5);
  EXPECT_FALSE(any_contains(out.config.warnings, {"fairSharing"})) << dump(out.config.warnings);
}

}  // namespace
}  // namespace sluice
