// The simulator's checkpoint model (SimOptions::checkpoint_every_ns, docs/simulator.md,
// "Checkpoints"): an interrupted run keeps its work up to its last checkpoint and the job
// restarts with only the rest; the work since that checkpoint is what is lost; off by default;
// same input, same report; the command's errors for bad values.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "sim/report.h"
#include "sim/run_cli.h"
#include "sim/simulator.h"
#include "sim/trace_philly.h"
#include "sim_test_util.h"

namespace sluice::sim {
namespace checkpoint_testing {

using testing::load_config;
using testing::tiny_config_yaml;

// One 4-GPU job of 100 s (class high: best_effort 0) on the one 4-GPU node.
const char* kOneJobCsv =
    "job_id,user,num_gpu,submit_time,duration,best_effort\n"
    "1,team,4,0,100,0\n";

TraceOutput trace_of(const Config& config, const std::string& csv) {
  TraceOutput t = read_philly("c.csv", csv, PhillyOptions{});
  check_against(t, config);
  EXPECT_TRUE(t.errors.empty());
  return t;
}

// The node fails at 50 s and is back at 70 s.
SimOptions failing_at_50(TimeNs every_s) {
  SimOptions o;
  o.check_invariants = true;
  o.failures = {NodeFailure{0, 50 * kNsPerSec, 70 * kNsPerSec}};
  o.checkpoint_every_ns = every_s * kNsPerSec;
  return o;
}

}  // namespace checkpoint_testing

namespace {

using namespace checkpoint_testing;

TEST(Checkpoints, ARestartedJobRunsOnlyItsRemainder) {
  auto config = load_config(tiny_config_yaml(4));
  const TraceOutput t = trace_of(*config, kOneJobCsv);
  // Checkpoints every 30 s: the failure at 50 s keeps 30 s, loses 20 s; the restart at 70 s
  // runs the 70 s left and ends at 140 s (from scratch it would end at 170 s).
  const SimResult r = simulate(config, t.jobs, failing_at_50(30));
  EXPECT_EQ(r.invariant_failure, "");
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].starts, 2);
  EXPECT_EQ(r.jobs[0].end_ns, 140 * kNsPerSec);
  EXPECT_EQ(r.jobs[0].run_ns, 120 * kNsPerSec);  // 50 + 70
  EXPECT_EQ(r.jobs[0].kept_run_ns, 30 * kNsPerSec);
  EXPECT_EQ(r.checkpointing_jobs, 1);
  EXPECT_EQ(r.interrupted_runs, 1);
  EXPECT_EQ(r.resumed_runs, 1);
  EXPECT_DOUBLE_EQ(r.kept_gpu_milli_ns, 4000.0 * 30 * kNsPerSec);
  EXPECT_DOUBLE_EQ(r.lost_gpu_milli_ns, 4000.0 * 20 * kNsPerSec);
}

TEST(Checkpoints, ARunShorterThanTheIntervalKeepsNothing) {
  auto config = load_config(tiny_config_yaml(4));
  const TraceOutput t = trace_of(*config, kOneJobCsv);
  const SimResult r = simulate(config, t.jobs, failing_at_50(60));
  EXPECT_EQ(r.jobs[0].end_ns, 170 * kNsPerSec);
  EXPECT_EQ(r.jobs[0].kept_run_ns, 0);
  EXPECT_EQ(r.resumed_runs, 0);
  EXPECT_DOUBLE_EQ(r.lost_gpu_milli_ns, 4000.0 * 50 * kNsPerSec);
}

TEST(Checkpoints, OffOrAnotherClassRestartsFromScratch) {
  auto config = load_config(tiny_config_yaml(4));
  const TraceOutput t = trace_of(*config, kOneJobCsv);
  const SimResult off = simulate(config, t.jobs, failing_at_50(0));
  EXPECT_EQ(off.jobs[0].end_ns, 170 * kNsPerSec);
  EXPECT_EQ(off.checkpointing_jobs, 0);
  SimOptions low_only = failing_at_50(30);
  low_only.checkpoint_classes = {"low"};
  const SimResult other = simulate(config, t.jobs, low_only);
  EXPECT_EQ(other.jobs[0].end_ns, 170 * kNsPerSec);
  EXPECT_EQ(other.checkpointing_jobs, 0);
  SimOptions high = failing_at_50(30);
  high.checkpoint_classes = {"low", "high"};
  EXPECT_EQ(simulate(config, t.jobs, high).jobs[0].end_ns, 140 * kNsPerSec);
}

