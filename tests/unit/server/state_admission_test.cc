// Backpressure per namespace (state_admission.cc, issue 41): the pending cap and the
// submission rate, each a 429 that submits nothing; the count follows jobs as they leave
// pending.
#include <gtest/gtest.h>

#include "server/state.h"
#include "state_fixture.h"

namespace sluice::server {
namespace state_admission_test {  // of its own: unity batches

using namespace testing_state;  // NOLINT(google-build-using-namespace)

ServerOptions with(int64_t max_pending, double rate, int64_t burst) {
  ServerOptions o;
  o.namespace_max_pending = max_pending;
  o.namespace_submit_rate = rate;
  o.namespace_submit_burst = burst;
  return o;
}

TEST(StateAdmission, APendingCapPerNamespaceRefusesWholeSubmissionsUntilJobsLeavePending) {
  auto cfg = config();
  ServerState st{cfg, nullptr, with(3, 0, 1)};
  std::vector<JobId> ids;
  for (int i = 0; i < 3; ++i) {
    auto out = st.submit(jobs(*cfg, job_yaml("j" + std::to_string(i), 1, 1)), kS);
    ASSERT_EQ(out.status, 202) << out.error;
    ids.push_back(out.ids[0]);
  }
  const std::string two = job_yaml("a", 1, 1) + "---\n" + job_yaml("b", 1, 1);
  auto out = st.submit(jobs(*cfg, job_yaml("j3", 1, 1)), kS);
  EXPECT_EQ(out.status, 429);
  EXPECT_NE(out.error.find("namespace \"team\" has 3 pending jobs"), std::string::npos)
      << out.error;
  EXPECT_NE(out.error.find("--namespace-max-pending"), std::string::npos);
  EXPECT_TRUE(out.ids.empty());
  std::string err;
  uint64_t ticket = 0;
  ASSERT_EQ(st.cancel(ids[0], 2 * kS, &err, &ticket), 200) << err;
  EXPECT_EQ(st.submit(jobs(*cfg, two), 2 * kS).status, 429);  // one place, two jobs: neither
  EXPECT_EQ(st.submit(jobs(*cfg, job_yaml("j4", 1, 1)), 2 * kS).status, 202);
  EXPECT_NE(st.metrics_text(2 * kS).find("namespace-pending-cap"), std::string::npos);
}

TEST(StateAdmission, TheSubmissionRateIsATokenBucketOfJobsWithARetryAfter) {
  auto cfg = config();
  ServerState st{cfg, nullptr, with(0, 1.0, 2)};
  EXPECT_EQ(st.submit(jobs(*cfg, job_yaml("a", 1, 1)), kS).status, 202);
  EXPECT_EQ(st.submit(jobs(*cfg, job_yaml("b", 1, 1)), kS).status, 202);
  auto out = st.submit(jobs(*cfg, job_yaml("c", 1, 1)), kS);
  EXPECT_EQ(out.status, 429);
  EXPECT_EQ(out.retry_after_s, 1);
  EXPECT_NE(out.error.find("--namespace-submit-rate"), std::string::npos) << out.error;
  // A second later one more fits; a submission larger than the burst never does.
  EXPECT_EQ(st.submit(jobs(*cfg, job_yaml("c", 1, 1)), 2 * kS).status, 202);
  const std::string three =
      job_yaml("x", 1, 1) + "---\n" + job_yaml("y", 1, 1) + "---\n" + job_yaml("z", 1, 1);
  out = st.submit(jobs(*cfg, three), 100 * kS);
  EXPECT_EQ(out.status, 413);
  EXPECT_NE(out.error.find("over the burst of 2"), std::string::npos) << out.error;
}

// Jobs that start running leave pending: the cap counts what waits, not what runs.
TEST_F(ServerStateTest, RunningJobsDoNotCountAgainstThePendingCap) {
  ServerState capped{cfg, nullptr, with(1, 0, 1)};
  ASSERT_EQ(join(capped, reg("n0"), 0).status, 200);
  proto::SyncRequest s;
  s.agent_id = "agent-n0";
  sync_as(capped, "n0", s, 0);
  ASSERT_EQ(capped.submit(jobs(*cfg, job_yaml("run", 1, 1)), kS).status, 202);
  EXPECT_EQ(capped.submit(jobs(*cfg, job_yaml("wait", 1, 1)), kS).status, 429);
  capped.cycle(2 * kS);
  capped.release_staged();
  EXPECT_EQ(capped.submit(jobs(*cfg, job_yaml("next", 1, 1)), 3 * kS).status, 202);
}

}  // namespace state_admission_test
}  // namespace sluice::server
