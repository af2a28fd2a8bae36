#include "core/model/node_affinity.h"

#include <gtest/gtest.h>

#include <memory>

#include "../../config/config_test_util.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace {

using testing_config::dump;
using testing_config::load_one;
using testing_config::yaml;

TEST(NodeAffinity, SelectorTermsAndOperators) {
  const Labels node{{"gpu", "h100"}, {"rack", "7"}, {"zone", "a"}};
  NodeAffinity a;
  a.selector = {{"zone", "a"}};
  EXPECT_TRUE(node_matches(a, node));
  a.selector = {{"zone", "b"}};
  EXPECT_FALSE(node_matches(a, node));
  a.selector.clear();
  // Terms are ORed; requirements within a term ANDed.
  a.terms = {{{"gpu", NodeOp::kIn, {"a100"}}},
             {{"rack", NodeOp::kGt, {"5"}}, {"spot", NodeOp::kDoesNotExist, {}}}};
  EXPECT_TRUE(node_matches(a, node));
  a.terms = {{{"gpu", NodeOp::kNotIn, {"h100"}}}, {{"rack", NodeOp::kLt, {"5"}}}};
  EXPECT_FALSE(node_matches(a, node));
  // Kueue's flavor check counts only the keys the flavors use: a term on other keys is dropped.
  const std::set<std::string> keys{"zone"};
  a.terms = {{{"gpu", NodeOp::kIn, {"a100"}}}};
  EXPECT_FALSE(node_matches(a, node));
  EXPECT_TRUE(node_matches(a, node, &keys));
}

TEST(NodeAffinity, Tolerations) {
  const std::vector<Taint> taints{{"spot", "true", "NoSchedule"}, {"soft", "", "PreferNoSchedule"}};
  EXPECT_NE(untolerated_taint(taints, {}), nullptr);
  EXPECT_EQ(untolerated_taint(taints, {{"spot", false, "true", "NoSchedule"}}), nullptr);
  EXPECT_EQ(untolerated_taint(taints, {{"spot", true, "", ""}}), nullptr);
  EXPECT_NE(untolerated_taint(taints, {{"spot", false, "false", ""}}), nullptr);
  EXPECT_EQ(untolerated_taint(taints, {{"", true, "", ""}}), nullptr);  // tolerates everything
}

// End to end through the loader and one cycle: a pod's nodeSelector on a label no flavor has
// still decides its node (as kube-scheduler would), and a tainted flavor is skipped by pods
// that do not tolerate it.
TEST(NodeAffinity, SelectorPicksNodesAndTaintsSkipFlavors) {
  auto out = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  nodes:
  - {name: plain, cpu: 8, memory: 64Gi, gpus: {count: 4, model: H100}, labels: {pool: on-demand}}
  - {name: ssd, cpu: 8, memory: 64Gi, gpus: {count: 4, model: H100}, labels: {pool: on-demand, disk: ssd}}
  - {name: spot, cpu: 8, memory: 64Gi, gpus: {count: 4, model: H100}, labels: {pool: spot}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: spot}
spec:
  nodeLabels: {pool: spot}
  nodeTaints: [{key: spot, value: "true", effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: on-demand}
spec: {nodeLabels: {pool: on-demand}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: spot
      resources: [{name: nvidia.com/gpu, nominalQuota: 4}]
    - name: on-demand
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: cq}
---
apiVersion: batch/v1
kind: Job
metadata: {name: needs-ssd, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  template:
    spec:
      nodeSelector: {disk: ssd}
      containers: [{name: main, resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: tolerates-spot, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  template:
    spec:
      tolerations: [{key: spot, operator: Exists}]
      containers: [{name: main, resources: {limits: {nvidia.com/gpu: 1}}}]
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 2u);
  ASSERT_TRUE(out.jobs[0].pod_sets[0].node);
  Scheduler s(std::make_shared<const Config>(out.config));
  for (auto job : out.jobs) {
    job.submit_ns = 1;
    ASSERT_EQ(s.submit(job).status, SubmitStatus::kAccepted);
  }
  const CycleResult r = s.run_cycle(2);
  ASSERT_EQ(r.admitted.size(), 2u);
  const auto& cluster = out.config.cluster;
  for (const auto& a : r.admitted) {
    const std::string node = cluster.nodes[static_cast<size_t>(a.placement.pods[0].node)].name;
    const std::string flavor = out.config.flavors[static_cast<size_t>(a.flavors[0])].name;
    if (a.job == out.jobs[0].id) {  // skips the tainted spot flavor; only the ssd node
      EXPECT_EQ(flavor, "on-demand");
      EXPECT_EQ(node, "ssd");
    } else {  // tolerates the taint: the first flavor
      EXPECT_EQ(flavor, "spot");
      EXPECT_EQ(node, "spot");
    }
  }
}

}  // namespace
}  // namespace sluice
