// Gang all-or-nothing, required/preferred topology, NVLink locality inside a node.
#include <gtest/gtest.h>

#include <set>

#include "core/place/placer.h"
#include "place_test_util.h"

namespace sluice {
namespace {

using namespace sluice::testing;

// 2 blocks x 2 racks x 2 nodes of 8 GPUs: node n is in block n/4 and rack n/2.
Cluster racks() {
  return block_rack_cluster(8);
}

TEST(PlaceGang, AllOrNothing) {
  Cluster c = racks();
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  // 8 pods x 8 GPUs fill the cluster; 9 do not fit and nothing is placed.
  auto r = placer.place(make_job(1, 8, 8), all, alloc);
  ASSERT_TRUE(placed(r));
  std::set<NodeId> nodes;
  for (const auto& p : placement(r).pods) nodes.insert(p.node);
  EXPECT_EQ(nodes.size(), 8u);  // one pod per node
  auto r9 = placer.place(make_job(2, 9, 8), all, alloc);
  ASSERT_FALSE(placed(r9));
  EXPECT_EQ(failure(r9).pods_needed, 9);
  EXPECT_EQ(failure(r9).detail, "needs 72 free GPUs, the cluster has 64");
  // Take one node; a 8x8 gang now fits 7 of 8.
  const Job one = make_job(3, 1, 8);
  auto r1 = placer.place(one, all, alloc);
  alloc.commit(one, placement(r1));
  auto r8 = placer.place(make_job(4, 8, 8), all, alloc);
  ASSERT_FALSE(placed(r8));
  EXPECT_EQ(failure(r8).pods_fit, 0);  // the 56-GPU summary check rejects it at once
  auto r7 = placer.place(make_job(5, 8, 7), all, alloc);  // 8 x 7 = 56 GPUs free, but 7 nodes
  ASSERT_FALSE(placed(r7));
  EXPECT_EQ(failure(r7).pods_fit, 7);
  EXPECT_EQ(failure(r7).detail,
            "gang needs 8 pods (8 with 7 free GPUs each); 7 fit; no node has 7 free GPUs");
  std::string why;
  EXPECT_TRUE(alloc.check_invariants(&why)) << why;
}

TEST(PlaceGang, MultiplePodSetsAndOutputOrder) {
  Cluster c = racks();
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  Job j = make_job(1, 2, 0, 1000, 2000);  // pod set 0: 2 CPU-only launchers
  PodSet workers = j.pod_sets[0];
  workers.name = "workers";
  workers.count = 3;
  workers.gpus = 8;
  workers.requests[kGpu] = 8000;
  j.pod_sets.push_back(workers);
  auto r = placer.place(j, NodeSet::all(c), alloc);
  ASSERT_TRUE(placed(r));
  ASSERT_EQ(placement(r).pods.size(), 5u);
  // Pod-set order, then pod index, whatever order they were placed in.
  EXPECT_EQ(placement(r).pods[0].pod_set, 0);
  EXPECT_EQ(placement(r).pods[1].pod_index, 1);
  EXPECT_EQ(placement(r).pods[2].pod_set, 1);
  EXPECT_EQ(placement(r).pods[4].pod_index, 2);
  alloc.commit(j, placement(r));
  std::string why;
  EXPECT_TRUE(alloc.check_invariants(&why)) << why;
}

TEST(PlaceTopology, RequiredRack) {
  Cluster c = racks();
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  // Fill node 0 halfway: rack-0 now has 12 free GPUs, the others 16.
  const Job half = make_job(1, 1, 4);
  auto rh = placer.place(half, all, alloc);
  ASSERT_EQ(node_of(rh), 0);
  alloc.commit(half, placement(rh));
  // 3 pods x 4 GPUs in one rack: bin-pack picks the fullest rack that fits: rack-0 (12 free).
  Job j = make_job(2, 3, 4);
  j.topology = {1, true};
  auto r = placer.place(j, all, alloc);
  ASSERT_TRUE(placed(r));
  for (const auto& p : placement(r).pods) EXPECT_EQ(p.node / 2, 0) << p.node;
  // 4 pods x 8 GPUs in one rack: no rack has 32 GPUs.
  Job big = make_job(3, 4, 8);
  big.topology = {1, true};
  auto rb = placer.place(big, all, alloc);
  ASSERT_FALSE(placed(rb));
  EXPECT_EQ(failure(rb).code, PlaceFailCode::kTopology);
  EXPECT_EQ(failure(rb).detail, "no rack has 32 free GPUs for all 4 pods (most: 16)");
  // ... but a block has.
  big.topology = {0, true};
  auto rblock = placer.place(big, all, alloc);
  ASSERT_TRUE(placed(rblock));
  for (const auto& p : placement(rblock).pods) EXPECT_GE(p.node, 4);  // block-1: 32 free
}

TEST(PlaceTopology, RequiredRackCountsPods) {
  Cluster c = racks();
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  // 3 pods x 5 GPUs: every rack has 16 free GPUs but only 2 nodes, so 2 pods fit per rack.
  Job j = make_job(1, 3, 5);
  j.topology = {1, true};
  auto r = placer.place(j, all, alloc);
  ASSERT_FALSE(placed(r));
  EXPECT_EQ(failure(r).detail, "no rack can hold all 3 pods (best rack fits 2)");
  // Node level: all pods on one node.
  Job k = make_job(2, 4, 2);
  k.topology = {2, true};
  auto rk = placer.place(k, all, alloc);
  ASSERT_TRUE(placed(rk));
  for (const auto& p : placement(rk).pods) EXPECT_EQ(p.node, placement(rk).pods[0].node);
}

TEST(PlaceTopology, PreferredRackSpills) {
  Cluster c = racks();
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  // 3 pods x 8 GPUs, preferred rack: no rack fits 3, so it spills over the fewest racks (2).
  Job j = make_job(1, 3, 8);
  j.topology = {1, false};
  auto r = placer.place(j, all, alloc);
  ASSERT_TRUE(placed(r));
  std::set<int> racks_used;
  for (const auto& p : placement(r).pods) racks_used.insert(p.node / 2);
  EXPECT_EQ(racks_used.size(), 2u);
  // 2 pods x 8 GPUs preferred in one rack: fits rack-0 entirely.
  Job k = make_job(2, 2, 8);
  k.topology = {1, false};
  auto rk = placer.place(k, all, alloc);
  ASSERT_TRUE(placed(rk));
  EXPECT_EQ(placement(rk).pods[0].node / 2, placement(rk).pods[1].node / 2);
}

TEST(PlaceLocality, NvlinkDomainInsideNode) {
  Cluster c;
  // 8 GPUs in two NVLink domains: 0-3 and 4-7.
  c.nodes.push_back(make_node("n", 8, "H100", 64000, 512 * 1024, {}, 2));
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  // Take GPU 0 (a 1-GPU pod goes to the lowest GPU of the smallest domain: tie -> domain 0).
  const Job one = make_job(1, 1, 1);
  auto r1 = placer.place(one, all, alloc);
  ASSERT_EQ(placement(r1).pods[0].gpus[0].gpu, 0);
  alloc.commit(one, placement(r1));
  // A 4-GPU pod gets the intact domain 4..7, not 1,2,3,4.
  auto r4 = placer.place(make_job(2, 1, 4), all, alloc);
  ASSERT_TRUE(placed(r4));
  for (const auto& g : placement(r4).pods[0].gpus) EXPECT_GE(g.gpu, 4);
  // A second 1-GPU pod fills domain 0 (3 free there, 4 in domain 1): GPU 1.
  auto r1b = placer.place(make_job(3, 1, 1), all, alloc);
  EXPECT_EQ(placement(r1b).pods[0].gpus[0].gpu, 1);
  // Take GPU 4: no domain has 4 free (3 and 3). Preferred locality still places 4 GPUs;
  // required NVLink does not, and says why.
  const Job four = make_job(4, 1, 1);
  Placement p4;
  p4.pods.push_back({0, 0, 0, {{4, -1, 1000}}});
  alloc.commit(four, p4);
  EXPECT_TRUE(placed(placer.place(make_job(5, 1, 4), all, alloc)));
  Job strict = make_job(6, 1, 4);
  strict.gpu_locality = GpuLocality::kRequireNvlink;
  auto rs = placer.place(strict, all, alloc);
  ASSERT_FALSE(placed(rs));
  EXPECT_EQ(failure(rs).code, PlaceFailCode::kGpuLocality);
  EXPECT_EQ(failure(rs).detail, "no node has 4 free GPUs in one NVLink domain");
}

}  // namespace
}  // namespace sluice
