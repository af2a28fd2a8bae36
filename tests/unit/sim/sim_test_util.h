#pragma once
// Shared fixtures of the simulator tests: a temp dir per test and a tiny configuration.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "config/loader.h"

namespace sluice::sim::testing {

// The trace's priority classes: `low` (best-effort rows, 100) and `high` (strict rows, 1000).
inline constexpr const char* kPriorityClassesYaml = R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: low}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
)";

// One node of `gpus` GPUs, one ClusterQueue `team` (nominal = all GPUs) with LocalQueue `team`
// in namespace default, a second queue `other` (nominal 0, may borrow), classes low and high.
inline std::string tiny_config_yaml(int gpus) {
  const std::string g = std::to_string(gpus);
  return R"(apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: tiny}
spec:
  nodeGroups:
  - {namePrefix: n-, count: 1, cpu: 8, memory: 64Gi, gpus: {count: )" +
         g + R"(, model: T4}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
)" + std::string(kPriorityClassesYaml) +
         R"(---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team}
spec:
  cohort: all
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default
      resources: [{name: nvidia.com/gpu, nominalQuota: )" +
         g + R"(}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: other}
spec:
  cohort: all
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default
      resources: [{name: nvidia.com/gpu, nominalQuota: 0}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team, namespace: default}
spec: {clusterQueue: team}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: other, namespace: default}
spec: {clusterQueue: other}
)";
}

inline std::shared_ptr<const Config> load_config(const std::string& yaml) {
  LoadOutput out = load({Source{"tiny.yaml", yaml}}, LoadOptions{});
  EXPECT_TRUE(out.ok()) << (out.errors.empty() ? "" : out.errors.front());
  return std::make_shared<const Config>(std::move(out.config));
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("sluice_sim_") + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::filesystem::path dir_;
};

}  // namespace sluice::sim::testing
