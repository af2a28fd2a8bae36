// kueue.x-k8s.io/v1beta2, Kueue's current API: every kind sluice reads in v1beta1, with the
// fields v1beta2 renamed (cohortName), dropped (admissionChecks, Borrow / Preempt) and added
// (concurrentAdmissionPolicy, fungibility preference, wallTimePolicy, resourceWeights).
#include <gtest/gtest.h>

#include "config_test_util.h"

namespace sluice {
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::load_one;
using testing_config::yaml;

TEST(KueueV1beta2, EveryKindLoads) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
spec: {nodeLabels: {gpu: h100}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: research}
spec: {parentName: org}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: urgent}
value: 1000
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: research
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  flavorFungibility: {whenCanBorrow: TryNextFlavor, whenCanPreempt: TryNextFlavor,
                      preference: PreemptionOverBorrowing}
  admissionScope: {admissionMode: NoAdmissionFairSharing}
  concurrentAdmissionPolicy: {migration: {mode: RetainFirstAdmission}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 4}]
  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: train, namespace: nlp}
spec: {clusterQueue: team-a}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Config& c = out.config;
  ASSERT_EQ(c.cluster_queues.size(), 1u);
  const ClusterQueue& cq = c.cluster_queues[0];
  ASSERT_TRUE(cq.cohort.has_value());  // cohortName: research, whose parent is org (implied)
  EXPECT_EQ(c.cohorts[static_cast<size_t>(*cq.cohort)].name, "research");
  ASSERT_TRUE(c.cohorts[static_cast<size_t>(*cq.cohort)].parent.has_value());
  EXPECT_EQ(cq.strategy, QueueingStrategy::kStrictFIFO);
  EXPECT_EQ(cq.flavor_fungibility.when_can_borrow, FungibilityPolicy::kTryNextFlavor);
  EXPECT_EQ(cq.flavor_fungibility.preference, FungibilityPreference::kPreemptionOverBorrowing);
  EXPECT_EQ(cq.preemption.within_cluster_queue, WithinQueuePolicy::kLowerPriority);
  EXPECT_EQ(c.priority_classes.at(0).value, 1000);
  EXPECT_EQ(c.local_queues.at(0).namespace_, "nlp");
  // flavorFungibility is acted on; only preference PreemptionOverBorrowing is warned about.
  // RetainFirstAdmission and NoAdmissionFairSharing are what sluice does: no warning.
  EXPECT_TRUE(any_contains(c.warnings, {"spec.flavorFungibility.preference: ignored"}))
      << dump(c.warnings);
  EXPECT_FALSE(any_contains(c.warnings, {"spec.flavorFungibility: "})) << dump(c.warnings);
  EXPECT_FALSE(any_contains(c.warnings, {"concurrentAdmissionPolicy"})) << dump(c.warnings);
  EXPECT_FALSE(any_contains(c.warnings, {"admissionScope"})) << dump(c.warnings);
}

TEST(KueueV1beta2, RenamedFieldsSayWhatTheyBecame) {
  auto v2 = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec:
  cohort: research
  admissionChecks: [prov]
  namespaceSelector: {}
)"));
  EXPECT_FALSE(v2.ok());
  EXPECT_TRUE(any_contains(
      v2.errors, {"test.yaml:5: spec.cohort: kueue.x-k8s.io/v1beta2 calls this field cohortName"}))
      << dump(v2.errors);
  EXPECT_TRUE(any_contains(v2.errors, {"test.yaml:6: spec.admissionChecks: not in",
                                       "admissionChecksStrategy.admissionChecks"}))
      << dump(v2.errors);
  auto v1 = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: a}
spec:
  cohortName: research
  admissionChecks: [prov]
  namespaceSelector: {}
)"));
  EXPECT_FALSE(v1.ok());
  EXPECT_TRUE(any_contains(v1.errors, {"spec.cohortName: cohortName is kueue.x-k8s.io/v1beta2's",
                                       "v1beta1 calls it cohort"}))
      << dump(v1.errors);
  // v1beta1 still has admissionChecks: accepted and ignored.
  EXPECT_TRUE(any_contains(v1.config.warnings, {"spec.admissionChecks: ignored"}))
      << dump(v1.config.warnings);
}

