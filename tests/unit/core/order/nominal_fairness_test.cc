// Fairness within nominal quota (spec.ordering.fairnessWithinNominal): a job whose queue would
// stay within its nominal quota with it admitted has its DRF and debt terms scaled down, so
// such jobs go by priority and arrival; jobs that would borrow keep the terms.
#include "core/order/nominal_fairness.h"

#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace nominal_fairness_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using testing::add_queue;
using testing::make_cluster;
using testing::make_job;

constexpr TimeNs kSec = kNsPerSec;

std::vector<int64_t> nominal_gpus(int64_t gpus) {
  std::vector<int64_t> n(kMaxResources, 0);
  n[kGpu] = gpus * kMilliPerGpu;
  return n;
}

ResourceVec gpus(int64_t n) {
  ResourceVec v;
  v[kGpu] = n * kMilliPerGpu;
  v[kCpu] = 1000;  // not covered by the queue: does not count
  return v;
}

TEST(NominalFairness, FitsWhileUsagePlusRequestIsWithinNominal) {
  Config c;
  c.cluster = make_cluster(1, 8);
  const QueueId a = add_queue(c, "a", 4);
  QuotaTree quota(c);
  quota.add_usage(a, 0, kGpu, 3 * kMilliPerGpu);                          // a uses 3 of its 4
  EXPECT_TRUE(fits_within_nominal(quota, a, nominal_gpus(4), gpus(1)));   // 3 + 1 <= 4
  EXPECT_FALSE(fits_within_nominal(quota, a, nominal_gpus(4), gpus(2)));  // 3 + 2 > 4: borrows
  EXPECT_DOUBLE_EQ(nominal_fairness_factor(0.25, quota, a, nominal_gpus(4), gpus(1)), 0.25);
  EXPECT_DOUBLE_EQ(nominal_fairness_factor(0.25, quota, a, nominal_gpus(4), gpus(2)), 1.0);
  EXPECT_DOUBLE_EQ(nominal_fairness_factor(1.0, quota, a, nominal_gpus(4), gpus(1)), 1.0);
}

// One 6-GPU node; queues `a` and `b`, nominal 4 GPUs each, one class. a runs `a_running` GPUs,
// b runs 5 - a_running: one GPU free. Pending: a's 1-GPU job submitted at T0, b's at T0 + 10 s.
// Which starts at T0 + 20 s (both young: inside the 2 min fairness window)?
JobId first_admitted(double scale, int a_running) {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(1, 6);
  c->priority_classes = {{"low", 0}, {"high", 1000}};
  c->policy.fairness_within_nominal = scale;
  add_queue(*c, "a", 4);
  add_queue(*c, "b", 4);
  Scheduler s(c);
  s.submit(make_job(10, "a", a_running, 1, 0, 1000));
  s.submit(make_job(11, "b", 5 - a_running, 1, 0, 1000));
  s.apply(s.run_cycle(0), 0);
  EXPECT_EQ(s.running_count(), 2u);
  const TimeNs t0 = 30 * kSec;
  s.submit(make_job(1, "a", 1, 1, t0, 1000));
  s.submit(make_job(2, "b", 1, 1, t0 + 10 * kSec, 1000));
  const CycleResult r = s.run_cycle(t0 + 20 * kSec);
  EXPECT_EQ(r.admitted.size(), 1u);
  return r.admitted.empty() ? 0 : r.admitted[0].job;
}

TEST(NominalFairness, WithinNominalJobsGoByArrival) {
  // Off: both fit their queue's nominal quota; a's larger share (3/4 against 2/4) puts b's
  // later job first.
  EXPECT_EQ(first_admitted(1.0, 3), 2u);
  // Scale 0: neither job's queue would borrow, so neither has fairness terms: arrival order.
  EXPECT_EQ(first_admitted(0.0, 3), 1u);
  // A scale that leaves a share gap larger than 10 s of aging: fairness still decides.
  EXPECT_EQ(first_admitted(0.5, 3), 2u);
}

TEST(NominalFairness, BorrowingJobsKeepTheTerms) {
  // a runs its full 4: its job would borrow and keeps its penalty (share 1); b's job, within
  // nominal, loses b's: b's later job first, on or off.
  EXPECT_EQ(first_admitted(1.0, 4), 2u);
  EXPECT_EQ(first_admitted(0.0, 4), 2u);
}

}  // namespace
}  // namespace nominal_fairness_test
}  // namespace sluice
