// Each scoring policy's choice on one small hand-made cluster.
#include <gtest/gtest.h>

#include "core/place/fgd_scorer.h"
#include "core/place/placer.h"
#include "place_test_util.h"

namespace sluice {
namespace {

using namespace sluice::testing;

// Occupies `gpus` whole GPUs and `cpu_milli` CPU of node n (lowest GPUs first).
void occupy(ClusterAlloc& alloc, JobId id, NodeId n, int gpus, int64_t cpu_milli) {
  const Job j = make_job(id, 1, gpus, 1000, cpu_milli, 0);
  Placement p;
  PodPlacement pod;
  pod.node = n;
  for (int g = 0; g < gpus; ++g) pod.gpus.push_back({static_cast<int16_t>(g), -1, 1000});
  p.pods.push_back(pod);
  alloc.commit(j, p);
}

// n0: 2 free GPUs, 40 free CPU.  n1: 3 free GPUs, 17 free CPU.  n2: idle (8 GPUs, 64 CPU).
struct Scene {
  Cluster cluster;
  std::unique_ptr<ClusterAlloc> alloc;
  Scene() {
    for (int n = 0; n < 3; ++n) cluster.nodes.push_back(make_node("n" + std::to_string(n), 8));
    alloc = std::make_unique<ClusterAlloc>(cluster);
    occupy(*alloc, 100, 0, 6, 24000);
    occupy(*alloc, 101, 1, 5, 47000);
  }
};

// The pod: 1 GPU, 16 CPU.
const Job kPod = make_job(1, 1, 1, 1000, 16000, 1024);

TEST(PlaceScoring, BinPackTakesTheFewestFreeGpusThatFit) {
  Scene s;
  Placer placer(s.cluster, ScoringPolicy::kBinPack);
  // free whole GPUs: n0=2, n1=3, n2=8 -> n0.
  EXPECT_EQ(node_of(placer.place(kPod, NodeSet::all(s.cluster), *s.alloc)), 0);
}

TEST(PlaceScoring, SpreadTakesTheMostFree) {
  Scene s;
  Placer placer(s.cluster, ScoringPolicy::kSpread);
  EXPECT_EQ(node_of(placer.place(kPod, NodeSet::all(s.cluster), *s.alloc)), 2);  // 8 free
}

TEST(PlaceScoring, BestFitLeavesTheLeastOver) {
  Scene s;
  Placer placer(s.cluster, ScoringPolicy::kBestFit);
  // leftover = (cpu share + gpu share)/2: n0=(24/64+1/8)/2=.25  n1=(1/64+2/8)/2=.13  n2=.81 -> n1.
  EXPECT_EQ(node_of(placer.place(kPod, NodeSet::all(s.cluster), *s.alloc)), 1);
}

TEST(PlaceScoring, FgdMinimisesFragmentationGrowth) {
  Scene s;
  Placer placer(s.cluster, ScoringPolicy::kFgd);
  // Typical pod: 1 GPU + 32 CPU. frag before/after the pod:
  //   n0: 0 -> 1000 (24 CPU left: its last GPU is stranded)   score -1000
  //   n1: 3000 -> 2000 (17 CPU: its GPUs are stranded anyway)  score +1000
  //   n2: 0 -> 0                                               score 0      -> n1.
  placer.set_workload({{32000, 1, 1000, {}, 1.0}});
  EXPECT_EQ(node_of(placer.place(kPod, NodeSet::all(s.cluster), *s.alloc)), 1);
  const auto& fgd = dynamic_cast<const FgdScorer&>(placer.scorer());
  EXPECT_DOUBLE_EQ(fgd.fragmentation(17000, s.alloc->gpu_free_span(1), s.alloc->gpu_model_span(1)),
                   3000);
  EXPECT_DOUBLE_EQ(fgd.fragmentation(40000, s.alloc->gpu_free_span(0), s.alloc->gpu_model_span(0)),
                   0);
}

TEST(PlaceScoring, FgdPicksTheGpuForASharedPod) {
  Cluster c;
  c.nodes.push_back(make_node("n", 2));
  ClusterAlloc alloc(c);
  // GPU 0 has 600 free, GPU 1 has 300 free.
  alloc.commit(make_job(9, 1, 1, 400, 0, 0), Placement{{{0, 0, 0, {{0, -1, 400}}}}});
  alloc.commit(make_job(10, 1, 1, 700, 0, 0), Placement{{{0, 0, 0, {{1, -1, 700}}}}});
  Placer placer(c, ScoringPolicy::kFgd);
  // Typical pods: 500 milli. A 300-milli pod on GPU 0 (600 -> 300) strands 300 more;
  // on GPU 1 (300 -> 0) it uses milli that no typical pod could: GPU 1 wins.
  placer.set_workload({{0, 1, 500, {}, 1.0}});
  auto r = placer.place(make_job(1, 1, 1, 300, 0, 0), NodeSet::all(c), alloc);
  ASSERT_TRUE(placed(r));
  EXPECT_EQ(placement(r).pods[0].gpus[0].gpu, 1);
}

TEST(PlaceScoring, WorkloadMixReadsTheTypicalPods) {
  const uint64_t any = ~uint64_t{0};
  // 20% CPU-only; of the GPU pods (80%): 40/80 sharing, 20/80 on 2 GPUs, 10/80 pinned.
  const WorkloadMix m = workload_mix({{4000, 0, 0, any, 0.2},
                                      {4000, 1, 500, any, 0.4},
                                      {8000, 2, 1000, any, 0.2},
                                      {8000, 1, 1000, 1, 0.1},
                                      {8000, 1, 1000, any, 0.1}});
  EXPECT_NEAR(m.cpu_only, 0.2, 1e-12);
  EXPECT_NEAR(m.sharing, 0.5, 1e-12);
  EXPECT_NEAR(m.multi, 0.25, 1e-12);
  EXPECT_NEAR(m.pinned, 0.125, 1e-12);
  EXPECT_TRUE(fgd_mix_uses_paper_score(m));                                    // multi >= 0.2
  EXPECT_TRUE(fgd_mix_uses_paper_score({.cpu_only = 0.3}));                    // CPU-heavy
  EXPECT_FALSE(fgd_mix_uses_paper_score({.cpu_only = 0.13, .sharing = 0.9}));  // sharing-heavy
  EXPECT_FALSE(fgd_mix_uses_paper_score(workload_mix({})));
}

TEST(PlaceScoring, FgdMixFollowsTheWorkload) {
  Scene s;
  Placer placer(s.cluster, ScoringPolicy::kFgdMix);
  const auto& fgd = dynamic_cast<const FgdScorer&>(placer.scorer());
  EXPECT_EQ(fgd.name(), "fgdmix");
  // No workload yet: growth is 0 everywhere and it packs: n0 (2 free GPUs) ends the fullest.
  EXPECT_EQ(fgd.effective_score(), FgdScore::kStepPack);
  EXPECT_EQ(node_of(placer.place(kPod, NodeSet::all(s.cluster), *s.alloc)), 0);
  // A CPU-heavy workload (half CPU-only): the paper's score; FGD's choice as in
  // FgdMinimisesFragmentationGrowth (the CPU-only half adds the same -500 on every node).
  placer.set_workload({{32000, 1, 1000, {}, 0.5}, {4000, 0, 0, {}, 0.5}});
  EXPECT_EQ(fgd.effective_score(), FgdScore::kPaper);
  EXPECT_EQ(node_of(placer.place(kPod, NodeSet::all(s.cluster), *s.alloc)), 1);
  // Sharing pods only: whole 100-milli steps again.
  placer.set_workload({{1000, 1, 500, {}, 1.0}});
  EXPECT_EQ(fgd.effective_score(), FgdScore::kStepPack);
  // The same input twice: the same placement.
  EXPECT_EQ(placement(placer.place(kPod, NodeSet::all(s.cluster), *s.alloc)),
            placement(placer.place(kPod, NodeSet::all(s.cluster), *s.alloc)));
}

TEST(PlaceScoring, FgdMixLeavesOutPodsPinnedToOtherModels) {
  // A node of model 0 with 8 free GPUs; 40% of the workload may only use model 1.
  FgdScorer paper, mix(FgdOptions{FgdScore::kMix, 100, true, 0});
  const std::vector<TypicalPod> typical = {{1000, 1, 1000, ~uint64_t{0}, 0.6},
                                           {1000, 1, 1000, uint64_t{1} << 1, 0.4}};
  paper.set_workload(typical);
  mix.set_workload(typical);
  const std::vector<int32_t> free(8, 1000);
  const std::vector<uint8_t> model(8, 0);
  // The paper: all 8000 free milli count as fragmented for the pinned 40%: 3200, whatever the
  // node's state, so every pod leans to the model that fewest pods may use. fgdmix: 0.
  EXPECT_DOUBLE_EQ(paper.fragmentation(64000, free, model), 3200);
  EXPECT_DOUBLE_EQ(mix.fragmentation(64000, free, model), 0);
  // On a node of model 1 both count it (it may use it): nothing stranded while it fits.
  const std::vector<uint8_t> model1(8, 1);
  EXPECT_DOUBLE_EQ(mix.fragmentation(64000, free, model1), 0);
  // CPU too short for both typical pods: all free milli stranded for those that may use it.
  EXPECT_DOUBLE_EQ(mix.fragmentation(500, free, model1), 8000);
  EXPECT_DOUBLE_EQ(mix.fragmentation(500, free, model), 4800);
}

TEST(PlaceScoring, TypicalPodsCoverTheRequestedShare) {
  std::vector<TypicalPod> pods;
  for (int i = 0; i < 6; ++i) pods.push_back({1000, 1, 1000, ~uint64_t{0}, 0});
  for (int i = 0; i < 3; ++i) pods.push_back({2000, 1, 500, ~uint64_t{0}, 0});
  pods.push_back({3000, 0, 0, ~uint64_t{0}, 0});
  // 60% + 30% reach 90%: the singleton shape is left out at coverage 0.9.
  const auto t = typical_pods(pods, 0.9);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t[0].freq, 0.6);
  EXPECT_EQ(t[1].gpu_milli, 500);
}

TEST(PlaceScoring, SameInputSamePlacement) {
  Scene s;
  for (ScoringPolicy pol :
       {ScoringPolicy::kBinPack, ScoringPolicy::kSpread, ScoringPolicy::kBestFit,
        ScoringPolicy::kFgd, ScoringPolicy::kFgdPack, ScoringPolicy::kFgdMix}) {
    Placer a(s.cluster, pol), b(s.cluster, pol);
    const Job gang = make_job(7, 3, 2, 1000, 4000);
    auto ra = a.place(gang, NodeSet::all(s.cluster), *s.alloc);
    auto rb = b.place(gang, NodeSet::all(s.cluster), *s.alloc);
    ASSERT_TRUE(placed(ra));
    EXPECT_EQ(placement(ra), placement(rb)) << scoring_policy_name(pol);
    EXPECT_EQ(placement(ra), placement(a.place(gang, NodeSet::all(s.cluster), *s.alloc)));
  }
}

}  // namespace
}  // namespace sluice
