// Every configuration kind: Kueue's (ResourceFlavor, ClusterQueue, LocalQueue,
// WorkloadPriorityClass, Cohort), the playbook Queue and sluice's SchedulerPolicy (sluice's
// Cluster: cluster_kind_test.cc).
#include <gtest/gtest.h>

#include "config_test_util.h"

namespace sluice {
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::has;
using testing_config::load_one;
using testing_config::yaml;

TEST(ConfigKinds, ResourceFlavorLabelsAndIgnoredKueueFields) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
spec:
  nodeLabels: {gpu: h100, zone: a}
  nodeTaints: [{key: gpu, value: "true", effect: NoSchedule}]
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  ASSERT_EQ(out.config.flavors.size(), 1u);
  const ResourceFlavor& f = out.config.flavors[0];
  EXPECT_EQ(f.name, "h100");
  EXPECT_FALSE(f.implied);
  EXPECT_EQ(f.node_labels, (Labels{{"gpu", "h100"}, {"zone", "a"}}));  // sorted by key
  // nodeTaints: read (pods must tolerate them to get the flavor).
  EXPECT_EQ(f.node_taints, (std::vector<Taint>{{"gpu", "true", "NoSchedule"}}));
  EXPECT_TRUE(out.config.warnings.empty()) << dump(out.config.warnings);
}

// Kueue's setup files carry AdmissionChecks (and their configs): the file still loads, each
// such document with a warning that it is ignored.
TEST(ConfigKinds, AnAdmissionCheckIsWarnedAboutNotAnError) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: AdmissionCheck
metadata: {name: prov}
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
  parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: cfg}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ProvisioningRequestConfig
metadata: {name: cfg}
spec: {provisioningClassName: check-capacity.autoscaling.x-k8s.io}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  EXPECT_EQ(out.config.flavors.size(), 1u);
  EXPECT_TRUE(any_contains(out.config.warnings, {"test.yaml:6", "AdmissionCheck", "ignored"}))
      << dump(out.config.warnings);
  EXPECT_TRUE(any_contains(out.config.warnings, {"ProvisioningRequestConfig", "ignored"}))
      << dump(out.config.warnings);
}

TEST(ConfigKinds, BadTaintsAndNodeConstraintsAreErrorsWithTheirLine) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
spec:
  nodeTaints: [{key: gpu, effect: Sometimes}]
)"));
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:5: spec.nodeTaints[0].effect", "NoSchedule"}))
      << dump(out.errors);
}