// A Cohort's parent is spec.parent in v1alpha1 and v1beta1 (Kueue's cohort_types.go) and
// spec.parentName in v1beta2; the other name is read with a warning, both at once is an error.
TEST(KueueV1beta2, CohortParentByVersion) {
  auto cohort = [](const char* api, const char* spec) {
    const std::string text = std::string("apiVersion: kueue.x-k8s.io/") + api +
                             "\nkind: Cohort\nmetadata: {name: team}\nspec: " + spec + "\n";
    return load_one(yaml(text.c_str()));
  };
  auto parent_of = [](const auto& out) {  // the parent of cohort "team"
    for (const auto& c : out.config.cohorts)
      if (c.name == "team" && c.parent)
        return out.config.cohorts[static_cast<size_t>(*c.parent)].name;
    return std::string("none");
  };
  for (const char* api : {"v1alpha1", "v1beta1"}) {
    auto own = cohort(api, "{parent: org}");
    EXPECT_TRUE(own.ok() && own.config.warnings.empty()) << api << dump(own.config.warnings);
    EXPECT_EQ(parent_of(own), "org") << api;
    auto old = cohort(api, "{parentName: org}");
    EXPECT_TRUE(old.ok()) << dump(old.errors);
    EXPECT_EQ(parent_of(old), "org") << api;
    EXPECT_TRUE(any_contains(old.config.warnings,
                             {"spec.parentName: kueue.x-k8s.io/v1beta1 and v1alpha1 call this "
                              "field parent"}))
        << dump(old.config.warnings);
  }
  auto v2 = cohort("v1beta2", "{parentName: org}");
  EXPECT_TRUE(v2.ok() && v2.config.warnings.empty()) << dump(v2.config.warnings);
  EXPECT_EQ(parent_of(v2), "org");
  auto v2_old = cohort("v1beta2", "{parent: org}");
  EXPECT_EQ(parent_of(v2_old), "org");
  EXPECT_TRUE(any_contains(v2_old.config.warnings,
                           {"spec.parent: kueue.x-k8s.io/v1beta2 calls this field parentName"}))
      << dump(v2_old.config.warnings);
  auto both = cohort("v1beta1", "{parent: org, parentName: org}");
  EXPECT_FALSE(both.ok());
  EXPECT_TRUE(any_contains(both.errors, {"spec.parentName: give the parent once, as parent"}))
      << dump(both.errors);
}

TEST(KueueV1beta2, FungibilityValuesByVersion) {
  const char* cq = R"(
kind: ClusterQueue
metadata: {name: a}
spec:
  namespaceSelector: {}
  flavorFungibility: {whenCanBorrow: Borrow, whenCanPreempt: Preempt}
)";
  auto v1 = load_one("apiVersion: kueue.x-k8s.io/v1beta1" + std::string(cq));
  ASSERT_TRUE(v1.ok()) << dump(v1.errors);  // the old names of MayStopSearch
  EXPECT_EQ(v1.config.cluster_queues[0].flavor_fungibility.when_can_preempt,
            FungibilityPolicy::kMayStopSearch);
  auto v2 = load_one("apiVersion: kueue.x-k8s.io/v1beta2" + std::string(cq));
  EXPECT_TRUE(any_contains(
      v2.errors, {"test.yaml:6: spec.flavorFungibility.whenCanBorrow: \"Borrow\" is v1beta1's",
                  "says MayStopSearch"}))
      << dump(v2.errors);
  EXPECT_TRUE(any_contains(v2.errors, {"whenCanPreempt: \"Preempt\" is v1beta1's"}))
      << dump(v2.errors);
  // A preference needs both knobs at TryNextFlavor (Kueue's validation rule).
  auto pref = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec:
  namespaceSelector: {}
  flavorFungibility: {whenCanBorrow: MayStopSearch, preference: BorrowingOverPreemption}
)"));
  EXPECT_TRUE(any_contains(pref.errors, {"spec.flavorFungibility.preference: only allowed when"}))
      << dump(pref.errors);
}

