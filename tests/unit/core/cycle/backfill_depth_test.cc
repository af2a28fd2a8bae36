// Reservations for more than one job (spec.backfillDepth; cycle_walk.cc, "5" and "6b";
// docs/scheduling.md, "Reservation and backfill"): the first `depth` jobs in rank order that
// cannot be placed each reserve nodes the earlier reservations do not use, and a later job may
// start only if it delays none of them.
#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"
#include "restore_helper.h"

namespace sluice {
namespace backfill_depth_test {  // its own namespace: the unit tests build in unity batches
namespace {

constexpr TimeNs kSec = kNsPerSec;

// Three nodes of 4 GPUs, one queue. Running: n0 full until 200 s; n1 3 GPUs until 300 s
// (1 free); n2 2 GPUs until 5,000 s (2 free).
std::shared_ptr<Config> world(int depth) {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(3, 4);
  testing::add_queue(*c, "q", 100);  // quota is never the limit
  c->policy.backfill = true;
  c->policy.backfill_depth = depth;
  return c;
}

void fill(Scheduler& s) {
  testing::run_on(s, 1, 4, 0, 200);
  testing::run_on(s, 2, 3, 1, 300);
  testing::run_on(s, 3, 2, 2, 5000);
}

// A and B (4 GPUs each, 600 s) wait for whole nodes; C (1 GPU, `c_walltime_s`) comes last.
CycleResult submit_and_cycle(Scheduler& s, TimeNs c_walltime_s) {
  for (JobId id : {10, 11}) {
    Job big = testing::make_job(id, "q", 4, 1, static_cast<TimeNs>(id) * kSec);
    big.walltime_ns = 600 * kSec;
    EXPECT_EQ(s.submit(big).status, SubmitStatus::kAccepted);
  }
  Job c = testing::make_job(12, "q", 1, 1, 30 * kSec);
  c.walltime_ns = c_walltime_s * kSec;
  EXPECT_EQ(s.submit(c).status, SubmitStatus::kAccepted);
  return s.run_cycle(100 * kSec);
}

NodeId node_of(const CycleResult& r, JobId id) {
  for (const auto& a : r.admitted)
    if (a.job == id) return a.placement.pods.at(0).node;
  return -1;
}

TEST(BackfillDepth, OneReservationLetsALongJobTakeTheSecondBigJobsNode) {
  Scheduler s(world(1));
  fill(s);
  const CycleResult r = submit_and_cycle(s, 1000);
  EXPECT_EQ(r.reservation.job, 10);  // A: n0 from 200 s
  EXPECT_EQ(r.reservation.start_ns, 200 * kSec);
  EXPECT_TRUE(r.later_reservations.empty());
  // C (ends at 1,100 s) packs onto n1, the fuller node: B's wait for n1 grows to 1,100 s.
  EXPECT_EQ(node_of(r, 12), 1);
  testing::expect_invariants(s);
}

TEST(BackfillDepth, TwoReservationsKeepTheSecondBigJobsNodeFree) {
  Scheduler s(world(2));
  fill(s);
  const CycleResult r = submit_and_cycle(s, 1000);
  EXPECT_EQ(r.reservation.job, 10);
  EXPECT_EQ(r.reservation.nodes, std::vector<NodeId>{0});
  ASSERT_EQ(r.later_reservations.size(), 1u);  // B: n1 (not n0, A's) from 300 s
  EXPECT_EQ(r.later_reservations[0].job, 11);
  EXPECT_EQ(r.later_reservations[0].start_ns, 300 * kSec);
  EXPECT_EQ(r.later_reservations[0].nodes, std::vector<NodeId>{1});
  EXPECT_EQ(node_of(r, 12), 2);  // C runs past 300 s: placed again off n1
  s.apply(r, 100 * kSec);
  testing::expect_invariants(s);
}

TEST(BackfillDepth, AJobThatEndsBeforeTheReservationStartsMayUseItsNodes) {
  Scheduler s(world(2));
  fill(s);
  const CycleResult r = submit_and_cycle(s, 150);  // C ends at 250 s, before B's 300 s
  ASSERT_EQ(r.later_reservations.size(), 1u);
  EXPECT_EQ(node_of(r, 12), 1);
}

TEST(BackfillDepth, AJobThatWouldDelayEveryReservationWaitsWithTheReason) {
  Scheduler s(world(3));
  testing::run_on(s, 1, 4, 0, 200);
  testing::run_on(s, 2, 3, 1, 300);
  testing::run_on(s, 3, 3, 2, 400);                   // n2: 1 free, whole at 400 s
  Job e = testing::make_job(9, "q", 4, 1, 5 * kSec);  // a third big job, ranked first
  e.walltime_ns = 600 * kSec;
  ASSERT_EQ(s.submit(e).status, SubmitStatus::kAccepted);
  const CycleResult r = submit_and_cycle(s, 1000);
  EXPECT_EQ(r.reservation.job, 9);  // n0 from 200 s, then A n1 from 300 s, B n2 from 400 s
  ASSERT_EQ(r.later_reservations.size(), 2u);
  EXPECT_EQ(r.later_reservations[1].job, 11);
  EXPECT_EQ(r.later_reservations[1].nodes, std::vector<NodeId>{2});
  EXPECT_TRUE(r.admitted.empty());  // C fits n1 or n2 now, but would delay A or B
  bool seen = false;
  for (const auto& pd : r.pending)
    if (pd.job == 12) {
      seen = true;
      EXPECT_EQ(pd.reason.code, PendingCode::kReservation);
    }
  EXPECT_TRUE(seen);
}

TEST(BackfillDepth, AnIncrementalCycleKeepsTheLaterReservations) {
  Scheduler s(world(2));
  fill(s);
  for (JobId id : {10, 11}) {
    Job big = testing::make_job(id, "q", 4, 1, static_cast<TimeNs>(id) * kSec);
    big.walltime_ns = 600 * kSec;
    ASSERT_EQ(s.submit(big).status, SubmitStatus::kAccepted);
  }
  CycleResult r = s.run_cycle(100 * kSec);
  ASSERT_EQ(r.later_reservations.size(), 1u);
  s.apply(r, 100 * kSec);
  // A new 1-GPU job that would run past 300 s: it must stay off n1 (B's), so it takes n2.
  Job d = testing::make_job(13, "q", 1, 1, 110 * kSec);
  d.walltime_ns = 1000 * kSec;
  ASSERT_EQ(s.submit(d).status, SubmitStatus::kAccepted);
  r = s.run_cycle(120 * kSec);
  EXPECT_TRUE(r.incremental);
  ASSERT_EQ(r.later_reservations.size(), 1u);
  EXPECT_EQ(r.later_reservations[0].job, 11);
  EXPECT_EQ(node_of(r, 13), 2);
  s.apply(r, 120 * kSec);
  testing::expect_invariants(s);
}

}  // namespace
}  // namespace backfill_depth_test
}  // namespace sluice
