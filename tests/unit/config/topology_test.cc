// Kueue's Topology kind, a flavor's topologyName, and the pod-set topology annotations of batch
// Jobs and Pods, mapped onto the Cluster's levels.
#include <gtest/gtest.h>

#include "config_test_util.h"

namespace sluice {
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::load_one;
using testing_config::yaml;

// A Topology (block, rack, hostname), a TAS flavor and its queue, and a Cluster whose nodes
// carry the labels but declare no levels: the levels come from the Topology. Rack r1 exists
// in both blocks (a different rack each time, as in Kueue).
const char* kSetup = R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: default}
spec:
  levels:
  - nodeLabel: cloud.provider.com/topology-block
  - nodeLabel: cloud.provider.com/topology-rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: tas-flavor}
spec:
  nodeLabels: {pool: tas}
  topologyName: default
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: tas-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: tas-flavor
      resources:
      - {name: cpu, nominalQuota: 1000}
      - {name: memory, nominalQuota: 4Ti}
      - {name: nvidia.com/gpu, nominalQuota: 64}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: tas-q}
spec: {clusterQueue: tas-cq}
---
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  nodes:
  - {name: n0, cpu: 64, memory: 512Gi, gpus: {count: 8, model: H100},
     labels: {pool: tas, cloud.provider.com/topology-block: b1, cloud.provider.com/topology-rack: r1}}
  - {name: n1, cpu: 64, memory: 512Gi, gpus: {count: 8, model: H100},
     labels: {pool: tas, cloud.provider.com/topology-block: b1, cloud.provider.com/topology-rack: r2}}
  - {name: n2, cpu: 64, memory: 512Gi, gpus: {count: 8, model: H100},
     labels: {pool: tas, cloud.provider.com/topology-block: b2, cloud.provider.com/topology-rack: r1}}
  - {name: n3, cpu: 64, memory: 512Gi, gpus: {count: 8, model: H100}, labels: {pool: tas}}
)";

std::string job(const std::string& annotations, int parallelism = 4) {
  return R"(
---
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  labels: {kueue.x-k8s.io/queue-name: tas-q}
spec:
  parallelism: )" +
         std::to_string(parallelism) + R"(
  template:
    metadata:
      annotations:
)" + annotations +
         R"(
    spec:
      containers:
      - name: c
        resources: {requests: {cpu: "1", nvidia.com/gpu: 1}}
)";
}

TEST(KueueTopology, LevelsFromNodeLabels) {
  auto out = load_one(yaml(kSetup));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Config& c = out.config;
  EXPECT_EQ(c.cluster.levels, (std::vector<std::string>{"cloud.provider.com/topology-block",
                                                        "cloud.provider.com/topology-rack"}));
  // Domains by path: b1/r1 and b2/r1 are different racks, named by their path.
  EXPECT_EQ(c.cluster.domain_names[0], (std::vector<std::string>{"b1", "b2"}));
  EXPECT_EQ(c.cluster.domain_names[1], (std::vector<std::string>{"b1/r1", "r2", "b2/r1"}));
  EXPECT_EQ(c.cluster.nodes[0].domains, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(c.cluster.nodes[2].domains, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(c.cluster.nodes[3].domains, (std::vector<int32_t>{-1, -1}));  // no labels: no domain
  EXPECT_TRUE(
      any_contains(c.warnings, {"1 of 4 nodes carry no label cloud.provider.com/topology-"}))
      << dump(c.warnings);
  ASSERT_EQ(c.topologies.size(), 1u);
  EXPECT_EQ(c.topologies[0].levels, (std::vector<int32_t>{0, 1, 2}));  // hostname: the node
  EXPECT_EQ(c.flavors[0].topology, std::optional<int32_t>(0));
}

TEST(KueueTopology, LabelsNamingClusterLevels) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {name: t}
spec:
  levels: [{nodeLabel: rack}, {nodeLabel: kubernetes.io/hostname}]
---
apiVersion: kueue.x-k8s.io/v1alpha1
kind: Topology
metadata: {name: bad}
spec:
  levels: [{nodeLabel: zone}]
---
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  topology: {levels: [block, rack]}
  nodes:
  - {name: n0, cpu: 64, memory: 512Gi, topology: {block: b1, rack: r1}}
)"));
  EXPECT_FALSE(out.ok());
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:11: spec.levels[0].nodeLabel: node label "
                                        "\"zone\" is not a level of the Cluster (block, rack, "
                                        "kubernetes.io/hostname)"}))
      << dump(out.errors);
  ASSERT_EQ(out.config.topologies.size(), 1u);  // t maps: rack is level 1, hostname the node
  EXPECT_EQ(out.config.topologies[0].levels, (std::vector<int32_t>{1, 2}));
}

TEST(KueueTopology, TopologyAndFlavorErrors) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: t}
spec:
  levels: [{nodeLabel: kubernetes.io/hostname}, {nodeLabel: rack}, {nodeLabel: rack}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: f}
