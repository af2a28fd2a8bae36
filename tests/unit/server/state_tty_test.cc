// Interactive jobs in the state machine (state_tty.cc): spec.tty reaches the agent in the
// assignment; keystrokes and window sizes for a running interactive pod ride on its node's next
// sync reply, base64, bounded; a job without a terminal, one not running and a NotReady node
// are refused with a reason.
#include <gtest/gtest.h>

#include "proto/base64.h"
#include "state_fixture.h"

namespace sluice::server {
namespace {

using namespace testing_state;  // NOLINT(google-build-using-namespace)

std::string tty_yaml(const std::string& name, const std::string& extra = "tty: true") {
  return job_yaml_with(name, 1, extra);
}

struct TtyTest : ServerStateTest {
  // A cycle, and the assignment of job `id`'s pod 0 as its node receives it.
  proto::Assignment place(JobId id, TimeNs now) {
    st.cycle(now);
    st.release_staged();
    for (const char* n : {"n0", "n1"})
      for (const auto& a : sync(n, {}, now).assign)
        if (a.job == id) return a;
    ADD_FAILURE() << "job " << id << " was not assigned";
    return {};
  }
  void report_started(JobId id, TimeNs now) {
    proto::SyncRequest s;
    s.started.push_back({id, 0});
    sync(st.find(id)->pods.front().node, s, now);
  }
  int send(JobId id, const std::string& data, int rows = 0, int cols = 0) {
    err.clear();
    return st.send_tty(id, data, rows, cols, &err);
  }
  std::string err;
};

TEST_F(TtyTest, KeystrokesRideOnTheNodesNextSyncReply) {
  up(0);
  const JobId id = submit(tty_yaml("shell"), 1 * kS);
  EXPECT_EQ(send(id, "ls\r"), 409);  // pending: no terminal yet
  EXPECT_NE(err.find("is pending"), std::string::npos) << err;
  const proto::Assignment a = place(id, 2 * kS);
  EXPECT_TRUE(a.tty);
  EXPECT_EQ(st.job_view(*st.find(id), 2 * kS)["tty"], true);
  EXPECT_EQ(send(id, "ls\r"), 409);  // running, but its pod has not started
  EXPECT_NE(err.find("has not started"), std::string::npos) << err;
  report_started(id, 3 * kS);
  const std::string node = st.find(id)->pods.front().node;
  EXPECT_FALSE(st.has_outbox(node));
  // Bytes that are not UTF-8 travel too: a terminal's input is bytes.
  const std::string raw = std::string("\x1b[A\xff\x00q", 6);
  ASSERT_EQ(send(id, raw), 200) << err;
  ASSERT_EQ(send(id, "", 40, 120), 200) << err;
  EXPECT_TRUE(st.has_outbox(node));
  const auto resp = sync(node, {}, 4 * kS);
  ASSERT_EQ(resp.tty.size(), 2u);
  EXPECT_EQ(resp.tty[0].job, id);
  EXPECT_EQ(proto::base64_decode(resp.tty[0].data), raw);
  EXPECT_EQ(resp.tty[1].rows, 40);
  EXPECT_EQ(resp.tty[1].cols, 120);
  // Through JSON (the wire) unchanged.
  const auto back =
      nlohmann::json::parse(proto::dump_json(nlohmann::json(resp))).get<proto::SyncResponse>();
  EXPECT_EQ(proto::base64_decode(back.tty[0].data), raw);
  EXPECT_FALSE(st.has_outbox(node));  // taken
}

TEST_F(TtyTest, QueuedInputIsBoundedPerNode) {
  up(0);
  const JobId id = submit(tty_yaml("shell"), 1 * kS);
  place(id, 2 * kS);
  report_started(id, 3 * kS);
  const std::string chunk(4096, 'x');
  size_t sent = 0;
  while (send(id, chunk) == 200) sent += chunk.size();
  EXPECT_EQ(sent, ServerState::kMaxTtyQueued);
  EXPECT_NE(err.find("bytes of keystrokes queued"), std::string::npos) << err;
  sync(st.find(id)->pods.front().node, {}, 4 * kS);  // the agent took them: room again
  EXPECT_EQ(send(id, chunk), 200) << err;
}

TEST_F(TtyTest, RefusesJobsWithoutATerminalAndNodesThatAreGone) {
  up(0);
  const JobId batch = submit(job_yaml("batch", 1, 1), 1 * kS);
  const JobId shell = submit(tty_yaml("shell"), 1 * kS);
  place(shell, 2 * kS);
  report_started(shell, 3 * kS);
  EXPECT_EQ(send(batch, "x"), 409);
  EXPECT_NE(err.find("not interactive (submitted without --pty)"), std::string::npos) << err;
  EXPECT_NE(err.find("sluice logs -f"), std::string::npos) << err;
  EXPECT_EQ(send(999, "x"), 404);
  // Its node falls silent past the agent timeout: NotReady.
  const std::string node = st.find(shell)->pods.front().node;
  const std::string other = node == "n0" ? "n1" : "n0";
  const TimeNs later = 3 * kS + ServerOptions{}.agent_timeout_ns + kS;
  sync(other, {}, later);
  st.check_agents(later);
  ASSERT_EQ(st.find(shell)->state, JobState::kRunning);  // requeued only after the fence margin
  EXPECT_EQ(send(shell, "x"), 503);
  EXPECT_NE(err.find("NotReady"), std::string::npos) << err;
}

TEST_F(TtyTest, ATerminalIsOnePodWritingToIt) {
  for (const char* extra : {"tty: true, array: '0-3'", "tty: true, output: out.txt"}) {
    auto out = parse_jobs(Source{"jobs.yaml", tty_yaml("shell", extra)}, *cfg);
    ASSERT_FALSE(out.errors.empty()) << extra;
    EXPECT_NE(out.errors.front().find("an interactive job (tty) has one pod"), std::string::npos)
        << out.errors.front();
  }
  std::string gang = job_yaml("gang", 2, 1);
  gang.insert(gang.rfind('}'), ", tty: true");
  auto out = parse_jobs(Source{"jobs.yaml", gang}, *cfg);
  ASSERT_FALSE(out.errors.empty());
  auto ok = parse_jobs(Source{"jobs.yaml", tty_yaml("shell")}, *cfg);
  ASSERT_TRUE(ok.errors.empty()) << ok.errors.front();
  EXPECT_TRUE(ok.jobs.front().exec().tty);
}

}  // namespace
}  // namespace sluice::server
