// Property tests of the scheduling cycle on random clusters, queues and jobs:
//   - no GPU, CPU or memory over-allocated; quota usage equals running jobs' usage;
//   - no queue exceeds its quota or borrowing limit;
//   - gangs are all-or-nothing;
//   - same input -> identical decisions (also from a freshly built scheduler, and from one that
//     summarises the end of its walk);
//   - an incremental cycle admits and evicts exactly what a full one would, also when queues
//     preempt (within the queue, reclaim in the cohort, with a minimum runtime) and hold older
//     pending work.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace {

struct World {
  std::shared_ptr<Config> config;
  std::vector<Job> jobs;
};

// preempting: every queue preempts (some way), backfill off, so that most cycles check the
// incremental == full equivalence with older pending work in queues that preempt.
World gen_world(bool preempting = false) {
  World w;
  w.config = std::make_shared<Config>();
  auto& c = *w.config;
  const int nodes = *rc::gen::inRange(1, 7);
  const int gpus = *rc::gen::inRange(1, 9);
  c.cluster = testing::make_cluster(nodes, gpus, *rc::gen::inRange(1, 4));
  const int queues = *rc::gen::inRange(1, 5);
  for (int q = 0; q < queues; ++q) {
    const int nominal = *rc::gen::inRange(0, nodes * gpus + 1);
    const bool limit = *rc::gen::arbitrary<bool>();
    const auto strategy =
        *rc::gen::element(QueueingStrategy::kBestEffortFIFO, QueueingStrategy::kStrictFIFO);
    testing::add_queue(c, "q" + std::to_string(q), nominal,
                       limit ? std::optional<int64_t>(*rc::gen::inRange(0, 8)) : std::nullopt,
                       "all", strategy);
  }
  c.priority_classes = {{"low", 0}, {"high", 100}};
  // Preemption, on some queues: within the queue by priority, reclaim of lent quota in the
  // cohort, sometimes with a minimum runtime that victims pass between cycles.
  if (preempting || *rc::gen::arbitrary<bool>())
    for (auto& cq : c.cluster_queues) {
      cq.preemption.within_cluster_queue =
          *rc::gen::element(WithinQueuePolicy::kNever, WithinQueuePolicy::kLowerPriority,
                            WithinQueuePolicy::kLowerOrNewerEqualPriority);
      cq.preemption.reclaim_within_cohort = *rc::gen::element(
          ReclaimPolicy::kNever, ReclaimPolicy::kLowerPriority, ReclaimPolicy::kAny);
      cq.min_runtime_ns = *rc::gen::element(0, 0, 90, 150) * kNsPerSec;
    }
  // Incremental cycles keep the standing backfill reservation (see docs/scheduling.md), so the
  // exact incremental == full equivalence is checked with backfill off.
  c.policy.backfill = !preempting && *rc::gen::arbitrary<bool>();
  // Sometimes jobs starve within the run (cycles are a minute apart), so that starving jobs'
  // claims hold the others back; interactive jobs time out after two minutes.
  c.policy.aging_horizon_ns = *rc::gen::element(3600, 300, 150) * kNsPerSec;
  c.policy.interactive_timeout_ns = 120 * kNsPerSec;
  // Sometimes the order drops its fairness terms while nothing running is preemptible: the
  // rule flips as victims come and go, and an incremental cycle must still decide as a full one.
  c.policy.arrival_without_victims = *rc::gen::arbitrary<bool>();
  const int njobs = *rc::gen::inRange(1, 40);
  for (int j = 0; j < njobs; ++j) {
    const int q = *rc::gen::inRange(0, queues);
    const int per_pod = *rc::gen::inRange(0, gpus + 2);
    const int pods = *rc::gen::inRange(1, 4);
    Job job = testing::make_job(static_cast<JobId>(j + 1), "q" + std::to_string(q), per_pod, pods,
                                *rc::gen::inRange(0, 100) * kNsPerSec, *rc::gen::element(0, 100));
    if (per_pod == 1 && *rc::gen::arbitrary<bool>()) {  // a fractional GPU
      auto& ps = job.pod_sets[0];
      ps.gpu_milli = *rc::gen::inRange(100, 1000);
      ps.requests[kGpu] = ps.gpu_milli;
    }
    if (*rc::gen::inRange(0, 4) == 0) job.topology = {0, *rc::gen::arbitrary<bool>()};
    job.preemptible = *rc::gen::inRange(0, 4) != 0;
    job.interactive = *rc::gen::inRange(0, 6) == 0;
    // A fallback tier (nothing to fall back to on one flavor, but a job a summary must not
    // decide by its shape).
    if (*rc::gen::inRange(0, 8) == 0) job.fallback.after_ns = 90 * kNsPerSec;
    w.jobs.push_back(job);
  }
  return w;
}

void check_cycle(const Scheduler& s, const CycleResult& r) {
  for (const auto& a : r.admitted) {
    const auto* p = s.find_pending(a.job);
    RC_ASSERT(p != nullptr);
    // All pods of the gang, or none.
    RC_ASSERT(a.placement.pods.size() == static_cast<size_t>(p->job.pod_count()));
  }
}

