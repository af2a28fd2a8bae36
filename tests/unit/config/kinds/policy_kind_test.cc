// sluice.dev SchedulerPolicy (src/config/kinds/policy_kind.cc): spec.ordering's
// fairnessYieldPercentile (core/order/fairness_yield.h) and fairnessWithinNominal
// (core/order/nominal_fairness.h), spec.alignEndsYieldToSmall (core/cycle/align_yield.h),
// spec.withoutVictims, and clear errors for bad values.
#include <gtest/gtest.h>

#include "../config_test_util.h"

namespace sluice {
namespace policy_kind_test {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::load_one;

// A SchedulerPolicy whose spec is the flow map `{spec}`.
std::string doc(const std::string& spec) {
  return "apiVersion: sluice.dev/v1alpha1\nkind: SchedulerPolicy\nmetadata: {name: p}\n"
         "spec: {" +
         spec + "}\n";
}

std::string policy_with_ordering(const std::string& ordering) {
  return "apiVersion: sluice.dev/v1alpha1\nkind: SchedulerPolicy\nmetadata: {name: p}\n"
         "spec:\n  ordering: {" +
         ordering + "}\n";
}

TEST(PolicyKind, FairnessYieldPercentileIsOffByDefault) {
  auto out = load_one(policy_with_ordering("mode: composite"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  EXPECT_EQ(out.config.policy.fairness_yield_percentile, 0);
}

TEST(PolicyKind, FairnessYieldPercentileReadsAnIntegerFrom0To99) {
  for (int v : {0, 1, 50, 99}) {
    auto out = load_one(policy_with_ordering("fairnessYieldPercentile: " + std::to_string(v)));
    ASSERT_TRUE(out.ok()) << v << dump(out.errors);
    EXPECT_EQ(out.config.policy.fairness_yield_percentile, v);
  }
  for (const char* bad : {"-1", "100", "p90", "0.5", "[90]"}) {
    auto out = load_one(policy_with_ordering(std::string("fairnessYieldPercentile: ") + bad));
    EXPECT_FALSE(out.ok()) << bad;
    EXPECT_TRUE(any_contains(out.errors, {"test.yaml:5: spec.ordering.fairnessYieldPercentile"}))
        << dump(out.errors);
  }
  auto high = load_one(policy_with_ordering("fairnessYieldPercentile: 100"));
  EXPECT_TRUE(any_contains(high.errors, {"\"100\" must be at most 99"})) << dump(high.errors);
}

TEST(PolicyKind, FairnessWithinNominalIsOffByDefault) {
  auto out = load_one(policy_with_ordering("mode: composite"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  EXPECT_EQ(out.config.policy.fairness_within_nominal, 1.0);
}

TEST(PolicyKind, FairnessWithinNominalReadsANumberFrom0To1) {
  for (const char* v : {"0", "0.25", "1"}) {
    auto out = load_one(policy_with_ordering(std::string("fairnessWithinNominal: ") + v));
    ASSERT_TRUE(out.ok()) << v << dump(out.errors);
    EXPECT_EQ(out.config.policy.fairness_within_nominal, std::stod(v));
  }
  for (const char* bad : {"-0.5", "1.5", "half", "[0]", "{s: 0}"}) {
    auto out = load_one(policy_with_ordering(std::string("fairnessWithinNominal: ") + bad));
    EXPECT_FALSE(out.ok()) << bad;
    EXPECT_TRUE(any_contains(out.errors, {"test.yaml:5: spec.ordering.fairnessWithinNominal"}))
        << bad << dump(out.errors);
  }
  auto typo = load_one(policy_with_ordering("fairnesWithinNominal: 0"));
  EXPECT_FALSE(typo.ok());
}

TEST(PolicyKind, SchedulerPolicyAlignEndsYieldToSmall) {
  EXPECT_FALSE(load_one(doc("alignEnds: true")).config.policy.align_ends_yield_small);
  auto on = load_one(doc("alignEnds: true, alignEndsYieldToSmall: true"));
  ASSERT_TRUE(on.ok()) << dump(on.errors);
  EXPECT_TRUE(on.config.policy.align_ends_yield_small);
  EXPECT_TRUE(on.config.warnings.empty()) << dump(on.config.warnings);
  // Without alignEnds it does nothing: accepted, with a warning that says so.
  auto alone = load_one(doc("alignEndsYieldToSmall: true"));
  ASSERT_TRUE(alone.ok()) << dump(alone.errors);
  EXPECT_TRUE(
      any_contains(alone.config.warnings, {"spec.alignEndsYieldToSmall", "without spec.alignEnds"}))
      << dump(alone.config.warnings);
  for (const char* bad : {"sometimes", "2", "[true]"}) {
    auto out = load_one(doc(std::string("alignEnds: true, alignEndsYieldToSmall: ") + bad));
    EXPECT_FALSE(out.ok()) << bad;
    EXPECT_TRUE(any_contains(out.errors, {"test.yaml:4: spec.alignEndsYieldToSmall"}))
        << dump(out.errors);
  }
}

TEST(PolicyKind, SchedulerPolicyWithoutVictims) {
  auto plain = load_one(doc("alignEnds: true"));
  EXPECT_FALSE(plain.config.policy.arrival_without_victims);
  EXPECT_TRUE(plain.config.policy.align_without_victims);
  auto on = load_one(doc("alignEnds: true, withoutVictims: {ordering: arrival, alignEnds: false}"));
  ASSERT_TRUE(on.ok()) << dump(on.errors);
  EXPECT_TRUE(on.config.policy.arrival_without_victims);
  EXPECT_FALSE(on.config.policy.align_without_victims);
  EXPECT_TRUE(on.config.warnings.empty()) << dump(on.config.warnings);
  EXPECT_EQ(plain.config.policy.align_without_victims_after_ns, -1);  // spec.alignEndsAfter's
  auto after = load_one(doc("alignEnds: true, withoutVictims: {alignEndsAfter: 5m}"));
  ASSERT_TRUE(after.ok()) << dump(after.errors);
  EXPECT_EQ(after.config.policy.align_without_victims_after_ns, 300 * kNsPerSec);
  EXPECT_TRUE(after.config.policy.acts_without_victims());
  EXPECT_FALSE(plain.config.policy.acts_without_victims());
  auto policy = load_one(doc("withoutVictims: {ordering: policy}"));
  ASSERT_TRUE(policy.ok()) << dump(policy.errors);
  EXPECT_FALSE(policy.config.policy.arrival_without_victims);
  // What cannot act is accepted with a warning that says why.
  auto unaligned = load_one(doc("withoutVictims: {alignEnds: false}"));
  ASSERT_TRUE(unaligned.ok()) << dump(unaligned.errors);
  EXPECT_TRUE(any_contains(unaligned.config.warnings,
                           {"spec.withoutVictims.alignEnds", "without spec.alignEnds"}))
      << dump(unaligned.config.warnings);
  auto kueue = load_one(doc("ordering: kueue, withoutVictims: {ordering: arrival}"));
  ASSERT_TRUE(kueue.ok()) << dump(kueue.errors);
  EXPECT_TRUE(any_contains(kueue.config.warnings, {"spec.withoutVictims.ordering", "kueue"}))
      << dump(kueue.config.warnings);
  for (const char* bad : {"{ordering: fifo}", "{alignEnds: maybe}", "{order: arrival}", "arrival",
                          "[arrival]", "{alignEndsAfter: soon}", "{alignEndsAfter: -5m}"}) {
    auto out = load_one(doc(std::string("alignEnds: true, withoutVictims: ") + bad));
    EXPECT_FALSE(out.ok()) << bad;
    EXPECT_TRUE(any_contains(out.errors, {"test.yaml:4: spec.withoutVictims"})) << dump(out.errors);
  }
}

}  // namespace policy_kind_test
}  // namespace sluice
