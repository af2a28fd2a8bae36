// Kueue's topology requests in the placer: preferred falls back to coarser levels before it
// spreads, and slices (podset-slice annotations) keep each group of pods in one domain.
#include <gtest/gtest.h>

#include <set>

#include "core/place/placer.h"
#include "place_test_util.h"

namespace sluice {
namespace topology_slices_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using namespace sluice::testing;

Cluster racks() {
  return block_rack_cluster(4);  // node n is in block n/4 and rack n/2
}

constexpr int32_t kBlock = 0, kRack = 1, kNode = 2;

// The rack of every pod, by slice of `size` pods in (pod set, index) order.
std::vector<std::set<int>> racks_by_slice(const Placement& p, int size) {
  std::vector<std::set<int>> out;
  for (size_t i = 0; i < p.pods.size(); ++i) {
    if (i % static_cast<size_t>(size) == 0) out.emplace_back();
    out.back().insert(p.pods[i].node / 2);
  }
  return out;
}

// A one-pod job of `gpus` GPUs on node n, committed.
void take(const Cluster& c, ClusterAlloc& alloc, Placer& placer, NodeId n, int32_t gpus) {
  const Job j = make_job(100 + static_cast<JobId>(n), 1, gpus);
  auto r = placer.place(j, NodeSet(static_cast<int32_t>(c.nodes.size()), {n}), alloc);
  ASSERT_TRUE(placed(r));
  alloc.commit(j, placement(r));
}

TEST(PlaceTopology, PreferredTriesCoarserLevelsBeforeSpreading) {
  Cluster c = racks();
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  // Fill n0 (rack 0, block 0) and n2 (rack 1, block 0): every rack has 4 free GPUs at most,
  // block 1 has 16.
  for (NodeId n : {0, 2}) take(c, alloc, placer, n, 4);
  // 3 pods x 4 GPUs preferring a rack: no rack holds 12 GPUs; block 1 does (Kueue's order:
  // the next level up before spreading across blocks).
  Job j = make_job(2, 3, 4);
  j.topology = TopologyRequest{kRack, false, {}};
  auto r = placer.place(j, all, alloc);
  ASSERT_TRUE(placed(r));
  for (const auto& p : placement(r).pods) EXPECT_GE(p.node, 4) << "pod outside block 1";
}

TEST(PlaceTopology, SlicesEachInOneRack) {
  Cluster c = racks();
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  // Take 2 GPUs on n1 (rack 0) and 2 on n5 (rack 2): racks 0 and 2 have 6 free GPUs each.
  for (NodeId n : {1, 5}) take(c, alloc, placer, n, 2);
  // 8 pods x 1 GPU in slices of 4, each slice in one rack; the whole gang in one block.
  Job j = make_job(1, 8, 1);
  j.topology = TopologyRequest{kBlock, true, {TopologySlice{kRack, 4}}};
  auto r = placer.place(j, all, alloc);
  ASSERT_TRUE(placed(r));
  const auto slices = racks_by_slice(placement(r), 4);
  ASSERT_EQ(slices.size(), 2u);
  for (const auto& s : slices) EXPECT_EQ(s.size(), 1u) << "a slice spans racks";
  std::set<int> blocks;
  for (const auto& p : placement(r).pods) blocks.insert(p.node / 4);
  EXPECT_EQ(blocks.size(), 1u);
  std::string why;
  EXPECT_TRUE(alloc.check_invariants(&why)) << why;
}

TEST(PlaceTopology, SliceThatFitsNoDomainFailsWithReason) {
  Cluster c = racks();
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  // Every node loses one GPU: each rack has 6 free, the cluster 24.
  for (NodeId n = 0; n < 8; ++n) take(c, alloc, placer, n, 1);
  // Slices of 8 one-GPU pods per rack cannot fit (6 free per rack), though 16 pods fit overall.
  Job j = make_job(1, 16, 1);
  j.topology.slices = {TopologySlice{kRack, 8}};
  auto r = placer.place(j, all, alloc);
  ASSERT_FALSE(placed(r));
  EXPECT_EQ(failure(r).code, PlaceFailCode::kTopology);
  EXPECT_EQ(failure(r).detail, "gang needs 16 pods in slices of 8, each in one rack; 0 fit");
  // Slices of 2 per node fit: 3 free GPUs on each node, 8 slices.
  Job k = make_job(2, 16, 1);
  k.topology.slices = {TopologySlice{kNode, 2}};
  auto rk = placer.place(k, all, alloc);
  ASSERT_TRUE(placed(rk));
  const auto& pods = placement(rk).pods;
  for (size_t i = 0; i < pods.size(); i += 2) EXPECT_EQ(pods[i].node, pods[i + 1].node);
}

TEST(PlaceTopology, TwoLayerSlices) {
  Cluster c = racks();
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  // 16 one-GPU pods: slices of 8 per block, inside them slices of 4 per node.
  Job j = make_job(1, 16, 1);
  j.topology.slices = {TopologySlice{kBlock, 8}, TopologySlice{kNode, 4}};
  auto r = placer.place(j, all, alloc);
  ASSERT_TRUE(placed(r));
  const auto& pods = placement(r).pods;
  for (size_t i = 0; i < pods.size(); ++i) {
    EXPECT_EQ(pods[i].node / 4, pods[i - i % 8].node / 4) << "pod " << i << " leaves its block";
    EXPECT_EQ(pods[i].node, pods[i - i % 4].node) << "pod " << i << " leaves its node";
  }
}

}  // namespace
}  // namespace topology_slices_test
}  // namespace sluice
