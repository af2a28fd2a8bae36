// What the web dashboard reads of the state (src/server/state_dashboard.cc, the job view's runs
// in state_views.cc): a held node is not ready in the history's samples, and a preempted job
// keeps each of its runs (node, start, end, why it ended), not only the last.
#include <gtest/gtest.h>

#include "server/state.h"
#include "state_fixture.h"

namespace sluice::server {
namespace state_dashboard_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using namespace testing_state;  // NOLINT(google-build-using-namespace)

using StateDashboardTest = ServerStateTest;

TEST_F(StateDashboardTest, AHeldNodeIsNotReadyInTheSampleAndSaysItsHold) {
  up(0);
  uint64_t ticket = 0;
  ASSERT_EQ(st.set_node_hold("n0", "drain", "bad DIMM", &ticket), 200);
  ASSERT_EQ(st.set_node_hold("n1", "cordon", "", &ticket), 200);
  auto d = st.dashboard_sample(1 * kS).data;
  EXPECT_EQ(d["nodes"]["n0"]["ready"], false) << d["nodes"].dump();
  EXPECT_EQ(d["nodes"]["n0"]["hold"], "drained");
  EXPECT_EQ(d["nodes"]["n1"]["ready"], false);
  EXPECT_EQ(d["nodes"]["n1"]["hold"], "cordoned");
  ASSERT_EQ(st.set_node_hold("n0", "", "", &ticket), 200);
  d = st.dashboard_sample(2 * kS).data;
  EXPECT_EQ(d["nodes"]["n0"]["ready"], true);
  EXPECT_TRUE(d["nodes"]["n0"]["hold"].is_null());
}

TEST_F(StateDashboardTest, APreemptedJobKeepsEveryRunWithItsNodesAndWhyItEnded) {
  up(0);
  const JobId low = submit(job_yaml("low", 2, 4, "low"), 1 * kS);
  st.cycle(2 * kS);
  st.release_staged();
  sync("n0", {}, 3 * kS);
  sync("n1", {}, 3 * kS);
  auto runs = st.job_view(*st.find(low), 4 * kS)["runs"];
  ASSERT_EQ(runs.size(), 1u) << runs.dump();  // the run going on: no end, no why yet
  EXPECT_TRUE(runs[0]["end_time"].is_null());
  EXPECT_TRUE(runs[0]["why"].is_null());
  const JobId high = submit(job_yaml("high", 1, 4, "high"), 10 * kS);
  st.cycle(11 * kS);
  st.release_staged();
  ASSERT_EQ(st.find(low)->state, JobState::kPending);
  runs = st.job_view(*st.find(low), 12 * kS)["runs"];
  ASSERT_EQ(runs.size(), 1u) << runs.dump();
  EXPECT_EQ(runs[0]["nodes"].size(), 2u);  // both pods of the gang, one per node
  EXPECT_NE(runs[0]["nodes"][0], runs[0]["nodes"][1]);
  EXPECT_DOUBLE_EQ(runs[0]["admit_time"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(runs[0]["end_time"].get<double>(), 11.0);
  EXPECT_EQ(runs[0]["why"], "preempted by job " + std::to_string(high));
  // high is cancelled: its one run ends and says so; low's list is unchanged.
  std::string error;
  uint64_t ticket = 0;
  ASSERT_EQ(st.cancel(high, 20 * kS, &error, &ticket), 200) << error;
  const auto hruns = st.job_view(*st.find(high), 21 * kS)["runs"];
  ASSERT_EQ(hruns.size(), 1u) << hruns.dump();
  EXPECT_NE(hruns[0]["why"].get<std::string>().find("cancelled"), std::string::npos)
      << hruns.dump();
  EXPECT_DOUBLE_EQ(hruns[0]["end_time"].get<double>(), 20.0);
  EXPECT_EQ(st.job_view(*st.find(low), 21 * kS)["runs"].size(), 1u);
  // low, cancelled while it waits again, lists its one run once (not again as its last).
  ASSERT_EQ(st.cancel(low, 22 * kS, &error, &ticket), 200) << error;
  runs = st.job_view(*st.find(low), 23 * kS)["runs"];
  ASSERT_EQ(runs.size(), 1u) << runs.dump();
  EXPECT_EQ(runs[0]["why"], "preempted by job " + std::to_string(high));
}

}  // namespace
}  // namespace state_dashboard_test
}  // namespace sluice::server
