// Incremental cycles with queues that preempt and hold older pending work: they stay
// incremental while the older jobs' failed preemption attempts would fail again, and become full
// as soon as something that could change that outcome happened (a victim passing its minimum
// runtime, an admission, a job ending). Each incremental result is compared with a full cycle.
#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace {

constexpr TimeNs kSec = kNsPerSec;

// One node of 4 GPUs, one queue that preempts lower-priority work of its own, victims protected
// for their first 10 s.
std::shared_ptr<Config> world() {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(1, 4);
  testing::add_queue(*c, "q0", 4);
  c->cluster_queues[0].preemption.within_cluster_queue = WithinQueuePolicy::kLowerPriority;
  c->cluster_queues[0].min_runtime_ns = 10 * kSec;
  c->priority_classes = {{"low", 0}, {"high", 100}};
  c->policy.backfill = false;
  return c;
}

CycleResult cycle(Scheduler& s, TimeNs now) {
  CycleResult r = s.run_cycle(now);
  const CycleResult full = s.run_cycle(now, Scheduler::CycleMode::kFull);
  EXPECT_EQ(r.admitted, full.admitted) << "at " << now / kSec << " s";
  EXPECT_EQ(r.preempted, full.preempted) << "at " << now / kSec << " s";
  s.apply(r, now);
  return r;
}

TEST(IncrementalPreemption, StaysIncrementalWhileTheFailedAttemptWouldFailAgain) {
  Scheduler s(world());
  // t=1: four low-priority 1-GPU jobs fill the node (protected until t=11).
  for (JobId id = 1; id <= 4; ++id) s.submit(testing::make_job(id, "q0", 1, 1, 0, 0));
  EXPECT_EQ(cycle(s, 1 * kSec).admitted.size(), 4u);
  // t=2: a high-priority job; every victim is inside its minimum runtime: it waits.
  s.submit(testing::make_job(5, "q0", 1, 1, 2 * kSec, 100));
  CycleResult r = cycle(s, 2 * kSec);
  EXPECT_FALSE(r.incremental);  // admissions since the last cycle
  EXPECT_TRUE(r.admitted.empty());
  ASSERT_EQ(r.preempt_attempted.size(), 1u);
  EXPECT_EQ(r.preempt_attempted[0], 5u);  // job 5 made the queue's attempt
  // t=3: another high-priority job arrives. Nothing changed for job 5: incremental, and the
  // new job does not get the queue's attempt (job 5, older, holds it).
  s.submit(testing::make_job(6, "q0", 1, 1, 3 * kSec, 100));
  r = cycle(s, 3 * kSec);
  EXPECT_TRUE(r.incremental);
  EXPECT_TRUE(r.admitted.empty());
  ASSERT_EQ(r.pending.size(), 1u);  // only the new job
  EXPECT_EQ(r.pending[0].job, 6u);
  // t=12: a third arrival; the victims left their minimum runtime at t=11: a full cycle, and
  // the two high-priority jobs each evict one low-priority job (one attempt per queue and
  // cycle: job 5 now, job 6 in the next cycle).
  s.submit(testing::make_job(7, "q0", 1, 1, 12 * kSec, 0));
  r = cycle(s, 12 * kSec);
  EXPECT_FALSE(r.incremental);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_EQ(r.admitted[0].job, 5u);
  EXPECT_EQ(r.preempted.size(), 1u);
}

TEST(IncrementalPreemption, AHigherRankedArrivalTakesTheAttempt) {
  Scheduler s(world());
  for (JobId id = 1; id <= 4; ++id) s.submit(testing::make_job(id, "q0", 1, 1, 0, 0));
  cycle(s, 20 * kSec);  // t=20: the node is full of low-priority work (protected until t=30)
  // A high-priority job waits: nothing to evict yet.
  s.submit(testing::make_job(5, "q0", 1, 1, 21 * kSec, 100));
  CycleResult r = cycle(s, 21 * kSec);
  EXPECT_FALSE(r.incremental);
  EXPECT_EQ(r.preempt_attempted[0], 5u);
  // An older-submitted job of the same priority ranks first: it takes the queue's attempt in
  // the incremental cycle, as it would in a full one (where job 5 would get none).
  s.submit(testing::make_job(6, "q0", 1, 1, 15 * kSec, 100));
  r = cycle(s, 22 * kSec);
  EXPECT_TRUE(r.incremental);
  EXPECT_EQ(r.preempt_attempted[0], 6u);
}