TEST(ConfigKinds, ClusterQueueEveryField) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: standard}
value: 500
description: normal work
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohort: research
  namespaceSelector:
    matchLabels: {team: a}
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 16, borrowingLimit: 8, lendingLimit: 4}
      - {name: cpu, nominalQuota: 256}
  - coveredResources: [nvidia.com/mig-1g.10gb]
    flavors:
    - name: h100-mig
      resources: [{name: nvidia.com/mig-1g.10gb, nominalQuota: 14}]
  preemption:
    withinClusterQueue: LowerOrNewerEqualPriority
    reclaimWithinCohort: Any
    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}
  fairSharing: {weight: "1.5"}
  sluice:
    preemptible: false
    interactive: false
    defaultWalltime: 2h
    minRuntime: 10m
    maxPending: 50
    defaultPriorityClass: standard
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Config& c = out.config;
  ASSERT_EQ(c.cluster_queues.size(), 1u);
  const ClusterQueue& q = c.cluster_queues[0];
  EXPECT_EQ(q.name, "team-a");
  ASSERT_TRUE(q.cohort);
  EXPECT_EQ(c.cohorts.at(static_cast<size_t>(*q.cohort)).name, "research");
  EXPECT_TRUE(c.cohorts[static_cast<size_t>(*q.cohort)].implied);  // named, never defined
  ASSERT_TRUE(q.namespace_selector);
  EXPECT_FALSE(q.namespace_selector->match_all);
  EXPECT_EQ(q.namespace_selector->match_labels, (Labels{{"team", "a"}}));
  EXPECT_EQ(q.strategy, QueueingStrategy::kStrictFIFO);
  ASSERT_EQ(q.resource_groups.size(), 2u);
  const ResourceGroup& g0 = q.resource_groups[0];
  EXPECT_EQ(g0.covered, (std::vector<ResourceId>{kGpu, kCpu}));
  ASSERT_EQ(g0.flavors.size(), 1u);
  EXPECT_EQ(c.flavors.at(static_cast<size_t>(g0.flavors[0].flavor)).name, "h100");
  const ResourceQuota* gpu = g0.flavors[0].find(kGpu);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->nominal, 16000);  // milli-GPU
  EXPECT_EQ(gpu->borrowing_limit, 8000);
  EXPECT_EQ(gpu->lending_limit, 4000);
  EXPECT_EQ(g0.flavors[0].find(kCpu)->nominal, 256000);     // milli-CPU
  EXPECT_FALSE(g0.flavors[0].find(kCpu)->borrowing_limit);  // unlimited
  // MIG resource interned; flavor "h100-mig" is not defined: implied, the queue inactive (as in
  // Kueue), with a warning that says so.
  auto mig = c.resources.find("nvidia.com/mig-1g.10gb");
  ASSERT_TRUE(mig);
  EXPECT_TRUE(c.resources.is_mig(*mig));
  EXPECT_EQ(q.resource_groups[1].flavors[0].find(*mig)->nominal, 14000);
  auto implied = c.find_flavor("h100-mig");
  ASSERT_TRUE(implied);
  EXPECT_TRUE(c.flavors[static_cast<size_t>(*implied)].implied);
  EXPECT_TRUE(any_contains(c.warnings, {"ResourceFlavor \"h100-mig\" is not defined: "
                                        "ClusterQueue \"team-a\" is inactive"}))
      << dump(c.warnings);
  EXPECT_EQ(q.inactive, "ResourceFlavor \"h100-mig\" is not defined");
  EXPECT_EQ(q.preemption.within_cluster_queue, WithinQueuePolicy::kLowerOrNewerEqualPriority);
  EXPECT_EQ(q.preemption.reclaim_within_cohort, ReclaimPolicy::kAny);
  EXPECT_EQ(q.preemption.borrow_within_cohort, BorrowWithinCohortPolicy::kLowerPriority);
  EXPECT_EQ(q.preemption.max_priority_threshold, 100);
  EXPECT_DOUBLE_EQ(q.fair_weight, 1.5);
  EXPECT_FALSE(q.preemptible);
  EXPECT_FALSE(q.interactive);
  EXPECT_EQ(q.default_walltime_ns, 2 * 3600 * kNsPerSec);
  EXPECT_EQ(q.min_runtime_ns, 600 * kNsPerSec);
  EXPECT_EQ(q.max_pending, 50);
  EXPECT_EQ(q.default_priority_class, "standard");
  EXPECT_EQ(c.find_priority_class("standard")->value, 500);
}

TEST(ConfigKinds, ClusterQueueDefaults) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const ClusterQueue& q = out.config.cluster_queues.at(0);
  EXPECT_FALSE(q.cohort);
  EXPECT_FALSE(q.namespace_selector);  // not set: Kueue matches none; sluice all (warned)
  EXPECT_TRUE(any_contains(out.config.warnings, {"test.yaml:5: spec.namespaceSelector: not set"}));
  EXPECT_EQ(q.strategy, QueueingStrategy::kBestEffortFIFO);
  EXPECT_EQ(q.preemption.within_cluster_queue, WithinQueuePolicy::kNever);
  EXPECT_DOUBLE_EQ(q.fair_weight, 1.0);
  EXPECT_TRUE(q.preemptible);
  EXPECT_EQ(q.default_walltime_ns, 3600 * kNsPerSec);
}

