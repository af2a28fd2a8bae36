// Bounded fairness (issue 19): the DRF and debt terms apply during a job's first window of
// waiting and never exceed half the gap between priority classes; a job submitted an aging
// horizon ago is no victim of a preemptor it would rank ahead of.
#include "core/order/fairness_bounds.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../test_config.h"
#include "core/cycle/scheduler.h"
#include "core/order/score.h"

namespace sluice {
namespace fairness_bounds_test {
namespace {

using testing::add_queue;
using testing::make_cluster;
using testing::make_job;

TEST(FairnessBounds, WindowIsAThirtiethOfTheHorizonAndCapHalfTheClassGap) {
  Config c;
  c.priority_classes = {{"low", 100}, {"high", 1000}};
  const FairnessBounds b = fairness_bounds(c, priority_scale(c));     // scale 1000
  EXPECT_EQ(b.window_ns, 120 * kNsPerSec);                            // 1 h / 30
  EXPECT_DOUBLE_EQ(b.cap, 0.45);                                      // (1000 - 100) / 1000 / 2
  EXPECT_DOUBLE_EQ(bounded_fairness(3.0, b, 10 * kNsPerSec), -0.45);  // capped
  EXPECT_DOUBLE_EQ(bounded_fairness(0.2, b, 10 * kNsPerSec), -0.2);
  EXPECT_DOUBLE_EQ(bounded_fairness(3.0, b, 120 * kNsPerSec), 0);  // past the window
  Config one;                                                      // fewer than two classes: no cap
  EXPECT_TRUE(std::isinf(fairness_bounds(one, priority_scale(one)).cap));
}

// One 8-GPU node; queue `small` (nominal 1) runs 7 GPUs it borrowed from `big` (nominal 7).
// Pending, one GPU free, equal priority: small's job submitted at 0, big's at 30 s.
JobId first_admitted_at(TimeNs now) {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(1, 8);
  c->priority_classes = {{"low", 0}, {"high", 1000}};
  add_queue(*c, "big", 7);
  add_queue(*c, "small", 1);
  Scheduler s(c);
  EXPECT_EQ(s.submit(make_job(1, "small", 7, 1, 0, 1000)).status, SubmitStatus::kAccepted);
  s.apply(s.run_cycle(0), 0);
  EXPECT_EQ(s.running_count(), 1u);
  s.submit(make_job(2, "small", 1, 1, 0, 1000));
  s.submit(make_job(3, "big", 1, 1, 30 * kNsPerSec, 1000));
  const CycleResult r = s.run_cycle(now);
  EXPECT_EQ(r.admitted.size(), 1u);
  return r.admitted.empty() ? 0 : r.admitted[0].job;
}

TEST(FairnessBounds, FairnessOrdersYoungJobsOnly) {
  // At 40 s both are young: small's share (7 of 1 nominal) puts big's later job first.
  EXPECT_EQ(first_admitted_at(40 * kNsPerSec), 3u);
  // At 200 s small's job waited past the 120 s window: arrival order, it goes first.
  EXPECT_EQ(first_admitted_at(200 * kNsPerSec), 2u);
}

// One 8-GPU node, one queue that preempts lower priority; a low job (8 GPUs) runs from 0.
// A high job (8 GPUs) submitted just before `now` evicts it only while the low job was
// submitted less than an aging horizon (600 s) ago.
size_t evictions_at(TimeNs now) {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(1, 8);
  c->priority_classes = {{"low", 0}, {"high", 1000}};
  c->policy.aging_horizon_ns = 600 * kNsPerSec;
  const QueueId q = add_queue(*c, "q", 8);
  c->cluster_queues[q].preemption.within_cluster_queue = WithinQueuePolicy::kLowerPriority;
  Scheduler s(c);
  s.submit(make_job(1, "q", 8, 1, 0, 0));
  s.apply(s.run_cycle(0), 0);
  EXPECT_EQ(s.running_count(), 1u);
  s.submit(make_job(2, "q", 8, 1, now - 10 * kNsPerSec, 1000));
  return s.run_cycle(now).preempted.size();
}

TEST(FairnessBounds, NoVictimThatWouldComeBackStarving) {
  EXPECT_EQ(evictions_at(500 * kNsPerSec), 1u);  // victim waited 500 s < 600 s: evicted
  EXPECT_EQ(evictions_at(700 * kNsPerSec), 0u);  // it would be starving on return: kept
}

}  // namespace
}  // namespace fairness_bounds_test
}  // namespace sluice