TEST(IncrementalPreemption, NothingPreemptibleRunningKeepsCyclesIncremental) {
  Scheduler s(world());
  // Non-preemptible work fills the node: no running job is a possible victim, so every attempt
  // fails and admissions do not force full cycles (as in a queue that never preempts).
  for (JobId id = 1; id <= 3; ++id) {
    Job j = testing::make_job(id, "q0", 1, 1, 0, 0);
    j.preemptible = false;
    s.submit(j);
  }
  EXPECT_EQ(cycle(s, 1 * kSec).admitted.size(), 3u);
  s.submit(testing::make_job(4, "q0", 2, 1, 2 * kSec, 100));  // waits: 1 GPU free
  CycleResult r = cycle(s, 2 * kSec);
  EXPECT_TRUE(r.admitted.empty());
  Job last = testing::make_job(5, "q0", 1, 1, 3 * kSec, 0);
  last.preemptible = false;
  s.submit(last);
  r = cycle(s, 3 * kSec);  // admits job 5 ...
  EXPECT_TRUE(r.incremental);
  ASSERT_EQ(r.admitted.size(), 1u);
  s.submit(testing::make_job(6, "q0", 1, 1, 4 * kSec, 100));
  EXPECT_TRUE(cycle(s, 4 * kSec).incremental);  // ... and the next cycle stays incremental
}

TEST(IncrementalPreemption, NothingPreemptibleRunningHoldsNoReclaimAttempt) {
  // Two queues of one cohort that reclaim lent quota, running only non-preemptible work: a job
  // that cannot be placed makes no preemption attempt, so an admission in the cohort does not
  // turn the next incremental cycle into a full one.
  auto c = world();
  testing::add_queue(*c, "q1", 4);
  for (auto& q : c->cluster_queues) q.preemption.reclaim_within_cohort = ReclaimPolicy::kAny;
  Scheduler s(c);
  for (JobId id = 1; id <= 3; ++id) {
    Job j = testing::make_job(id, "q0", 1, 1, 0, 100);
    j.preemptible = false;
    s.submit(j);
  }
  EXPECT_EQ(cycle(s, 1 * kSec).admitted.size(), 3u);
  Job wide = testing::make_job(4, "q1", 2, 1, 2 * kSec, 100);  // 1 GPU free: it waits
  wide.preemptible = false;
  s.submit(wide);
  CycleResult r = cycle(s, 2 * kSec);
  EXPECT_TRUE(r.admitted.empty());
  for (JobId id : r.preempt_attempted) EXPECT_EQ(id, 0u);  // no search, no attempt held
  Job one = testing::make_job(5, "q0", 1, 1, 3 * kSec, 100);
  one.preemptible = false;
  s.submit(one);
  r = cycle(s, 3 * kSec);  // admitted in an incremental cycle, not restarted as a full one
  EXPECT_TRUE(r.incremental);
  EXPECT_EQ(r.admitted.size(), 1u);
}

TEST(IncrementalPreemption, AnAdmissionMakesTheNextCycleFull) {
  auto c = world();
  c->cluster = testing::make_cluster(1, 8);
  c->cluster_queues[0].resource_groups[0].flavors[0].resources[0].nominal = 8 * kMilliPerGpu;
  Scheduler s(c);
  for (JobId id = 1; id <= 4; ++id) s.submit(testing::make_job(id, "q0", 1, 1, 0, 0));
  cycle(s, 1 * kSec);
  // A 6-GPU high-priority job cannot start (4 free, victims protected).
  s.submit(testing::make_job(5, "q0", 6, 1, 2 * kSec, 100));
  EXPECT_TRUE(cycle(s, 2 * kSec).admitted.empty());
  // A small low-priority job fits (incremental): it is a new possible victim for job 5.
  s.submit(testing::make_job(6, "q0", 1, 1, 3 * kSec, 0));
  CycleResult r = cycle(s, 3 * kSec);
  EXPECT_TRUE(r.incremental);
  EXPECT_EQ(r.admitted.size(), 1u);
  // So the next cycle is full, even with nothing freed.
  s.submit(testing::make_job(7, "q0", 8, 1, 4 * kSec, 0));
  EXPECT_FALSE(cycle(s, 4 * kSec).incremental);
}

}  // namespace
}  // namespace sluice
