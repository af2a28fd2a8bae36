// Placement filters: CPU, memory, GPU count, GPU fraction, MIG, GPU model, readiness.
#include <gtest/gtest.h>

#include "core/place/placer.h"
#include "place_test_util.h"

namespace sluice {
namespace {

using namespace sluice::testing;

TEST(PlaceFilters, CpuAndMemory) {
  Cluster c;
  c.nodes.push_back(make_node("small", 8, "H100", /*cpu*/ 8000, /*mem*/ 1024));
  c.nodes.push_back(make_node("big", 8, "H100", 64000, 64 * 1024));
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  // 16 CPU: only "big" (node 1) has it.
  EXPECT_EQ(node_of(placer.place(make_job(1, 1, 1, 1000, 16000, 512), all, alloc)), 1);
  // 2 GiB memory: only "big".
  EXPECT_EQ(node_of(placer.place(make_job(2, 1, 1, 1000, 1000, 2048), all, alloc)), 1);
  // 128 CPU: nobody; the reason names the CPU.
  auto r = placer.place(make_job(3, 1, 1, 1000, 128000, 512), all, alloc);
  ASSERT_FALSE(placed(r));
  EXPECT_EQ(failure(r).code, PlaceFailCode::kInsufficient);
  EXPECT_NE(failure(r).detail.find("CPU"), std::string::npos) << failure(r).detail;
}

TEST(PlaceFilters, GpuCount) {
  Cluster c;
  c.nodes.push_back(make_node("four", 4));
  c.nodes.push_back(make_node("eight", 8));
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  auto r = placer.place(make_job(1, 1, 8), all, alloc);
  ASSERT_TRUE(placed(r));
  EXPECT_EQ(node_of(r), 1);  // only "eight" has 8
  EXPECT_EQ(placement(r).pods[0].gpus.size(), 8u);
  alloc.commit(make_job(1, 1, 8), placement(r));
  auto r2 = placer.place(make_job(2, 1, 8), all, alloc);
  ASSERT_FALSE(placed(r2));
  EXPECT_EQ(failure(r2).detail, "no node has 8 free GPUs (most: 4)");
}

TEST(PlaceFilters, FractionalSharesUpTo1000Milli) {
  Cluster c;
  c.nodes.push_back(make_node("one", 1));
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  // 400 + 400 + 200 = 1000 milli share GPU 0; a fourth 100-milli pod does not fit.
  for (int i = 0; i < 3; ++i) {
    const Job j = make_job(static_cast<JobId>(i + 1), 1, 1, i < 2 ? 400 : 200);
    auto r = placer.place(j, all, alloc);
    ASSERT_TRUE(placed(r)) << i;
    EXPECT_EQ(placement(r).pods[0].gpus[0].gpu, 0);
    EXPECT_EQ(placement(r).pods[0].gpus[0].milli, j.pod_sets[0].gpu_milli);
    alloc.commit(j, placement(r));
  }
  EXPECT_EQ(alloc.gpu_free_milli(0, 0), 0);  // free: 1000 - 400 - 400 - 200
  EXPECT_FALSE(placed(placer.place(make_job(9, 1, 1, 100), all, alloc)));
  // A whole-GPU pod cannot take a partly used GPU either.
  EXPECT_FALSE(placed(placer.place(make_job(10, 1, 1), all, alloc)));
  std::string why;
  EXPECT_TRUE(alloc.check_invariants(&why)) << why;
}

TEST(PlaceFilters, FractionalPrefersPartlyUsedGpuUnderBinPack) {
  Cluster c;
  c.nodes.push_back(make_node("a", 2));
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  const Job j1 = make_job(1, 1, 1, 300);
  auto r1 = placer.place(j1, all, alloc);
  alloc.commit(j1, placement(r1));
  const int first = placement(r1).pods[0].gpus[0].gpu;
  // The second sharing pod goes to the same GPU (700 free, the tightest fit), not the idle one.
  auto r2 = placer.place(make_job(2, 1, 1, 500), all, alloc);
  EXPECT_EQ(placement(r2).pods[0].gpus[0].gpu, first);
}

TEST(PlaceFilters, MigSlicesAreSeparateDevices) {
  ResourceCatalog cat;
  const ResourceId mig1g = *cat.intern("nvidia.com/mig-1g.10gb");
  const ResourceId mig3g = *cat.intern("nvidia.com/mig-3g.40gb");
  Cluster c;
  Node n = make_node("mig", 2, "A100");
  n.gpus[0].mig = {{mig1g}, {mig1g}, {mig1g}, {mig3g}};  // GPU 0 is partitioned
  c.nodes.push_back(n);
  ClusterAlloc alloc(c);
  PlacerOptions opt;
  opt.resources = &cat;
  Placer placer(c, ScoringPolicy::kBinPack, opt);
  const NodeSet all = NodeSet::all(c);
  EXPECT_EQ(alloc.gpu_free_milli(0, 0), 0);  // a partitioned GPU is never given whole
  // Two 1g slices.
  Job j = make_job(1, 1, 0);
  j.pod_sets[0].requests[mig1g] = 2000;
  auto r = placer.place(j, all, alloc);
  ASSERT_TRUE(placed(r));
  ASSERT_EQ(placement(r).pods[0].gpus.size(), 2u);
  EXPECT_EQ(placement(r).pods[0].gpus[0], (GpuShare{0, 0, 1000}));
  EXPECT_EQ(placement(r).pods[0].gpus[1], (GpuShare{0, 1, 1000}));
  alloc.commit(j, placement(r));
  EXPECT_TRUE(alloc.mig_slice_used(0, 0, 1));
  // Two more 1g slices: only one left.
  Job j2 = j;
  j2.id = 2;
  EXPECT_FALSE(placed(placer.place(j2, all, alloc)));
  // Two whole GPUs: GPU 0 is partitioned, so only one whole GPU exists.
  EXPECT_FALSE(placed(placer.place(make_job(3, 1, 2), all, alloc)));
  // One whole GPU: GPU 1.
  auto r4 = placer.place(make_job(4, 1, 1), all, alloc);
  ASSERT_TRUE(placed(r4));
  EXPECT_EQ(placement(r4).pods[0].gpus[0].gpu, 1);
  // A fraction never lands on the partitioned GPU: with GPU 1 taken nothing fits.
  alloc.commit(make_job(4, 1, 1), placement(r4));
  EXPECT_FALSE(placed(placer.place(make_job(5, 1, 1, 200), all, alloc)));
  alloc.release(j, placement(r));
  EXPECT_FALSE(alloc.mig_slice_used(0, 0, 1));
  std::string why;
  EXPECT_TRUE(alloc.check_invariants(&why)) << why;
}

TEST(PlaceFilters, AllowedModels) {
  Cluster c;
  c.nodes.push_back(make_node("a100", 8, "A100"));
  c.nodes.push_back(make_node("h100", 8, "H100"));
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c, "any");
  Job j = make_job(1, 1, 4);
  j.allowed_models = {"H100"};
  EXPECT_EQ(node_of(placer.place(j, all, alloc)), 1);
  j.allowed_models = {"A100"};
  EXPECT_EQ(node_of(placer.place(j, all, alloc)), 0);
  j.allowed_models = {"B200"};
  auto r = placer.place(j, all, alloc);
  ASSERT_FALSE(placed(r));
  EXPECT_EQ(failure(r).code, PlaceFailCode::kNoNodes);
  // A flavor of A100 nodes and a job that wants H100: no H100 node matches the flavor.
  Labels labels = {{"gpu", "a100"}};
  c.nodes[0].labels = labels;
  const NodeSet flavor = select_nodes(c, labels, "a100-spot");
  ASSERT_EQ(flavor.ids(), std::vector<NodeId>{0});
  j.allowed_models = {"H100"};
  auto r2 = placer.place(j, flavor, alloc);
  ASSERT_FALSE(placed(r2));
  EXPECT_EQ(failure(r2).detail, "no ready H100 node matches flavor a100-spot");
}

TEST(PlaceFilters, Readiness) {
  Cluster c;
  c.nodes.push_back(make_node("a", 8));
  c.nodes.push_back(make_node("b", 8));
  c.nodes[1].ready = false;
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  EXPECT_EQ(alloc.total_whole_gpus_free(), 8);  // only ready nodes count
  EXPECT_EQ(node_of(placer.place(make_job(1, 1, 8), all, alloc)), 0);
  alloc.set_ready(0, false);
  auto r = placer.place(make_job(1, 1, 8), all, alloc);
  ASSERT_FALSE(placed(r));
  EXPECT_EQ(failure(r).code, PlaceFailCode::kNoNodes);
  alloc.set_ready(1, true);
  EXPECT_EQ(node_of(placer.place(make_job(1, 1, 8), all, alloc)), 1);
  std::string why;
  EXPECT_TRUE(alloc.check_invariants(&why)) << why;
}

TEST(PlaceFilters, CpuOnlyPodsAvoidGpuNodes) {
  Cluster c;
  c.nodes.push_back(make_node("gpu-idle", 8));
  c.nodes.push_back(make_node("cpu", 0));
  c.nodes.push_back(make_node("gpu-full", 1));
  ClusterAlloc alloc(c);
  Placer placer(c, ScoringPolicy::kBinPack);
  const NodeSet all = NodeSet::all(c);
  const Job cpu_job = make_job(1, 1, 0, 1000, 4000);
  EXPECT_EQ(node_of(placer.place(cpu_job, all, alloc)), 1);  // tier 2: no GPUs at all
  alloc.set_ready(1, false);
  const Job fill = make_job(2, 1, 1);
  auto rf = placer.place(fill, all, alloc);
  ASSERT_EQ(node_of(rf), 2);  // bin-pack: the 1-GPU node (fewest free GPUs that fit)
  alloc.commit(fill, placement(rf));
  EXPECT_EQ(node_of(placer.place(cpu_job, all, alloc)), 2);  // tier 1: GPUs all allocated
}

}  // namespace
}  // namespace sluice
