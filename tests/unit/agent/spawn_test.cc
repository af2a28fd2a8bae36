#include "agent/spawn.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

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

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

TEST(OpenPodFiles, NewFilesAreTheAgentsAndClosed) {
  TempDir d;
  std::string why;
  const int fd = open_pod_files({d.path() + "/work", d.path() + "/log"}, std::nullopt, &why);
  ASSERT_GE(fd, 0) << why;
  ::close(fd);
  EXPECT_EQ(mode_of(d.path() + "/work"), 0700u);
  EXPECT_EQ(mode_of(d.path() + "/log"), 0600u);
}

TEST(OpenPodFiles, FilesLeftByAnEarlierRunAreTightenedAndAppendedTo) {
  TempDir d;
  const std::string work = d.path() + "/work", log = d.path() + "/log";
  ASSERT_EQ(::mkdir(work.c_str(), 0755), 0);
  ::chmod(work.c_str(), 0755);
  std::ofstream(log) << "first run\n";
  ::chmod(log.c_str(), 0644);
  std::string why;
  const int fd = open_pod_files({work, log}, std::nullopt, &why);
  ASSERT_GE(fd, 0) << why;
  ASSERT_EQ(::write(fd, "second\n", 7), 7);
  ::close(fd);
  EXPECT_EQ(mode_of(work), 0700u);
  EXPECT_EQ(mode_of(log), 0600u);
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "first run\nsecond\n");
}

TEST(OpenPodFiles, ALinkInPlaceOfTheLogIsRefused) {
  TempDir d;
  const std::string target = d.path() + "/elsewhere", log = d.path() + "/log";
  std::ofstream(target) << "";
  ASSERT_EQ(::symlink(target.c_str(), log.c_str()), 0);
  std::string why;
  EXPECT_LT(open_pod_files({d.path() + "/work", log}, std::nullopt, &why), 0);
  EXPECT_NE(why.find("cannot open " + log), std::string::npos) << why;
}

}  // namespace
}  // namespace sluice::agent
