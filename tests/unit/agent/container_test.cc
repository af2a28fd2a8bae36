// The command line a pod with an image runs under (container.h).
#include "agent/container.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace sluice::agent {
namespace {

bool has_pair(const std::vector<std::string>& v, const std::string& a, const std::string& b) {
  for (size_t i = 0; i + 1 < v.size(); ++i)
    if (v[i] == a && v[i + 1] == b) return true;
  return false;
}

TEST(AgentContainer, RunsTheImageWithTheWorkDirEnvAndUser) {
  proto::Assignment a;
  a.job = 7;
  a.pod = 1;
  a.image = "registry.example/train:1";
  a.command = {"python3", "train.py"};
  const auto rt = split_runtime("/usr/bin/podman  --runtime runc");
  ASSERT_EQ(rt, (std::vector<std::string>{"/usr/bin/podman", "--runtime", "runc"}));
  const auto c = container_launch(rt, a, "/var/lib/sluice/work/7-1",
                                  {"PATH=/usr/bin", "SLUICE_JOB_ID=7", "A=b c"},
                                  PodIdentity{60001, 60001, "sluice-ns"}, {"nvidia.com/gpu=3"});
  const auto& v = c.argv;
  ASSERT_GE(v.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(v.begin(), v.begin() + 4),
            (std::vector<std::string>{"/usr/bin/podman", "--runtime", "runc", "run"}));
  EXPECT_TRUE(has_pair(v, "--name", "sluice-7-1"));
  EXPECT_TRUE(has_pair(v, "--network", "host"));
  EXPECT_TRUE(has_pair(v, "-v", "/var/lib/sluice/work/7-1:/var/lib/sluice/work/7-1"));
  EXPECT_TRUE(has_pair(v, "-w", "/var/lib/sluice/work/7-1"));
  EXPECT_TRUE(has_pair(v, "--user", "60001:60001"));
  EXPECT_TRUE(has_pair(v, "--device", "nvidia.com/gpu=3"));
  EXPECT_TRUE(has_pair(v, "--env", "SLUICE_JOB_ID=7"));
  EXPECT_TRUE(has_pair(v, "--env", "A=b c"));
  EXPECT_FALSE(has_pair(v, "--env", "PATH=/usr/bin"));  // the image's PATH
  EXPECT_TRUE(has_pair(v, "--entrypoint", "python3"));  // a Kubernetes command
  EXPECT_EQ(v.back(), "registry.example/train:1");      // the arguments follow
  EXPECT_EQ(c.cleanup, (std::vector<std::string>{"/usr/bin/podman", "--runtime", "runc", "rm", "-f",
                                                 "--time", "0", "sluice-7-1"}));
}

TEST(AgentContainer, ArgsAloneKeepTheImagesEntrypoint) {
  proto::Assignment a;
  a.image = "img";
  a.command = {"entrypoint-tester", "hello"};
  a.image_args_only = true;
  const auto c = container_launch({"/usr/bin/podman"}, a, "/w", {}, std::nullopt, {});
  EXPECT_EQ(std::count(c.argv.begin(), c.argv.end(), "--entrypoint"), 0);
  EXPECT_EQ(std::count(c.argv.begin(), c.argv.end(), "--user"), 0);
  EXPECT_EQ(c.argv.back(), "img");
  EXPECT_TRUE(split_runtime("  ").empty());
}

}  // namespace
}  // namespace sluice::agent
