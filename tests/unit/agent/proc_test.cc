#include "agent/proc.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

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