TEST(ConfigKinds, InteractiveQueueIsNotPreemptibleByDefault) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  namespaceSelector: {}
  sluice: {interactive: true}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  EXPECT_TRUE(out.config.cluster_queues[0].interactive);
  EXPECT_FALSE(out.config.cluster_queues[0].preemptible);
  EXPECT_TRUE(out.config.cluster_queues[0].namespace_selector->match_all);  // {}
}

TEST(ConfigKinds, LocalQueueAndPriorityClass) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec: {namespaceSelector: {}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: train, namespace: team-a}
spec: {clusterQueue: cq, sluice: {maxPending: 7}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: train}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: urgent}
value: 1000
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Config& c = out.config;
  ASSERT_EQ(c.local_queues.size(), 2u);
  EXPECT_EQ(c.local_queues[0].namespace_, "team-a");
  EXPECT_EQ(c.local_queues[0].max_pending, 7);
  EXPECT_EQ(c.local_queues[1].namespace_, "default");  // metadata.namespace defaults
  EXPECT_EQ(c.find_local_queue("team-a", "train"), 0);
  EXPECT_EQ(c.find_local_queue("default", "train"), 1);
  EXPECT_FALSE(c.find_local_queue("team-b", "train"));
  ASSERT_NE(c.find_priority_class("urgent"), nullptr);
  EXPECT_EQ(c.find_priority_class("urgent")->value, 1000);
}

TEST(ConfigKinds, NestedCohortsWithOwnQuota) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1alpha1
kind: Cohort
metadata: {name: research}
spec:
  parent: org
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8, lendingLimit: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1alpha1
kind: Cohort
metadata: {name: org}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: a}
spec: {cohort: research, namespaceSelector: {}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: b}
spec: {cohort: lab, namespaceSelector: {}}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Config& c = out.config;
  auto research = c.find_cohort("research"), org = c.find_cohort("org"), lab = c.find_cohort("lab");
  ASSERT_TRUE(research && org && lab);
  EXPECT_EQ(c.cohorts[static_cast<size_t>(*research)].parent, org);  // research -> org
  EXPECT_FALSE(c.cohorts[static_cast<size_t>(*org)].parent);
  EXPECT_FALSE(c.cohorts[static_cast<size_t>(*research)].implied);
  EXPECT_TRUE(c.cohorts[static_cast<size_t>(*lab)].implied);  // only named by ClusterQueue b
  const auto& groups = c.cohorts[static_cast<size_t>(*research)].resource_groups;
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].flavors[0].find(kGpu)->nominal, 8000);
  EXPECT_EQ(c.warnings.size(), 0u) << dump(c.warnings);
}

TEST(ConfigKinds, ImpliedParentCohort) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: child}
spec: {parent: parent}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  auto parent = out.config.find_cohort("parent");
  ASSERT_TRUE(parent);
  EXPECT_TRUE(out.config.cohorts[static_cast<size_t>(*parent)].implied);
}

TEST(ConfigKinds, SchedulerPolicyEveryField) {
  auto out = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: p}
spec:
  scoring: spread
  ordering:
    weights: {priority: 2, age: 0.25, drf: 1, debt: 0}
    agingHorizon: 30m
  fairness: {debtHalfLife: 6h}
  interactive: {timeout: 0}
  maxPendingTotal: 1000
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const SchedulerPolicy& p = out.config.policy;
  EXPECT_EQ(p.gpu_scoring, ScoringPolicy::kSpread);
  EXPECT_DOUBLE_EQ(p.weights.priority, 2);
  EXPECT_DOUBLE_EQ(p.weights.age, 0.25);
  EXPECT_DOUBLE_EQ(p.weights.drf, 1);
  EXPECT_DOUBLE_EQ(p.weights.debt, 0);
  EXPECT_EQ(p.aging_horizon_ns, 1800 * kNsPerSec);
  EXPECT_EQ(p.debt_half_life_ns, 6 * 3600 * kNsPerSec);
  EXPECT_EQ(p.interactive_timeout_ns, 0);  // 0 allowed: fail at once
  EXPECT_EQ(p.max_pending_total, 1000);
}

