// Start predictions in the server (server/start_predictor.h): the copy of the live state, one
// replay per scheduling cycle, and what a job's view and explanation say.
#include "server/start_predictor.h"

#include <gtest/gtest.h>

#include "state_fixture.h"

namespace sluice::server {
namespace start_predictor_test {
namespace {

using namespace testing_state;

// A gang of 2 x 4 GPUs (the whole cluster) with walltime `walltime`.
std::string gang(const std::string& name, const std::string& walltime) {
  std::string y = job_yaml(name, 2, 4);
  if (!walltime.empty()) y.insert(y.rfind('}'), ", walltime: " + walltime);
  return y;
}

// Job 1 (the whole cluster, walltime 600 s) is admitted at 2 s; job 2 (the same) waits: it is
// estimated to start at 602 s. The prediction is kept for the cycle it was taken at.
TEST_F(ServerStateTest, PendingJobBehindARunningOneStartsAtItsWalltime) {
  up(0);
  const JobId first = submit(gang("first", "600s"), 1 * kS);
  st.cycle(2 * kS);
  ASSERT_EQ(st.find(first)->state, JobState::kRunning);
  const JobId second = submit(gang("second", ""), 3 * kS);
  const JobId held = submit(job_yaml_with("held", 1, "hold: true"), 3 * kS);
  st.cycle(4 * kS);
  ASSERT_EQ(st.find(second)->state, JobState::kPending);

  StartPredictor predictor;
  const auto p = predictor.get(st, 5 * kS);
  const auto v = StartPredictor::view(*p, *st.find(second), 5 * kS);
  EXPECT_EQ(v["status"], "estimated");
  EXPECT_DOUBLE_EQ(v["time"].get<double>(), 602.0);  // admitted at 2 s + 600 s
  EXPECT_DOUBLE_EQ(v["in_s"].get<double>(), 597.0);
  EXPECT_NE(v["assumes"].get<std::string>().find("walltime"), std::string::npos);
  EXPECT_EQ(StartPredictor::view(*p, *st.find(held), 5 * kS)["status"], "held");
  EXPECT_TRUE(StartPredictor::view(*p, *st.find(first), 5 * kS).is_null());  // running

  const std::string line = StartPredictor::explain_line(*p, *st.find(second), st.config(), 5 * kS);
  EXPECT_NE(line.find("Estimated start: 1970-01-01T00:10:02Z (in 9m57s)"), std::string::npos)
      << line;
  EXPECT_NE(line.find("this job's walltime: 1h00m"), std::string::npos) << line;  // default
  EXPECT_EQ(StartPredictor::explain_line(*p, *st.find(first), st.config(), 5 * kS), "");

  // Same cycle: the same replay. A new cycle: a new one.
  EXPECT_EQ(predictor.get(st, 6 * kS), p);
  st.cycle(7 * kS);
  const auto q = predictor.get(st, 8 * kS);
  EXPECT_NE(q, p);
  EXPECT_EQ(q->cycle, st.cycles_run());
}

// A job that fits no node in any state never starts, and says so.
TEST_F(ServerStateTest, JobLargerThanAnyNodeIsEstimatedNever) {
  up(0);
  const JobId big = submit(job_yaml_with("big", 8, "walltime: 60s"), 1 * kS);  // 8 GPUs, 1 pod
  st.cycle(2 * kS);
  ASSERT_EQ(st.find(big)->state, JobState::kPending);
  StartPredictor predictor;
  const auto p = predictor.get(st, 3 * kS);
  EXPECT_EQ(StartPredictor::view(*p, *st.find(big), 3 * kS)["status"], "never");
  EXPECT_NE(StartPredictor::explain_line(*p, *st.find(big), st.config(), 3 * kS).find("never"),
            std::string::npos);
}

}  // namespace
}  // namespace start_predictor_test
}  // namespace sluice::server
