// The deadline term of the order and of the victim choice (core/order/deadline_term.h): its
// value and bounds, its effect on which job a cycle admits first, and which job it evicts.
#include "core/order/deadline_term.h"

#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace deadline_term_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

constexpr TimeNs kSec = kNsPerSec;
constexpr TimeNs kHour = 3600 * kSec;
constexpr int32_t kLow = 0, kHigh = 100;

Job with_deadline(Job j, TimeNs complete_by, TimeNs walltime) {
  j.complete_by_ns = complete_by;
  j.walltime_ns = walltime;
  return j;
}

TEST(DeadlineTerm, GrowsAsTheSlackAtSubmissionShrinks) {
  SchedulerPolicy p;
  p.weights.deadline = 0.4;
  p.aging_horizon_ns = kHour;
  const double cap = 10;  // not binding here
  Job j = testing::make_job(1, "a", 1, 1, 100 * kSec);
  EXPECT_EQ(deadline_term(j, p, cap), 0);  // no deadline
  // slack0 = complete_by - walltime - submit.
  j.walltime_ns = 600 * kSec;
  j.complete_by_ns = j.submit_ns + 600 * kSec + 2 * kHour;  // slack0 2 h >= horizon: nothing
  EXPECT_EQ(deadline_term(j, p, cap), 0);
  j.complete_by_ns = j.submit_ns + 600 * kSec + kHour / 2;  // slack0 half the horizon
  EXPECT_DOUBLE_EQ(deadline_term(j, p, cap), 0.2);
  j.complete_by_ns = j.submit_ns + 600 * kSec;  // slack0 0: the whole weight
  EXPECT_DOUBLE_EQ(deadline_term(j, p, cap), 0.4);
  j.complete_by_ns = j.submit_ns + 60 * kSec;  // infeasible at submission: still the whole weight
  EXPECT_DOUBLE_EQ(deadline_term(j, p, cap), 0.4);
  // Bounded by the cap (half the smallest class gap): the window narrows to 0.1 h / 0.4 =
  // 15 min, inside which the slope stays w / horizon (EDF-like order is kept).
  EXPECT_DOUBLE_EQ(deadline_term(j, p, 0.1), 0.1);
  j.complete_by_ns = j.submit_ns + 600 * kSec + 450 * kSec;  // slack0 7.5 min: half the window
  EXPECT_DOUBLE_EQ(deadline_term(j, p, 0.1), 0.05);
  j.complete_by_ns = j.submit_ns + 600 * kSec + 1200 * kSec;  // slack0 20 min: beyond it
  EXPECT_EQ(deadline_term(j, p, 0.1), 0);
  j.complete_by_ns = j.submit_ns + 60 * kSec;
  // Off at weight 0 and in Kueue's order.
  p.weights.deadline = 0;
  EXPECT_EQ(deadline_term(j, p, cap), 0);
  p.weights.deadline = 0.4;
  p.ordering = OrderingMode::kKueue;
  EXPECT_EQ(deadline_term(j, p, cap), 0);
}

// One node of 1 GPU: each cycle admits one job; which one shows the order.
std::shared_ptr<Config> one_gpu(double weight) {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(1, 1);
  testing::add_queue(*c, "a", 1);
  testing::add_queue(*c, "b", 1);
  c->priority_classes = {{"low", kLow}, {"high", kHigh}};
  c->policy.weights.deadline = weight;
  c->policy.weights.drf = 0;
  c->policy.weights.debt = 0;
  c->policy.backfill = false;
  return c;
}

JobId first_admitted(double weight, const std::vector<Job>& jobs, TimeNs now) {
  Scheduler s(one_gpu(weight));
  for (const Job& j : jobs) EXPECT_EQ(s.submit(j).status, SubmitStatus::kAccepted);
  const CycleResult r = s.run_cycle(now);
  EXPECT_EQ(r.admitted.size(), 1u);
  return r.admitted.empty() ? 0 : r.admitted[0].job;
}

TEST(DeadlineTerm, AnUrgentLaterJobGoesFirstOnlyWithTheTerm) {
  // Same class; job 1 (queue a) arrived at 0 without a deadline, job 2 (queue b) 5 minutes
  // later with 10 minutes of slack.
  const std::vector<Job> jobs = {
      testing::make_job(1, "a", 1, 1, 0, kLow),
      with_deadline(testing::make_job(2, "b", 1, 1, 300 * kSec, kLow), 1500 * kSec, 600 * kSec)};
  // Without the term: arrival order. With it (weight 1; cap 0.5, half the class gap: window
  // 30 min): job 2 gains (1800 s - 600 s) / 1 h = 0.33, more than the 300 s / 1 h = 0.08 of
  // age job 1 has over it (by latest start: 300 + 600 s against 0 + 1800 s).
  EXPECT_EQ(first_admitted(0, jobs, 400 * kSec), 1u);
  EXPECT_EQ(first_admitted(1, jobs, 400 * kSec), 2u);
  // The same in one queue (the time-free key of the queue's order carries the term).
  std::vector<Job> same = jobs;
  same[1].queue = "a";
  EXPECT_EQ(first_admitted(0, same, 400 * kSec), 1u);
  EXPECT_EQ(first_admitted(1, same, 400 * kSec), 2u);
}

