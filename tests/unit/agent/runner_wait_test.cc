// The process runner's sleep between ticks (src/agent/runner_wait.cc, exit_waiter.cc): with a
// tick far longer than any wait below, exits, stops and walltimes are still seen, because the
// supervisor sleeps on its pods' pidfds and its deadlines. Every wait has a generous deadline
// (30 s, against a tick of 10 min); no assertion depends on how fast the machine is.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include "agent/exit_waiter.h"
#include "agent/process_runner.h"
#include "test_util.h"

namespace sluice::agent {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int64_t kLongTickMs = 600'000;  // 10 min: no test below may wait for a tick

class RunnerWaitTest : public ::testing::Test {
 protected:
  void SetUp() override { runner_ = make(); }
  std::unique_ptr<ProcessRunner> make() {
    RunnerOptions o;
    o.state_dir = dir_.path();
    o.tick_ms = kLongTickMs;
    auto r = ProcessRunner::create(o);
    EXPECT_TRUE(r) << (r ? "" : r.error());
    return r ? std::move(*r) : nullptr;
  }
  void TearDown() override {
    runner_->stop_all(SIGKILL, 0, "stopped");
    runner_->wait_idle(30s);
  }
  static PodLaunch sh(uint64_t job, const std::string& script) {
    PodLaunch p;
    p.ref = {job, 0};
    p.argv = {"/bin/sh", "-c", script};
    p.env = {"PATH=/usr/bin:/bin"};
    return p;
  }
  // Events until `job` has an event of the kind `pick` looks for, 30 s at most.
  template <typename Pick>
  bool wait_for(Pick pick) {
    const auto until = Clock::now() + 30s;
    while (Clock::now() < until) {
      auto ev = runner_->wait_events(200ms);
      for (auto& e : ev.exits) exits_.push_back(e);
      for (auto& s : ev.started) started_.push_back(s.job);
      if (pick()) return true;
    }
    return false;
  }
  const proto::PodExit* exit_of(uint64_t job) const {
    for (const auto& e : exits_)
      if (e.job == job) return &e;
    return nullptr;
  }

  testing::TempDir dir_;
  std::unique_ptr<ProcessRunner> runner_;
  std::vector<proto::PodExit> exits_;
  std::vector<uint64_t> started_;
};

TEST_F(RunnerWaitTest, AnExitIsSeenWithoutATick) {
  ASSERT_TRUE(runner_->launch(sh(1, "sleep 0.2; exit 3")));
  ASSERT_TRUE(wait_for([&] { return exit_of(1) != nullptr; }));
  EXPECT_EQ(exit_of(1)->reason, "exited");
  EXPECT_EQ(exit_of(1)->exit_code, 3);
  // Several pods, each seen as it ends.
  for (uint64_t j = 2; j <= 4; ++j) ASSERT_TRUE(runner_->launch(sh(j, "exit 0")));
  EXPECT_TRUE(wait_for([&] { return exit_of(2) && exit_of(3) && exit_of(4); }));
}

TEST_F(RunnerWaitTest, AStopWakesTheSupervisorAndTheExitFollows) {
  ASSERT_TRUE(runner_->launch(sh(5, "sleep 300")));
  ASSERT_TRUE(wait_for([&] { return std::count(started_.begin(), started_.end(), 5) > 0; }));
  ASSERT_TRUE(runner_->stop({5, 0}, SIGTERM, 60'000, "stopped"));
  ASSERT_TRUE(wait_for([&] { return exit_of(5) != nullptr; }));
  EXPECT_EQ(exit_of(5)->reason, "stopped");
}

TEST_F(RunnerWaitTest, WalltimeAndKillDeadlinesAreKeptBetweenTicks) {
  PodLaunch stubborn = sh(6, "trap '' TERM; while :; do sleep 0.05; done");
  stubborn.walltime_ms = 200;
  stubborn.walltime_grace_ms = 200;  // SIGTERM is ignored: SIGKILL at its deadline
  ASSERT_TRUE(runner_->launch(stubborn));
  ASSERT_TRUE(wait_for([&] { return exit_of(6) != nullptr; }));
  EXPECT_EQ(exit_of(6)->reason, "walltime");
  EXPECT_EQ(exit_of(6)->signal, SIGKILL);
}

// A runner that adopts a pod from pods.json (an agent restarted) sleeps on its pidfd too.
TEST_F(RunnerWaitTest, AnAdoptedPodIsWatchedThroughItsPidfd) {
  ASSERT_TRUE(runner_->launch(sh(7, "sleep 300")));
  ASSERT_TRUE(wait_for([&] { return std::count(started_.begin(), started_.end(), 7) > 0; }));
  runner_.reset();  // the pod runs on, listed in pods.json
  runner_ = make();
  ASSERT_TRUE(runner_);
  ASSERT_EQ(runner_->adopted(), 1u);
  ASSERT_TRUE(runner_->stop({7, 0}, SIGTERM, 60'000, "stopped"));
  ASSERT_TRUE(wait_for([&] { return exit_of(7) != nullptr; }));
  EXPECT_EQ(exit_of(7)->reason, "stopped");
}

TEST(ExitWaiter, WakesOnAChildsExit) {
  ExitWaiter w;
  ASSERT_TRUE(w.usable());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::usleep(100'000);
    ::_exit(0);
  }
  const int fd = open_pidfd(pid);
  if (fd < 0) {
    ::waitpid(pid, nullptr, 0);
    GTEST_SKIP() << "no pidfd_open on this kernel";
  }
  std::vector<int> ready;
  const auto t0 = Clock::now();
  while (ready.empty() && Clock::now() - t0 < 30s) w.wait({fd}, 30s, &ready);
  EXPECT_EQ(ready, std::vector<int>{fd});
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);  // still ours to reap: the pidfd reaps nothing
  ::close(fd);
}

TEST(ExitWaiter, AWakeBeforeTheWaitEndsIt) {
  ExitWaiter w;
  ASSERT_TRUE(w.usable());
  w.wake();
  std::vector<int> ready;
  const auto t0 = Clock::now();
  w.wait({}, 600s, &ready);
  EXPECT_LT(Clock::now() - t0, 300s);  // not the timeout: the wake was kept for it
  EXPECT_TRUE(ready.empty());
  EXPECT_EQ(open_pidfd(0), -1);
}

}  // namespace
}  // namespace sluice::agent
