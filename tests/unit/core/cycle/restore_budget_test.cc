// Scheduler::restore_running (a daemon restart puts running jobs back where they run) and the
// namespace GPU-hour budget accounting behind Scheduler::budget_usage.
#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace {

using testing::add_queue;
using testing::make_cluster;
using testing::make_job;

constexpr TimeNs kHour = 3600 * kNsPerSec;

std::shared_ptr<Config> two_nodes() {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(2, 8);  // n0, n1: 8 H100 each
  add_queue(*c, "q", 16);
  return c;
}

// Admits `job` on a scheduler and returns its admission (to restore it elsewhere).
Admission admit_once(std::shared_ptr<Config> c, const Job& job) {
  Scheduler s(c);
  EXPECT_EQ(s.submit(job).status, SubmitStatus::kAccepted);
  CycleResult r = s.run_cycle(0);
  EXPECT_EQ(r.admitted.size(), 1u);
  return r.admitted.empty() ? Admission{} : r.admitted.front();
}

TEST(RestoreRunning, PutsAJobBackWhereItRuns) {
  auto c = two_nodes();
  const Job job = make_job(7, "q", 4, 2);  // 2 pods x 4 GPUs
  const Admission a = admit_once(c, job);
  Scheduler s(c);
  std::string why;
  ASSERT_TRUE(s.restore_running(job, a, 5 * kNsPerSec, 0, 2, &why)) << why;
  const auto* r = s.find_running(7);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->start_ns, 5 * kNsPerSec);
  EXPECT_EQ(r->checkpoint_ns, 5 * kNsPerSec);  // no checkpoint before the start
  EXPECT_EQ(s.preemption_count(7), 2);
  EXPECT_EQ(s.alloc().total_whole_gpus_free(), 8);  // 16 - 8 taken
  EXPECT_TRUE(s.check_invariants(&why)) << why;
  // It is a running job like any other: finishing frees it.
  EXPECT_TRUE(s.finish(7, 10 * kNsPerSec));
  EXPECT_EQ(s.alloc().total_whole_gpus_free(), 16);
}

TEST(RestoreRunning, RefusesATakenGpu) {
  auto c = two_nodes();
  const Job job = make_job(1, "q", 8);
  const Admission a = admit_once(c, job);
  Scheduler s(c);
  std::string why;
  ASSERT_TRUE(s.restore_running(job, a, 0, 0, 0, &why)) << why;
  Job twin = make_job(2, "q", 8);
  Admission b = a;
  b.job = 2;
  EXPECT_FALSE(s.restore_running(twin, b, 0, 0, 0, &why));
  EXPECT_NE(why.find("is not free"), std::string::npos) << why;
  EXPECT_EQ(s.running_count(), 1u);  // state unchanged
  EXPECT_TRUE(s.check_invariants(&why)) << why;
}

TEST(RestoreRunning, RefusesAnUnknownNode) {
  auto c = two_nodes();
  const Job job = make_job(1, "q", 2);
  Admission a = admit_once(c, job);
  a.placement.pods[0].node = 99;
  Scheduler s(c);
  std::string why;
  EXPECT_FALSE(s.restore_running(job, a, 0, 0, 0, &why));
  EXPECT_NE(why.find("does not exist"), std::string::npos) << why;
  EXPECT_EQ(s.running_count(), 0u);
}

TEST(RestoreRunning, RefusesAWrongPodCount) {
  auto c = two_nodes();
  const Job job = make_job(1, "q", 4, 2);
  Admission a = admit_once(c, job);
  a.placement.pods.pop_back();
  Scheduler s(c);
  std::string why;
  EXPECT_FALSE(s.restore_running(job, a, 0, 0, 0, &why));
  EXPECT_NE(why.find("placement has 1 pods, the job 2"), std::string::npos) << why;
  EXPECT_EQ(s.running_count(), 0u);
  EXPECT_EQ(s.alloc().total_whole_gpus_free(), 16);
}

TEST(RestoreRunning, RefusesADuplicateId) {
  auto c = two_nodes();
  const Job job = make_job(1, "q", 2);
  const Admission a = admit_once(c, job);
  Scheduler s(c);
  std::string why;
  ASSERT_TRUE(s.restore_running(job, a, 0, 0, 0, &why)) << why;
  EXPECT_FALSE(s.restore_running(job, a, 0, 0, 0, &why));
  EXPECT_NE(why.find("already exists"), std::string::npos) << why;
}

std::shared_ptr<Config> budgeted(OverBudgetPolicy policy) {
  auto c = two_nodes();
  c->cluster.nodes[1].gpus.assign(8, c->cluster.nodes[1].gpus[0]);
  for (auto& g : c->cluster.nodes[1].gpus) g.model = "A100";
  c->cluster_queues[0].over_budget = policy;
  Budget b;
  b.name = "default";
  b.namespace_ = "default";
  b.gpu_hours_milli = 10'000;  // 10 GPU-hours
  b.period_ns = 10 * kHour;
  b.weights_milli = {{"H100", 2000}, {"A100", 1000}};
  c->budgets.push_back(b);
  return c;
}

