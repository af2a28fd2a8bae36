#include "agent/spawn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

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

// A child spawned with a private /proc as `uid`: it writes its mount namespace and whether it
// sees this process in /proc to dir/out-<uid>, then sleeps (alive, its namespace cannot be
// freed and its number reused by the next child's). Returns its pid.
pid_t spawn_private_proc_child(const std::string& dir, uid_t uid) {
  const std::string out = dir + "/out-" + std::to_string(uid);
  const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  const std::string script = "readlink /proc/self/ns/mnt; test -e /proc/" +
                             std::to_string(::getpid()) +
                             " && echo visible || echo hidden; exec sleep 60";
  std::vector<std::string> args{"sh", "-c", script};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  ChildSetup c{"/bin/sh", argv.data(), envp, dir.c_str(), dev_null(), fd, 1024};
  c.drop = true;
  c.uid = uid;
  c.gid = uid;
  c.private_proc = true;
  ChildError error;
  const pid_t pid = spawn_child(c, &error);
  ::close(fd);
  if (pid > 0 && error.stage != 0) {
    ::waitpid(pid, nullptr, 0);
    return -1;
  }
  return pid;
}

// Its two lines, once written.
std::string view_of(const std::string& dir, uid_t uid) {
  const std::string out = dir + "/out-" + std::to_string(uid);
  std::string text;
  testing::wait_until([&] {
    std::ifstream in(out);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return std::count(text.begin(), text.end(), '\n') >= 2;
  });
  return text;
}

// Pods of other uids share one namespace whose /proc hides the agent (one copy of the mount
// table for all, no grace period at each exit); a root pod gets one of its own.
TEST(SpawnChild, PodsJoinOneSharedPrivateProcAndARootPodHasItsOwn) {
  if (::geteuid() != 0 || !private_proc_works()) GTEST_SKIP() << "needs root and mounts";
  TempDir d;
  ::chmod(d.path().c_str(), 0755);
  ASSERT_GE(shared_proc_namespace(), 0);
  char mine[64] = {};
  ASSERT_GT(::readlink("/proc/self/ns/mnt", mine, sizeof mine - 1), 0);
  const std::vector<uid_t> uids{65534, 65533, 0};
  std::vector<pid_t> pids;
  for (uid_t u : uids) pids.push_back(spawn_private_proc_child(d.path(), u));
  std::vector<std::string> views, ns;
  for (uid_t u : uids) {
    views.push_back(view_of(d.path(), u));
    ns.push_back(views.back().substr(0, views.back().find('\n')));
  }
  for (pid_t p : pids) {
    if (p <= 0) continue;
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
  for (size_t i = 0; i < uids.size(); ++i) {
    ASSERT_GT(pids[i], 0) << "uid " << uids[i];
    EXPECT_EQ(ns[i].rfind("mnt:[", 0), 0u) << views[i];
    EXPECT_NE(ns[i], mine) << views[i];
  }
  EXPECT_NE(views[0].find("hidden"), std::string::npos) << views[0];
  EXPECT_NE(views[1].find("hidden"), std::string::npos) << views[1];
  EXPECT_NE(views[2].find("visible"), std::string::npos) << views[2];  // root sees past hidepid
  EXPECT_EQ(ns[0], ns[1]);
  EXPECT_NE(ns[2], ns[0]);
}

}  // namespace
}  // namespace sluice::agent