TEST(DeadlineTerm, NeverCrossesPriorityClasses) {
  // A high job without a deadline and a low one with an impossible one, submitted together:
  // the low one's term is capped below half the class gap, so the high job goes first even at
  // a huge weight.
  const std::vector<Job> jobs = {
      testing::make_job(1, "a", 1, 1, 0, kHigh),
      with_deadline(testing::make_job(2, "b", 1, 1, 0, kLow), 10 * kSec, 600 * kSec)};
  EXPECT_EQ(first_admitted(1e6, jobs, 5 * kSec), 1u);
}

TEST(DeadlineTerm, StarvingJobsStillGoFirst) {
  // Job 1 waited past the aging horizon (starving); job 2 is as urgent as it gets.
  const std::vector<Job> jobs = {
      testing::make_job(1, "a", 1, 1, 0, kLow),
      with_deadline(testing::make_job(2, "b", 1, 1, kHour, kLow), kHour + 60 * kSec, 60 * kSec)};
  EXPECT_EQ(first_admitted(1e6, jobs, kHour + kSec), 1u);
}

TEST(DeadlineTerm, SubmissionRefusesADeadlineBeforeIt) {
  Scheduler s(one_gpu(1));
  const SubmitResult r =
      s.submit(with_deadline(testing::make_job(1, "a", 1, 1, 100 * kSec), 50 * kSec, 0));
  EXPECT_EQ(r.status, SubmitStatus::kInvalid);
  EXPECT_NE(r.message.find("spec.completeBy"), std::string::npos) << r.message;
  EXPECT_EQ(s.pending_count(), 0u);  // nothing kept
  // completeWithin counts from the submit time.
  Job w = testing::make_job(2, "a", 1, 1, 100 * kSec);
  w.complete_within_ns = 60 * kSec;
  EXPECT_EQ(s.submit(w).status, SubmitStatus::kAccepted);
  ASSERT_NE(s.find_pending(2), nullptr);
  EXPECT_EQ(s.find_pending(2)->job.complete_by_ns, 160 * kSec);
}

// Two low jobs run on the one node (1 GPU each); a high job of 1 GPU needs one of them out.
JobId victim(double weight, TimeNs deadline_of_3) {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(1, 2);
  const QueueId q = testing::add_queue(*c, "a", 2);
  c->cluster_queues[q].preemption.within_cluster_queue = WithinQueuePolicy::kLowerPriority;
  c->priority_classes = {{"low", kLow}, {"high", kHigh}};
  c->policy.weights.deadline = weight;
  c->policy.backfill = false;
  Scheduler s(c);
  auto run = [&](JobId id, int gpu, TimeNs start, TimeNs complete_by) {
    Job j = with_deadline(testing::make_job(id, "a", 1, 1, 0, kLow), complete_by, 3 * kHour);
    Admission a;
    a.job = id;
    a.queue = q;
    a.flavors = {0};
    a.usage = {{0, kGpu, kMilliPerGpu}};
    PodPlacement pod;
    pod.node = 0;
    pod.gpus.push_back({static_cast<int16_t>(gpu), -1, 1000});
    a.placement.pods = {pod};
    std::string why;
    EXPECT_TRUE(s.restore_running(j, a, start, start, 0, &why)) << why;
  };
  // Job 4 started later (less work lost: the cheaper victim by default) and has a deadline
  // 4 h out; job 3 started earlier, with `deadline_of_3` (0: none).
  run(3, 0, 10 * kSec, deadline_of_3);
  run(4, 1, 20 * kSec, 4 * kHour);
  EXPECT_EQ(s.submit(testing::make_job(10, "a", 1, 1, 30 * kSec, kHigh)).status,
            SubmitStatus::kAccepted);
  const CycleResult r = s.run_cycle(60 * kSec);
  EXPECT_EQ(r.preempted.size(), 1u);
  return r.preempted.empty() ? 0 : r.preempted[0].victim;
}

TEST(DeadlineTerm, VictimsWithoutADeadlineOrWithMostSlackGoFirst) {
  // Off: least work lost (job 4, started later).
  EXPECT_EQ(victim(0, 0), 4u);
  // On: job 3 has no deadline: it goes, though it lost more work.
  EXPECT_EQ(victim(1, 0), 3u);
  // On: job 3's deadline is 8 h out (more slack than job 4's 4 h): it goes.
  EXPECT_EQ(victim(1, 8 * kHour), 3u);
  // On: job 3's deadline is 3.5 h out (less slack): job 4 goes.
  EXPECT_EQ(victim(1, 3 * kHour + 1800 * kSec), 4u);
}

}  // namespace
}  // namespace deadline_term_test
}  // namespace sluice
