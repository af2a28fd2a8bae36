// GPU discovery: fake specs, model names, and the NVML-absent path.
#include "agent/gpu.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace sluice::agent {
namespace {

TEST(AgentGpu, ParsesFakeSpecs) {
  auto one = parse_fake_spec("8xH100");
  ASSERT_TRUE(one) << one.error();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].count, 8);
  EXPECT_EQ((*one)[0].model, "H100");
  EXPECT_EQ((*one)[0].memory_mib, 80 * 1024);  // default for H100

  auto two = parse_fake_spec("8xH100:80Gi,2xL4:24Gi");
  ASSERT_TRUE(two) << two.error();
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1].count, 2);
  EXPECT_EQ((*two)[1].model, "L4");
  EXPECT_EQ((*two)[1].memory_mib, 24 * 1024);

  auto defaults = parse_fake_spec("1xA100,1xL4,1xT4,2xX:512Mi");
  ASSERT_TRUE(defaults) << defaults.error();
  EXPECT_EQ((*defaults)[0].memory_mib, 80 * 1024);  // A100
  EXPECT_EQ((*defaults)[1].memory_mib, 24 * 1024);  // L4
  EXPECT_EQ((*defaults)[2].memory_mib, 16 * 1024);  // anything else
  EXPECT_EQ((*defaults)[3].memory_mib, 512);
}

TEST(AgentGpu, RejectsBadFakeSpecs) {
  for (const char* bad :
       {"", "8", "xH100", "8xH100,", ",8xH100", "0xH100", "-1xH100", "8x", "8xH100:", "8xH100:80",
        "8xH100:80GB", "8xH100:0Gi", "8xH 100", "abcxH100", "2000xH100", "8xH100:80Gi:1"}) {
    auto r = parse_fake_spec(bad);
    EXPECT_FALSE(r) << "accepted \"" << bad << "\"";
    if (!r) {
      EXPECT_FALSE(r.error().empty());
    }
  }
  auto r = parse_fake_spec("8xH100:80");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("Gi"), std::string::npos) << r.error();  // says what it wants
}