spec: {topologyName: missing}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: g}
spec: {topologyName: t}
)"));
  EXPECT_FALSE(out.ok());
  EXPECT_TRUE(any_contains(out.errors, {"spec.levels[0].nodeLabel: kubernetes.io/hostname can "
                                        "only be the last (lowest) level"}))
      << dump(out.errors);
  EXPECT_TRUE(any_contains(out.errors, {"spec.levels[2].nodeLabel: \"rack\" is listed twice"}))
      << dump(out.errors);
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:10: spec.topologyName: Topology \"missing\" "
                                        "not found (defined: t)"}))
      << dump(out.errors);
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:15: spec.topologyName: a flavor with a "
                                        "topologyName needs at least one nodeLabel"}))
      << dump(out.errors);
}

TEST(KueueTopology, JobAnnotations) {
  auto required = load_one(yaml(kSetup) + job("        kueue.x-k8s.io/podset-required-topology: "
                                              "cloud.provider.com/topology-rack"));
  ASSERT_TRUE(required.ok()) << dump(required.errors);
  ASSERT_EQ(required.jobs.size(), 1u);
  EXPECT_EQ(required.jobs[0].topology, (TopologyRequest{1, true, {}}));
  // The annotation was read: the template's metadata is not listed as ignored.
  EXPECT_FALSE(any_contains(required.notes, {"spec.template.metadata"})) << dump(required.notes);

  auto preferred = load_one(yaml(kSetup) + job("        kueue.x-k8s.io/podset-preferred-topology: "
                                               "kubernetes.io/hostname"));
  ASSERT_TRUE(preferred.ok()) << dump(preferred.errors);
  EXPECT_EQ(preferred.jobs[0].topology, (TopologyRequest{2, false, {}}));

  auto unconstrained = load_one(
      yaml(kSetup) + job("        kueue.x-k8s.io/podset-unconstrained-topology: \"true\""));
  ASSERT_TRUE(unconstrained.ok()) << dump(unconstrained.errors);
  EXPECT_EQ(unconstrained.jobs[0].topology, TopologyRequest{});

  auto sliced =
      load_one(yaml(kSetup) + job("        kueue.x-k8s.io/podset-required-topology: "
                                  "cloud.provider.com/topology-block\n"
                                  "        kueue.x-k8s.io/podset-slice-required-topology: "
                                  "cloud.provider.com/topology-rack\n"
                                  "        kueue.x-k8s.io/podset-slice-size: \"2\""));
  ASSERT_TRUE(sliced.ok()) << dump(sliced.errors);
  EXPECT_EQ(sliced.jobs[0].topology, (TopologyRequest{0, true, {TopologySlice{1, 2}}}));

  auto layers = load_one(
      yaml(kSetup) +
      job("        kueue.x-k8s.io/podset-slice-required-topology-constraints: |\n"
          "          [{\"topology\": \"cloud.provider.com/topology-block\", \"size\": 8},\n"
          "           {\"topology\": \"kubernetes.io/hostname\", \"size\": 4}]",
          16));
  ASSERT_TRUE(layers.ok()) << dump(layers.errors);
  EXPECT_EQ(layers.jobs[0].topology,
            (TopologyRequest{-1, false, {TopologySlice{0, 8}, TopologySlice{2, 4}}}));
}

TEST(KueueTopology, AnnotationErrors) {
  auto check = [](const std::string& annotations, std::initializer_list<std::string> want) {
    auto out = load_one(yaml(kSetup) + job(annotations));
    EXPECT_FALSE(out.ok()) << annotations;
    EXPECT_TRUE(any_contains(out.errors, want)) << annotations << dump(out.errors);
  };
  check(
      "        kueue.x-k8s.io/podset-required-topology: cloud.provider.com/topology-rack\n"
      "        kueue.x-k8s.io/podset-preferred-topology: cloud.provider.com/topology-rack",
      {"spec.template.metadata.annotations: set at most one of"});
  check("        kueue.x-k8s.io/podset-required-topology: zone",
        {"annotations.kueue.x-k8s.io/podset-required-topology: unknown topology level \"zone\""});
  check("        kueue.x-k8s.io/podset-unconstrained-topology: \"yes\"",
        {"\"yes\" must be \"true\" or \"false\""});
  check("        kueue.x-k8s.io/podset-slice-required-topology: cloud.provider.com/topology-rack",
        {"podset-slice-required-topology: needs kueue.x-k8s.io/podset-slice-size"});
  check(
      "        kueue.x-k8s.io/podset-slice-required-topology: cloud.provider.com/topology-rack\n"
      "        kueue.x-k8s.io/podset-slice-size: \"3\"",
      {"podset-slice-size: 3 must divide the pod set's 4 pods"});
  check(
      "        kueue.x-k8s.io/podset-required-topology: cloud.provider.com/topology-rack\n"
      "        kueue.x-k8s.io/podset-slice-required-topology: cloud.provider.com/topology-block\n"
      "        kueue.x-k8s.io/podset-slice-size: \"2\"",
      {"slice level cloud.provider.com/topology-block is above the pod set's level "
       "cloud.provider.com/topology-rack"});
  check("        kueue.x-k8s.io/podset-slice-required-topology-constraints: '[{\"topology\": 1'",
        {"podset-slice-required-topology-constraints: malformed JSON"});
  check(
      "        kueue.x-k8s.io/podset-slice-required-topology-constraints: "
      "'[{\"topology\": \"kubernetes.io/hostname\", \"size\": 2}, "
      "{\"topology\": \"cloud.provider.com/topology-rack\", \"size\": 1}]'",
      {"layers go from the coarsest level to the finest"});
}