TEST(Budget, AccruesWeightedGpuTimeAndResetsEachPeriod) {
  Scheduler s(budgeted(OverBudgetPolicy::kBestEffort));
  Job job = make_job(1, "q", 2);
  job.allowed_models = {"H100"};
  ASSERT_EQ(s.submit(job).status, SubmitStatus::kAccepted);
  CycleResult r = s.run_cycle(0);
  s.apply(r, 0);
  // 2 H100 x weight 2 = 4 GPU-hours per hour.
  auto u = s.budget_usage("default", kHour);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->used_milli_gpu_hours, 4'000);
  EXPECT_EQ(u->budget_milli_gpu_hours, 10'000);
  EXPECT_FALSE(u->over());
  EXPECT_EQ(s.budget_usage("default", kHour + kHour / 2)->used_milli_gpu_hours, 6'000);
  // Finished at 2 h: 8 GPU-hours, and no more accrues.
  ASSERT_TRUE(s.finish(1, 2 * kHour));
  EXPECT_EQ(s.budget_usage("default", 5 * kHour)->used_milli_gpu_hours, 8'000);
  // The next period starts at 10 h from zero.
  u = s.budget_usage("default", 10 * kHour + 1);
  EXPECT_EQ(u->used_milli_gpu_hours, 0);
  EXPECT_EQ(u->period_start_ns, 10 * kHour);
  EXPECT_EQ(u->period_end_ns, 20 * kHour);
  EXPECT_FALSE(s.budget_usage("other", 0));
}

TEST(Budget, OverBudgetWorkIsBestEffortAndGetsItsPriorityBackWhenRequeued) {
  Scheduler s(budgeted(OverBudgetPolicy::kBestEffort));
  Job burn = make_job(1, "q", 8);
  burn.allowed_models = {"H100"};  // 16 GPU-hours per hour
  s.submit(burn);
  s.apply(s.run_cycle(0), 0);
  Job late = make_job(2, "q", 1, 1, kHour, 50);
  late.preemptible = false;
  s.submit(late);
  CycleResult r = s.run_cycle(kHour);  // 16 of 10 used
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_TRUE(r.admitted[0].best_effort);
  EXPECT_NE(describe(r.admitted[0], s.config()).find("best-effort"), std::string::npos);
  s.apply(r, kHour);
  const auto* run = s.find_running(2);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->job.priority, s.best_effort_priority());
  EXPECT_TRUE(run->job.preemptible);
  EXPECT_EQ(s.counters().admitted_best_effort, 1);
  ASSERT_TRUE(s.requeue(2, kHour + 1));
  const auto* back = s.find_pending(2);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->job.priority, 50);  // as it asked
  EXPECT_FALSE(back->job.preemptible);
}

TEST(Budget, RejectPolicyRejectsWithTheUsageInTheReason) {
  Scheduler s(budgeted(OverBudgetPolicy::kReject));
  Job burn = make_job(1, "q", 8);
  burn.allowed_models = {"H100"};
  s.submit(burn);
  s.apply(s.run_cycle(0), 0);
  s.submit(make_job(2, "q", 1, 1, kHour));
  CycleResult r = s.run_cycle(kHour);
  EXPECT_TRUE(r.admitted.empty());
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].reason.code, PendingCode::kOverBudget);
  EXPECT_EQ(describe(r.rejected[0].reason, s.config()),
            "namespace default used 16 of 10 GPU-hours this period; ClusterQueue q rejects work "
            "over budget (overBudget: Reject)");
  s.apply(r, kHour);
  EXPECT_EQ(s.find_pending(2), nullptr);
  EXPECT_EQ(s.counters().rejected_over_budget, 1);
  EXPECT_EQ(s.counters().rejected_interactive, 0);
}

TEST(Budget, RestoredJobsCountFromTheirStart) {
  auto c = budgeted(OverBudgetPolicy::kBestEffort);
  Job job = make_job(1, "q", 4);
  job.allowed_models = {"A100"};
  const Admission a = admit_once(c, job);
  Scheduler s(c);
  std::string why;
  ASSERT_TRUE(s.restore_running(job, a, kHour, kHour, 0, &why)) << why;
  // 4 A100 x weight 1 since 1 h.
  EXPECT_EQ(s.budget_usage("default", 3 * kHour)->used_milli_gpu_hours, 8'000);
}

TEST(Format, DurationsAndThousands) {
  EXPECT_EQ(format_duration(600 * kNsPerSec), "10m0s");
  EXPECT_EQ(format_duration(3723 * kNsPerSec), "1h2m3s");
  EXPECT_EQ(format_duration(45 * kNsPerSec), "45s");
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_thousands(1012), "1,012");
  EXPECT_EQ(format_thousands(1234567), "1,234,567");
  EXPECT_EQ(format_thousands(999), "999");
}

}  // namespace
}  // namespace sluice
