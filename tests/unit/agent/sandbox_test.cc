// The bubblewrap command line around a pod.
#include "agent/sandbox.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sluice::agent {
namespace {

// True when `args` holds the consecutive values `want`.
bool has_seq(const std::vector<std::string>& args, const std::vector<std::string>& want) {
  return std::search(args.begin(), args.end(), want.begin(), want.end()) != args.end();
}

TEST(AgentSandbox, BwrapHidesTheHostAndOtherPods) {
  auto a = bwrap_argv("/usr/bin/bwrap", {"/var/lib/sa", "/var/lib/sa/work/5-0"}, {});
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a.front(), "/usr/bin/bwrap");
  EXPECT_EQ(a.back(), "--");  // the command follows
  EXPECT_TRUE(has_seq(a, {"--ro-bind", "/", "/"}));
  EXPECT_TRUE(has_seq(a, {"--tmpfs", "/tmp"}));
  EXPECT_TRUE(has_seq(a, {"--tmpfs", "/var/lib/sa"}));  // the agent's state: gone
  EXPECT_TRUE(has_seq(a, {"--bind", "/var/lib/sa/work/5-0", "/var/lib/sa/work/5-0"}));
  EXPECT_TRUE(has_seq(a, {"--chdir", "/var/lib/sa/work/5-0"}));
  EXPECT_TRUE(has_seq(a, {"--unshare-pid"}));
  // The state dir's tmpfs comes before the work dir's bind (mounts apply in order).
  auto tmpfs = std::find(a.begin(), a.end(), "/var/lib/sa");
  auto bind = std::find(a.begin(), a.end(), "--bind");
  EXPECT_LT(tmpfs - a.begin(), bind - a.begin());
  // A CPU-only pod gets no GPU device node.
  EXPECT_EQ(std::count_if(a.begin(), a.end(),
                          [](const std::string& s) { return s.rfind("/dev/nvidia", 0) == 0; }),
            0);
}

TEST(AgentSandbox, OnlyThePodsGpus) {
  auto a = bwrap_argv("bwrap", {"/s", "/s/work/1-0"}, {2, 5});
  EXPECT_TRUE(has_seq(a, {"--dev-bind-try", "/dev/nvidia2", "/dev/nvidia2"}));
  EXPECT_TRUE(has_seq(a, {"--dev-bind-try", "/dev/nvidia5", "/dev/nvidia5"}));
  EXPECT_TRUE(has_seq(a, {"--dev-bind-try", "/dev/nvidiactl", "/dev/nvidiactl"}));
  EXPECT_FALSE(has_seq(a, {"--dev-bind-try", "/dev/nvidia0", "/dev/nvidia0"}));
}

// Stops reach the whole sandbox: it stays in the pod's process group (no --new-session, so the
// stop's SIGTERM reaches the command and SIGKILL its PID namespace's init). It does not die
// with the agent (no --die-with-parent): a restarted agent adopts it.
TEST(AgentSandbox, TheSandboxStaysInThePodsGroupAndOutlivesTheAgent) {
  for (bool tty : {false, true}) {
    auto a = bwrap_argv("bwrap", {"/s", "/s/work/1-0", "", tty}, {});
    EXPECT_FALSE(has_seq(a, {"--die-with-parent"}));
    EXPECT_FALSE(has_seq(a, {"--new-session"}));
  }
}

// A working directory may not replace the sandbox's own /proc, /dev or /tmp, nor expose /sys
// or the agent's state (issue 35: `workingDir: /proc` showed the host's processes).
TEST(AgentSandbox, WorkingDirectoriesThatWouldReplaceTheSandboxsOwn) {
  const std::string state = "/var/lib/sa";
  for (const char* bad :
       {"/", "/proc", "/proc/1/root", "/dev", "/dev/shm", "/sys/fs", "/tmp", "/tmp/", "/var/tmp",
        "/var", "/var/lib", "/var/lib/sa", "/var/lib/sa/work/2-0", "/tmp/../proc"})
    EXPECT_NE(sandbox_reserved(bad, state), "") << bad;
  for (const char* good : {"/home/alice/proj", "/tmp/alice", "/var/tmp/x/y", "/srv/data",
                           "/var/lib/other", "/procfs", "/tmpdata"})
    EXPECT_EQ(sandbox_reserved(good, state), "") << good;
}

}  // namespace
}  // namespace sluice::agent
