// The Cluster kind: nodes, GPUs, topology levels, node groups, several documents merged, and
// its errors with their lines.
#include <gtest/gtest.h>

#include "config_test_util.h"

namespace sluice {
namespace cluster_kind_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::has;
using testing_config::load_one;
using testing_config::yaml;

const char* kCluster = R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  topology: {levels: [block, rack]}
  nodes:
  - name: big
    labels: {gpu: h100}
    cpu: 96
    memory: 1Ti
    topology: {block: b1, rack: r1}
    gpus: {count: 8, model: H100, memory: 80Gi, nvlinkDomains: 2, numaNodes: 2, pcieSwitches: 4}
  - name: mig
    cpu: "64"
    memory: 512Gi
    topology: {block: b1, rack: r2}
    gpus:
    - {model: A100, memory: 80Gi, nvlinkDomain: 0, numa: 0, pcieSwitch: 0, mig: [1g.10gb, 1g.10gb, 3g.40gb]}
    - {model: A100, memory: 80Gi, nvlinkDomain: 0, numa: 1, pcieSwitch: 1, count: 3}
  nodeGroups:
  - namePrefix: gpu-
    count: 10
    cpu: 32
    memory: 256Gi
    labels: {pool: small}
    gpus: {count: 4, model: L4}
    topology:
      block: b2
      rack: {every: 4, prefix: rack-}
)";

TEST(ConfigCluster, NodesGpusAndTopology) {
  auto out = load_one(yaml(kCluster));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Cluster& c = out.config.cluster;
  EXPECT_EQ(c.name, "lab");
  EXPECT_EQ(c.levels, (std::vector<std::string>{"block", "rack"}));
  ASSERT_EQ(c.nodes.size(), 12u);  // 2 listed + 10 generated
  const Node& big = c.nodes[0];
  EXPECT_EQ(big.cpu_milli, 96000);
  EXPECT_EQ(big.memory_mib, 1 << 20);
  ASSERT_EQ(big.gpus.size(), 8u);
  // Shorthand: 8 GPUs split evenly in index order.
  //   nvlink 2 domains: 0-3 | 4-7; numa 2: 0-3 | 4-7; pcie 4: 0-1 | 2-3 | 4-5 | 6-7
  EXPECT_EQ(big.gpus[3].nvlink_domain, 0);
  EXPECT_EQ(big.gpus[4].nvlink_domain, 1);
  EXPECT_EQ(big.gpus[5].numa_node, 1);
  EXPECT_EQ(big.gpus[5].pcie_switch, 2);
  EXPECT_EQ(big.gpus[7].pcie_switch, 3);
  EXPECT_EQ(big.gpus[0].model, "H100");
  EXPECT_EQ(big.gpus[0].memory_mib, 80 * 1024);
  // Explicit list: one MIG-partitioned GPU and three whole ones (count: 3).
  const Node& mig = c.nodes[1];
  ASSERT_EQ(mig.gpus.size(), 4u);
  ASSERT_EQ(mig.gpus[0].mig.size(), 3u);
  auto p1 = out.config.resources.find("nvidia.com/mig-1g.10gb");
  auto p3 = out.config.resources.find("nvidia.com/mig-3g.40gb");
  ASSERT_TRUE(p1 && p3);
  EXPECT_EQ(mig.gpus[0].mig[0].profile, *p1);
  EXPECT_EQ(mig.gpus[0].mig[2].profile, *p3);
  EXPECT_TRUE(mig.gpus[1].mig.empty());
  EXPECT_EQ(mig.gpus[3].numa_node, 1);
  // Node groups: names padded to the widest index; racks of 4 consecutive nodes.
  EXPECT_EQ(c.nodes[2].name, "gpu-0");  // indexes 0..9: one digit
  EXPECT_EQ(c.nodes[11].name, "gpu-9");
  EXPECT_EQ(c.nodes[11].labels, (Labels{{"pool", "small"}}));
  // Domains: block b1 = 0, b2 = 1; racks r1 = 0, r2 = 1, rack-0.. = 2..
  EXPECT_EQ(big.domains, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(mig.domains, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(c.nodes[2].domains, (std::vector<int32_t>{1, 2}));   // gpu-00: b2, rack-0
  EXPECT_EQ(c.nodes[6].domains, (std::vector<int32_t>{1, 3}));   // gpu-04: b2, rack-1
  EXPECT_EQ(c.nodes[11].domains, (std::vector<int32_t>{1, 4}));  // gpu-09: b2, rack-2
  EXPECT_EQ(c.domain_names[0], (std::vector<std::string>{"b1", "b2"}));
  EXPECT_EQ(c.domain_names[1],
            (std::vector<std::string>{"r1", "r2", "rack-0", "rack-1", "rack-2"}));
  EXPECT_EQ(c.total_gpus(), 8 + 4 + 40);
}

TEST(ConfigCluster, SeveralDocumentsMergeAndNodeNamesAreUnique) {
  const char* more = R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  nodes:
  - {name: extra, cpu: 8, memory: 16Gi, topology: {block: b3, rack: r9}}
  - {name: big, cpu: 8, memory: 16Gi, topology: {block: b1, rack: r1}}
)";
  LoadOptions options;
  auto out = load({Source{"a.yaml", yaml(kCluster)}, Source{"b.yaml", yaml(more)}}, options);
  EXPECT_EQ(out.config.cluster.nodes.size(), 13u);  // "extra" added, second "big" refused
  EXPECT_TRUE(has(out.errors,
                  "b.yaml:7: spec.nodes[1].name: duplicate node \"big\" (first "
                  "defined at a.yaml:7)"))
      << dump(out.errors);
}

TEST(ConfigCluster, Errors) {
  auto out = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: bad}
spec:
  topology: {levels: [rack]}
  nodes:
  - {name: a, cpu: 8, memory: 1Gi, topology: {rak: r1}}
  - {name: b, memory: 1Gi, topology: {rack: r1}}
  - {name: c, cpu: 8, memory: 1Gi, topology: {rack: r1}, gpus: {count: 6, model: X, nvlinkDomains: 4}}
  - {name: d, cpu: 8, memory: 1Gi, topology: {rack: r1}, gpus: [{model: A100, mig: [4g.40gb, 4g.40gb]}]}
  - {name: e, cpu: 8, memory: 1Gi, topology: {rack: r1}, gpus: [{model: A100, mig: [big]}]}
  - {name: f, cpu: 8, memory: 1Gi}
)"));
  EXPECT_TRUE(has(out.errors,
                  "test.yaml:7: spec.nodes[0].topology.rak: unknown topology level "
                  "\"rak\" (levels: rack)"))
      << dump(out.errors);
  EXPECT_TRUE(has(out.errors, "test.yaml:8: spec.nodes[1].cpu: required field missing"));
  EXPECT_TRUE(has(out.errors,
                  "test.yaml:9: spec.nodes[2].gpus.nvlinkDomains: \"4\" must divide "
                  "count (6)"));
  EXPECT_TRUE(has(out.errors,
                  "test.yaml:10: spec.nodes[3].gpus[0].mig: slices use 8 compute "
                  "slices; a GPU has 7"));
  EXPECT_TRUE(has(out.errors,
                  "test.yaml:11: spec.nodes[4].gpus[0].mig[0]: \"big\" is not a MIG "
                  "profile (e.g. 1g.10gb, 3g.40gb, 7g.80gb)"));
  EXPECT_TRUE(any_contains(out.errors, {"test.yaml:12: spec.nodes[5].topology: node \"f\" has no "
                                        "rack"}))
      << dump(out.errors);
}