// A scheduler that summarises the end of its walk (set_summarize_pending) decides the same: the
// same admissions, evictions, rejections and bookkeeping for the next cycle, what it lists is
// what the full listing says, in its order, and its summary gives every job it did not list the
// reason the full listing gives.
void check_summarized(const CycleResult& listed, const CycleResult& summed, const Scheduler& s) {
  RC_ASSERT(summed.admitted == listed.admitted);
  RC_ASSERT(summed.preempted == listed.preempted);
  RC_ASSERT(summed.reservation == listed.reservation);
  RC_ASSERT(summed.strict_blockers == listed.strict_blockers);
  RC_ASSERT(summed.held_by == listed.held_by);
  RC_ASSERT(summed.held_root == listed.held_root);
  RC_ASSERT(summed.held_queue == listed.held_queue);
  RC_ASSERT(summed.preempt_attempted == listed.preempt_attempted);
  RC_ASSERT(summed.preempt_capped == listed.preempt_capped);
  RC_ASSERT(listed.summary.empty());
  auto by_id = [](std::vector<Rejection> v) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.job < b.job; });
    return v;
  };
  RC_ASSERT(by_id(summed.rejected) == by_id(listed.rejected));
  size_t k = 0;
  bool by_shape = false;
  for (const auto& pd : listed.pending) {
    if (k < summed.pending.size() && summed.pending[k].job == pd.job) {
      RC_ASSERT(summed.pending[k] == pd);
      ++k;
    } else {
      const auto* p = s.find_pending(pd.job);
      RC_ASSERT(p != nullptr);
      const PendingReason* why = summarized_reason(summed.summary, p->queue, p->shape);
      RC_ASSERT(why != nullptr);
      RC_ASSERT(*why == pd.reason);
      RC_ASSERT(pd.starving == is_starving(p->job, s.config().policy, listed.now));
      by_shape = by_shape || (pd.reason.code != PendingCode::kHeldForStarving &&
                              pd.reason.code != PendingCode::kStrictFifoBlocked);
    }
  }
  RC_ASSERT(k == summed.pending.size());
  RC_CLASSIFY(summed.pending.size() < listed.pending.size(), "walk stopped early");
  RC_CLASSIFY(by_shape, "summarised by shape");
}

void run_world(const World& w, int cycles) {
  Scheduler s(w.config);
  Scheduler twin(w.config);
  Scheduler unlisted(w.config);
  unlisted.set_summarize_pending(true);
  // Half the jobs up front, the rest trickle in between cycles.
  const size_t half = w.jobs.size() / 2;
  for (size_t i = 0; i < half; ++i) {
    s.submit(w.jobs[i]);
    twin.submit(w.jobs[i]);
    unlisted.submit(w.jobs[i]);
  }
  size_t next = half;
  std::vector<JobId> running;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    const TimeNs now = (100 + cycle * 60) * kNsPerSec;
    CycleResult r = s.run_cycle(now);
    RC_ASSERT(r == s.run_cycle(now));     // same state, same decisions
    RC_ASSERT(r == twin.run_cycle(now));  // an identical scheduler decides identically
    const CycleResult u = unlisted.run_cycle(now);
    check_summarized(r, u, unlisted);
    // An incremental cycle admits and evicts exactly what a full one would.
    if (!w.config->policy.backfill) {
      const CycleResult full = s.run_cycle(now, Scheduler::CycleMode::kFull);
      RC_ASSERT(r.admitted == full.admitted);
      RC_ASSERT(r.preempted == full.preempted);
    }
    RC_CLASSIFY(r.incremental && !r.preempt_attempted.empty() &&
                    std::any_of(r.preempt_attempted.begin(), r.preempt_attempted.end(),
                                [](JobId id) { return id != 0; }),
                "incremental with a standing preemption attempt");
    check_cycle(s, r);
    s.apply(r, now);
    twin.apply(r, now);
    unlisted.apply(u, now);
    std::string why;
    RC_ASSERT(s.check_invariants(&why));
    for (const auto& a : r.admitted) running.push_back(a.job);
    for (const auto& pr : r.preempted) std::erase(running, pr.victim);  // back to pending
    // Finish a random subset of the running jobs.
    std::vector<JobId> still;
    const bool finish_some = *rc::gen::arbitrary<bool>();
    for (JobId id : running) {
      if (finish_some && *rc::gen::inRange(0, 3) == 0) {
        RC_ASSERT(s.finish(id, now + kNsPerSec));
        RC_ASSERT(twin.finish(id, now + kNsPerSec));
        RC_ASSERT(unlisted.finish(id, now + kNsPerSec));
      } else {
        still.push_back(id);
      }
    }
    running = still;
    RC_ASSERT(s.check_invariants(&why));
    // New arrivals; on some cycles nothing finishes, so the next cycle is incremental.
    for (int k = 0; k < 3 && next < w.jobs.size(); ++k, ++next) {
      s.submit(w.jobs[next]);
      twin.submit(w.jobs[next]);
      unlisted.submit(w.jobs[next]);
    }
  }
  for (JobId id : running) s.finish(id, 10'000 * kNsPerSec);
  // Everything returned: all capacity free again, no drift.
  RC_ASSERT(s.alloc().total_gpu_milli_free() == s.alloc().total_gpu_milli_capacity());
}

RC_GTEST_PROP(CycleProperty, InvariantsHoldAndDecisionsAreDeterministic, ()) {
  run_world(gen_world(), 6);
}

RC_GTEST_PROP(CycleProperty, IncrementalEqualsFullWhenQueuesPreempt, ()) {
  run_world(gen_world(true), 12);
}

}  // namespace
}  // namespace sluice
