// Runtime bins (SchedulerPolicy spec.alignEnds: bins; Placer::set_node_ends with bins,
// docs/placement.md "Runtime bins"): a job goes first where it extends the node's busy time
// least, in power-of-two bins of minutes, then by the GPU scoring, then by the end tie-break.
#include <gtest/gtest.h>

#include "place_test_util.h"

namespace sluice {
namespace end_bins_test {  // its own namespace: the unit tests build in unity batches
namespace {

using testing::make_job;
using testing::make_node;
using testing::node_of;
using testing::placed;

constexpr TimeNs kSec = kNsPerSec;

// Four nodes of 8 GPUs: n0 runs 6 GPUs until 100 s, n1 2 GPUs until `n1_end_s`, n2 and n3 idle.
struct Bins {
  Cluster cluster;
  std::vector<TimeNs> ends;
  std::unique_ptr<ClusterAlloc> alloc;
  std::unique_ptr<Placer> placer;
  explicit Bins(TimeNs n1_end_s = 2000, ScoringPolicy scoring = ScoringPolicy::kBinPack) {
    for (int n = 0; n < 4; ++n) cluster.nodes.push_back(make_node("n" + std::to_string(n), 8));
    alloc = std::make_unique<ClusterAlloc>(cluster);
    placer = std::make_unique<Placer>(cluster, scoring);
    run(1, 0, 6);
    run(2, 1, 2);
    ends = {100 * kSec, n1_end_s * kSec, 0, 0};
  }
  void run(JobId id, NodeId node, int gpus) {
    const Job j = make_job(id, 1, gpus);
    const auto r =
        placer->place(j, NodeSet(static_cast<int32_t>(cluster.nodes.size()), {node}), *alloc);
    ASSERT_TRUE(placed(r));
    alloc->commit(j, testing::placement(r));
  }
  // The node of a 1-GPU job with `walltime_s` placed at 10 s (aligned: with node ends, bins:
  // as runtime bins).
  NodeId place(TimeNs walltime_s, bool aligned, bool bins, int gpus = 1) {
    placer->set_node_ends(aligned ? &ends : nullptr, 10 * kSec, bins);
    Job j = make_job(9, 1, gpus);
    j.walltime_ns = walltime_s * kSec;
    const auto r = placer->place(j, NodeSet::all(cluster), *alloc);
    placer->set_node_ends(nullptr, 0);
    return placed(r) ? node_of(r) : -1;
  }
};

TEST(EndBins, TheNodeWhoseWorkOutlastsTheJobWinsOverOneItWouldExtend) {
  Bins b;
  // Ends at 510 s: n1 (2,000 s) covers it, n0 (100 s) would run 410 s longer.
  EXPECT_EQ(b.place(500, true, true), 1);
}

TEST(EndBins, OffOrAsATieBreakTheScoringDecides) {
  Bins b;
  EXPECT_EQ(b.place(500, false, false), 0);  // bin-packing: n0 has the fewest free GPUs
  EXPECT_EQ(b.place(500, true, false), 0);   // the tie-break: n0 and n1 do not tie
  EXPECT_EQ(b.place(500, false, true), 0);   // bins without node ends: off
}

TEST(EndBins, WithoutAWalltimeTheScoringDecides) {
  Bins b;
  EXPECT_EQ(b.place(0, true, true), 0);
}

TEST(EndBins, WhenNoNodeCoversTheJobTheLeastExtendedWins) {
  Bins b;
  // Ends at 3,010 s: n0 by 2,910 s (48 min, bin 7), n1 by 1,010 s (16 min, bin 6), an idle node
  // by its whole 50 min (bin 7).
  EXPECT_EQ(b.place(3000, true, true), 1);
}

TEST(EndBins, WithinABinTheScoringDecides) {
  Bins b(/*n1_end_s=*/90);
  // Ends at 310 s: n0 by 210 s, n1 by 220 s (3.5 and 3.7 min: both bin 3); bin-packing: n0.
  EXPECT_EQ(b.place(300, true, true), 0);
}

TEST(EndBins, AJobTooBigForTheBusyNodesGoesToAnIdleOne) {
  Bins b;
  EXPECT_EQ(b.place(500, true, true, 8), 2);  // 8 GPUs: only n2 and n3 fit; the lower id
}

TEST(EndBins, EveryScorerSeesTheBinsFirst) {
  for (ScoringPolicy s : {ScoringPolicy::kSpread, ScoringPolicy::kFgdMix}) {
    Bins b(2000, s);
    b.placer->set_workload({{1000, 1, 1000, {}, 1.0}});
    EXPECT_EQ(b.place(500, true, true), 1);
    // A job that outlasts every node: the least extended (n1) too, never an idle node.
    EXPECT_EQ(b.place(3000, true, true), 1);
  }
}

}  // namespace
}  // namespace end_bins_test
}  // namespace sluice
