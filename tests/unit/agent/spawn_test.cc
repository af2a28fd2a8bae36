#include "agent/spawn.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace sluice::agent {
namespace {

using std::chrono::milliseconds;
using testing::TempDir;

void make_executable(const std::string& file) {
  std::ofstream(file) << "#!/bin/sh\n";
  ::chmod(file.c_str(), 0755);
}

TEST(FindExecutable, SearchesThePathInOrder) {
  TempDir a, b;
  make_executable(b.path() + "/tool");
  const std::string path = a.path() + ":" + b.path();
  EXPECT_EQ(find_executable("tool", path), b.path() + "/tool");
  make_executable(a.path() + "/tool");
  EXPECT_EQ(find_executable("tool", path), a.path() + "/tool");
  EXPECT_EQ(find_executable("missing", path), std::nullopt);
  EXPECT_EQ(find_executable("./rel/x", path), "./rel/x");  // with a '/': as it is
}

TEST(ExecutableCache, RemembersAFoundCommandForItsTtlOnly) {
  TempDir a, b;
  make_executable(b.path() + "/tool");
  const std::string path = a.path() + ":" + b.path();
  ExecutableCache cache(milliseconds(1000));
  const auto t0 = ExecutableCache::Clock::time_point{} + std::chrono::hours(1);
  EXPECT_EQ(cache.find("tool", path, t0), b.path() + "/tool");
  // Installed earlier in PATH: the remembered answer holds within the TTL, not after it.
  make_executable(a.path() + "/tool");
  EXPECT_EQ(cache.find("tool", path, t0 + milliseconds(999)), b.path() + "/tool");
  EXPECT_EQ(cache.find("tool", path, t0 + milliseconds(1000)), a.path() + "/tool");
  // Another PATH is another lookup.
  EXPECT_EQ(cache.find("tool", b.path(), t0 + milliseconds(1001)), b.path() + "/tool");
}

TEST(ExecutableCache, ANameNotFoundIsLookedUpEveryTime) {
  TempDir a;
  ExecutableCache cache(milliseconds(1000));
  const auto t0 = ExecutableCache::Clock::time_point{} + std::chrono::hours(1);
  EXPECT_EQ(cache.find("tool", a.path(), t0), std::nullopt);
  make_executable(a.path() + "/tool");
  EXPECT_EQ(cache.find("tool", a.path(), t0 + milliseconds(1)), a.path() + "/tool");
  // Gone, and its entry expired: not found again (nothing stale is returned).
  std::filesystem::remove(a.path() + "/tool");
  EXPECT_EQ(cache.find("tool", a.path(), t0 + milliseconds(2000)), std::nullopt);
}

}  // namespace
}  // namespace sluice::agent
