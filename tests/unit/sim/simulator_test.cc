// The simulator on tiny hand-made traces with figures worked out by hand, node failures, the
// cycle interval, and the whole command (run_sim): bad rows, --skip-bad-rows, determinism.
#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <sstream>

#include "sim/report.h"
#include "sim/run_cli.h"
#include "sim/trace_philly.h"
#include "sim/trace_synthetic.h"
#include "sim_test_util.h"

namespace sluice::sim {
namespace {

using testing::load_config;
using testing::TempDir;
using testing::tiny_config_yaml;

// One 4-GPU node, queue `team` with all 4 GPUs:
//   job 1: 4 GPUs, submit 0,  runs 100 s  -> starts 0,   ends 100 (wait 0,  jct 100)
//   job 2: 2 GPUs, submit 10, runs 50 s   -> starts 100, ends 150 (wait 90, jct 140)  high
//   job 3: 2 GPUs, submit 20, runs 30 s   -> starts 100, ends 130 (wait 80, jct 110)  low
// Busy span 0..150 = 150 s; allocated 4x100 + 2x50 + 2x30 = 560 GPU-s of 4x150 = 600.
const char* kTinyCsv =
    "job_id,user,num_gpu,submit_time,duration,best_effort\n"
    "1,team,4,0,100,0\n"
    "2,team,2,10,50,0\n"
    "3,team,2,20,30,1\n";

TraceOutput tiny_trace(const Config& config) {
  TraceOutput t = read_philly("tiny.csv", kTinyCsv, PhillyOptions{});
  check_against(t, config);
  EXPECT_TRUE(t.errors.empty());
  return t;
}

TEST(Simulator, TinyTraceHasTheHandWorkedFigures) {
  auto config = load_config(tiny_config_yaml(4));
  const TraceOutput t = tiny_trace(*config);
  SimOptions o;
  o.check_invariants = true;
  const SimResult r = simulate(config, t.jobs, o);
  EXPECT_EQ(r.invariant_failure, "");
  ASSERT_EQ(r.jobs.size(), 3u);
  EXPECT_EQ(r.jobs[0].first_start_ns, 0);
  EXPECT_EQ(r.jobs[1].first_start_ns, 100 * kNsPerSec);
  EXPECT_EQ(r.jobs[2].first_start_ns, 100 * kNsPerSec);
  EXPECT_EQ(r.jobs[1].end_ns, 150 * kNsPerSec);
  EXPECT_EQ(r.jobs[2].end_ns, 130 * kNsPerSec);
  EXPECT_EQ(r.events, 6);  // 3 arrivals + 3 completions

  const Figures f = compute_figures(r, *config, ReportInputs{});
  EXPECT_DOUBLE_EQ(f.busy_span_s, 150);
  EXPECT_DOUBLE_EQ(f.utilisation, 560.0 / 600.0);
  EXPECT_DOUBLE_EQ(f.gpu_hours, 560.0 / 3600);
  EXPECT_DOUBLE_EQ(f.max_wait_s, 90);
  EXPECT_DOUBLE_EQ(f.overall.wait_mean_s, (0 + 90 + 80) / 3.0);
  EXPECT_DOUBLE_EQ(f.overall.wait_p50_s, 80);  // nearest rank: 2nd of {0, 80, 90}
  EXPECT_DOUBLE_EQ(f.overall.jct_p99_s, 140);
  const JobStats& high = f.by_priority_class.at("high");
  EXPECT_EQ(high.jobs, 2);
  EXPECT_DOUBLE_EQ(high.wait_mean_s, 45);  // waits {0, 90}
  EXPECT_DOUBLE_EQ(high.wait_p50_s, 0);
  EXPECT_DOUBLE_EQ(high.wait_p99_s, 90);
  const JobStats& low = f.by_priority_class.at("low");
  EXPECT_DOUBLE_EQ(low.wait_p50_s, 80);
  EXPECT_DOUBLE_EQ(low.jct_mean_s, 110);
  EXPECT_EQ(f.by_queue.at("team").stats.jobs, 3);
  EXPECT_DOUBLE_EQ(f.by_queue.at("team").share_over_entitlement, 1.0);
  EXPECT_DOUBLE_EQ(f.jain_fairness, 1.0);  // one queue with quota
  EXPECT_EQ(f.rejected, 0);
  EXPECT_EQ(f.never_started, 0);
}

TEST(Simulator, CycleIntervalDelaysStarts) {
  // 1-GPU jobs at 0 and 5 on a 4-GPU node: free capacity for both.
  const std::string csv =
      "job_id,user,num_gpu,submit_time,duration,best_effort\n"
      "1,team,1,0,100,0\n"
      "2,team,1,5,100,0\n";
  auto config = load_config(tiny_config_yaml(4));
  TraceOutput t = read_philly("c.csv", csv, PhillyOptions{});
  check_against(t, *config);
  SimOptions every_batch;
  const SimResult a = simulate(config, t.jobs, every_batch);
  EXPECT_EQ(a.jobs[1].first_start_ns, 5 * kNsPerSec);  // a cycle right at its arrival
  SimOptions interval;
  interval.cycle_interval_ns = 10 * kNsPerSec;
  const SimResult b = simulate(config, t.jobs, interval);
  EXPECT_EQ(b.jobs[0].first_start_ns, 0);               // first cycle at the first event
  EXPECT_EQ(b.jobs[1].first_start_ns, 10 * kNsPerSec);  // next cycle 10 s after the first
  EXPECT_EQ(b.cycles, 2);
}

TEST(Simulator, NodeFailureRequeuesAndRestarts) {
  // One 4-GPU job of 100 s; its node fails at 50 and recovers at 70: the job goes back to
  // pending, restarts from scratch at 70 and ends at 170.
  const std::string csv =
      "job_id,user,num_gpu,submit_time,duration,best_effort\n"
      "1,team,4,0,100,0\n";
  auto config = load_config(tiny_config_yaml(4));
  TraceOutput t = read_philly("f.csv", csv, PhillyOptions{});
  check_against(t, *config);
  SimOptions o;
  o.check_invariants = true;
  o.failures = {NodeFailure{0, 50 * kNsPerSec, 70 * kNsPerSec}};
  const SimResult r = simulate(config, t.jobs, o);
  EXPECT_EQ(r.invariant_failure, "");
  EXPECT_EQ(r.requeued, 1);
  EXPECT_EQ(r.jobs[0].starts, 2);
  EXPECT_EQ(r.jobs[0].first_start_ns, 0);
  EXPECT_EQ(r.jobs[0].end_ns, 170 * kNsPerSec);  // not 100: that completion is stale
  EXPECT_EQ(r.jobs[0].run_ns, 150 * kNsPerSec);  // 50 lost + 100
}

TEST(Simulator, OverlappingFailuresKeepTheNodeDownUntilTheLastRepair) {
  const std::string csv =
      "job_id,user,num_gpu,submit_time,duration,best_effort\n"
      "1,team,4,0,100,0\n";
  auto config = load_config(tiny_config_yaml(4));
  TraceOutput t = read_philly("f.csv", csv, PhillyOptions{});
  check_against(t, *config);
  SimOptions o;
  o.check_invariants = true;
  // Down 50..70 and 60..90: the node is back at 90, not at 70.
  o.failures = {NodeFailure{0, 50 * kNsPerSec, 70 * kNsPerSec},
                NodeFailure{0, 60 * kNsPerSec, 90 * kNsPerSec}};
  const SimResult r = simulate(config, t.jobs, o);
  EXPECT_EQ(r.invariant_failure, "");
  EXPECT_EQ(r.jobs[0].starts, 2);
  EXPECT_EQ(r.jobs[0].end_ns, 190 * kNsPerSec);
}

TEST(Simulator, JobThatNeverFitsIsCountedNotWaitedFor) {
  const std::string csv =
      "job_id,user,num_gpu,submit_time,duration,best_effort\n"
      "1,team,8,0,100,0\n"  // 8 GPUs on a 4-GPU cluster
      "2,team,1,1,10,0\n";
  auto config = load_config(tiny_config_yaml(4));
  TraceOutput t = read_philly("n.csv", csv, PhillyOptions{});
  check_against(t, *config);
  const SimResult r = simulate(config, t.jobs, SimOptions{});
  const Figures f = compute_figures(r, *config, ReportInputs{});
  EXPECT_EQ(f.never_started, 1);
  EXPECT_EQ(r.jobs[1].end_ns, 11 * kNsPerSec);
}

class RunSim : public TempDir {
 protected:
  RunArgs args(const std::string& trace_csv) {
    RunArgs a;
    a.config = {write("config.yaml", tiny_config_yaml(4))};
    a.trace = write("trace.csv", trace_csv);
    a.report = (dir_ / "report.json").string();
    a.quiet = true;
    return a;
  }
};

TEST_F(RunSim, BadRowsFailWithFileAndLineUnlessSkipped) {
  const std::string csv = std::string(kTinyCsv) +
                          "4,team,1,30,-5,0\n"   // line 5
                          "5,ghost,1,30,5,0\n";  // line 6
  RunArgs a = args(csv);
  std::ostringstream out, err;
  EXPECT_EQ(run_sim(a, out, err), 1);
  EXPECT_NE(err.str().find(a.trace + ":5: duration: -5 is negative"), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find(a.trace + ":6: unknown queue 'ghost'"), std::string::npos);
  EXPECT_NE(err.str().find("2 bad row(s)"), std::string::npos);

  a.skip_bad_rows = true;
  std::ostringstream out2, err2;
  ASSERT_EQ(run_sim(a, out2, err2), 0) << err2.str();
  const auto j = nlohmann::json::parse(slurp(a.report));
  EXPECT_EQ(j["input"]["bad_rows"], 2);
  EXPECT_EQ(j["input"]["rows"], 5);
  EXPECT_EQ(j["jobs"]["total"], 3);
  EXPECT_DOUBLE_EQ(j["utilisation"].get<double>(), 560.0 / 600.0);
}

// Chronus lists end to end: the soft jobs' utility per class beside the deadlines met, and the
// skipped rows loud (stderr, JSON, table). One 4-GPU node:
//   job 1: 1 GPU,  submit 0,  runs 100 s -> ends 100: within 150 s, earns 10 of 10 (met)
//   job 2: 4 GPUs, submit 10, runs 100 s -> waits for job 1, ends 200: 190 s after its
//          submission, past 150 (missed) but within 250: earns 4 of 10
//   job 3: best-effort, no deadline; rows 4 and 5 are bad.
TEST_F(RunSim, ChronusUtilityAndLoudSkippedRows) {
  const std::string csv =
      "job_id,user,num_gpu,submit_time,duration,best_effort,expect_time_list,expect_value_list\n"
      "1,team,1,0,100,0,150-200,10-5\n"
      "2,team,4,10,100,0,150-250,10-4\n"
      "3,team,1,20,10,1,20,10\n"
      "4,team,1,0,10,0,159-189,10\n"  // line 5: lists of different lengths
      "5,team,0,0,10,0,,\n";          // line 6: no GPU
  RunArgs a = args(csv);
  a.skip_bad_rows = true;
  a.quiet = false;
  std::ostringstream out, err;
  ASSERT_EQ(run_sim(a, out, err), 0) << err.str();
  // stderr: the count, the share and the reasons.
  EXPECT_NE(err.str().find("warning: skipped 2 bad row(s) of 5 (40.0%) in " + a.trace),
            std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find(a.trace + ":5: expect_time_list has 2 item(s) but expect_value_list 1"),
            std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find(a.trace + ":6: num_gpu: 0 is out of range"), std::string::npos);
  // The report: the reasons, and per class the deadlines met and the utility earned.
  const auto j = nlohmann::json::parse(slurp(a.report));
  EXPECT_EQ(j["input"]["bad_rows"], 2);
  ASSERT_EQ(j["input"]["bad_row_examples"].size(), 2u);
  EXPECT_EQ(j["input"]["bad_row_examples"][1],
            a.trace + ":6: num_gpu: 0 is out of range (a " + "job needs 1 to 100000 GPUs)");
  const auto& d = j["by_priority_class"]["high"]["deadlines"];
  EXPECT_EQ(d["jobs"], 2);
  EXPECT_EQ(d["met"], 1);  // job 1
  EXPECT_EQ(d["utility"]["soft_jobs"], 2);
  EXPECT_EQ(d["utility"]["earned"], 14);  // 10 + 4
  EXPECT_EQ(d["utility"]["full"], 20);
  EXPECT_DOUBLE_EQ(d["utility"]["share"].get<double>(), 0.7);
  EXPECT_FALSE(j["by_priority_class"]["low"].contains("deadlines"));
  // The table says the same.
  EXPECT_NE(out.str().find("deadlines high: 1 of 2 met (50.0%), utility 14 of 20 (70.0%)"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("bad row skipped: " + a.trace + ":5: "), std::string::npos);
}

// Strict jobs alone (one time each): the utility would repeat the satisfaction, so the report
// leaves it out, and a clean trace's report has no bad-row examples.
TEST_F(RunSim, StrictDeadlinesAloneShowNoUtility) {
  RunArgs a = args(
      "job_id,user,num_gpu,submit_time,duration,best_effort,expect_time_list,expect_value_list\n"
      "1,team,1,0,100,0,150,10\n");
  std::ostringstream out, err;
  ASSERT_EQ(run_sim(a, out, err), 0) << err.str();
  EXPECT_EQ(err.str(), "");
  const auto j = nlohmann::json::parse(slurp(a.report));
  EXPECT_EQ(j["by_priority_class"]["high"]["deadlines"]["met"], 1);
  EXPECT_FALSE(j["by_priority_class"]["high"]["deadlines"].contains("utility"));
  EXPECT_FALSE(j["input"].contains("bad_row_examples"));
}

TEST_F(RunSim, SameInputAndSeedGiveByteIdenticalReports) {
  RunArgs a = args(kTinyCsv);
  a.trace_format = "synthetic";
  a.trace.clear();
  // About 1.5 GPUs x 1 h per job at 1 job per 1000 s on 4 GPUs: busy, without a deep backlog.
  a.synthetic.jobs = 1000;
  a.synthetic.arrival_rate_per_s = 0.001;
  a.synthetic.large_gang_fraction = 0.01;
  a.synthetic.large_gang_gpus = 4;
  a.synthetic.max_duration_s = 3600;
  a.node_failures = 3;
  a.seed = 11;
  std::ostringstream out, err;
  ASSERT_EQ(run_sim(a, out, err), 0) << err.str();
  const std::string first = slurp(a.report);
  ASSERT_EQ(run_sim(a, out, err), 0);
  const std::string second = slurp(a.report);
  EXPECT_EQ(first, second);
  EXPECT_GT(first.size(), 500u);
  a.seed = 12;
  ASSERT_EQ(run_sim(a, out, err), 0);
  EXPECT_NE(first, slurp(a.report));  // the seed matters
  const auto j = nlohmann::json::parse(first);
  EXPECT_EQ(j["jobs"]["total"], 1000);
  EXPECT_GT(j["utilisation"].get<double>(), 0);
}

TEST_F(RunSim, SluiceEventsFormat) {
  RunArgs a = args("");
  a.trace_format = "sluice-events";
  a.trace = write("ev.jsonl", R"({"event":"submit","time":0,"id":1,"queue":"team","gpus":4})"
                              "\n"
                              R"({"event":"start","time":0,"id":1})"
                              "\n"
                              R"({"event":"end","time":100,"id":1})"
                              "\n");
  std::ostringstream out, err;
  ASSERT_EQ(run_sim(a, out, err), 0) << err.str();
  const auto j = nlohmann::json::parse(slurp(a.report));
  EXPECT_DOUBLE_EQ(j["utilisation"].get<double>(), 1.0);
  EXPECT_EQ(j["jobs"]["finished"], 1);
}

// The real Philly trace, when present: the Kueue-like example config runs it end to end.
TEST_F(RunSim, PhillyTraceWithExampleConfig) {
  const std::string root = SLUICE_SOURCE_DIR;
  const std::string trace = traces_dir(root) + "/philly-chronus/trace_job_Philly_MIX1.csv";
  if (!std::filesystem::exists(trace))
    GTEST_SKIP() << "Philly trace not found at " << trace << " (set SLUICE_TRACES)";
  RunArgs a;
  a.config = {root + "/examples/philly/queues-kueue.yaml"};
  a.cluster = {root + "/examples/philly/cluster.yaml"};
  a.trace = trace;
  a.report = (dir_ / "philly.json").string();
  a.skip_bad_rows = true;
  a.quiet = true;
  std::ostringstream out, err;
  ASSERT_EQ(run_sim(a, out, err), 0) << err.str();
  const auto j = nlohmann::json::parse(slurp(a.report));
  EXPECT_EQ(j["capacity_gpus"], 1408);
  EXPECT_EQ(j["input"]["bad_rows"], 184);  // rows with num_gpu 0
  EXPECT_EQ(j["jobs"]["never_started"], 0);
  EXPECT_GT(j["utilisation"].get<double>(), 0.5);
  EXPECT_LT(j["utilisation"].get<double>(), 0.9);
}

}  // namespace
}  // namespace sluice::sim
