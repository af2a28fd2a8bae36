// Loader: the Budget kind, spec.sluice.fallback / overBudget of a ClusterQueue, and a job's
// spec.fallback.
#include <gtest/gtest.h>

#include "config_test_util.h"

namespace sluice {
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::load_one;
using testing_config::yaml;

const char* kQueues = R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: train}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu, memory]
    flavors:
    - {name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}
    - {name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}
  sluice:
    fallback: {after: 10m, preferredFlavors: 1}
    overBudget: Reject
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: train, namespace: nlp}
spec: {clusterQueue: train}
)";

TEST(ConfigBudget, EveryField) {
  auto out = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: nlp-monthly}
spec:
  namespace: nlp
  gpuHours: 1000.5
  period: 720h
  anchor: 86400
  weights: {H100: 2.0, A100: "1"}
  defaultWeight: 500m
---
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: vision}
spec: {gpuHours: 10}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  ASSERT_EQ(out.config.budgets.size(), 2u);
  const Budget& b = out.config.budgets[0];
  EXPECT_EQ(b.namespace_, "nlp");
  EXPECT_EQ(b.gpu_hours_milli, 1'000'500);
  EXPECT_EQ(b.period_ns, 720 * 3600 * kNsPerSec);
  EXPECT_EQ(b.anchor_ns, 86400 * kNsPerSec);
  EXPECT_EQ(b.weight_milli("H100"), 2000);
  EXPECT_EQ(b.weight_milli("A100"), 1000);
  EXPECT_EQ(b.weight_milli("T4"), 500);
  // Defaults: the namespace is the name, 30-day periods from 0, weight 1.
  const Budget& v = out.config.budgets[1];
  EXPECT_EQ(v.namespace_, "vision");
  EXPECT_EQ(v.period_ns, 30 * 24 * 3600 * kNsPerSec);
  EXPECT_EQ(v.weight_milli("H100"), 1000);
  EXPECT_EQ(out.config.find_budget("nlp"), &out.config.budgets[0]);
}

TEST(ConfigBudget, Errors) {
  auto out = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: a}
spec: {namespace: nlp, gpuHours: 10, period: 0s}
---
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: b}
spec: {namespace: nlp, gpuHours: 10, colour: red}
---
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: c}
spec: {namespace: x}
---
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: d}
spec: {namespace: nlp, gpuHours: 1}
---
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: e}
spec: {namespace: nlp, gpuHours: 1}
)"));
  EXPECT_FALSE(out.ok());
  EXPECT_TRUE(any_contains(out.errors, {"spec.period", "must be positive"})) << dump(out.errors);
  EXPECT_TRUE(any_contains(out.errors, {"colour"})) << dump(out.errors);
  EXPECT_TRUE(any_contains(out.errors, {"spec.gpuHours", "required"})) << dump(out.errors);
  EXPECT_TRUE(any_contains(out.errors, {"a second Budget for namespace \"nlp\""}))
      << dump(out.errors);
}

// An anchor is a time on the scheduler's clock (Unix seconds for the daemon), not a duration:
// it may lie decades after 1970, up to 2200; a period is a duration, at most 10 years.
TEST(ConfigBudget, AnchorIsATimePointPeriodADuration) {
  auto ok = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: a}
spec: {namespace: nlp, gpuHours: 10, period: 3660d, anchor: 1764547200}
)"));
  ASSERT_TRUE(ok.ok()) << dump(ok.errors);
  EXPECT_EQ(ok.config.budgets.at(0).anchor_ns, 1764547200 * kNsPerSec);
  auto out = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: a}
spec: {namespace: nlp, gpuHours: 10, period: 3661d}
---
apiVersion: sluice.dev/v1alpha1
kind: Budget
metadata: {name: b}
spec: {namespace: vision, gpuHours: 10, anchor: 7258118401}
)"));
  EXPECT_TRUE(any_contains(out.errors, {"spec.period", "\"3661d\" is more than 10 years"}))
      << dump(out.errors);
  EXPECT_TRUE(any_contains(out.errors, {"spec.anchor", "\"7258118401\" is after 2200-01-01"}))
      << dump(out.errors);
}

TEST(ConfigFallback, QueueAndJobFields) {
  auto out = load_one(yaml((std::string(kQueues) + R"(---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: wide, namespace: nlp}
spec:
  queue: train
  gpus: 8
  cpu: 32
  fallback:
    after: 5m
    shapes: [{pods: 2, gpus: 4}, {pods: 4, gpus: 2, cpu: 4, memory: 16Gi}]
)")
                               .c_str()));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const ClusterQueue& cq = out.config.cluster_queues[0];
  EXPECT_EQ(cq.fallback.after_ns, 600 * kNsPerSec);
  EXPECT_EQ(cq.fallback.preferred, 1);
  EXPECT_EQ(cq.over_budget, OverBudgetPolicy::kReject);
  ASSERT_EQ(out.jobs.size(), 1u);
  const Job& j = out.jobs[0];
  EXPECT_EQ(j.fallback.after_ns, 300 * kNsPerSec);
  ASSERT_EQ(j.fallback.shapes.size(), 2u);
  EXPECT_EQ(j.fallback.shapes[0], (FallbackShape{2, 4, -1, -1}));
  EXPECT_EQ(j.fallback.shapes[1], (FallbackShape{4, 2, 4000, 16 * 1024}));
  // A reshaped job: CPU follows GPUs per pod unless given.
  const Job r = reshaped(j, j.fallback.shapes[0]);
  EXPECT_EQ(r.pod_sets[0].count, 2);
  EXPECT_EQ(r.pod_sets[0].gpus, 4);
  EXPECT_EQ(r.pod_sets[0].requests[kGpu], 4000);
  EXPECT_EQ(r.pod_sets[0].requests[kCpu], 16'000);  // 32 CPUs x 4/8
  EXPECT_EQ(r.total_requests()[kGpu], 8000);
}

TEST(ConfigFallback, ShapesNeedOnePodSetOfWholeGpus) {
  auto out = load_one(yaml((std::string(kQueues) + R"(---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: two-sets, namespace: nlp}
spec:
  queue: train
  podSets:
  - {name: a, count: 1, resources: {nvidia.com/gpu: 1}}
  - {name: b, count: 1, resources: {nvidia.com/gpu: 1}}
  fallback: {shapes: [{gpus: 1}]}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: bad}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
  sluice: {fallback: {preferredFlavors: 0}, overBudget: Maybe}
)")
                               .c_str()));
  EXPECT_FALSE(out.ok());
  EXPECT_TRUE(any_contains(out.errors, {"fallback shapes need a job of one pod set"}))
      << dump(out.errors);
  EXPECT_TRUE(any_contains(out.errors, {"spec.sluice.fallback.after", "required"}))
      << dump(out.errors);
  EXPECT_TRUE(any_contains(out.errors, {"overBudget", "BestEffort, Reject"})) << dump(out.errors);
}

}  // namespace
}  // namespace sluice
