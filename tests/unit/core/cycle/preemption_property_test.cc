// Property tests of preemption: only preemptible work is ever a victim, never a victim without
// its preemptor starting in the same cycle, capacity and quota invariants still hold, and over
// 10,000 random cycles there is no preemption loop.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <random>

#include "../test_config.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace {

std::shared_ptr<Config> preempting_world(int nodes, int gpus, int queues, bool reclaim,
                                         bool borrow = false) {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(nodes, gpus, 2);
  for (int q = 0; q < queues; ++q) {
    testing::add_queue(*c, "q" + std::to_string(q), nodes * gpus / queues + 1);
    auto& pc = c->cluster_queues.back().preemption;
    pc.within_cluster_queue =
        q % 2 ? WithinQueuePolicy::kLowerOrNewerEqualPriority : WithinQueuePolicy::kLowerPriority;
    if (reclaim) pc.reclaim_within_cohort = ReclaimPolicy::kAny;
    if (reclaim && borrow) {
      pc.borrow_within_cohort = BorrowWithinCohortPolicy::kLowerPriority;
      if (q % 2) pc.max_priority_threshold = 50;
    }
  }
  c->priority_classes = {{"low", 0}, {"mid", 50}, {"high", 100}};
  c->policy.max_preemptions_per_job = 2;
  return c;
}

void check_preemptions(const Scheduler& s, const CycleResult& r) {
  std::set<JobId> admitted;
  for (const auto& a : r.admitted) admitted.insert(a.job);
  std::set<JobId> victims;
  for (const auto& p : r.preempted) {
    const auto* v = s.find_running(p.victim);
    RC_ASSERT(v != nullptr);  // victims are running jobs
    // Never a non-preemptible victim (best-effort work, over its budget, always is).
    RC_ASSERT(v->job.preemptible || v->admission.best_effort);
    RC_ASSERT(s.config().cluster_queues[v->admission.queue].preemptible ||
              v->admission.best_effort);
    if (p.borrow_within_cohort) {  // lower priority and within the threshold
      const auto* pre = s.find_pending(p.preemptor);
      RC_ASSERT(pre != nullptr);
      RC_ASSERT(v->job.priority < pre->job.priority);
      const auto& pc = s.config().cluster_queues[pre->queue].preemption;
      RC_ASSERT(!pc.max_priority_threshold || v->job.priority <= *pc.max_priority_threshold);
    }
    RC_ASSERT(admitted.count(p.preemptor) == 1u);  // its preemptor starts now
    RC_ASSERT(victims.insert(p.victim).second);    // evicted once
    RC_ASSERT(s.preemption_count(p.victim) < s.config().policy.max_preemptions_per_job);
  }
}

RC_GTEST_PROP(PreemptionProperty, OnlyPreemptibleVictimsAndPreemptorsRun, ()) {
  const int queues = *rc::gen::inRange(1, 4);
  auto c = preempting_world(*rc::gen::inRange(1, 4), *rc::gen::inRange(2, 9), queues,
                            *rc::gen::arbitrary<bool>(), *rc::gen::arbitrary<bool>());
  // Sometimes the default namespace has a small GPU-hour budget: over it, work runs as
  // best-effort and is the first victim.
  if (*rc::gen::arbitrary<bool>()) {
    Budget b;
    b.name = b.namespace_ = "default";
    b.gpu_hours_milli = 100;  // 0.1 GPU-hour: 6 GPU-minutes
    b.period_ns = 3600 * kNsPerSec;
    c->budgets.push_back(b);
  }
  Scheduler s(c);
  JobId next = 1;
  std::vector<JobId> running;
  for (int cycle = 0; cycle < 10; ++cycle) {
    const TimeNs now = cycle * 30 * kNsPerSec;
    for (int k = *rc::gen::inRange(0, 5); k > 0; --k) {
      Job j = testing::make_job(next++, "q" + std::to_string(*rc::gen::inRange(0, queues)),
                                *rc::gen::inRange(1, 5), *rc::gen::inRange(1, 3), now,
                                *rc::gen::element(0, 50, 100));
      j.preemptible = *rc::gen::inRange(0, 4) != 0;
      s.submit(j);
    }
    CycleResult r = s.run_cycle(now);
    check_preemptions(s, r);
    s.apply(r, now);
    std::string why;
    RC_ASSERT(s.check_invariants(&why));
    for (const auto& pr : r.preempted)
      RC_ASSERT(s.find_pending(pr.victim) != nullptr);  // back in its queue
    if (*rc::gen::inRange(0, 3) == 0 && !s.running().empty())
      s.finish(s.running().begin()->first, now + kNsPerSec);
  }
}

TEST(PreemptionProperty, NoPreemptionLoopOver10000Cycles) {
  auto c = preempting_world(2, 8, 2, true, true);
  Scheduler s(c);
  std::mt19937_64 rng(7);  // seed printed by the assertion messages below
  JobId next = 1;
  std::map<JobId, TimeNs> ends;
  int64_t preemptions = 0;
  for (int cycle = 0; cycle < 10'000; ++cycle) {
    const TimeNs now = static_cast<TimeNs>(cycle) * 10 * kNsPerSec;
    for (auto it = ends.begin(); it != ends.end();) {
      if (it->second <= now && s.find_running(it->first)) {
        s.finish(it->first, now);
        it = ends.erase(it);
      } else {
        ++it;
      }
    }
    if (rng() % 3 == 0) {
      Job j = testing::make_job(next++, "q" + std::to_string(rng() % 2), 1 + rng() % 8, 1, now,
                                static_cast<int32_t>(50 * (rng() % 3)));
      j.preemptible = rng() % 5 != 0;
      s.submit(j);
    }
    CycleResult r = s.run_cycle(now);
    for (const auto& p : r.preempted) {
      ASSERT_LT(s.preemption_count(p.victim), c->policy.max_preemptions_per_job)
          << "seed 7, cycle " << cycle;
      ends.erase(p.victim);
    }
    preemptions += static_cast<int64_t>(r.preempted.size());
    s.apply(r, now);
    for (const auto& a : r.admitted) ends[a.job] = now + (1 + rng() % 60) * 10 * kNsPerSec;
  }
  // Every job is preempted at most max_preemptions_per_job times: no loop.
  EXPECT_LE(preemptions, static_cast<int64_t>(next) * c->policy.max_preemptions_per_job);
  EXPECT_GT(preemptions, 0);  // the workload does exercise preemption
  std::string why;
  EXPECT_TRUE(s.check_invariants(&why)) << why;
}

}  // namespace
}  // namespace sluice