TEST(AgentGpu, FakeGpusHaveUuidNumaAndNvlinkGroups) {
  auto groups = parse_fake_spec("4xH100,2xL4");
  ASSERT_TRUE(groups);
  auto gpus = make_fake_gpus(*groups, "n7");
  ASSERT_EQ(gpus.size(), 6u);
  EXPECT_EQ(gpus[0].uuid, "fake-n7-0");
  EXPECT_EQ(gpus[5].uuid, "fake-n7-5");
  EXPECT_EQ(gpus[5].index, 5);
  // NUMA node = i*2/count with count 6: 0,0,0,1,1,1.
  EXPECT_EQ(gpus[2].numa_node, 0);
  EXPECT_EQ(gpus[3].numa_node, 1);
  // NVLink peers: the other GPUs of the same group only.
  EXPECT_EQ(gpus[1].nvlink_peers, (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(gpus[4].nvlink_peers, (std::vector<int32_t>{5}));
  EXPECT_EQ(gpus[4].model, "L4");
  EXPECT_FALSE(gpus[0].mig);
}

TEST(AgentGpu, NormalizesNvmlNames) {
  EXPECT_EQ(normalize_model("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(normalize_model("NVIDIA A100-SXM4-80GB"), "A100");
  EXPECT_EQ(normalize_model("NVIDIA L4"), "L4");
  EXPECT_EQ(normalize_model("NVIDIA H200"), "H200");
  EXPECT_EQ(normalize_model("Tesla V100-SXM2-16GB"), "V100");
  EXPECT_EQ(normalize_model("NVIDIA GeForce RTX 4090"), "RTX4090");
  EXPECT_EQ(normalize_model(""), "unknown");
}

TEST(AgentGpu, ProviderFactory) {
  auto fake = make_gpu_provider("fake:2xL4", "n1");
  ASSERT_TRUE(fake) << fake.error();
  EXPECT_EQ((*fake)->kind(), "fake");
  EXPECT_EQ((*fake)->gpus().size(), 2u);
  EXPECT_TRUE((*fake)->utilization_pct().empty());

  auto none = make_gpu_provider("none", "n1");
  ASSERT_TRUE(none);
  EXPECT_TRUE((*none)->gpus().empty());

  auto bad = make_gpu_provider("fake:8xH100:80", "n1");
  EXPECT_FALSE(bad);
  auto unknown = make_gpu_provider("gpus please", "n1");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("fake:"), std::string::npos);
}

TEST(AgentGpu, NvmlAbsentIsAClearError) {
  NvmlOptions nvml;
  nvml.library = "libnvidia-ml-does-not-exist.so.1";
  auto r = make_gpu_provider("auto", "n1", nvml);
  ASSERT_FALSE(r);
  // The message names the library, the cause, and the way out.
  EXPECT_NE(r.error().find("NVML not found (libnvidia-ml-does-not-exist.so.1)"), std::string::npos)
      << r.error();
  EXPECT_NE(r.error().find("no NVIDIA driver"), std::string::npos);
  EXPECT_NE(r.error().find("--gpus fake:8xH100"), std::string::npos);
}

// The NVML provider end to end against tests/fake_nvml (a stand-in libnvidia-ml): dlopen,
// discovery, NUMA from sysfs, NVLink peers, MIG, utilisation.
TEST(AgentGpu, NvmlDiscoversThroughTheDriverLibrary) {
  testing::TempDir sysfs;
  for (const char* bus : {"0000:1b:00.0", "0000:1c:00.0", "0000:3b:00.0", "0000:3c:00.0"}) {
    std::filesystem::create_directories(sysfs.path() + "/" + bus);
    std::ofstream(sysfs.path() + "/" + bus + "/numa_node") << (bus[5] == '1' ? "0\n" : "1\n");
  }
  NvmlOptions nvml;
  nvml.library = SLUICE_FAKE_NVML;
  nvml.sysfs_pci = sysfs.path();
  ::unsetenv("SLUICE_FAKE_NVML_UTIL");
  auto r = make_gpu_provider("auto", "n1", nvml);
  ASSERT_TRUE(r) << r.error();
  auto& p = **r;
  EXPECT_EQ(p.kind(), "nvml");
  const auto& g = p.gpus();
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0].model, "H100");
  EXPECT_EQ(g[0].memory_mib, 81559);
  EXPECT_EQ(g[2].uuid, "GPU-fake-nvml-2");
  EXPECT_EQ(g[1].numa_node, 0);
  EXPECT_EQ(g[2].numa_node, 1);
  EXPECT_EQ(g[0].nvlink_peers, std::vector<int32_t>{1});
  EXPECT_EQ(g[3].nvlink_peers, std::vector<int32_t>{2});
  EXPECT_FALSE(g[0].mig);
  EXPECT_TRUE(g[3].mig);
  EXPECT_EQ(p.utilization_pct(), (std::vector<int32_t>{0, 0, 0, 0}));
  ::setenv("SLUICE_FAKE_NVML_UTIL", "35,0,-,100", 1);
  EXPECT_EQ(p.utilization_pct(), (std::vector<int32_t>{35, 0, -1, 100}));
  // A pod on GPUs 0 and 1: the most memory of one of them, their mean utilisation; the use
  // file is not NVML's business.
  ::setenv("SLUICE_FAKE_NVML_USED_MIB", "11264,2048,0,0", 1);
  auto s = p.pod_sample({0, 1}, "/nonexistent");
  ::unsetenv("SLUICE_FAKE_NVML_USED_MIB");
  ::unsetenv("SLUICE_FAKE_NVML_UTIL");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->used_mib, 11264);
  EXPECT_EQ(s->util_pct, 17);           // (35 + 0) / 2
  EXPECT_FALSE(p.pod_sample({}, ""));   // a CPU-only pod: nothing measured
  EXPECT_FALSE(p.pod_sample({9}, ""));  // no such device
}

TEST(AgentGpu, FakeGpusReadThePodsUseFile) {
  EXPECT_EQ(parse_gpu_use("11264 35\n")->used_mib, 11264);
  EXPECT_EQ(parse_gpu_use("0 100")->util_pct, 100);
  for (const char* bad : {"", "11264", "11264 101", "-1 5", "1.5 3", "1  3", "a b", "1 2 3",
                          "2000000000 1", "11264 35\n\n"})
    EXPECT_FALSE(parse_gpu_use(bad)) << bad;
  EXPECT_NE(parse_gpu_use("x").error().find("USED_MIB UTIL_PCT"), std::string::npos);
  auto r = make_gpu_provider("fake:2xH100", "n1");
  ASSERT_TRUE(r) << r.error();
  testing::TempDir dir;
  const std::string file = dir.path() + "/use";
  EXPECT_FALSE((*r)->pod_sample({0}, file));  // not written yet
  std::ofstream(file) << "11264 35\n";
  auto s = (*r)->pod_sample({0}, file);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->used_mib, 11264);
  EXPECT_EQ(s->util_pct, 35);
  EXPECT_FALSE((*r)->pod_sample({}, file));  // a pod without GPUs uses none
  std::ofstream(file) << "lots";
  EXPECT_FALSE((*r)->pod_sample({0}, file));
}

TEST(AgentGpu, NvmlInitFailureSaysWhy) {
  NvmlOptions nvml;
  nvml.library = SLUICE_FAKE_NVML;
  ::setenv("SLUICE_FAKE_NVML_INIT_FAIL", "1", 1);
  auto r = make_gpu_provider("auto", "n1", nvml);
  ::unsetenv("SLUICE_FAKE_NVML_INIT_FAIL");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("NVML init failed: Driver Not Loaded"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace sluice::agent
