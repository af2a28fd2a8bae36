// PodSet::max_per_node (Slurm's -N, spec.maxPodsPerNode): a gang's pods of a set spread over
// distinct nodes, or at most N a node; sets without the limit place as before.
#include <gtest/gtest.h>

#include <map>

#include "core/place/placer.h"
#include "place_test_util.h"

namespace sluice {
namespace pods_per_node_test {

using namespace sluice::testing;

std::map<NodeId, int> pods_by_node(const Placement& p) {
  std::map<NodeId, int> n;
  for (const PodPlacement& pp : p.pods) ++n[pp.node];
  return n;
}

Cluster eight_gpu_nodes(int count) {
  Cluster c;
  for (int i = 0; i < count; ++i) c.nodes.push_back(make_node("n" + std::to_string(i), 8));
  return c;
}

// Bin-pack puts a 2-pod gang of 4 GPUs on one 8-GPU node; with the limit, on two nodes.
TEST(PodsPerNode, OnePerNodeSpreadsWhatBinPackWouldStack) {
  const Cluster c = eight_gpu_nodes(3);
  ClusterAlloc alloc(c);
  const NodeSet all = NodeSet::all(c);
  for (ScoringPolicy policy : {ScoringPolicy::kBinPack, ScoringPolicy::kSpread}) {
    Placer placer(c, policy);
    Job free_job = make_job(1, 2, 4);
    auto stacked = placer.place(free_job, all, alloc);
    ASSERT_TRUE(placed(stacked));
    Job spread_job = make_job(2, 2, 4);
    spread_job.pod_sets[0].max_per_node = 1;
    auto r = placer.place(spread_job, all, alloc);
    ASSERT_TRUE(placed(r));
    const auto by_node = pods_by_node(placement(r));
    EXPECT_EQ(by_node.size(), 2u);
    for (const auto& [node, pods] : by_node) {
      EXPECT_EQ(pods, 1) << "node " << node;
    }
    if (policy == ScoringPolicy::kBinPack) {
      EXPECT_EQ(pods_by_node(placement(stacked)).size(), 1u);
    }
  }
}

// At most 2 a node: 4 pods of 1 GPU take two nodes, two each (bin-pack fills a node first).
TEST(PodsPerNode, AtMostNPerNode) {
  const Cluster c = eight_gpu_nodes(3);
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  Job j = make_job(1, 4, 1);
  j.pod_sets[0].max_per_node = 2;
  auto r = placer.place(j, NodeSet::all(c), alloc);
  ASSERT_TRUE(placed(r));
  const auto by_node = pods_by_node(placement(r));
  EXPECT_EQ(by_node.size(), 2u);
  for (const auto& [node, pods] : by_node) {
    EXPECT_EQ(pods, 2) << "node " << node;
  }
}

// More pods than nodes: the gang does not fit, and the reason says why.
TEST(PodsPerNode, MorePodsThanNodesFailsWithAReason) {
  const Cluster c = eight_gpu_nodes(2);
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  Job j = make_job(1, 3, 1);
  j.pod_sets[0].max_per_node = 1;
  auto r = placer.place(j, NodeSet::all(c), alloc);
  ASSERT_FALSE(placed(r));
  EXPECT_EQ(failure(r).pods_fit, 2);
  EXPECT_NE(failure(r).detail.find("each on a node of its own"), std::string::npos)
      << failure(r).detail;
  EXPECT_NE(failure(r).detail.find("that no other pod of the gang uses"), std::string::npos)
      << failure(r).detail;
}

// The limit is per pod set: another set may share a node with the first.
TEST(PodsPerNode, LimitIsPerPodSet) {
  const Cluster c = eight_gpu_nodes(2);
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  Job j = make_job(1, 2, 2);
  j.pod_sets[0].max_per_node = 1;
  PodSet other = j.pod_sets[0];
  other.name = "other";
  other.max_per_node = 0;
  other.count = 2;
  j.pod_sets.push_back(other);
  auto r = placer.place(j, NodeSet::all(c), alloc);
  ASSERT_TRUE(placed(r));
  std::map<NodeId, int> first_set;
  for (const PodPlacement& pp : placement(r).pods)
    if (pp.pod_set == 0) ++first_set[pp.node];
  EXPECT_EQ(first_set.size(), 2u);
}

// With topology slices (placer_topology.cc's path) the limit holds as well: two slices of two
// pods per rack, one pod a node.
TEST(PodsPerNode, HoldsInsideTopologySlices) {
  const Cluster c = block_rack_cluster(8);
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  Job j = make_job(1, 4, 2);
  j.pod_sets[0].max_per_node = 1;
  j.topology.slices = {TopologySlice{1, 2}};
  auto r = placer.place(j, NodeSet::all(c), alloc);
  ASSERT_TRUE(placed(r));
  const auto by_node = pods_by_node(placement(r));
  EXPECT_EQ(by_node.size(), 4u);
  for (const PodPlacement& pp : placement(r).pods) {
    const PodPlacement& mate = placement(r).pods[static_cast<size_t>(pp.pod_index ^ 1)];
    EXPECT_EQ(pp.node / 2, mate.node / 2) << "a slice stays in one rack";
  }
}

}  // namespace pods_per_node_test
}  // namespace sluice