TEST(KueueV1beta2, FungibilityDefaultsInBothVersions) {
  // Kueue's defaults, the same in v1beta1 and v1beta2: whenCanBorrow MayStopSearch,
  // whenCanPreempt TryNextFlavor; a knob left out keeps its default; no warning.
  for (const char* api : {"kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"}) {
    auto none = load_one("apiVersion: " + std::string(api) + R"(
kind: ClusterQueue
metadata: {name: a}
spec: {namespaceSelector: {}}
)");
    ASSERT_TRUE(none.ok()) << api << dump(none.errors);
    const auto& d = none.config.cluster_queues[0].flavor_fungibility;
    EXPECT_EQ(d.when_can_borrow, FungibilityPolicy::kMayStopSearch) << api;
    EXPECT_EQ(d.when_can_preempt, FungibilityPolicy::kTryNextFlavor) << api;
    auto one = load_one("apiVersion: " + std::string(api) + R"(
kind: ClusterQueue
metadata: {name: a}
spec:
  namespaceSelector: {}
  flavorFungibility: {whenCanBorrow: TryNextFlavor}
)");
    ASSERT_TRUE(one.ok()) << api << dump(one.errors);
    const auto& f = one.config.cluster_queues[0].flavor_fungibility;
    EXPECT_EQ(f.when_can_borrow, FungibilityPolicy::kTryNextFlavor) << api;
    EXPECT_EQ(f.when_can_preempt, FungibilityPolicy::kTryNextFlavor) << api;
    EXPECT_FALSE(any_contains(one.config.warnings, {"flavorFungibility"}))
        << api << dump(one.config.warnings);
  }
}

TEST(KueueV1beta2, ConcurrentAdmissionPolicy) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec:
  namespaceSelector: {}
  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}
  concurrentAdmissionPolicy:
    migration:
      mode: TryPreferredFlavors
      constraints: {lastAcceptableFlavorName: on-demand}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  EXPECT_TRUE(
      any_contains(out.config.warnings,
                   {"spec.concurrentAdmissionPolicy: mode TryPreferredFlavors", "never migrates"}))
      << dump(out.config.warnings);
  EXPECT_TRUE(any_contains(out.config.warnings,
                           {"spec.admissionScope.admissionMode: ignored: sluice has no admission "
                            "fair sharing"}))
      << dump(out.config.warnings);
  auto bad = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec:
  namespaceSelector: {}
  concurrentAdmissionPolicy: {migration: {mode: Sometimes}}
)"));
  EXPECT_TRUE(any_contains(bad.errors, {"spec.concurrentAdmissionPolicy.migration.mode: "
                                        "\"Sometimes\" must be one of TryPreferredFlavors, "
                                        "RetainFirstAdmission"}))
      << dump(bad.errors);
}

TEST(KueueV1beta2, LocalQueueAndFlavorAdditions) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
spec: {resourceWeights: {cpu: 2}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec: {namespaceSelector: {}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q}
spec: {clusterQueue: a, wallTimePolicy: {wallTimeAllocatedHours: 10}}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  EXPECT_TRUE(any_contains(out.config.warnings, {"test.yaml:4: spec.resourceWeights: ignored"}))
      << dump(out.config.warnings);
  EXPECT_TRUE(any_contains(out.config.warnings, {"test.yaml:14: spec.wallTimePolicy: ignored"}))
      << dump(out.config.warnings);
  // wallTimePolicy is not a v1beta1 field.
  auto v1 = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q}
spec: {clusterQueue: a, wallTimePolicy: {wallTimeAllocatedHours: 10}}
)"));
  EXPECT_TRUE(any_contains(v1.errors, {"spec.wallTimePolicy: unknown field"})) << dump(v1.errors);
}

TEST(KueueV1beta2, KubernetesPriorityClassNamesAPodsPriority) {
  // What Kueue's Pod examples use: a Pod's priorityClassName names a Kubernetes PriorityClass.
  auto out = load_one(yaml(R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-prio}
value: 1000000
globalDefault: true
preemptionPolicy: PreemptLowerPriority
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 9}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q}
spec: {clusterQueue: a}
---
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  priorityClassName: high-prio
  containers: [{name: c, resources: {requests: {cpu: 1}}}]
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 1u);
  EXPECT_EQ(out.jobs[0].priority, 1000000);
  EXPECT_TRUE(any_contains(out.config.warnings, {"test.yaml:5: globalDefault: ignored"}))
      << dump(out.config.warnings);
}

}  // namespace
}  // namespace sluice
