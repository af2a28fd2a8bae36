// Summarised walks (Scheduler::set_summarize_pending): a full cycle over a backlog behind a full
// cluster stops once every job left would fail as an earlier job of its queue and shape did,
// and its summary gives those jobs the reason a full listing gives them.
#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace {

using testing::add_queue;
using testing::make_cluster;
using testing::make_job;

// Two schedulers on the same state: one lists every pending job, one summarises.
struct Twins {
  std::shared_ptr<Config> c = std::make_shared<Config>();
  std::unique_ptr<Scheduler> listing, summing;
  void build() {
    listing = std::make_unique<Scheduler>(c);
    summing = std::make_unique<Scheduler>(c);
    summing->set_summarize_pending(true);
  }
  void submit(const Job& j) {
    ASSERT_EQ(listing->submit(j).status, SubmitStatus::kAccepted);
    ASSERT_EQ(summing->submit(j).status, SubmitStatus::kAccepted);
  }
  // Runs a full cycle on both, checks they agree, applies it; returns the summarised result.
  CycleResult cycle(TimeNs now) {
    CycleResult l = listing->run_cycle(now, Scheduler::CycleMode::kFull);
    CycleResult s = summing->run_cycle(now, Scheduler::CycleMode::kFull);
    EXPECT_EQ(s.admitted, l.admitted);
    EXPECT_EQ(s.preempted, l.preempted);
    EXPECT_EQ(s.rejected, l.rejected);
    EXPECT_TRUE(l.summary.empty());
    size_t k = 0;
    for (const auto& pd : l.pending) {
      if (k < s.pending.size() && s.pending[k].job == pd.job) {
        EXPECT_EQ(s.pending[k++], pd);
        continue;
      }
      const auto* p = summing->find_pending(pd.job);
      const PendingReason* why = p ? summarized_reason(s.summary, p->queue, p->shape) : nullptr;
      EXPECT_TRUE(why && *why == pd.reason) << "job " << pd.job;
    }
    EXPECT_EQ(k, s.pending.size());
    listing->apply(l, now);
    summing->apply(s, now);
    return s;
  }
};

TEST(Summary, BacklogBehindAFullClusterIsSummarisedAfterItsFirstFailures) {
  Twins t;
  t.c->cluster = make_cluster(2, 8);  // 16 GPUs
  add_queue(*t.c, "a", 8, 0);
  add_queue(*t.c, "b", 8, 0);
  t.build();
  JobId id = 1;
  for (int i = 0; i < 16; ++i) t.submit(make_job(id++, i % 2 ? "a" : "b", 1, 1, 0));
  // 1,000 jobs behind them in both queues, of 1 and 2 GPUs.
  for (int i = 0; i < 1000; ++i)
    t.submit(make_job(id++, i % 2 ? "a" : "b", 1 + i % 3 % 2, 1, kNsPerSec + i));
  const CycleResult r = t.cycle(10 * kNsPerSec);
  EXPECT_EQ(r.admitted.size(), 16u);
  EXPECT_LT(r.pending.size(), 100u);  // walked up to the first failures, then summarised
  ASSERT_EQ(r.summary.size(), 2u);
  EXPECT_FALSE(r.summary[0].held);
  EXPECT_EQ(r.summary[0].by_shape.size(), 2u);  // 1 GPU and 2 GPUs
  // A freed GPU: the next cycle admits one job and summarises the rest again.
  t.listing->finish(1, 20 * kNsPerSec);
  t.summing->finish(1, 20 * kNsPerSec);
  const CycleResult r2 = t.cycle(20 * kNsPerSec);
  EXPECT_EQ(r2.admitted.size(), 1u);
  EXPECT_LT(r2.pending.size(), 100u);
}

TEST(Summary, JobsWithAFallbackTierAreWalkedNotSummarised) {
  Twins t;
  t.c->cluster = make_cluster(1, 8);
  add_queue(*t.c, "a", 8);
  t.build();
  JobId id = 1;
  t.submit(make_job(id++, "a", 8, 1, 0));
  for (int i = 0; i < 200; ++i) t.submit(make_job(id++, "a", 1, 1, kNsPerSec + i));
  Job tiered = make_job(id++, "a", 1, 1, 2 * kNsPerSec);  // ranks last
  tiered.fallback.after_ns = 60 * kNsPerSec;
  t.submit(tiered);
  const CycleResult r = t.cycle(10 * kNsPerSec);
  // Its decision depends on how long it waited, not on its shape: the walk reaches it.
  EXPECT_EQ(r.pending.back().job, tiered.id);
  EXPECT_TRUE(r.summary.empty());
}

TEST(Summary, AQueueThatMayPreemptIsSummarisedOnlyAfterItsAttempt) {
  Twins t;
  t.c->cluster = make_cluster(1, 8);
  t.c->priority_classes = {{"low", 0}, {"high", 100}};
  const QueueId q = add_queue(*t.c, "a", 8);
  t.c->cluster_queues[q].preemption.within_cluster_queue = WithinQueuePolicy::kLowerPriority;
  t.build();
  JobId id = 1;
  for (int i = 0; i < 8; ++i) t.submit(make_job(id++, "a", 1, 1, 0, 0));  // low, running
  t.cycle(kNsPerSec);
  // A backlog of low jobs, then one high job that ranks first and evicts one of them.
  for (int i = 0; i < 300; ++i) t.submit(make_job(id++, "a", 1, 1, 2 * kNsPerSec + i, 0));
  const JobId high = id++;
  t.submit(make_job(high, "a", 1, 1, 3 * kNsPerSec, 100));
  const CycleResult r = t.cycle(10 * kNsPerSec);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_EQ(r.admitted[0].job, high);
  EXPECT_EQ(r.preempted.size(), 1u);
  EXPECT_LT(r.pending.size(), 100u);
  EXPECT_EQ(r.summary.size(), 1u);
}

TEST(Summary, HeldQueuesAreSummarisedWithTheirHolder) {
  Twins t;
  t.c->cluster = make_cluster(1, 8);
  add_queue(*t.c, "a", 8, std::nullopt, "all", QueueingStrategy::kStrictFIFO);
  t.build();
  JobId id = 1;
  t.submit(make_job(id++, "a", 4, 1, 0));
  t.cycle(kNsPerSec);
  const JobId head = id;
  t.submit(make_job(id++, "a", 8, 1, 2 * kNsPerSec));  // does not fit: blocks the rest
  for (int i = 0; i < 100; ++i) t.submit(make_job(id++, "a", 1, 1, 3 * kNsPerSec + i));
  const CycleResult r = t.cycle(10 * kNsPerSec);
  EXPECT_TRUE(r.admitted.empty());
  ASSERT_EQ(r.summary.size(), 1u);
  EXPECT_TRUE(r.summary[0].held);
  EXPECT_EQ(r.summary[0].reason.code, PendingCode::kStrictFifoBlocked);
  EXPECT_EQ(r.summary[0].reason.blocker, head);
}

}  // namespace
}  // namespace sluice