TEST(Checkpoints, TwoInterruptionsKeepTheirWorkInTurn) {
  auto config = load_config(tiny_config_yaml(4));
  const TraceOutput t = trace_of(*config, kOneJobCsv);
  SimOptions o = failing_at_50(30);
  // Second failure at 110..120: the run since 70 has 40 s, one checkpoint (at 100) kept 30 s;
  // 100 - 60 = 40 s left from 120: ends at 160.
  o.failures.push_back(NodeFailure{0, 110 * kNsPerSec, 120 * kNsPerSec});
  const SimResult r = simulate(config, t.jobs, o);
  EXPECT_EQ(r.invariant_failure, "");
  EXPECT_EQ(r.jobs[0].starts, 3);
  EXPECT_EQ(r.jobs[0].kept_run_ns, 60 * kNsPerSec);
  EXPECT_EQ(r.jobs[0].end_ns, 160 * kNsPerSec);
  EXPECT_DOUBLE_EQ(r.lost_gpu_milli_ns, 4000.0 * (20 + 10) * kNsPerSec);
}

// Class high (priority 1000) preempts a best-effort job within the queue: the victim loses
// only what it ran since its last checkpoint.
TEST(Checkpoints, APreemptionLosesOnlyTheWorkSinceTheLastCheckpoint) {
  std::string yaml = tiny_config_yaml(4);
  const std::string team = "metadata: {name: team}\nspec:\n";
  const auto at = yaml.find(team);
  ASSERT_NE(at, std::string::npos);
  yaml.insert(at + team.size(), "  preemption: {withinClusterQueue: LowerPriority}\n");
  auto config = load_config(yaml);
  const TraceOutput t = trace_of(*config,
                                 "job_id,user,num_gpu,submit_time,duration,best_effort\n"
                                 "1,team,4,0,100,1\n"
                                 "2,team,4,45,10,0\n");
  SimOptions o;
  o.check_invariants = true;
  o.checkpoint_every_ns = 20 * kNsPerSec;
  const SimResult r = simulate(config, t.jobs, o);
  EXPECT_EQ(r.invariant_failure, "");
  ASSERT_EQ(r.jobs[0].preemptions, 1);
  EXPECT_EQ(r.jobs[0].preempted_run_ns, 5 * kNsPerSec);  // 45 - the checkpoint at 40
  EXPECT_EQ(r.jobs[0].kept_run_ns, 40 * kNsPerSec);
  // It restarts when job 2 ends (55 s) with 60 s left.
  EXPECT_EQ(r.jobs[0].end_ns, r.jobs[1].end_ns + 60 * kNsPerSec);
  const Figures f = compute_figures(r, *config, ReportInputs{});
  EXPECT_DOUBLE_EQ(f.overall.lost_gpu_hours, 4 * 5 / 3600.0);
}

class CheckpointRun : public testing::TempDir {
 protected:
  RunArgs args() {
    RunArgs a;
    a.config = {write("config.yaml", tiny_config_yaml(4))};
    a.trace_format = "synthetic";
    a.synthetic.jobs = 300;
    a.synthetic.arrival_rate_per_s = 0.002;
    a.synthetic.max_duration_s = 3600;
    a.node_failures = 4;
    a.repair_time_s = 600;
    a.seed = 7;
    a.report = (dir_ / "report.json").string();
    a.quiet = true;
    return a;
  }
};

TEST_F(CheckpointRun, SameInputGivesTheSameReportBytes) {
  RunArgs a = args();
  a.checkpoint_every_s = 300;
  std::ostringstream out, err;
  ASSERT_EQ(run_sim(a, out, err), 0) << err.str();
  const std::string first = slurp(a.report);
  ASSERT_EQ(run_sim(a, out, err), 0);
  EXPECT_EQ(first, slurp(a.report));
  const auto j = nlohmann::json::parse(first);
  ASSERT_TRUE(j.contains("checkpoints"));
  EXPECT_DOUBLE_EQ(j["checkpoints"]["interval_s"].get<double>(), 300);
  EXPECT_GT(j["checkpoints"]["interrupted_runs"].get<int64_t>(), 0);
  a.checkpoint_every_s = 0;
  ASSERT_EQ(run_sim(a, out, err), 0);
  EXPECT_FALSE(nlohmann::json::parse(slurp(a.report)).contains("checkpoints"));
}

TEST_F(CheckpointRun, BadValuesNameTheOption) {
  RunArgs a = args();
  std::ostringstream out, err;
  a.checkpoint_every_s = 0.5;
  EXPECT_EQ(run_sim(a, out, err), 1);
  EXPECT_NE(err.str().find("--checkpoint-every: 0.5 s is under a second"), std::string::npos)
      << err.str();
  a.checkpoint_every_s = 0;
  a.checkpoint_classes = {"low"};
  err.str("");
  EXPECT_EQ(run_sim(a, out, err), 1);
  EXPECT_NE(err.str().find("--checkpoint-classes needs --checkpoint-every"), std::string::npos);
  a.checkpoint_every_s = 60;
  a.checkpoint_classes = {"urgent"};
  err.str("");
  EXPECT_EQ(run_sim(a, out, err), 1);
  EXPECT_NE(err.str().find("--checkpoint-classes: 'urgent' is no priority class"),
            std::string::npos)
      << err.str();
}

}  // namespace
}  // namespace sluice::sim
