// A job's deadline in its document: spec.completeBy / spec.completeWithin on a sluice Job, the
// sluice.dev/complete-by / complete-within annotations on the Kubernetes kinds, hostile values.
#include <gtest/gtest.h>

#include "config_test_util.h"
#include "core/model/deadline.h"

namespace sluice {
namespace deadline_fields_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using testing_config::any_contains;
using testing_config::dump;
using testing_config::load_one;
using testing_config::yaml;

const char* kBase = R"(
apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  nodeGroups:
  - {namePrefix: n, count: 2, cpu: 64, memory: 512Gi, gpus: {count: 8, model: H100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: any}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: any, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: default, namespace: default}
spec: {clusterQueue: cq}
)";

JobsOutput jobs(const std::string& text) {
  static const Config config = [] {
    auto out = load_one(yaml(kBase), "base.yaml");
    EXPECT_TRUE(out.ok()) << dump(out.errors);
    return out.config;
  }();
  return parse_jobs(Source{"jobs.yaml", yaml(text.c_str())}, config);
}

std::string sluice_job(const std::string& deadline_lines) {
  return "\napiVersion: sluice.dev/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n  gpus: 1\n"
         "  command: [sleep, '1']\n" +
         deadline_lines;
}

TEST(ConfigDeadline, CompleteByAndCompleteWithin) {
  auto by = jobs(sluice_job("  completeBy: \"2026-12-02T19:00:00+01:00\"\n"));
  ASSERT_TRUE(by.errors.empty()) << dump(by.errors);
  ASSERT_EQ(by.jobs.size(), 1u);
  EXPECT_EQ(by.jobs[0].complete_by_ns, *parse_rfc3339_ns("2026-12-02T18:00:00Z"));
  EXPECT_EQ(by.jobs[0].complete_within_ns, 0);
  auto within = jobs(sluice_job("  completeWithin: 2h\n"));
  ASSERT_TRUE(within.errors.empty()) << dump(within.errors);
  // Kept as a duration until the submission fixes the submit time.
  EXPECT_EQ(within.jobs[0].complete_within_ns, 7200 * kNsPerSec);
  EXPECT_EQ(within.jobs[0].complete_by_ns, 0);
  auto none = jobs(sluice_job(""));
  ASSERT_TRUE(none.errors.empty()) << dump(none.errors);
  EXPECT_EQ(none.jobs[0].complete_by_ns, 0);
  EXPECT_EQ(none.jobs[0].complete_within_ns, 0);
}

TEST(ConfigDeadline, KubernetesAnnotations) {
  auto out = jobs(R"(
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  annotations: {sluice.dev/complete-by: "2026-12-02T18:00:00Z"}
spec:
  template:
    spec:
      containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {sluice.dev/complete-within: 90m}
spec:
  containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  ASSERT_TRUE(out.errors.empty()) << dump(out.errors);
  ASSERT_EQ(out.jobs.size(), 2u);
  EXPECT_EQ(out.jobs[0].complete_by_ns, *parse_rfc3339_ns("2026-12-02T18:00:00Z"));
  EXPECT_EQ(out.jobs[1].complete_within_ns, 90 * 60 * kNsPerSec);
}

TEST(ConfigDeadline, HostileValuesNameTheField) {
  struct Case {
    std::string lines;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {"  completeBy: tomorrow\n", {"spec.completeBy", "\"tomorrow\" is not an RFC 3339 time"}},
      {"  completeBy: \"2026-02-30T00:00:00Z\"\n", {"spec.completeBy", "is not an RFC 3339"}},
      {"  completeBy: \"2026-12-02T18:00:00\"\n", {"spec.completeBy", "is not an RFC 3339"}},
      {"  completeBy: \"9999-12-31T00:00:00Z\"\n", {"spec.completeBy", "between 1970 and 2199"}},
      {"  completeBy: [1]\n", {"spec.completeBy", "must be an RFC 3339 time"}},
      {"  completeWithin: -2h\n", {"spec.completeWithin", "must not be negative"}},
      {"  completeWithin: 0s\n", {"spec.completeWithin", "must be positive"}},
      {"  completeWithin: soon\n", {"spec.completeWithin", "is not a duration"}},
      {"  completeWithin: 4000d\n", {"spec.completeWithin", "more than 10 years"}},
      {"  completeWithin: 99999999999999999h\n", {"spec.completeWithin", "is not a duration"}},
      {"  completeBy: \"2026-12-02T18:00:00Z\"\n  completeWithin: 2h\n",
       {"spec.completeWithin", "give one deadline"}},
  };
  for (const auto& c : cases) {
    auto out = jobs(sluice_job(c.lines));
    EXPECT_TRUE(out.jobs.empty()) << c.lines;  // nothing half-read
    EXPECT_TRUE(any_contains(out.errors, {c.fragments[0], c.fragments[1]}))
        << c.lines << dump(out.errors);
  }
  auto both = jobs(R"(
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {sluice.dev/complete-within: 1h, sluice.dev/complete-by: "2026-12-02T18:00:00Z"}
spec:
  containers: [{name: c, image: busybox}]
)");
  EXPECT_TRUE(both.jobs.empty());
  EXPECT_TRUE(any_contains(both.errors, {"metadata.annotations", "give one deadline"}))
      << dump(both.errors);
}

}  // namespace
}  // namespace deadline_fields_test
}  // namespace sluice
