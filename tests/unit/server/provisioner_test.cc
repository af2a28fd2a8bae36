// The provisioner's calls as real processes (src/server/provisioner.cc): arguments and
// environment reach the command, its exit status and output come back, a hanging call is
// killed at its timeout with what it started, and the runner hands results back from its
// threads.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "server/provisioner.h"

namespace sluice::server {
namespace provisioner_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

struct ProvisionerTest : ::testing::Test {
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("sluice-prov-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  ProvisionCall call_of(const std::string& script, TimeNs timeout = 20 * kNsPerSec) {
    ProvisionCall c;
    c.pool_name = "spot";
    c.node = "sp-0";
    c.op = "create";
    c.argv = {"/bin/sh", "-c", script, "provision", "create", "spot", "sp-0"};
    c.env = {"SLUICE_NODE=sp-0", "SLUICE_NODE_GPUS=2"};
    c.timeout_ns = timeout;
    return c;
  }
  std::string log() const { return (dir / "call.log").string(); }
  std::filesystem::path dir;
};

TEST_F(ProvisionerTest, ArgumentsAndEnvironmentReachTheCommandAndItsOutputComesBack) {
  auto r = run_provision_call(call_of("echo \"$1 $2 $3 $SLUICE_NODE $SLUICE_NODE_GPUS\""), log());
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.output, "create spot sp-0 sp-0 2");
}

TEST_F(ProvisionerTest, AFailureIsItsExitStatusAndTheTailOfItsOutput) {
  auto r = run_provision_call(call_of("echo quota exceeded >&2; exit 3"), log());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output, "quota exceeded");
  ProvisionCall missing = call_of("");
  missing.argv = {(dir / "no-such-provisioner").string()};
  r = run_provision_call(missing, log());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.output.find("cannot run"), std::string::npos) << r.output;
}

TEST_F(ProvisionerTest, AHangingCallIsKilledAtItsTimeoutWithWhatItStarted) {
  const std::string child = (dir / "child.pid").string();
  // The call starts a background sleeper (its pid written first), then hangs itself.
  auto r = run_provision_call(
      call_of("sleep 300 & echo $! >" + child + "; echo started; sleep 300", kNsPerSec / 5), log());
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.timed_out);
  EXPECT_NE(r.output.find("started"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("killed after its timeout"), std::string::npos) << r.output;
  std::ifstream in(child);
  pid_t pid = 0;
  ASSERT_TRUE(in >> pid);
  // Killed with the call's process group; reaped by init (or the test's reaper) eventually.
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = ::kill(pid, 0) != 0;
    if (!gone) {
      std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
      std::string skip, state;
      gone = stat >> skip >> skip >> state && state == "Z";  // dead, waiting for its parent
    }
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone);
}

TEST_F(ProvisionerTest, TheRunnerRunsCallsOnItsThreadsAndHandsBackEveryResult) {
  std::mutex mu;
  std::condition_variable cv;
  int woken = 0;
  ProvisionRunner runner(dir.string(), 2, [&] {
    std::lock_guard lk(mu);
    ++woken;
    cv.notify_all();
  });
  std::vector<ProvisionCall> calls;
  for (int i = 0; i < 3; ++i) {
    ProvisionCall c = call_of("exit " + std::to_string(i));
    c.node = "sp-" + std::to_string(i);
    calls.push_back(c);
  }
  runner.submit(calls);
  std::vector<ProvisionResult> got;
  for (int i = 0; i < 3000 && got.size() < 3; ++i) {
    std::unique_lock lk(mu);
    cv.wait_for(lk, std::chrono::milliseconds(10), [&] { return woken > 0; });
    woken = 0;
    lk.unlock();
    for (auto& r : runner.take_results()) got.push_back(std::move(r));
  }
  ASSERT_EQ(got.size(), 3u);
  std::sort(got.begin(), got.end(),
            [](const auto& a, const auto& b) { return a.call.node < b.call.node; });
  EXPECT_TRUE(got[0].ok);
  EXPECT_EQ(got[1].exit_code, 1);
  EXPECT_EQ(got[2].exit_code, 2);
  // Stopping kills a call in flight; calls submitted after are dropped.
  runner.submit({call_of("sleep 300")});
  runner.stop();
  runner.submit({call_of("true")});
  EXPECT_TRUE(runner.take_results().empty());
}

}  // namespace
}  // namespace provisioner_test
}  // namespace sluice::server
