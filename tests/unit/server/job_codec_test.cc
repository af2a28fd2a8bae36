// Admissions in job records: written by hand (json_text.h), read back with nlohmann.
#include "server/job_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

#include "config/loader.h"

namespace sluice::server {
namespace job_codec_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

const char* kConfig = R"(apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: c}
spec:
  nodes:
  - {name: "n\"1", cpu: 8, memory: 64Gi, gpus: {count: 4, model: H100, memory: 80Gi}}
  - {name: "nœud-2", cpu: 8, memory: 64Gi, gpus: {count: 4, model: H100, memory: 80Gi}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: spot}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: on-demand}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: cpus}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - {name: spot, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}
    - {name: on-demand, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}
  - coveredResources: [cpu]
    flavors: [{name: cpus, resources: [{name: cpu, nominalQuota: 16}]}]
)";

TEST(ServerJobCodec, AdmissionRoundTrips) {
  auto loaded = load({Source{"c.yaml", kConfig}}, {});
  ASSERT_TRUE(loaded.ok()) << (loaded.errors.empty() ? "" : loaded.errors.front());
  const Config& cfg = loaded.config;
  const auto gpu = *cfg.resources.find("nvidia.com/gpu");
  Admission a;
  a.queue = 0;
  a.flavors = {1, -1};
  a.usage = {{1, gpu, 3000}};
  a.borrowing = true;
  a.placement.pods = {{0, 0, 0, {{0, -1, 1000}, {1, -1, 500}}}, {1, 1, 2, {{3, 2, 1000}}}};
  const std::string text = encode_admission(a, cfg);
  auto back = decode_admission(nlohmann::json::parse(text), cfg);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, a) << text;
  a.placement.pods.clear();
  a.usage.clear();
  a.flavors.clear();
  back = decode_admission(nlohmann::json::parse(encode_admission(a, cfg)), cfg);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, a);
}

TEST(ServerJobCodec, JobBodyCompletedUnderTheLockReadsLikeTheWholeRecord) {
  auto loaded = load({Source{"c.yaml", kConfig}}, {});
  ASSERT_TRUE(loaded.ok());
  const Config& cfg = loaded.config;
  Job j;
  j.namespace_ = "nlp";
  j.queue = "train";
  j.exec_mut().command = {"sh", "-c", "echo \"hé\""};
  j.exec_mut().env = {{"A", "1"}};
  j.pod_sets.emplace_back();
  j.pod_sets.front().name = "main";
  j.pod_sets.front().count = 2;
  j.pod_sets.front().gpus = 1;
  j.pod_sets.front().requests[*cfg.resources.find("nvidia.com/gpu")] = 1000;
  const std::string body = encode_job_body(j, cfg);
  // Assigned under the lock, after the body was written.
  j.id = 42;
  j.name = "job-\"42\"";
  j.submit_ns = 1'700'000'000'000'000'000;
  const auto whole = encode_job(j, cfg);
  const auto spliced = nlohmann::json::parse(job_json_with(j, body));
  EXPECT_EQ(spliced, whole);
  auto back = decode_job(spliced, cfg);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->id, 42u);
  EXPECT_EQ(back->name, j.name);
  EXPECT_EQ(back->submit_ns, j.submit_ns);
  EXPECT_EQ(back->exec().command, j.exec().command);
}

// Deadlines survive the store: completeBy as written; completeWithin, encoded in a body written
// before the submit time was known, becomes completeBy once the record has it.
TEST(ServerJobCodec, DeadlinesRoundTrip) {
  auto loaded = load({Source{"c.yaml", kConfig}}, {});
  ASSERT_TRUE(loaded.ok());
  const Config& cfg = loaded.config;
  Job j;
  j.id = 7;
  j.pod_sets.emplace_back();
  j.submit_ns = 1'700'000'000'000'000'000;
  j.complete_by_ns = j.submit_ns + 3600'000'000'000;
  auto back = decode_job(encode_job(j, cfg), cfg);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->complete_by_ns, j.complete_by_ns);
  EXPECT_EQ(back->complete_within_ns, 0);
  // No deadline: none after decoding (and no field written).
  Job none = j;
  none.complete_by_ns = 0;
  EXPECT_FALSE(encode_job(none, cfg).contains("complete_by_ns"));
  back = decode_job(encode_job(none, cfg), cfg);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->complete_by_ns, 0);
  // completeWithin in the body, the submit time spliced in afterwards.
  Job w = j;
  w.complete_by_ns = 0;
  w.complete_within_ns = 7200'000'000'000;
  const std::string body = encode_job_body(w, cfg);
  back = decode_job(nlohmann::json::parse(job_json_with(w, body)), cfg);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->complete_by_ns, w.submit_ns + 7200'000'000'000);
  EXPECT_EQ(back->complete_within_ns, 0);
}

// A damaged or hand-written record is refused with the field named, never read as a time that
// overflows the clock later (start + walltime, submit + completeWithin).
TEST(ServerJobCodec, TimesOutsideTheInputBoundsAreRefused) {
  auto loaded = load({Source{"c.yaml", kConfig}}, {});
  ASSERT_TRUE(loaded.ok());
  const Config& cfg = loaded.config;
  Job j;
  j.id = 9;
  j.pod_sets.emplace_back();
  j.submit_ns = 1'700'000'000'000'000'000;
  j.walltime_ns = kMaxDurationNs;
  ASSERT_TRUE(decode_job(encode_job(j, cfg), cfg));  // at the bound: kept
  const std::pair<const char*, int64_t> bad[] = {{"walltime_ns", kMaxDurationNs + 1},
                                                 {"walltime_ns", -1},
                                                 {"checkpoint_grace_ns", INT64_MAX},
                                                 {"complete_within_ns", INT64_MAX},
                                                 {"submit_ns", INT64_MAX},
                                                 {"submit_ns", INT64_MIN},
                                                 {"complete_by_ns", kMaxTimePointNs + 1}};
  for (const auto& [field, value] : bad) {
    nlohmann::json stored = encode_job(j, cfg);
    stored[field] = value;
    auto back = decode_job(stored, cfg);
    ASSERT_FALSE(back) << field << " = " << value;
    EXPECT_NE(back.error().find(std::string("job 9: ") + field + " is outside"), std::string::npos)
        << back.error();
  }
}

// What GPU-seconds are charged by: a MIG slice is its share of the GPU's 7 compute slices (it
// counted nothing before), a whole GPU 1000, a fraction its milli-GPUs.
TEST(ServerJobCodec, ChargesAMigSliceItsShareOfTheGpu) {
  Config cfg;
  const ResourceId big = *cfg.resources.intern("nvidia.com/mig-3g.40gb");
  const ResourceId small = *cfg.resources.intern("nvidia.com/mig-1g.10gb+me");
  const ResourceId other = *cfg.resources.intern("example.com/fpga");
  Job j;
  PodSet slices;
  slices.count = 2;
  slices.requests[big] = 2000;  // two 3g.40gb slices a pod: 6/7 of a GPU
  slices.requests[other] = 5000;
  PodSet whole;
  whole.count = 1;
  whole.requests[kGpu] = 1000;
  whole.requests[small] = 1000;
  j.pod_sets = {slices, whole};
  EXPECT_EQ(job_gpu_milli(j, cfg), 2 * (2000 * 3 / 7) + 1000 + 1000 / 7);
  Job fraction;
  PodSet half;
  half.count = 3;
  half.requests[kGpu] = 500;
  fraction.pod_sets = {half};
  EXPECT_EQ(job_gpu_milli(fraction, cfg), 1500);
}

}  // namespace
}  // namespace job_codec_test
}  // namespace sluice::server
