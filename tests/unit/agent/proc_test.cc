#include "agent/proc.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include <gtest/gtest.h>

extern char** environ;

namespace fs = std::filesystem;
using sluice::agent::read_proc_stat;

namespace {
// A fake /proc with one stat line for pid 42.
struct FakeProc {
  fs::path root = fs::temp_directory_path() / ("sluice-proc-test-" + std::to_string(::getpid()));
  explicit FakeProc(const std::string& line) {
    fs::create_directories(root / "42");
    std::ofstream(root / "42" / "stat") << line;
  }
  ~FakeProc() { fs::remove_all(root); }
};
}  // namespace

TEST(AgentProcStat, ReadsThisProcess) {
  auto st = read_proc_stat(::getpid());
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, 'R');
  EXPECT_EQ(st->pgrp, ::getpgrp());
  EXPECT_GT(st->start_ticks, 0u);
}

TEST(AgentProcStat, CommWithSpacesAndParentheses) {
  // Fields after the last ')': state ppid pgrp, then 6..21, then starttime (22).
  FakeProc p("42 (a) b (c)) S 1 77 77 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1 2 3\n");
  auto st = read_proc_stat(42, p.root.string());
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->pgrp, 77);
  EXPECT_EQ(st->start_ticks, 123456u);
}

TEST(AgentProcStat, MissingOrMalformed) {
  EXPECT_FALSE(read_proc_stat(43, "/nonexistent-proc-root"));
  {
    FakeProc p("42 (x) S 1 77 1 2 3\n");  // cut before starttime
    EXPECT_FALSE(read_proc_stat(42, p.root.string()));
  }
  {
    FakeProc p("42 (x) S 1 pg 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n");
    EXPECT_FALSE(read_proc_stat(42, p.root.string()));
  }
  {
    FakeProc p("42 no parenthesis\n");
    EXPECT_FALSE(read_proc_stat(42, p.root.string()));
  }
}

namespace {
// Live members of process group `pgrp` (zombies excluded).
int group_members(pid_t pgrp) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto st = read_proc_stat(static_cast<pid_t>(std::stol(name)));
    if (st && st->pgrp == pgrp && st->state != 'Z') ++n;
  }
  return n;
}
}  // namespace

// A pod whose main process ended while no agent watched it: what it left in its group is
// killed when the agent finds it gone (found by tests/chaos, seed 19: a background child
// outlived its run forever).
TEST(AgentProcStat, RemnantsOfAGroupWhoseLeaderIsGoneAreKilled) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setsid();
    ::execl("/bin/sh", "sh", "-c", "sleep 300 & sleep 0.3; exit 0", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::optional<sluice::agent::ProcStat> leader;
  for (int i = 0; i < 100 && !(leader = read_proc_stat(pid)); ++i) ::usleep(1000);
  ASSERT_TRUE(leader);
  for (int i = 0; i < 200 && group_members(pid) < 2; ++i) ::usleep(10'000);  // sh + sleep
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);  // the leader ends; its sleep lives on
  ASSERT_EQ(group_members(pid), 1);
  // A live process with another start time at that pid would be someone else's group leader:
  // nothing is killed then (this test's own pid stands for one).
  EXPECT_EQ(sluice::agent::kill_group_remnants(::getpid(), 0 + 1), 0);
  EXPECT_EQ(sluice::agent::kill_group_remnants(pid, leader->start_ticks), 1);
  for (int i = 0; i < 200 && group_members(pid) > 0; ++i) ::usleep(10'000);
  EXPECT_EQ(group_members(pid), 0);
}

namespace {
int64_t ns_per_tick() {
  return 1'000'000'000 / ::sysconf(_SC_CLK_TCK);
}
}  // namespace

TEST(AgentStartTicks, AWindowInsideOneTickNamesIt) {
  using sluice::agent::start_ticks_within;
  const int64_t t = ns_per_tick();
  EXPECT_EQ(start_ticks_within({1000 * t + t / 4, 1000 * t + t / 2}), 1000u);
  // Across a tick's edge, or within the margin of one, the tick is not guessed.
  EXPECT_FALSE(start_ticks_within({1000 * t + t / 2, 1001 * t + t / 2}));
  EXPECT_FALSE(start_ticks_within({1000 * t + 1, 1000 * t + t / 2}));
  EXPECT_FALSE(start_ticks_within({1000 * t + t / 2, 1001 * t - 1}));
  EXPECT_FALSE(start_ticks_within({1000 * t + t / 2, 1000 * t + t / 4}));  // clock went back
  EXPECT_FALSE(start_ticks_within({0, 10}));
}

// What the bracket gives is what /proc says (the pods' own spawn: ProcessRunnerTest's
// ThePodsStartTimeIsTheOneProcGives). posix_spawn, not fork: a fork of this process (an ASan
// build's especially) can take longer than a tick, and then nothing is named.
TEST(AgentStartTicks, MatchesProcForRealChildren) {
  int named = 0;
  char* argv[] = {const_cast<char*>("true"), nullptr};
  for (int i = 0; i < 200; ++i) {
    sluice::agent::StartWindow w;
    pid_t pid = 0;
    w.before_ns = sluice::agent::boottime_ns();
    ASSERT_EQ(::posix_spawnp(&pid, "true", nullptr, nullptr, argv, environ), 0);
    w.after_ns = sluice::agent::boottime_ns();
    const auto st = read_proc_stat(pid);  // a zombie until reaped: its stat stays
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(st);
    if (const auto ticks = sluice::agent::start_ticks_within(w)) {
      EXPECT_EQ(*ticks, st->start_ticks) << "child " << i;
      ++named;
    }
  }
  // Nearly all of them where a spawn takes well under a tick (10 ms); none where every one
  // takes longer, which says nothing about the bracket.
  if (named == 0) GTEST_SKIP() << "every spawn here took longer than a clock tick";
}
