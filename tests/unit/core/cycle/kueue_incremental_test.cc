// Kueue's order (ordering: kueue) gets incremental cycles: when the last cycle was settled (every
// job it left pending fails on the state it left) and nothing was freed since, a cycle looks
// only at the new jobs, and falls back to a full cycle as soon as one of them would be admitted.
// A property test runs random Kueue-mode worlds (cohorts, StrictFIFO, borrowing limits, queues
// that hold unreclaimable quota back, fair sharing, backfill, interactive timeouts, partial
// admission, fallback tiers) through a scheduler that runs incremental cycles and one that runs
// only full ones, and checks that they decide the same, cycle by cycle.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>

#include "../test_config.h"
#include "core/cycle/scheduler.h"
#include "restore_helper.h"

namespace sluice {
namespace kueue_incremental_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

struct World {
  std::shared_ptr<Config> config;
  std::vector<Job> jobs;
};

World gen_world() {
  World w;
  w.config = std::make_shared<Config>();
  auto& c = *w.config;
  const int nodes = *rc::gen::inRange(1, 5);
  const int gpus = *rc::gen::inRange(1, 9);
  c.cluster = testing::make_cluster(nodes, gpus, *rc::gen::inRange(1, 4));
  const int queues = *rc::gen::inRange(1, 5);
  for (int q = 0; q < queues; ++q) {
    const bool limit = *rc::gen::arbitrary<bool>();
    const QueueId id = testing::add_queue(
        c, "q" + std::to_string(q), *rc::gen::inRange(0, nodes * gpus + 1),
        limit ? std::optional<int64_t>(*rc::gen::inRange(0, 8)) : std::nullopt,
        *rc::gen::element(std::string("all"), std::string("all"), std::string("other"),
                          std::string()),
        *rc::gen::element(QueueingStrategy::kBestEffortFIFO, QueueingStrategy::kStrictFIFO));
    // reclaimWithinCohort: Any never holds quota back; the others do (and with nothing
    // preemptible running, nothing is ever evicted).
    c.cluster_queues[id].preemption.reclaim_within_cohort =
        *rc::gen::element(ReclaimPolicy::kNever, ReclaimPolicy::kAny);
  }
  c.priority_classes = {{"low", 0}, {"high", 100}};
  c.policy.ordering = OrderingMode::kKueue;
  c.policy.fair_sharing.enable = *rc::gen::inRange(0, 4) == 0;
  c.policy.backfill = *rc::gen::arbitrary<bool>();
  c.policy.interactive_timeout_ns = 120 * kNsPerSec;
  const int njobs = *rc::gen::inRange(1, 40);
  for (int j = 0; j < njobs; ++j) {
    const int q = *rc::gen::inRange(0, queues);
    const int per_pod = *rc::gen::inRange(0, gpus + 2);
    Job job = testing::make_job(static_cast<JobId>(j + 1), "q" + std::to_string(q), per_pod,
                                *rc::gen::inRange(1, 4), *rc::gen::inRange(0, 100) * kNsPerSec,
                                *rc::gen::element(0, 100));
    auto& ps = job.pod_sets[0];
    if (per_pod == 1 && *rc::gen::arbitrary<bool>()) {  // a fractional GPU
      ps.gpu_milli = *rc::gen::inRange(100, 1000);
      ps.requests[kGpu] = ps.gpu_milli;
    }
    if (ps.count > 1 && *rc::gen::inRange(0, 4) == 0) ps.min_count = 1;  // partial admission
    if (*rc::gen::inRange(0, 4) == 0) job.topology = {0, *rc::gen::arbitrary<bool>()};
    job.interactive = *rc::gen::inRange(0, 6) == 0;
    if (*rc::gen::inRange(0, 8) == 0) job.fallback.after_ns = 90 * kNsPerSec;
    w.jobs.push_back(job);
  }
  return w;
}

std::vector<JobId> rejected_ids(const CycleResult& r) {
  std::vector<JobId> ids;
  for (const auto& rj : r.rejected) ids.push_back(rj.job);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// `s` runs its own cycles (incremental where it may), `full` only full ones; both get the same
// finishes and arrivals. Each cycle must admit, evict and reject the same, also compared with a
// full cycle run on `s`'s own state.
void run_world(const World& w, int cycles) {
  Scheduler s(w.config);
  Scheduler full(w.config);
  const size_t half = w.jobs.size() / 2;
  for (size_t i = 0; i < half; ++i) {
    s.submit(w.jobs[i]);
    full.submit(w.jobs[i]);
  }
  size_t next = half;
  std::vector<JobId> running;
  int incremental = 0;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    const TimeNs now = (100 + cycle * 60) * kNsPerSec;
    const CycleResult r = s.run_cycle(now);
    const CycleResult what_if = s.run_cycle(now, Scheduler::CycleMode::kFull);
    const CycleResult f = full.run_cycle(now, Scheduler::CycleMode::kFull);
    RC_ASSERT(r.admitted == what_if.admitted);
    RC_ASSERT(r.admitted == f.admitted);
    RC_ASSERT(r.preempted == f.preempted);
    RC_ASSERT(rejected_ids(r) == rejected_ids(f));
    RC_ASSERT(r.strict_blockers == f.strict_blockers);
    if (r.incremental) RC_ASSERT(r.evaluated <= what_if.evaluated);
    incremental += r.incremental ? 1 : 0;
    s.apply(r, now);
    full.apply(f, now);
    std::string why;
    RC_ASSERT(s.check_invariants(&why));
    for (const auto& a : r.admitted) running.push_back(a.job);
    for (const auto& pr : r.preempted) std::erase(running, pr.victim);  // back to pending
    // Finish some running jobs on some cycles; on the others nothing is freed, so the next cycle
    // may be incremental.
    std::vector<JobId> still;
    const bool finish_some = *rc::gen::inRange(0, 3) == 0;
    for (JobId id : running) {
      if (finish_some && *rc::gen::inRange(0, 3) == 0) {
        RC_ASSERT(s.finish(id, now + kNsPerSec));
        RC_ASSERT(full.finish(id, now + kNsPerSec));
      } else {
        still.push_back(id);
      }
    }
    running = still;
    for (int k = 0; k < 3 && next < w.jobs.size(); ++k, ++next) {
      s.submit(w.jobs[next]);
      full.submit(w.jobs[next]);
    }
  }
  RC_CLASSIFY(incremental > 0, "some cycles incremental");
  RC_CLASSIFY(incremental > cycles / 2, "most cycles incremental");
}

std::shared_ptr<Config> cohort_of_two(int64_t nominal_a, int64_t nominal_b, int gpus,
                                      std::optional<int64_t> borrowing_a = std::nullopt) {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(2, gpus);
  testing::add_queue(*c, "a", nominal_a, borrowing_a);
  testing::add_queue(*c, "b", nominal_b);
  c->policy.ordering = OrderingMode::kKueue;
  c->policy.backfill = false;
  return c;
}

void submit(Scheduler& s, JobId id, const std::string& q, int gpus, TimeNs at,
            int32_t priority = 0) {
  ASSERT_EQ(s.submit(testing::make_job(id, q, gpus, 1, at, priority)).status,
            SubmitStatus::kAccepted);
}

RC_GTEST_PROP(KueueIncremental, DecidesAsFullCyclesDo, ()) {
  run_world(gen_world(), 10);
}

// The cohort's quota (4 + 4) is all in use: the jobs left pending fail on the state the cycle
// leaves, so the next cycle looks only at the arrival.
TEST(KueueIncremental, ArrivalsIntoAFullCohortAreLookedAtAlone) {
  Scheduler s(cohort_of_two(4, 4, 8));
  submit(s, 1, "a", 4, 1);
  submit(s, 2, "a", 4, 2);
  submit(s, 3, "a", 4, 3);
  submit(s, 4, "b", 4, 4);
  const CycleResult first = s.run_cycle(10);
  ASSERT_EQ(first.admitted.size(), 2u);  // 1 and 4
  EXPECT_TRUE(first.settled);
  s.apply(first, 10);
  submit(s, 5, "b", 2, 20);
  const CycleResult r = s.run_cycle(30);
  EXPECT_TRUE(r.incremental);
  EXPECT_EQ(r.evaluated, 1);
  ASSERT_EQ(r.pending.size(), 1u);
  EXPECT_EQ(r.pending[0].job, 5);
  EXPECT_EQ(r.pending[0].reason.code, PendingCode::kQuota);
  EXPECT_EQ(r.admitted, s.run_cycle(30, Scheduler::CycleMode::kFull).admitted);
}

// An arrival that fits: the incremental cycle stops and a full one decides (the new job's
// admission changes what every later head of its rounds sees).
TEST(KueueIncremental, AnArrivalThatFitsMakesTheCycleFull) {
  Scheduler s(cohort_of_two(4, 4, 8, /*borrowing_a=*/0));
  submit(s, 1, "a", 4, 1);
  submit(s, 2, "a", 4, 2);  // a may not borrow: pending
  const CycleResult first = s.run_cycle(10);
  ASSERT_EQ(first.admitted.size(), 1u);
  EXPECT_TRUE(first.settled);
  s.apply(first, 10);
  submit(s, 3, "b", 2, 20);
  const CycleResult r = s.run_cycle(30);
  EXPECT_FALSE(r.incremental);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_EQ(r.admitted[0].job, 3);
}

// Queue a's head holds back the quota it cannot reclaim (reclaimWithinCohort: Never) for the
// rest of its round, so b's head, after it in the round, fails; on the state the cycle leaves it
// would fit. The cycle is not settled, and rightly: an arrival that ranks before b's head and
// fails moves that head into the next round, where nothing is held back, and a full cycle
// admits it although only the arrival is new.
TEST(KueueIncremental, QuotaHeldBackForARoundLeavesTheCycleUnsettled) {
  Scheduler s(cohort_of_two(4, 4, 8));
  // b runs 6 GPUs (2 borrowed from a); 2 of the cohort's 8 are free.
  testing::restore_one_pod(s, testing::make_job(100, "b", 6), 1, 0, 0);
  submit(s, 1, "a", 4, 1);  // within a's nominal 4, 2 free in the cohort: holds 4 back
  submit(s, 2, "b", 1, 2);  // borrows: after a's head, and the cohort has nothing left
  const CycleResult first = s.run_cycle(10);
  EXPECT_TRUE(first.admitted.empty());
  EXPECT_FALSE(first.settled);
  s.apply(first, 10);
  submit(s, 3, "b", 3, 20, /*priority=*/100);  // before job 2 in b; 3 do not fit
  const CycleResult r = s.run_cycle(30);
  EXPECT_FALSE(r.incremental);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_EQ(r.admitted[0].job, 2);
}

}  // namespace
}  // namespace kueue_incremental_test
}  // namespace sluice
