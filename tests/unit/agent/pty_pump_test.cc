// Interactive pods (pty_pump.h, ProcessRunner with PodLaunch::tty): real shells under a real
// pseudo-terminal. Every wait has a generous deadline; nothing depends on the machine's speed.
#include "agent/pty_pump.h"

#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

#include "agent/process_runner.h"
#include "test_util.h"

namespace sluice::agent {
namespace {

using namespace std::chrono_literals;
using testing::read_file;
using testing::TempDir;
using testing::wait_until;

class PtyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RunnerOptions o;
    o.state_dir = dir_.path();
    o.tick_ms = 10;
    auto r = ProcessRunner::create(o);
    ASSERT_TRUE(r) << r.error();
    runner_ = std::move(*r);
  }
  void TearDown() override {
    runner_->stop_all(SIGKILL, 0, "stopped");
    runner_->wait_idle(20s);
  }
  PodLaunch shell(uint64_t job, const std::string& script, bool tty = true) {
    PodLaunch p;
    p.ref = {job, 0};
    p.argv = {"/bin/sh", "-c", script};
    p.env = {"PATH=/usr/bin:/bin"};
    p.tty = tty;
    return p;
  }
  proto::PodExit wait_exit(proto::PodRef ref) {
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < until)
      for (auto& e : runner_->wait_events(200ms).exits)
        if (e.job == ref.job && e.pod == ref.pod) return e;
    ADD_FAILURE() << "pod " << ref.job << " did not exit";
    return {};
  }
  std::string log(uint64_t job) { return read_file(pod_paths(dir_.path(), {job, 0}).log); }

  TempDir dir_;
  std::unique_ptr<ProcessRunner> runner_;
};

TEST_F(PtyTest, AShellGetsItsOwnTerminalKeystrokesAndWindowSize) {
  // /dev/tty opens only for a process with a controlling terminal.
  ASSERT_TRUE(runner_->launch(shell(
      1, ": </dev/tty && echo has-a-terminal; read line; echo \"got:$line\"; stty size; exit 3")));
  ASSERT_TRUE(wait_until([&] { return log(1).find("has-a-terminal") != std::string::npos; }))
      << log(1);
  EXPECT_TRUE(runner_->tty_input({1, 0}, "", 33, 101));
  EXPECT_TRUE(runner_->tty_input({1, 0}, "hello\r", 0, 0));  // Enter, as a terminal sends it
  const auto exit = wait_exit({1, 0});
  EXPECT_EQ(exit.reason, "exited");
  EXPECT_EQ(exit.exit_code, 3);
  const std::string out = log(1);
  EXPECT_NE(out.find("hello\r\n"), std::string::npos) << out;  // the terminal's echo
  EXPECT_NE(out.find("got:hello"), std::string::npos) << out;
  EXPECT_NE(out.find("33 101"), std::string::npos) << out;
  EXPECT_FALSE(runner_->tty_input({1, 0}, "late\r", 0, 0));  // ended: no terminal
}

TEST_F(PtyTest, TheLastOutputIsInTheLogWhenTheExitIsReported) {
  ASSERT_TRUE(runner_->launch(shell(2, "head -c 200000 /dev/zero | tr '\\0' x; exit 0")));
  wait_exit({2, 0});
  const std::string out = log(2);
  EXPECT_EQ(std::count(out.begin(), out.end(), 'x'), 200000) << out.size();
}

TEST_F(PtyTest, InputGoesOnlyToInteractivePodsAndIsBounded) {
  ASSERT_TRUE(runner_->launch(shell(3, "exec sleep 30", false)));
  ASSERT_TRUE(runner_->launch(shell(4, "exec sleep 30")));
  ASSERT_TRUE(wait_until([&] {
    int started = 0;
    for (const auto& p : runner_->running()) started += p.pid > 0;
    return started == 2;
  }));
  EXPECT_FALSE(runner_->tty_input({3, 0}, "x", 0, 0));  // no terminal
  EXPECT_FALSE(runner_->tty_input({9, 0}, "x", 0, 0));  // no such pod
  // sleep reads nothing: past what the terminal holds, input waits, up to kMaxPending.
  EXPECT_FALSE(runner_->tty_input({4, 0}, std::string(PtyPump::kMaxPending + 1, 'y'), 0, 0));
  EXPECT_TRUE(runner_->tty_input({4, 0}, "still open\r", 0, 0));
}

TEST(OpenPty, GivesAResizableNonBlockingPair) {
  PtyPair p;
  std::string why;
  ASSERT_TRUE(open_pty(static_cast<uid_t>(-1), static_cast<gid_t>(-1), 50, 132, &p, &why)) << why;
  struct winsize ws {};
  ASSERT_EQ(::ioctl(p.slave, TIOCGWINSZ, &ws), 0);
  EXPECT_EQ(ws.ws_row, 50);
  EXPECT_EQ(ws.ws_col, 132);
  char c = 0;
  EXPECT_EQ(::read(p.master, &c, 1), -1);  // nothing written: would block, not wait
  EXPECT_EQ(errno, EAGAIN);
  ::close(p.master);
  ::close(p.slave);
}

}  // namespace
}  // namespace sluice::agent