TEST(ConfigKinds, SchedulerPolicyDefaultsAndOnlyOne) {
  auto defaults = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: p}
)"));
  ASSERT_TRUE(defaults.ok()) << dump(defaults.errors);
  EXPECT_EQ(defaults.config.policy.gpu_scoring, ScoringPolicy::kFgdMix);
  EXPECT_EQ(defaults.config.policy.interactive_timeout_ns, 30 * kNsPerSec);
  auto two = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: p}
---
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: q}
spec: {scoring: fgd}
)"));
  EXPECT_TRUE(has(two.errors,
                  "test.yaml:5: kind: a second SchedulerPolicy (the first is at "
                  "test.yaml:1); at most one is allowed"))
      << dump(two.errors);
}

TEST(ConfigKinds, SchedulerPolicyRejectsUnknownFields) {
  auto out = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: SchedulerPolicy
metadata: {name: p}
spec:
  scoring: tetris
  fallback: {after: 10m}
)"));
  EXPECT_TRUE(has(out.errors,
                  "test.yaml:5: spec.scoring: \"tetris\" must be one of binpack, spread, bestfit, "
                  "fgd, fgdpack, fgdmix"))
      << dump(out.errors);
  EXPECT_TRUE(has(
      out.errors,
      "test.yaml:6: spec.fallback: unknown field (known: scoring, ordering, fairness, fairSharing, "
      "interactive, maxPendingTotal, preemption, backfill, backfillDepth, alignEnds, "
      "alignEndsAfter, alignEndsYieldToSmall, withoutVictims, flavorSnapshot)"))
      << dump(out.errors);
}

TEST(ConfigKinds, SchedulerPolicyBackfillDepth) {
  auto doc = [](const std::string& depth) {
    return "apiVersion: sluice.dev/v1alpha1\nkind: SchedulerPolicy\nmetadata: {name: p}\n"
           "spec: {backfillDepth: " +
           depth + "}\n";
  };
  auto four = load_one(doc("4"));
  ASSERT_TRUE(four.ok()) << dump(four.errors);
  EXPECT_EQ(four.config.policy.backfill_depth, 4);
  EXPECT_EQ(load_one(doc("1")).config.policy.backfill_depth, 1);
  for (const char* bad : {"0", "65", "two"}) {
    auto out = load_one(doc(bad));
    EXPECT_FALSE(out.ok()) << bad;
    EXPECT_TRUE(any_contains(out.errors, {"test.yaml:4: spec.backfillDepth", bad}))
        << dump(out.errors);
  }
}

TEST(ConfigKinds, SchedulerPolicyAlignEnds) {
  auto doc = [](const std::string& v) {
    return "apiVersion: sluice.dev/v1alpha1\nkind: SchedulerPolicy\nmetadata: {name: p}\n"
           "spec: {alignEnds: " +
           v + "}\n";
  };
  EXPECT_FALSE(load_one("apiVersion: sluice.dev/v1alpha1\nkind: SchedulerPolicy\n"
                        "metadata: {name: p}\nspec: {}\n")
                   .config.policy.align_ends);
  auto on = load_one(doc("true"));
  ASSERT_TRUE(on.ok()) << dump(on.errors);
  EXPECT_TRUE(on.config.policy.align_ends);
  EXPECT_FALSE(on.config.policy.align_ends_bins);
  // bins: runtime bins before the scoring (the node ends are tracked as with true).
  auto bins = load_one(doc("bins"));
  ASSERT_TRUE(bins.ok()) << dump(bins.errors);
  EXPECT_TRUE(bins.config.policy.align_ends);
  EXPECT_TRUE(bins.config.policy.align_ends_bins);
  EXPECT_FALSE(load_one(doc("false")).config.policy.align_ends_bins);
  for (const char* bad_value : {"sometimes", "Bins", "1"}) {
    auto bad = load_one(doc(bad_value));
    EXPECT_FALSE(bad.ok());
    EXPECT_TRUE(any_contains(
        bad.errors, {"test.yaml:4: spec.alignEnds", bad_value, "must be true, false or bins"}))
        << dump(bad.errors);
  }
  auto map = load_one(doc("{mode: bins}"));
  EXPECT_FALSE(map.ok());
  EXPECT_TRUE(
      any_contains(map.errors, {"test.yaml:4: spec.alignEnds", "must be true, false or bins"}))
      << dump(map.errors);
}

