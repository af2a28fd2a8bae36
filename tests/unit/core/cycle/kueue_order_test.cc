// SchedulerPolicy ordering: kueue: Kueue's entry order (non-borrowing heads first, then
// priority, then time), one head per queue per round, victims' quota held for the cycle, and
// preemption only within nominal quota. Each test runs the same input with the composite order
// too, to show what the knob changes.
#include <gtest/gtest.h>

#include <algorithm>

#include "../test_config.h"
#include "core/cycle/scheduler.h"
#include "restore_helper.h"

namespace sluice {
namespace {

constexpr int32_t kLow = 0, kHigh = 100;

std::shared_ptr<Config> two_queues(int64_t nominal_a, int64_t nominal_b, int gpus,
                                   OrderingMode mode) {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(1, gpus);
  testing::add_queue(*c, "a", nominal_a);
  testing::add_queue(*c, "b", nominal_b);
  c->priority_classes = {{"low", kLow}, {"high", kHigh}};
  c->policy.backfill = false;
  c->policy.ordering = mode;
  return c;
}

bool admitted(const CycleResult& r, JobId id) {
  return std::any_of(r.admitted.begin(), r.admitted.end(),
                     [&](const Admission& a) { return a.job == id; });
}

void submit(Scheduler& s, JobId id, const std::string& q, int gpus, TimeNs at, int32_t prio) {
  ASSERT_EQ(s.submit(testing::make_job(id, q, gpus, 1, at, prio)).status, SubmitStatus::kAccepted);
}

// A running job of queue q on node 0, GPUs [first, first + gpus).
void run(Scheduler& s, JobId id, const std::string& queue, QueueId q, int gpus, int first,
         int32_t prio) {
  testing::restore_one_pod(s, testing::make_job(id, queue, gpus, 1, 0, prio), q, 0, first);
}

TEST(KueueOrder, NonBorrowingHeadsBeforeHigherPriorityBorrowers) {
  for (OrderingMode mode : {OrderingMode::kComposite, OrderingMode::kKueue}) {
    // Cohort quota 4 (2 + 2), 8 GPUs. A (high, 3 GPUs) must borrow; B (low, 2) fits b's own
    // quota.
    Scheduler s(two_queues(2, 2, 8, mode));
    submit(s, 1, "a", 3, 1, kHigh);  // A
    submit(s, 2, "b", 2, 1, kLow);   // B
    const CycleResult r = s.run_cycle(1);
    if (mode == OrderingMode::kKueue) {
      EXPECT_TRUE(admitted(r, 2));   // B first: it does not borrow
      EXPECT_FALSE(admitted(r, 1));  // then A needs 3 of the 2 left
    } else {
      EXPECT_TRUE(admitted(r, 1));   // A first: priority
      EXPECT_FALSE(admitted(r, 2));  // 1 left for B's 2
    }
  }
}

TEST(KueueOrder, OneHeadPerQueuePerRound) {
  for (OrderingMode mode : {OrderingMode::kComposite, OrderingMode::kKueue}) {
    // Quota is no limit (a: 4, b: 2); 4 GPUs are. a: A2 (priority 50) and A1 (20); b: B1 (10).
    // (No DRF or debt term: the composite order is priority and age alone here.)
    auto config = two_queues(4, 2, 4, mode);
    config->policy.weights.drf = 0;
    config->policy.weights.debt = 0;
    Scheduler s(config);
    submit(s, 1, "a", 2, 1, 20);  // A1
    submit(s, 2, "a", 2, 2, 50);  // A2
    submit(s, 3, "b", 2, 3, 10);  // B1
    const CycleResult r = s.run_cycle(3);
    EXPECT_TRUE(admitted(r, 2));
    if (mode == OrderingMode::kKueue) {
      EXPECT_TRUE(admitted(r, 3));   // round 1: A2 and B1
      EXPECT_FALSE(admitted(r, 1));  // round 2: A1 finds no GPU
    } else {
      EXPECT_TRUE(admitted(r, 1));  // A1's score beats B1's
      EXPECT_FALSE(admitted(r, 3));
    }
  }
}

TEST(KueueOrder, VictimsQuotaIsHeldForTheCycle) {
  for (OrderingMode mode : {OrderingMode::kComposite, OrderingMode::kKueue}) {
    // Cohort quota 4 (2 + 2), 8 GPUs: quota is the limit. L (a, low, 2) and R (b, 2) run.
    auto config = two_queues(2, 2, 8, mode);
    config->cluster_queues[0].preemption.within_cluster_queue = WithinQueuePolicy::kLowerPriority;
    Scheduler s(config);
    run(s, 10, "a", 0, 2, 0, kLow);   // L
    run(s, 11, "b", 1, 2, 2, kHigh);  // R
    submit(s, 1, "a", 1, 1, kHigh);   // P: evicts L, uses 1 of the 2 freed
    submit(s, 2, "b", 1, 1, kLow);    // Q: must borrow the other one
    const CycleResult r = s.run_cycle(1);
    ASSERT_EQ(r.preempted.size(), 1u);
    EXPECT_EQ(r.preempted[0].victim, 10);
    EXPECT_TRUE(admitted(r, 1));
    // kueue: L's quota counts until the end of the cycle; composite: reused at once.
    EXPECT_EQ(admitted(r, 2), mode == OrderingMode::kComposite);
  }
}

TEST(KueueOrder, PreemptsOnlyWithinNominalQuotaWithoutBorrowWithinCohort) {
  for (OrderingMode mode : {OrderingMode::kComposite, OrderingMode::kKueue}) {
    // a: nominal 2, L (low, 2) runs; b idle (lends 2). P (high) asks 3: more than a's nominal.
    auto config = two_queues(2, 2, 8, mode);
    config->cluster_queues[0].preemption.within_cluster_queue = WithinQueuePolicy::kLowerPriority;
    Scheduler s(config);
    run(s, 10, "a", 0, 2, 0, kLow);
    submit(s, 1, "a", 3, 1, kHigh);
    const CycleResult r = s.run_cycle(1);
    // composite: evicts L and borrows 1; kueue: no preemption beyond nominal quota.
    EXPECT_EQ(r.preempted.size(), mode == OrderingMode::kComposite ? 1u : 0u);
    EXPECT_EQ(admitted(r, 1), mode == OrderingMode::kComposite);
    if (mode == OrderingMode::kKueue) {
      // With borrowWithinCohort the same preemptor may evict L and borrow.
      auto bwc = two_queues(2, 2, 8, mode);
      auto& pc = bwc->cluster_queues[0].preemption;
      pc.within_cluster_queue = WithinQueuePolicy::kLowerPriority;
      pc.reclaim_within_cohort = ReclaimPolicy::kLowerPriority;
      pc.borrow_within_cohort = BorrowWithinCohortPolicy::kLowerPriority;
      Scheduler t(bwc);
      run(t, 10, "a", 0, 2, 0, kLow);
      submit(t, 1, "a", 3, 1, kHigh);
      const CycleResult rt = t.run_cycle(1);
      EXPECT_EQ(rt.preempted.size(), 1u);
      EXPECT_TRUE(admitted(rt, 1));
    }
  }
}

}  // namespace
}  // namespace sluice
