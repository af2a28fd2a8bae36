// Start predictions (core/cycle/predict.h) in the simulator, and the simulator's accuracy and
// deadline figures, on hand-worked cases.
#include "core/cycle/predict.h"

#include <gtest/gtest.h>

#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/trace_philly.h"
#include "sim_test_util.h"

namespace sluice::sim {
namespace {

using testing::load_config;
using testing::tiny_config_yaml;

Job gpu_job(JobId id, int gpus, TimeNs submit_s, TimeNs walltime_s) {
  Job j;
  j.id = id;
  j.name = "j" + std::to_string(id);
  j.namespace_ = "default";
  j.queue = "team";
  j.submit_ns = submit_s * kNsPerSec;
  j.walltime_ns = walltime_s * kNsPerSec;
  set_gpu_shape(j, gpus, 8);
  return j;
}

// One 4-GPU node. Job 1 (4 GPUs, 100 s) runs from 0; at 10 jobs 2 (2 GPUs, 50 s), 3 (2 GPUs,
// 30 s) and 4 (4 GPUs, 20 s) wait: 2 and 3 start at 100 when 1 ends; 4 when both ended, at 150.
TEST(Predict, ReplaysTheStateForwardByWalltimes) {
  auto config = load_config(tiny_config_yaml(4));
  Scheduler s(config);
  ASSERT_EQ(s.submit(gpu_job(1, 4, 0, 100)).status, SubmitStatus::kAccepted);
  s.apply(s.run_cycle(0), 0);
  ASSERT_EQ(s.running_count(), 1u);
  for (JobId id : {2, 3}) s.submit(gpu_job(id, 2, 10, id == 2 ? 50 : 30));
  s.submit(gpu_job(4, 4, 10, 20));
  const TimeNs now = 10 * kNsPerSec;
  s.apply(s.run_cycle(now), now);
  ASSERT_EQ(s.pending_count(), 3u);

  const auto p = predict_starts(config, s, now, {4, 2, 3, 99}).starts;
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].start_ns, 150 * kNsPerSec);  // job 4: after 2 (ends 150) and 3 (ends 130)
  EXPECT_EQ(p[1].start_ns, 100 * kNsPerSec);  // job 2
  EXPECT_EQ(p[2].start_ns, 100 * kNsPerSec);  // job 3
  EXPECT_EQ(p[3].start_ns, -1);               // not a pending job
  // The live scheduler is untouched.
  EXPECT_EQ(s.pending_count(), 3u);
  EXPECT_EQ(s.running_count(), 1u);
}

// A job that overran its walltime is taken to end at once.
TEST(Predict, OverrunJobEndsNow) {
  auto config = load_config(tiny_config_yaml(4));
  Scheduler s(config);
  s.submit(gpu_job(1, 4, 0, 100));
  s.apply(s.run_cycle(0), 0);
  s.submit(gpu_job(2, 4, 150, 10));
  const TimeNs now = 200 * kNsPerSec;  // job 1 should have ended at 100
  s.apply(s.run_cycle(now), now);
  EXPECT_EQ(predict_starts(config, s, now, {2}).starts[0].start_ns, now);
}

// The tiny trace of simulator_test with deadlines (expect_time_list, strict rows only):
//   job 1: submit 0, 100 s, deadline 0+50   -> ends 100: missed
//   job 2: submit 10, 50 s, deadline 10+150 -> starts 100, ends 150: met
//   job 3: best-effort, no deadline          -> starts 100
// Predicted at arrival (every job): jobs 2 and 3 wait, both predicted at 100 (exact walltimes,
// no later arrivals): error 0.
TEST(Predict, SimulatorReportsAccuracyAndDeadlines) {
  auto config = load_config(tiny_config_yaml(4));
  TraceOutput t = read_philly("t.csv",
                              "job_id,user,num_gpu,submit_time,duration,best_effort,"
                              "expect_time_list\n"
                              "1,team,4,0,100,0,50\n"
                              "2,team,2,10,50,0,150\n"
                              "3,team,2,20,30,1,20\n",
                              PhillyOptions{});
  check_against(t, *config);
  ASSERT_TRUE(t.errors.empty());
  EXPECT_EQ(t.jobs[0].complete_by_ns, 50 * kNsPerSec);
  EXPECT_EQ(t.jobs[2].complete_by_ns, 0);
  SimOptions o;
  o.predict_every = 1;
  const SimResult r = simulate(config, t.jobs, o);
  EXPECT_FALSE(r.jobs[0].predicted);  // started in its arrival's cycle
  EXPECT_TRUE(r.jobs[1].predicted);
  EXPECT_EQ(r.jobs[1].predicted_start_ns, 100 * kNsPerSec);
  EXPECT_EQ(r.jobs[2].predicted_start_ns, 100 * kNsPerSec);

  const Figures f = compute_figures(r, *config, ReportInputs{});
  EXPECT_EQ(f.prediction.predicted, 2);
  EXPECT_EQ(f.prediction.unpredicted, 0);
  EXPECT_DOUBLE_EQ(f.prediction.abs_error_p90_s, 0);
  EXPECT_DOUBLE_EQ(f.prediction.within_10pct, 1);
  EXPECT_EQ(f.by_priority_class.at("high").deadline_jobs, 2);
  EXPECT_EQ(f.by_priority_class.at("high").deadline_met, 1);
  EXPECT_EQ(f.by_priority_class.at("low").deadline_jobs, 0);
  const auto j = to_json(f);
  EXPECT_DOUBLE_EQ(j["by_priority_class"]["high"]["deadlines"]["satisfaction"].get<double>(), 0.5);
  EXPECT_FALSE(j["by_priority_class"]["low"].contains("deadlines"));
  EXPECT_EQ(j["start_prediction"]["predicted"], 2);
}

// A bad expect_time_list is a bad row naming the column.
TEST(Predict, BadExpectTimeIsABadRow) {
  TraceOutput t = read_philly("t.csv",
                              "job_id,user,num_gpu,submit_time,duration,expect_time_list\n"
                              "1,team,4,0,100,soon\n",
                              PhillyOptions{});
  ASSERT_EQ(t.errors.size(), 1u);
  EXPECT_NE(t.errors[0].find("t.csv:2: expect_time_list: 'soon'"), std::string::npos)
      << t.errors[0];
}

}  // namespace
}  // namespace sluice::sim