TEST(ConfigKinds, SchedulerPolicyAlignEndsAfter) {
  auto doc = [](const std::string& spec) {
    return "apiVersion: sluice.dev/v1alpha1\nkind: SchedulerPolicy\nmetadata: {name: p}\n"
           "spec: {" +
           spec + "}\n";
  };
  EXPECT_EQ(load_one(doc("alignEnds: true")).config.policy.align_ends_after_ns, 0);
  auto two = load_one(doc("alignEnds: true, alignEndsAfter: 2m"));
  ASSERT_TRUE(two.ok()) << dump(two.errors);
  EXPECT_EQ(two.config.policy.align_ends_after_ns, 120 * kNsPerSec);
  EXPECT_TRUE(two.config.warnings.empty()) << dump(two.config.warnings);
  // Without alignEnds it does nothing: accepted, with a warning that says so.
  auto alone = load_one(doc("alignEndsAfter: 2m"));
  ASSERT_TRUE(alone.ok()) << dump(alone.errors);
  EXPECT_TRUE(
      any_contains(alone.config.warnings, {"spec.alignEndsAfter", "without spec.alignEnds"}))
      << dump(alone.config.warnings);
  for (const char* bad : {"-1m", "soon", "100000d"}) {
    auto out = load_one(doc(std::string("alignEnds: true, alignEndsAfter: ") + bad));
    EXPECT_FALSE(out.ok()) << bad;
    EXPECT_TRUE(any_contains(out.errors, {"test.yaml:4: spec.alignEndsAfter", bad}))
        << dump(out.errors);
  }
}

