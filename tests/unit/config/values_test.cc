// Quantities and durations: tables of good and bad input.
#include <gtest/gtest.h>

#include "config_test_util.h"
#include "core/model/resources.h"

namespace sluice {
namespace {

using testing_config::load_one;
using testing_config::yaml;

struct QuantityCase {
  const char* text;
  ResourceId resource;
  int64_t canonical;  // expected, in the resource's canonical unit
};

TEST(ConfigQuantity, GoodQuantitiesToCanonicalUnits) {
  const QuantityCase cases[] = {
      {"8", kGpu, 8000},    // 8 GPUs = 8000 milli-GPU
      {"500m", kCpu, 500},  // half a CPU
      {"1.5", kCpu, 1500},       {"+3", kCpu, 3000},   {"2e3", kCpu, 2'000'000},  // 2000 CPUs
      {"64Gi", kMemory, 65536},                                                   // MiB
      {"512Mi", kMemory, 512},   {"1G", kMemory, 954},  // 10^9 bytes = 953.67 MiB, rounded up
      {"1Ti", kMemory, 1 << 20}, {"0", kGpu, 0},       {"100k", kCpu, 100'000'000},
  };
  for (const auto& c : cases) {
    auto milli = parse_quantity_milli(c.text);
    ASSERT_TRUE(milli) << c.text;
    EXPECT_EQ(milli_to_canonical(c.resource, *milli), c.canonical) << c.text;
  }
}

TEST(ConfigQuantity, BadQuantities) {
  for (const char* text : {"", "abc", "1.2.3", "5X", "Gi", "--1", "1 Gi", "0x10", "1e99"})
    EXPECT_FALSE(parse_quantity_milli(text)) << text;
  // Negative parses (so the loader can say "must not be negative").
  EXPECT_EQ(parse_quantity_milli("-4"), -4000);
}

TEST(ConfigQuantity, QuantitiesInManifestsAsIntsOrStrings) {
  auto out = load_one(yaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu, memory]
    flavors:
    - name: f
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 8}
      - {name: cpu, nominalQuota: "500m"}
      - {name: memory, nominalQuota: 64Gi}
)"));
  const auto& fq = out.config.cluster_queues.at(0).resource_groups.at(0).flavors.at(0);
  EXPECT_EQ(fq.find(kGpu)->nominal, 8000);      // milli-GPU
  EXPECT_EQ(fq.find(kCpu)->nominal, 500);       // milli-CPU
  EXPECT_EQ(fq.find(kMemory)->nominal, 65536);  // MiB
}

TEST(ConfigDuration, GoodDurations) {
  const std::pair<const char*, TimeNs> cases[] = {
      {"1h", 3600 * kNsPerSec},
      {"30m", 1800 * kNsPerSec},
      {"90s", 90 * kNsPerSec},
      {"1h30m", 5400 * kNsPerSec},
      {"250ms", 250'000'000},
      {"1.5h", 5400 * kNsPerSec},
      {"2d", 2 * 86400 * kNsPerSec},
      {"0", 0},
      {"45", 45 * kNsPerSec},
      {"0.5", kNsPerSec / 2},
      {"10us", 10'000},
      {"7ns", 7},
  };
  for (const auto& [text, ns] : cases) {
    auto v = parse_duration_ns(text);
    ASSERT_TRUE(v) << text;
    EXPECT_EQ(*v, ns) << text;
  }
}

TEST(ConfigDuration, BadDurations) {
  for (const char* text : {"", "h", "1x", "-1s", "1h-", "s1", "1hh", "1 h", "99999999999999d"})
    EXPECT_FALSE(parse_duration_ns(text)) << text;
}

}  // namespace
}  // namespace sluice
