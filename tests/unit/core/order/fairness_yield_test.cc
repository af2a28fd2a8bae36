// Fairness yield (spec.ordering.fairnessYieldPercentile): a job that waited longer than its
// class's recent admitted-wait percentile loses the DRF and debt terms and goes by arrival.
#include "core/order/fairness_yield.h"

#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace fairness_yield_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using testing::add_queue;
using testing::make_cluster;
using testing::make_job;

constexpr TimeNs kSec = kNsPerSec;
constexpr TimeNs kWindow = 120 * kSec;  // the plain fairness window at the default horizon

TEST(FairnessYield, OffLeavesTheWindowAlone) {
  RecentWaits off;
  EXPECT_FALSE(off.enabled());
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(off.record(1000, 5 * kSec));
  EXPECT_EQ(off.window(1000, kWindow), kWindow);
  EXPECT_TRUE(off.windows(kWindow).empty());
}

TEST(FairnessYield, ThresholdIsTheClassPercentileOnceKnown) {
  RecentWaits w(50);
  // Waits 1 s .. 32 s: nothing known before the 32nd; then the nearest-rank median, 16 s.
  for (int i = 1; i < 32; ++i) EXPECT_FALSE(w.record(1000, i * kSec));
  EXPECT_EQ(w.window(1000, kWindow), kWindow);
  EXPECT_TRUE(w.record(1000, 32 * kSec));
  EXPECT_EQ(w.window(1000, kWindow), 16 * kSec + 1);
  EXPECT_EQ(w.window(100, kWindow), kWindow);  // another class knows nothing yet
  // Never wider than the plain window.
  for (int i = 0; i < 32; ++i) w.record(100, 600 * kSec);
  EXPECT_EQ(w.window(100, kWindow), kWindow);
  EXPECT_EQ(w.windows(kWindow), (std::vector<TimeNs>{16 * kSec + 1, kWindow}));
  // Recomputed after 32 more admissions of the class, over the last 256 at most.
  for (int i = 0; i < 31; ++i) EXPECT_FALSE(w.record(1000, 0));
  EXPECT_TRUE(w.record(1000, 0));  // 64 waits, half of them 0: the median is 0
  EXPECT_EQ(w.window(1000, kWindow), 1);
  for (int i = 0; i < 256; ++i) w.record(1000, 3 * kSec);  // the old waits left the ring
  EXPECT_EQ(w.window(1000, kWindow), 3 * kSec + 1);
}

// One 8-GPU node; queues `big` (nominal 7) and `small` (nominal 1), one class. First, unless
// `history` is 0, 32 jobs of the class each wait `history` before they start (and end). Then
// small runs 7 GPUs it borrowed; pending, one GPU free: small's job submitted at T0, big's at
// T0 + 30 s. Which starts at T0 + 40 s?
JobId first_admitted(int32_t percentile, TimeNs history) {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(1, 8);
  c->priority_classes = {{"low", 0}, {"high", 1000}};
  c->policy.fairness_yield_percentile = percentile;
  add_queue(*c, "big", 7);
  add_queue(*c, "small", 1);
  Scheduler s(c);
  for (JobId i = 0; history > 0 && i < 32; ++i) {
    const TimeNs t = static_cast<TimeNs>(i) * 100 * kSec;
    s.submit(make_job(100 + i, "big", 1, 1, t, 1000));
    s.apply(s.run_cycle(t + history), t + history);
    EXPECT_TRUE(s.finish(100 + i, t + history + kSec));
  }
  const TimeNs t0 = 4000 * kSec;
  s.submit(make_job(1, "small", 7, 1, t0, 1000));
  s.apply(s.run_cycle(t0), t0);
  EXPECT_EQ(s.running_count(), 1u);
  s.submit(make_job(2, "small", 1, 1, t0, 1000));
  s.submit(make_job(3, "big", 1, 1, t0 + 30 * kSec, 1000));
  const CycleResult r = s.run_cycle(t0 + 40 * kSec);
  EXPECT_EQ(r.admitted.size(), 1u);
  return r.admitted.empty() ? 0 : r.admitted[0].job;
}

TEST(FairnessYield, AJobPastItsClassPercentileGoesByArrival) {
  // Off: both are inside the 120 s window; small's share puts big's later job first.
  EXPECT_EQ(first_admitted(0, 20 * kSec), 3u);
  // On, the class's jobs waited 20 s: small's job, 40 s in, yields no more; big's (10 s) keeps
  // its terms, which are smaller. Arrival order: small's job first.
  EXPECT_EQ(first_admitted(50, 20 * kSec), 2u);
  // On, but the class's recent waits are 60 s: both jobs are below them, fairness decides.
  EXPECT_EQ(first_admitted(50, 60 * kSec), 3u);
  // On, no history yet: the plain window.
  EXPECT_EQ(first_admitted(50, 0), 3u);
}

}  // namespace
}  // namespace fairness_yield_test
}  // namespace sluice
