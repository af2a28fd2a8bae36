// Starvation freedom: under a continuous stream of higher-priority jobs that saturate the
// cluster, a low-priority job is admitted within the class horizon (4 aging horizons) plus one
// job runtime; a starving job's claim holds back jobs of higher classes only from then on; an
// evicted job's age restarts at its eviction.
#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"
#include "core/order/score.h"

namespace sluice {
namespace starvation_test {  // its own namespace: the unit tests build in unity batches
namespace {

using testing::add_queue;
using testing::make_cluster;
using testing::make_job;

TEST(Starvation, LowPriorityJobStartsWithinHorizonPlusOneRuntime) {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(2, 8);  // 16 GPUs
  c->priority_classes = {{"low", 0}, {"high", 1000}};
  c->policy.aging_horizon_ns = 600 * kNsPerSec;  // 10 minutes
  add_queue(*c, "batch", 16);
  const TimeNs runtime = 120 * kNsPerSec;  // every high job runs 2 minutes

  Scheduler s(c);
  JobId next = 1;
  // The low job wants a whole node (8 GPUs); high jobs are 4-GPU and keep arriving, so the
  // cluster never has 8 GPUs on one node free unless the scheduler holds capacity for it.
  // The cluster is saturated by high-priority work before the low job arrives at t=10 s.
  for (int k = 0; k < 4; ++k)
    ASSERT_EQ(s.submit(make_job(next++, "batch", 4, 1, 0, 1000)).status, SubmitStatus::kAccepted);
  const JobId low = next++;
  const TimeNs low_submit = 10 * kNsPerSec;
  std::map<JobId, TimeNs> ends;
  TimeNs admitted_at = -1;
  for (TimeNs now = 0; now <= 3600 * kNsPerSec && admitted_at < 0; now += 10 * kNsPerSec) {
    if (now == low_submit) {
      ASSERT_EQ(s.submit(make_job(low, "batch", 8, 1, now, 0)).status, SubmitStatus::kAccepted);
    }
    for (auto it = ends.begin(); it != ends.end();) {
      if (it->second <= now) {
        s.finish(it->first, now);
        it = ends.erase(it);
      } else {
        ++it;
      }
    }
    // Two high-priority 4-GPU jobs arrive every 10 s: far more than the cluster can run.
    for (int k = 0; k < 2; ++k) s.submit(make_job(next++, "batch", 4, 1, now, 1000));
    CycleResult r = s.run_cycle(now);
    for (const auto& a : r.admitted) {
      if (a.job == low) admitted_at = now;
      ends[a.job] = now + runtime;
    }
    s.apply(r, now);
  }
  // Bound: class horizon (4 x 600 s) + one runtime (120 s) + one cycle period (10 s).
  ASSERT_GE(admitted_at, 0) << "low-priority job starved";
  EXPECT_LE(admitted_at - low_submit, (4 * 600 + 120 + 10) * kNsPerSec);
  // And it did wait: before the horizon, high-priority work goes first.
  EXPECT_GE(admitted_at - low_submit, 600 * kNsPerSec);
}

// One 8-GPU node with a 4-GPU high job running; a low 8-GPU job submitted at 0 waits.
std::shared_ptr<Config> claim_config() {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(1, 8);
  c->priority_classes = {{"low", 0}, {"high", 1000}};
  c->policy.aging_horizon_ns = 600 * kNsPerSec;
  c->policy.backfill = false;
  add_queue(*c, "q", 8);
  return c;
}

bool admitted(const CycleResult& r, JobId id) {
  for (const auto& a : r.admitted)
    if (a.job == id) return true;
  return false;
}

TEST(Starvation, LowClassClaimHoldsItsClassNotHigherOnesBeforeClassHorizon) {
  Scheduler s(claim_config());
  ASSERT_EQ(s.submit(make_job(1, "q", 4, 1, 0, 1000)).status, SubmitStatus::kAccepted);
  ASSERT_EQ(s.submit(make_job(2, "q", 8, 1, 0, 0)).status, SubmitStatus::kAccepted);
  CycleResult r = s.run_cycle(0);
  ASSERT_TRUE(admitted(r, 1));  // 4 of 8 GPUs busy; job 2 does not fit
  s.apply(r, 0);
  // t = 700 s: job 2 is starving (waited > 600 s) and claims the node. A new low 4-GPU job is
  // held behind the claim; a new high one is not (its class is above the claimant's).
  const TimeNs t = 700 * kNsPerSec;
  ASSERT_EQ(s.submit(make_job(3, "q", 4, 1, t, 0)).status, SubmitStatus::kAccepted);
  ASSERT_EQ(s.submit(make_job(4, "q", 4, 1, t, 1000)).status, SubmitStatus::kAccepted);
  r = s.run_cycle(t, Scheduler::CycleMode::kFull);
  EXPECT_TRUE(admitted(r, 4));   // high: not held
  EXPECT_FALSE(admitted(r, 3));  // low: held for job 2
  for (const auto& pd : r.pending)
    if (pd.job == 3) {
      EXPECT_EQ(pd.reason.code, PendingCode::kHeldForStarving);
      EXPECT_EQ(pd.reason.blocker, 2u);
    }
}

TEST(Starvation, LowClassClaimHoldsEveryClassAfterClassHorizon) {
  Scheduler s(claim_config());
  ASSERT_EQ(s.submit(make_job(1, "q", 4, 1, 0, 1000)).status, SubmitStatus::kAccepted);
  ASSERT_EQ(s.submit(make_job(2, "q", 8, 1, 0, 0)).status, SubmitStatus::kAccepted);
  CycleResult r = s.run_cycle(0);
  s.apply(r, 0);
  // t = 2,400 s = 4 aging horizons: job 2's claim now holds the high job too.
  const TimeNs t = 2400 * kNsPerSec;
  ASSERT_EQ(s.submit(make_job(4, "q", 4, 1, t, 1000)).status, SubmitStatus::kAccepted);
  r = s.run_cycle(t, Scheduler::CycleMode::kFull);
  EXPECT_FALSE(admitted(r, 4));
  bool held = false;
  for (const auto& pd : r.pending)
    held |=
        pd.job == 4 && pd.reason.code == PendingCode::kHeldForStarving && pd.reason.blocker == 2;
  EXPECT_TRUE(held);
}

TEST(Starvation, EvictedJobAgesFromItsEviction) {
  auto c = claim_config();
  c->cluster_queues[0].preemption.within_cluster_queue = WithinQueuePolicy::kLowerPriority;
  Scheduler s(c);
  ASSERT_EQ(s.submit(make_job(1, "q", 8, 1, 0, 0)).status, SubmitStatus::kAccepted);
  CycleResult r = s.run_cycle(0);
  ASSERT_TRUE(admitted(r, 1));
  s.apply(r, 0);
  // t = 300 s: a high job evicts job 1, which goes back pending as of t. At 700 s it is not
  // starving (by its submit time it would be: 700 s >= 600 s), so it neither ranks first nor
  // claims capacity; it starves at t + 600 s.
  const TimeNs t = 300 * kNsPerSec;
  ASSERT_EQ(s.submit(make_job(2, "q", 8, 1, t, 1000)).status, SubmitStatus::kAccepted);
  r = s.run_cycle(t);
  ASSERT_EQ(r.preempted.size(), 1u);
  EXPECT_EQ(r.preempted[0].victim, 1u);
  s.apply(r, t);
  const auto* back = s.find_pending(1);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->job.submit_ns, t);
  EXPECT_FALSE(is_starving(back->job, c->policy, 700 * kNsPerSec));
  EXPECT_TRUE(is_starving(back->job, c->policy, t + 600 * kNsPerSec));
}

TEST(Starvation, NeverFittingJobDoesNotHoldTheCluster) {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(1, 8);
  c->policy.aging_horizon_ns = 10 * kNsPerSec;
  add_queue(*c, "q", 64);
  Scheduler s(c);
  // 16 GPUs on one node can never fit an 8-GPU node; it must not block the 1-GPU job.
  ASSERT_EQ(s.submit(make_job(1, "q", 16, 1, 0)).status, SubmitStatus::kAccepted);
  ASSERT_EQ(s.submit(make_job(2, "q", 1, 1, 100 * kNsPerSec)).status, SubmitStatus::kAccepted);
  CycleResult r = s.run_cycle(100 * kNsPerSec);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_EQ(r.admitted[0].job, 2u);
}

}  // namespace
}  // namespace starvation_test
}  // namespace sluice