TEST(ConfigPlaybook, QueueMapsToClusterQueueAndLocalQueue) {
  auto out = load_one(yaml(R"(
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: Queue
metadata: {name: training}
spec: {priorityClassName: high, weight: 10, preemptionPolicy: PreemptLowerPriority, resourceQuota: {gpu: 64, cpu: 512}}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Config& c = out.config;
  ASSERT_EQ(c.cluster_queues.size(), 1u);
  const ClusterQueue& q = c.cluster_queues[0];
  EXPECT_EQ(q.name, "training");
  EXPECT_DOUBLE_EQ(q.fair_weight, 10);
  EXPECT_EQ(q.preemption.within_cluster_queue, WithinQueuePolicy::kLowerPriority);
  EXPECT_EQ(q.default_priority_class, "high");
  EXPECT_EQ(c.find_priority_class("high")->value, 1000);  // built-in, warned
  EXPECT_TRUE(any_contains(c.warnings, {"WorkloadPriorityClass \"high\" is not defined; using the "
                                        "built-in value 1000"}));
  ASSERT_TRUE(q.namespace_selector && q.namespace_selector->match_all);
  ASSERT_EQ(q.resource_groups.size(), 1u);
  const ResourceGroup& g = q.resource_groups[0];
  EXPECT_EQ(g.covered, (std::vector<ResourceId>{kGpu, kCpu, kMemory}));
  EXPECT_EQ(c.flavors.at(static_cast<size_t>(g.flavors.at(0).flavor)).name, "default");
  EXPECT_TRUE(c.flavors[0].implied);
  EXPECT_EQ(g.flavors[0].find(kGpu)->nominal, 64000);
  EXPECT_EQ(g.flavors[0].find(kCpu)->nominal, 512000);
  EXPECT_EQ(g.flavors[0].find(kMemory), nullptr);  // not listed: unlimited
  // A LocalQueue of the same name that serves every namespace.
  ASSERT_EQ(c.local_queues.size(), 1u);
  EXPECT_EQ(c.local_queues[0].namespace_, "*");
  EXPECT_EQ(c.find_local_queue("anything", "training"), 0);
}

TEST(ConfigPlaybook, PreemptionPolicyNever) {
  auto out = load_one(yaml(R"(
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: Queue
metadata: {name: q}
spec: {preemptionPolicy: Never}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  EXPECT_EQ(out.config.cluster_queues[0].preemption.within_cluster_queue,
            WithinQueuePolicy::kNever);
  EXPECT_TRUE(out.config.cluster_queues[0].default_priority_class.empty());
}

TEST(ConfigPlaybook, CoveredButUnlistedResourceIsUnlimited) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu", "cpu", "memory"]
    flavors:
    - name: spot
      resources: [{name: nvidia.com/gpu, nominalQuota: 32}]
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const FlavorQuotas& fq = out.config.cluster_queues[0].resource_groups[0].flavors[0];
  EXPECT_NE(fq.find(kGpu), nullptr);
  EXPECT_EQ(fq.find(kCpu), nullptr);  // covered, no quota: not quota-managed
  EXPECT_TRUE(has(out.config.warnings,
                  "test.yaml:9: spec.resourceGroups[0].flavors[0]: flavor \"spot\" sets no quota "
                  "for cpu, memory (covered by the group); treated as unlimited (not "
                  "quota-managed)"))
      << dump(out.config.warnings);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

using testing_config::dump;
using testing_config::load_one;
using testing_config::yaml;

TEST(ConfigKinds, ExactLocalQueueWinsOverEveryNamespaceQueue) {
  auto out = load_one(yaml(R"(
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: Queue
metadata: {name: train}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team}
spec: {namespaceSelector: {}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: train, namespace: team-a}
spec: {clusterQueue: team}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Config& c = out.config;
  auto a = c.find_local_queue("team-a", "train");
  auto b = c.find_local_queue("team-b", "train");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(c.local_queues[static_cast<size_t>(*a)].namespace_, "team-a");
  EXPECT_EQ(c.local_queues[static_cast<size_t>(*b)].namespace_, "*");
}

// sluice sees a namespace's labels as {kubernetes.io/metadata.name: <name>}: a LocalQueue its
// ClusterQueue's selector leaves out, or a selector on any other label, is warned about.
TEST(ConfigKinds, NamespaceSelectorThatCannotSelectIsWarned) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: nlp}
spec: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: nlp}}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: labelled}
spec: {namespaceSelector: {matchLabels: {team: a}}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: train, namespace: nlp}
spec: {clusterQueue: nlp}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: train, namespace: vision}
spec: {clusterQueue: nlp}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: train, namespace: '*'}
spec: {clusterQueue: nlp}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const auto& w = out.config.warnings;
  EXPECT_TRUE(any_contains(w, {"LocalQueue \"vision/train\": the namespaceSelector of ClusterQueue "
                               "\"nlp\" does not select namespace \"vision\""}))
      << dump(w);
  EXPECT_FALSE(any_contains(w, {"LocalQueue \"nlp/train\""})) << dump(w);
  EXPECT_FALSE(any_contains(w, {"LocalQueue \"*/train\""})) << dump(w);  // checked per job
  EXPECT_TRUE(any_contains(w, {"label team selects no namespace"})) << dump(w);
}

TEST(ConfigKinds, SummaryNamesQueuesQuotasAndNodes) {
  auto out = load_one(yaml(R"(
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: Queue
metadata: {name: training}
spec: {resourceQuota: {gpu: 64}}
---
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  nodes: [{name: n, cpu: 8, memory: 64Gi, gpus: {count: 4, model: H100}}]
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const std::string s = summarize(out.config);
  for (const char* part :
       {"cluster \"lab\": 1 nodes (1 ready), 4 GPUs (H100 x4)", "training, weight 1",
        "default: nvidia.com/gpu 64; cpu unlimited; memory unlimited;",
        "(every namespace)/training -> training", "policy: scoring fgdmix"})
    EXPECT_NE(s.find(part), std::string::npos) << part << "\n" << s;
}

}  // namespace
}  // namespace sluice
