// spec.withoutVictims: while no job, running or pending, may ever be preempted, the composite
// order drops its DRF and debt terms (ordering: arrival) and placement its end alignment
// (alignEnds: false); once preemptible work runs or waits, the policy applies in full again.
#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"
#include "restore_helper.h"

namespace sluice {
namespace without_victims_test {  // its own namespace: the unit tests build in unity batches
namespace {

using testing::add_queue;
using testing::make_cluster;
using testing::make_job;

constexpr TimeNs kSec = kNsPerSec;

// One 8-GPU node, one class; queues `big` and `small` in one cohort.
std::shared_ptr<Config> two_queues(bool arrival, int64_t big, int64_t small) {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(1, 8);
  c->priority_classes = {{"high", 1000}};
  c->policy.arrival_without_victims = arrival;
  add_queue(*c, "big", big);
  add_queue(*c, "small", small);
  return c;
}

// One 8-GPU node; queues `big` (nominal 7) and `small` (nominal 1), one class, no preemption.
// small runs 7 GPUs it borrowed (preemptible or not); pending, one GPU free: small's job
// submitted at T0, big's at T0 + 30 s, and perhaps a preemptible 2-GPU job of big's that cannot
// start. Which starts at T0 + 40 s?
JobId first_admitted(bool arrival, bool running_preemptible, bool pending_preemptible = false) {
  Scheduler s(two_queues(arrival, 7, 1));
  const TimeNs t0 = 4000 * kSec;
  Job borrowed = make_job(1, "small", 7, 1, t0, 1000);
  borrowed.preemptible = running_preemptible;
  s.submit(borrowed);
  s.apply(s.run_cycle(t0), t0);
  EXPECT_EQ(s.running_count(), 1u);
  Job mine = make_job(2, "small", 1, 1, t0, 1000);
  Job theirs = make_job(3, "big", 1, 1, t0 + 30 * kSec, 1000);
  mine.preemptible = theirs.preemptible = false;
  s.submit(mine);
  s.submit(theirs);
  if (pending_preemptible) s.submit(make_job(4, "big", 2, 1, t0 + 35 * kSec, 1000));  // waits
  const CycleResult r = s.run_cycle(t0 + 40 * kSec);
  EXPECT_EQ(r.without_victims, !running_preemptible && !pending_preemptible);
  EXPECT_EQ(r.admitted.size(), 1u);
  return r.admitted.empty() ? 0 : r.admitted[0].job;
}

TEST(WithoutVictims, NothingToPreemptOrdersByArrival) {
  // Off: small's share puts big's later job first, whether or not anything is preemptible.
  EXPECT_EQ(first_admitted(false, false), 3u);
  EXPECT_EQ(first_admitted(false, true), 3u);
  // On, and the running job may not be preempted: arrival order, small's job first.
  EXPECT_EQ(first_admitted(true, false), 2u);
  // On, but the running job is a possible victim: the policy in full, as off.
  EXPECT_EQ(first_admitted(true, true), 3u);
  // On, nothing preemptible runs, but preemptible work waits (it was evicted, or the cluster is
  // full): the policy in full, so that an overloaded cluster of mixed work keeps its order.
  EXPECT_EQ(first_admitted(true, false, true), 3u);
}

// Four nodes of 4 GPUs, one queue, bin-packing, end alignment on. n0, n1 and n2 run 2 GPUs each
// until 100, 400 and 1,000 s (the scoring ties them); a 1-GPU job of 300 s arrives at 10 s.
// Aligned it goes to n1, whose work ends closest after its own end; unaligned to n0.
NodeId placed_on(bool align_without_victims, bool running_preemptible, TimeNs after = -1) {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(4, 4);
  add_queue(*c, "q", 100);
  c->policy.align_ends = true;
  c->policy.align_without_victims = align_without_victims;
  c->policy.align_without_victims_after_ns = after;
  c->policy.gpu_scoring = ScoringPolicy::kBinPack;
  Scheduler s(c);
  const TimeNs ends[] = {100, 400, 1000};
  for (NodeId n = 0; n < 3; ++n) {
    Job j = make_job(static_cast<JobId>(n + 1), "q", 2);
    j.walltime_ns = ends[n] * kSec;
    j.preemptible = running_preemptible;
    testing::restore_one_pod(s, j, 0, n, 0);
  }
  Job j = make_job(10, "q", 1, 1, 10 * kSec);
  j.walltime_ns = 300 * kSec;
  j.preemptible = false;
  EXPECT_EQ(s.submit(j).status, SubmitStatus::kAccepted);
  const CycleResult r = s.run_cycle(10 * kSec);
  testing::expect_invariants(s);
  return r.admitted.size() == 1 ? r.admitted[0].placement.pods.at(0).node : -1;
}

TEST(WithoutVictims, NothingToPreemptPlacesWithoutAlignment) {
  EXPECT_EQ(placed_on(true, false), 1);  // the default: aligned either way
  EXPECT_EQ(placed_on(true, true), 1);
  EXPECT_EQ(placed_on(false, false), 0);  // alignEnds: false while nothing is preemptible
  EXPECT_EQ(placed_on(false, true), 1);   // a possible victim runs: aligned again
  // Its own alignEndsAfter: nobody has waited an hour for room, so no alignment while nothing
  // is preemptible; with a victim running, spec.alignEndsAfter (0 s) applies: aligned.
  EXPECT_EQ(placed_on(true, false, 3600 * kSec), 0);
  EXPECT_EQ(placed_on(true, true, 3600 * kSec), 1);
  EXPECT_EQ(placed_on(true, false, 0), 1);
}

// The rule follows the running set: once the last preemptible job ended, the next cycle orders
// by arrival.
TEST(WithoutVictims, TheLastVictimEndingSwitchesTheOrder) {
  Scheduler s(two_queues(true, 6, 2));
  const TimeNs t0 = 4000 * kSec;
  Job borrowed = make_job(1, "small", 7, 1, t0, 1000);  // borrows 5, not preemptible
  borrowed.preemptible = false;
  Job victim = make_job(2, "big", 1, 1, t0, 1000);  // big's, within its quota; preemptible
  s.submit(borrowed);
  s.submit(victim);
  s.apply(s.run_cycle(t0), t0);
  ASSERT_EQ(s.running_count(), 2u);
  Job mine = make_job(3, "small", 1, 1, t0 + 10 * kSec, 1000);
  Job theirs = make_job(4, "big", 1, 1, t0 + 30 * kSec, 1000);
  mine.preemptible = theirs.preemptible = false;
  s.submit(mine);
  s.submit(theirs);
  CycleResult r = s.run_cycle(t0 + 40 * kSec);
  EXPECT_FALSE(r.without_victims);
  EXPECT_TRUE(r.admitted.empty());  // the node is full
  s.apply(r, t0 + 40 * kSec);
  ASSERT_TRUE(s.finish(2, t0 + 50 * kSec));  // the only victim ends: one GPU free
  r = s.run_cycle(t0 + 60 * kSec);
  EXPECT_TRUE(r.without_victims);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_EQ(r.admitted[0].job, 3u);  // by arrival; with the DRF term big's job 4 would go first
}

}  // namespace
}  // namespace without_victims_test
}  // namespace sluice