TEST(ConfigCluster, RackInTwoBlocksIsAnError) {
  auto out = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  topology: {levels: [block, rack]}
  nodes:
  - {name: a, cpu: 8, memory: 1Gi, topology: {block: b1, rack: r1}}
  - {name: b, cpu: 8, memory: 1Gi, topology: {block: b2, rack: r1}}
)"));
  EXPECT_TRUE(has(out.errors,
                  "test.yaml:8: spec.nodes[1].topology: rack \"r1\" of node \"b\" is "
                  "in block \"b2\", but node \"a\" puts it in block \"b1\""))
      << dump(out.errors);
}

TEST(ConfigCluster, ConflictingDocuments) {
  const char* other = R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: lab}
spec:
  topology: {levels: [zone]}
)";
  LoadOptions options;
  auto out = load({Source{"a.yaml", yaml(kCluster)}, Source{"b.yaml", yaml(other)}}, options);
  EXPECT_TRUE(has(out.errors,
                  "b.yaml:5: spec.topology.levels: [zone] differs from [block, rack] "
                  "(a.yaml:1)"))
      << dump(out.errors);
}

TEST(ConfigCluster, FlavorThatMatchesNoNodeIsWarned) {
  std::string text = yaml(kCluster) + yaml(R"(
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: ghost}
spec: {nodeLabels: {gpu: b200}}
)");
  auto out = load_one(text);
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  EXPECT_TRUE(any_contains(out.config.warnings, {"ResourceFlavor \"ghost\" matches no node"}))
      << dump(out.config.warnings);
}

TEST(ConfigCluster, NodeGroupNamesPaddingFirstIndexAndDefaultPrefix) {
  auto out = load_one(yaml(R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  topology: {levels: [rack]}
  nodeGroups:
  - {namePrefix: a-, count: 12, cpu: 1, memory: 1Gi, topology: {rack: {every: 5}}}
  - {namePrefix: b-, count: 2, firstIndex: 99, cpu: 1, memory: 1Gi, ready: false,
     topology: {rack: {every: 1, prefix: r, start: 8}}}
)"));
  ASSERT_TRUE(out.ok()) << dump(out.errors);
  const Cluster& c = out.config.cluster;
  ASSERT_EQ(c.nodes.size(), 14u);
  EXPECT_EQ(c.nodes[0].name, "a-00");  // indexes 0..11: two digits
  EXPECT_EQ(c.nodes[11].name, "a-11");
  EXPECT_EQ(c.nodes[12].name, "b-099");  // 99..100: three digits
  EXPECT_EQ(c.nodes[13].name, "b-100");
  EXPECT_FALSE(c.nodes[13].ready);
  // Racks: a-00..04 rack-0, a-05..09 rack-1, a-10..11 rack-2; b: r8, r9.
  EXPECT_EQ(c.domain_names[0],
            (std::vector<std::string>{"rack-0", "rack-1", "rack-2", "r8", "r9"}));
  EXPECT_EQ(c.nodes[10].domains, (std::vector<int32_t>{2}));
}

}  // namespace
}  // namespace cluster_kind_test
}  // namespace sluice
