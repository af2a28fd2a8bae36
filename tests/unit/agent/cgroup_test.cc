// cgroup v2 for pods: the values written, the mount found, and the plumbing against a stand-in
// cgroup directory (a plain directory with the controller files: no root or cgroup2 needed).
#include "agent/cgroup.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace sluice::agent {
namespace {

using testing::read_file;

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(AgentCgroup, LimitValues) {
  EXPECT_EQ(cpu_max_value(0), "max 100000");        // no request: no limit
  EXPECT_EQ(cpu_max_value(2000), "200000 100000");  // 2 CPUs: 200 ms per 100 ms
  EXPECT_EQ(cpu_max_value(500), "50000 100000");
  EXPECT_EQ(cpu_max_value(1), "1000 100000");  // the kernel's minimum quota
  EXPECT_EQ(memory_max_value(0), "max");
  EXPECT_EQ(memory_max_value(512), "536870912");
}

TEST(AgentCgroup, FindsTheCgroup2Mount) {
  const std::string hybrid =
      "30 24 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
      "31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev - cgroup2 cgroup2 rw\n"
      "32 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
  EXPECT_EQ(cgroup2_mount(hybrid), "/sys/fs/cgroup/unified");
  EXPECT_EQ(cgroup2_mount("25 1 0:22 / /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw\n"),
            "/sys/fs/cgroup");
  EXPECT_EQ(cgroup2_mount("32 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw\n"), "");
}

TEST(AgentCgroup, SkipsWhereTheMachineDoesNotAllowIt) {
  testing::TempDir dir;
  write(dir.path() + "/cgroup.controllers", "io pids\n");  // no cpu, no memory
  std::string skip;
  auto cg = Cgroups::create({"auto", dir.path() + "/sluice"}, &skip);
  ASSERT_TRUE(cg) << cg.error();
  EXPECT_EQ(*cg, nullptr);
  EXPECT_NE(skip.find("cpu controller is not available"), std::string::npos) << skip;
  EXPECT_FALSE(Cgroups::create({"on", dir.path() + "/sluice"}, &skip));  // required: an error
  EXPECT_FALSE(Cgroups::create({"sometimes", ""}, &skip));
  skip.clear();
  auto off = Cgroups::create({"off", ""}, &skip);
  ASSERT_TRUE(off);
  EXPECT_EQ(*off, nullptr);
  auto no_mount = Cgroups::create({"auto", "", dir.path() + "/no-mountinfo"}, &skip);
  ASSERT_TRUE(no_mount);
  EXPECT_EQ(*no_mount, nullptr);
  EXPECT_NE(skip.find("no cgroup2"), std::string::npos) << skip;
}

TEST(AgentCgroup, PreparesAPodsGroup) {
  testing::TempDir dir;
  write(dir.path() + "/cgroup.controllers", "cpu io memory pids\n");
  write(dir.path() + "/cgroup.subtree_control", "");
  std::string skip;
  auto cg = Cgroups::create({"on", dir.path() + "/sluice"}, &skip);
  ASSERT_TRUE(cg) << cg.error();
  ASSERT_NE(*cg, nullptr);
  // Controllers enabled on the way down.
  EXPECT_EQ(read_file(dir.path() + "/cgroup.subtree_control"), "+cpu +memory");
  EXPECT_EQ(read_file(dir.path() + "/sluice/cgroup.subtree_control"), "+cpu +memory");
  auto fd = (*cg)->prepare({7, 1}, 1500, 2048);
  ASSERT_TRUE(fd) << fd.error();
  const std::string pod = dir.path() + "/sluice/7-1";
  EXPECT_EQ((*cg)->dir({7, 1}), pod);
  EXPECT_EQ(read_file(pod + "/cpu.max"), "150000 100000");
  EXPECT_EQ(read_file(pod + "/memory.max"), "2147483648");
  ASSERT_EQ(::write(*fd, "0", 1), 1);  // what the child writes to join
  ::close(*fd);
  EXPECT_EQ(read_file(pod + "/cgroup.procs"), "0");
  // A plain directory with files cannot be rmdir'ed: it stays pending, then is given up.
  (*cg)->release({7, 1});
  std::vector<std::string> gave_up;
  for (int i = 0; i < Cgroups::kRemoveTries && gave_up.empty(); ++i) (*cg)->sweep(&gave_up);
  ASSERT_EQ(gave_up.size(), 1u);
  EXPECT_EQ(gave_up[0], pod);
  EXPECT_EQ((*cg)->sweep(), 0u);
  (*cg)->release({8, 0});  // never had a group: nothing to do
  EXPECT_EQ((*cg)->sweep(), 0u);
}

}  // namespace
}  // namespace sluice::agent