TEST(KueueTopology, QueueWithoutTasFlavorIsWarned) {
  // The annotation names a level, but the queue's only flavor has no topologyName: Kueue would
  // not admit the pod set; sluice says so and places it on the Cluster's levels.
  std::string setup = yaml(kSetup);
  setup.replace(setup.find("  topologyName: default\n"), 23, "");
  auto out = load_one(setup + job("        kueue.x-k8s.io/podset-required-topology: "
                                  "cloud.provider.com/topology-rack"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  EXPECT_EQ(out.jobs[0].topology.level, 1);
  EXPECT_TRUE(
      any_contains(out.notes, {"no flavor of ClusterQueue \"tas-cq\" has a topologyName"}) ||
      any_contains(out.config.warnings,
                   {"no flavor of ClusterQueue \"tas-cq\" has a topologyName"}))
      << dump(out.config.warnings) << dump(out.notes);
}

// A JobSet's replicated jobs and a PyTorchJob's replicas carry the annotations on their pod
// templates. sluice holds one topology request per job: the same request on every pod set (or
// the only pod set) applies to the job; different ones are an error, never silently dropped.
std::string jobset(const std::string& workers, const std::string& driver) {
  auto rj = [](const char* name, int n, const std::string& annotation) {
    return std::string("  - name: ") + name + "\n    replicas: 1\n    template:\n      spec:\n" +
           "        parallelism: " + std::to_string(n) +
           "\n        completions: " + std::to_string(n) + "\n        template:\n" +
           (annotation.empty() ? std::string()
                               : "          metadata:\n            annotations:\n              " +
                                     annotation + "\n") +
           "          spec:\n            containers:\n            - name: c\n"
           "              resources: {requests: {cpu: \"1\", nvidia.com/gpu: 1}}\n";
  };
  std::string out =
      "\n---\napiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: js\n"
      "  labels: {kueue.x-k8s.io/queue-name: tas-q}\nspec:\n  replicatedJobs:\n" +
      rj("workers", 4, workers);
  if (driver != "-") out += rj("driver", 1, driver);
  return out;
}

TEST(KueueTopology, JobSetAndKubeflowPodTemplates) {
  const std::string rack =
      "kueue.x-k8s.io/podset-required-topology: cloud.provider.com/topology-rack";
  // One replicated job: its request is the job's.
  auto one = load_one(yaml(kSetup) + jobset(rack, "-"));
  ASSERT_TRUE(one.ok()) << dump(one.errors);
  EXPECT_EQ(one.jobs[0].topology.level, 1);
  EXPECT_TRUE(one.jobs[0].topology.required);
  // The same on every pod set: the job's.
  auto same = load_one(yaml(kSetup) + jobset(rack, rack));
  ASSERT_TRUE(same.ok()) << dump(same.errors);
  EXPECT_EQ(same.jobs[0].topology.level, 1);
  // Only some pod sets, or different requests: refused with the reason.
  for (const auto& other : {std::string(), std::string("kueue.x-k8s.io/podset-preferred-topology: "
                                                       "cloud.provider.com/topology-block")}) {
    auto mixed = load_one(yaml(kSetup) + jobset(rack, other));
    EXPECT_FALSE(mixed.ok());
    EXPECT_TRUE(any_contains(mixed.errors, {"sluice holds one topology request per job"}))
        << dump(mixed.errors);
  }
  // A PyTorchJob whose Master and Workers ask the same.
  auto torch = load_one(yaml(kSetup) + R"(
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pt
  labels: {kueue.x-k8s.io/queue-name: tas-q}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata: {annotations: {kueue.x-k8s.io/podset-required-topology: cloud.provider.com/topology-block}}
        spec: {containers: [{name: c, resources: {requests: {cpu: "1", nvidia.com/gpu: 1}}}]}
    Worker:
      replicas: 2
      template:
        metadata: {annotations: {kueue.x-k8s.io/podset-required-topology: cloud.provider.com/topology-block}}
        spec: {containers: [{name: c, resources: {requests: {cpu: "1", nvidia.com/gpu: 1}}}]}
)");
  ASSERT_TRUE(torch.ok()) << dump(torch.errors);
  EXPECT_EQ(torch.jobs[0].topology.level, 0);
}

}  // namespace
}  // namespace sluice
