// End alignment (SchedulerPolicy spec.alignEnds; Placer::set_node_ends, docs/placement.md):
// among nodes the GPU scoring ranks equal, a job with a walltime goes where the running work
// ends closest at or after its own expected end, else where it ends the latest before it.
#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"
#include "restore_helper.h"

namespace sluice {
namespace align_ends_test {  // its own namespace: the unit tests build in unity batches
namespace {

constexpr TimeNs kSec = kNsPerSec;

// Four nodes of 4 GPUs, one queue, bin-packing. Running from 0 s: n0, n1 and n2 use 2 GPUs
// each (the same free state, so the scoring ties them), until 100, 400 and 1,000 s; n3 is idle.
std::shared_ptr<Config> world(bool align) {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(4, 4);
  testing::add_queue(*c, "q", 100);
  c->policy.align_ends = align;
  c->policy.gpu_scoring = ScoringPolicy::kBinPack;  // the three partly used nodes tie
  return c;
}

void fill(Scheduler& s) {
  const TimeNs ends[] = {100, 400, 1000};
  for (NodeId n = 0; n < 3; ++n) testing::run_on(s, static_cast<JobId>(n + 1), 2, n, ends[n]);
}

// Submits a 1-GPU job with `walltime_s` (0: none) at 10 s and returns the node of its pod.
NodeId place_one(Scheduler& s, JobId id, TimeNs walltime_s, TimeNs now_s = 10) {
  Job j = testing::make_job(id, "q", 1, 1, now_s * kSec);
  j.walltime_ns = walltime_s * kSec;
  EXPECT_EQ(s.submit(j).status, SubmitStatus::kAccepted);
  const CycleResult r = s.run_cycle(now_s * kSec);
  s.apply(r, now_s * kSec);
  for (const auto& a : r.admitted)
    if (a.job == id) return a.placement.pods.at(0).node;
  return -1;
}

TEST(AlignEnds, OffTheTiedNodeWithTheLowestIdWins) {
  Scheduler s(world(false));
  fill(s);
  EXPECT_EQ(place_one(s, 10, 300), 0);
}

TEST(AlignEnds, TheNodeEndingClosestAfterTheJobWins) {
  Scheduler s(world(true));
  fill(s);
  // Ends at 310 s: n1 (400 s) runs on past it the least; n0 (100 s) would be kept busy.
  EXPECT_EQ(place_one(s, 10, 300), 1);
  testing::expect_invariants(s);
}

TEST(AlignEnds, WhenEveryNodeEndsBeforeTheJobTheLatestWins) {
  Scheduler s(world(true));
  fill(s);
  EXPECT_EQ(place_one(s, 10, 2000), 2);  // ends at 2,010 s; n2 is busy until 1,000 s anyway
}

TEST(AlignEnds, AJobWithoutAWalltimeIsAlignedByItsQueuesDefault) {
  auto c = world(true);
  c->cluster_queues[0].default_walltime_ns = 300 * kSec;  // as if it gave 300 s
  Scheduler s(c);
  fill(s);
  EXPECT_EQ(place_one(s, 10, 0), 1);
}

TEST(AlignEnds, AJobWithoutAnyWalltimeIsPlacedAsWithout) {
  auto c = world(true);
  c->cluster_queues[0].default_walltime_ns = 0;
  Scheduler s(c);
  fill(s);
  EXPECT_EQ(place_one(s, 10, 0), 0);
}

// Two jobs placed in one cycle: the second sees where the first will end.
TEST(AlignEnds, APlacementEarlierInTheCycleMovesItsNodesEnd) {
  auto c = world(true);
  c->policy.gpu_scoring = ScoringPolicy::kSpread;
  Scheduler s(c);
  // n0 1 GPU until 100 s, n1 two 1-GPU pods until 400 s, n2 and n3 full.
  testing::run_on(s, 1, 1, 0, 100);
  testing::run_on(s, 2, 1, 1, 400);
  testing::run_on(s, 5, 1, 1, 400, 1);
  testing::run_on(s, 3, 4, 2, 5000);
  testing::run_on(s, 4, 4, 3, 5000);
  // The first (spread: the emptiest node, n0) ends at 1,010 s; then n0 and n1 both have 2 free
  // GPUs, and the second (ends at 810 s) goes where the work runs on past it the least: n0 by
  // the first job's end (by the ends the cycle started with, n1: 400 s is the later of two
  // ends before 810 s).
  for (JobId id : {10, 11}) {
    Job j = testing::make_job(id, "q", 1, 1, 10 * kSec);
    j.walltime_ns = (id == 10 ? 1000 : 800) * kSec;
    ASSERT_EQ(s.submit(j).status, SubmitStatus::kAccepted);
  }
  const CycleResult r = s.run_cycle(10 * kSec);
  ASSERT_EQ(r.admitted.size(), 2u);
  EXPECT_EQ(r.admitted[0].job, 10u);
  EXPECT_EQ(r.admitted[0].placement.pods.at(0).node, 0);
  EXPECT_EQ(r.admitted[1].placement.pods.at(0).node, 0);
  s.apply(r, 10 * kSec);
  testing::expect_invariants(s);
}

TEST(AlignEnds, TheScoringStillComesFirst) {
  Scheduler s(world(true));
  fill(s);
  // A 1-GPU job on n0 until 50 s leaves n0 one free GPU: bin-packing ranks it first, though n1
  // would align better with a job that ends at 310 s.
  testing::run_on(s, 4, 1, 0, 50, 2);
  EXPECT_EQ(place_one(s, 10, 300), 0);
}

// spec.alignEnds: bins: the end comes before the scoring. The same cluster as above: n0 has
// one free GPU until 50 s (then two until 100 s), n1 two until 400 s. A job ending at 310 s
// would keep n0 busy 210 s longer; n1's work outlasts it, so it goes there.
TEST(AlignEnds, WithBinsTheEndComesBeforeTheScoring) {
  auto c = world(true);
  c->policy.align_ends_bins = true;
  Scheduler s(c);
  fill(s);
  testing::run_on(s, 4, 1, 0, 50, 2);
  EXPECT_EQ(place_one(s, 10, 300), 1);
  testing::expect_invariants(s);
  // A job without a walltime (and no queue default) is placed by the scoring alone.
  c->cluster_queues[0].default_walltime_ns = 0;
  Scheduler none(c);
  fill(none);
  testing::run_on(none, 4, 1, 0, 50, 2);
  EXPECT_EQ(place_one(none, 11, 0), 0);
}

TEST(AlignEnds, AFinishedJobsEndIsForgotten) {
  Scheduler s(world(true));
  fill(s);
  // n2's job (until 1,000 s) finishes at 20 s and another takes its place until 200 s: the
  // same free state as before. A job ending at 150 s goes to n2 now (with n2 still counted
  // until 1,000 s, n1 at 400 s would be the closer).
  ASSERT_TRUE(s.finish(3, 20 * kSec));
  testing::run_on(s, 4, 2, 2, 180, 0, 20);
  EXPECT_EQ(place_one(s, 10, 120, 30), 2);
  testing::expect_invariants(s);
}

// spec.alignEndsAfter: alignment only while a job that has waited that long waits for room.
// Running: n0 2 of 4 GPUs until 1,000 s, n1 2 until 400 s, n2 2 until 100 s, n3 1 until 5,000 s.
// A whole-node job (4 GPUs, submitted at 0 s) fits nowhere and reserves n2 (free at 100 s); a
// 1-GPU job ending after that stays off n2, and bin-packing ties n0 and n1: aligned, n1 (400 s
// runs on past its end the least); not aligned, n0.
struct AlignAfter {
  Scheduler s;
  explicit AlignAfter(TimeNs after_s) : AlignAfter(make(after_s)) {}
  explicit AlignAfter(std::shared_ptr<Config> c) : s(std::move(c)) {
    const TimeNs ends[] = {1000, 400, 100};
    for (NodeId n = 0; n < 3; ++n) testing::run_on(s, static_cast<JobId>(n + 1), 2, n, ends[n]);
    testing::run_on(s, 4, 1, 3, 5000);
  }
  static std::shared_ptr<Config> make(TimeNs after_s) {
    auto c = world(true);
    c->policy.align_ends_after_ns = after_s * kSec;
    return c;
  }
  void whole_node_job_waits() {
    Job big = testing::make_job(9, "q", 4, 1, 0);
    big.walltime_ns = 100 * kSec;
    ASSERT_EQ(s.submit(big).status, SubmitStatus::kAccepted);
  }
};

TEST(AlignEnds, AfterAWaitAJobAlignsOnlyOnceTheWaitingJobHasWaitedThatLong) {
  AlignAfter early(60);
  early.whole_node_job_waits();
  EXPECT_EQ(place_one(early.s, 10, 300, 10), 0);  // the whole-node job has waited 10 s of 60
  AlignAfter late(60);
  late.whole_node_job_waits();
  EXPECT_EQ(place_one(late.s, 10, 300, 70), 1);  // 70 s: it aligns
  testing::expect_invariants(late.s);
}

TEST(AlignEnds, AfterAWaitWithNobodyWaitingTheScoringAlonePlaces) {
  AlignAfter after(60);
  EXPECT_EQ(place_one(after.s, 10, 300, 70), 0);
  AlignAfter always(0);  // the default: every placement aligns
  EXPECT_EQ(place_one(always.s, 10, 300, 70), 1);
}

// spec.alignEndsYieldToSmall, on the AlignAfter cluster (every placement may align): job 8, a
// 1-GPU job ending at 310 s, is placed; bin-packing ties n0 and n1 for it (aligned: n1).
struct YieldToSmall : AlignAfter {
  explicit YieldToSmall(bool yield) : AlignAfter(make(yield)) {}
  static std::shared_ptr<Config> make(bool yield) {
    auto c = AlignAfter::make(0);
    c->policy.align_ends_yield_small = yield;
    c->priority_classes = {{"low", 0}, {"high", 1}};  // the highest class pending decides
    return c;
  }
  // Submits the small job (submitted at `small_s`, priority `small_p`) and a whole-node job
  // (at `big_s`, priority `big_p`) and returns the node the small one gets at 10 s.
  NodeId small_node(TimeNs small_s, int32_t small_p, TimeNs big_s, int32_t big_p) {
    Job big = testing::make_job(9, "q", 4, 1, big_s * kSec, big_p);
    big.walltime_ns = 100 * kSec;
    Job small = testing::make_job(8, "q", 1, 1, small_s * kSec, small_p);
    small.walltime_ns = 300 * kSec;
    EXPECT_EQ(s.submit(big).status, SubmitStatus::kAccepted);
    EXPECT_EQ(s.submit(small).status, SubmitStatus::kAccepted);
    const CycleResult r = s.run_cycle(10 * kSec);
    s.apply(r, 10 * kSec);
    for (const auto& a : r.admitted)
      if (a.job == 8) return a.placement.pods.at(0).node;
    return -1;
  }
};

TEST(AlignEnds, YieldToSmallAlignsWhileAWholeNodeJobWaitsTheLongest) {
  YieldToSmall y(true);
  EXPECT_EQ(y.small_node(5, 0, 0, 0), 1);
  testing::expect_invariants(y.s);
}

TEST(AlignEnds, YieldToSmallLeavesTheScoringAloneWhileAOneGpuJobWaitsTheLongest) {
  YieldToSmall y(true);
  EXPECT_EQ(y.small_node(0, 0, 5, 0), 0);
  YieldToSmall off(false);  // the default: it aligns whoever waits
  EXPECT_EQ(off.small_node(0, 0, 5, 0), 1);
}

TEST(AlignEnds, YieldToSmallLooksAtTheHighestPriorityPending) {
  YieldToSmall big_first(true);
  EXPECT_EQ(big_first.small_node(0, 0, 5, 1), 1);  // the older small job is of a lower class
  YieldToSmall small_first(true);
  EXPECT_EQ(small_first.small_node(5, 1, 0, 0), 0);
}

}  // namespace
}  // namespace align_ends_test
}  // namespace sluice
