// A preemptor ranks after the backfill reservation's holder and must not take the reserved
// nodes from it (cycle_walk.cc, "5a"; docs/scheduling.md, "Reservation and backfill"): when it
// would run past the reservation's start, its victim search stays off the reserved nodes, as a
// plain admission is placed again off them by the backfill check (issue 19).
#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"
#include "restore_helper.h"

namespace sluice {
namespace preempt_reservation_test {  // its own namespace: the unit tests build in unity batches
namespace {

constexpr TimeNs kSec = kNsPerSec;
constexpr int32_t kLow = 0, kHigh = 100;

// Two nodes of 4 GPUs, one cohort: "big" (nominal 4, no preemption), "small" (nominal 4,
// preempts its own lower-priority work) and "other" (nominal 8, runs the long jobs).
std::shared_ptr<Config> world() {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(2, 4);
  testing::add_queue(*c, "big", 4);
  testing::add_queue(*c, "small", 4);
  testing::add_queue(*c, "other", 8);
  c->cluster_queues[1].preemption.within_cluster_queue = WithinQueuePolicy::kLowerPriority;
  c->priority_classes = {{"low", kLow}, {"high", kHigh}};
  c->policy.backfill = true;
  return c;
}

// Puts a running job with walltime `walltime_s` on `node`, GPUs [first, first + gpus).
void run_on(Scheduler& s, JobId id, const std::string& queue, QueueId q, int gpus, NodeId node,
            int first, int32_t priority, bool preemptible, TimeNs walltime_s) {
  Job j = testing::make_job(id, queue, gpus, 1, 0, priority);
  j.preemptible = preemptible;
  j.walltime_ns = walltime_s * kSec;
  testing::restore_one_pod(s, j, q, node, first);
}

// n0: h1 (other, 3 GPUs, ends at 200 s) and l1 (small, low, 1 GPU, ends at 150 s): n0 is free
// at 200 s. n1: h2 (other, 4 GPUs, ends at 5000 s). Nothing is free now.
void fill(Scheduler& s) {
  run_on(s, 1, "other", 2, 3, 0, 0, kHigh, false, 200);   // h1
  run_on(s, 2, "small", 1, 1, 0, 3, kLow, true, 150);     // l1
  run_on(s, 3, "other", 2, 4, 1, 0, kHigh, false, 5000);  // h2
}

// b (big, high, 4 GPUs on one node, runs 600 s) first, then p (small, high, 1 GPU, runs
// `p_walltime_s`). Cycle at 100 s.
CycleResult submit_and_cycle(Scheduler& s, TimeNs p_walltime_s) {
  Job b = testing::make_job(10, "big", 4, 1, 10 * kSec, kHigh);
  b.walltime_ns = 600 * kSec;
  Job p = testing::make_job(11, "small", 1, 1, 20 * kSec, kHigh);
  p.walltime_ns = p_walltime_s * kSec;
  EXPECT_EQ(s.submit(b).status, SubmitStatus::kAccepted);
  EXPECT_EQ(s.submit(p).status, SubmitStatus::kAccepted);
  return s.run_cycle(100 * kSec);
}

TEST(PreemptReservation, PreemptorThatWouldDelayTheReservationEvictsNothing) {
  Scheduler s(world());
  fill(s);
  // b (big, 4 GPUs on one node) first: it reserves n0 from 200 s. Then p (small, high, 1 GPU,
  // runs 1000 s): the only victim, l1, is on n0; p there would hold a GPU of n0 until 1,100 s.
  const CycleResult r = submit_and_cycle(s, 1000);
  EXPECT_EQ(r.reservation.job, 10);  // b holds n0 from 200 s
  EXPECT_EQ(r.reservation.start_ns, 200 * kSec);
  EXPECT_TRUE(r.admitted.empty());   // p waits ...
  EXPECT_TRUE(r.preempted.empty());  // ... and l1 keeps running
  bool reason_seen = false;
  for (const auto& pd : r.pending)
    if (pd.job == 11) {
      reason_seen = true;
      EXPECT_EQ(pd.reason.code, PendingCode::kReservation);
      EXPECT_EQ(pd.reason.blocker, 10);
    }
  EXPECT_TRUE(reason_seen);
  testing::expect_invariants(s);
}

TEST(PreemptReservation, PreemptorFindsItsVictimsOffTheReservedNodes) {
  Scheduler s(world());
  run_on(s, 1, "other", 2, 3, 0, 0, kHigh, false, 200);   // h1, n0
  run_on(s, 2, "small", 1, 1, 0, 3, kLow, true, 150);     // l1, n0 (the cheaper victim)
  run_on(s, 3, "other", 2, 3, 1, 0, kHigh, false, 5000);  // h2, n1
  run_on(s, 4, "small", 1, 1, 1, 3, kLow, true, 3000);    // l2, n1
  // b reserves n0 from 200 s; p (runs 1000 s) may not run there, but it may evict l2 on n1,
  // which the reservation does not need (the search used to pick l1 and then give up).
  const CycleResult r = submit_and_cycle(s, 1000);
  EXPECT_EQ(r.reservation.job, 10);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_EQ(r.admitted[0].job, 11);
  ASSERT_EQ(r.admitted[0].placement.pods.size(), 1u);
  EXPECT_EQ(r.admitted[0].placement.pods[0].node, 1);
  ASSERT_EQ(r.preempted.size(), 1u);
  EXPECT_EQ(r.preempted[0].victim, 4);
  testing::expect_invariants(s);
  // The reserved node is back in service for the next cycle's placements.
  EXPECT_EQ(s.run_cycle(101 * kSec).reservation.job, 10);
  testing::expect_invariants(s);
}

TEST(PreemptReservation, PreemptorThatEndsBeforeTheReservationStillPreempts) {
  Scheduler s(world());
  fill(s);
  // The same, but p runs 50 s: it ends (at 150 s) before the reservation starts (200 s).
  const CycleResult r = submit_and_cycle(s, 50);
  EXPECT_EQ(r.reservation.job, 10);
  ASSERT_EQ(r.admitted.size(), 1u);  // p replaces l1 on n0
  EXPECT_EQ(r.admitted[0].job, 11);
  ASSERT_EQ(r.preempted.size(), 1u);
  EXPECT_EQ(r.preempted[0].victim, 2);
  testing::expect_invariants(s);
}

TEST(PreemptReservation, WithoutAReservationThePreemptorEvicts) {
  auto c = world();
  c->policy.backfill = false;  // no reservation: nothing to protect
  Scheduler s(c);
  fill(s);
  const CycleResult r = submit_and_cycle(s, 1000);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_EQ(r.admitted[0].job, 11);
  ASSERT_EQ(r.preempted.size(), 1u);
  EXPECT_EQ(r.preempted[0].victim, 2);
}

}  // namespace
}  // namespace preempt_reservation_test
}  // namespace sluice
