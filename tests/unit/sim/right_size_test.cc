// Right-sizing in the simulator (sim/right_size.h): the memory model is seeded and matches the
// published point it was fitted to; a recurring job's later runs go to a MIG slice once it has
// a history; a run that peaks above its slice is retried whole and still completes; off, the
// run is the one without right-sizing.
#include "sim/right_size.h"

#include <gtest/gtest.h>

#include "sim/simulator.h"
#include "sim/trace_philly.h"
#include "sim_test_util.h"

namespace sluice::sim {
namespace right_size_sim_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using testing::load_config;

constexpr int64_t kGi = 1024;

// One whole A100 and one A100 cut into 1g.10gb, 2g.20gb and 3g.40gb; queue `team` covers all.
const char* kMig = R"(apiVersion: sluice.dev/v1alpha1
kind: Cluster
metadata: {name: mig}
spec:
  nodes:
  - {name: whole, cpu: 8, memory: 64Gi, gpus: {count: 1, model: A100, memory: 80Gi}}
  - name: sliced
    cpu: 8
    memory: 64Gi
    gpus:
    - {model: A100, memory: 80Gi, mig: [1g.10gb, 2g.20gb, 3g.40gb]}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, nvidia.com/mig-1g.10gb, nvidia.com/mig-2g.20gb, nvidia.com/mig-3g.40gb]
    flavors:
    - name: default
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 1}
      - {name: nvidia.com/mig-1g.10gb, nominalQuota: 1}
      - {name: nvidia.com/mig-2g.20gb, nominalQuota: 1}
      - {name: nvidia.com/mig-3g.40gb, nominalQuota: 1}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: team, namespace: default}
spec: {clusterQueue: team}
)";

// `runs` one-GPU runs of DL model `model` in VC `team`, each 100 s, 200 s apart (one at a time).
TraceOutput recurring(const Config& config, const std::string& model, int runs) {
  std::string csv = "job_id,user,num_gpu,submit_time,duration,model_name\n";
  for (int i = 0; i < runs; ++i)
    csv += std::to_string(i) + ",team,1," + std::to_string(200 * i) + ",100," + model + "\n";
  TraceOutput t = read_philly("r.csv", csv, PhillyOptions{});
  check_against(t, config);
  EXPECT_TRUE(t.errors.empty());
  return t;
}

TEST(SimRightSize, MemoryModelIsSeededAndFitsThePublishedPoint) {
  EXPECT_EQ(family_peak_mib("vc/vgg16/1", 7, 80 * kGi), family_peak_mib("vc/vgg16/1", 7, 80 * kGi));
  int at_most_40 = 0;
  constexpr int kFamilies = 20000;
  for (int i = 0; i < kFamilies; ++i) {
    const int64_t p = family_peak_mib("f" + std::to_string(i), 1, 80 * kGi);
    ASSERT_GE(p, 512);
    ASSERT_LE(p, 80 * kGi);
    at_most_40 += p <= 40 * kGi;
    const int64_t r = run_peak_mib(p, static_cast<uint64_t>(i), 1, 80 * kGi);
    ASSERT_GE(r, p * 9 / 10 - 1);
    ASSERT_LE(r, std::min<int64_t>(p * 11 / 10 + 1, 80 * kGi));
  }
  // Cankur et al. 2025: 55% of the jobs on 80 GB GPUs peak at half the memory or less.
  EXPECT_NEAR(static_cast<double>(at_most_40) / kFamilies, 0.55, 0.02);
}

// A family name whose runs' peaks satisfy `want` under `seed`.
template <class F>
std::string family_where(uint64_t seed, F want) {
  for (int i = 0; i < 100000; ++i) {
    const std::string model = "m" + std::to_string(i);
    const int64_t p = family_peak_mib("team/" + model + "/1", seed, 80 * kGi);
    if (want(run_peak_mib(p, 0, seed, 80 * kGi), run_peak_mib(p, 1, seed, 80 * kGi),
             run_peak_mib(p, 2, seed, 80 * kGi)))
      return model;
  }
  ADD_FAILURE() << "no family found";
  return "";
}

TEST(SimRightSize, LaterRunsOfARecurringJobGoToASlice) {
  auto config = load_config(kMig);
  SimOptions o;
  o.right_size = true;
  o.check_invariants = true;
  // Runs of 5..7 GiB: with 20% headroom the history fits 1g.10gb, and every run does too.
  const std::string model = family_where(o.seed, [](int64_t a, int64_t b, int64_t c) {
    return a < 7 * kGi && b < 7 * kGi && c < 7 * kGi && a > 5 * kGi;
  });
  const TraceOutput t = recurring(*config, model, 3);
  const SimResult r = simulate(config, t.jobs, o);
  EXPECT_EQ(r.invariant_failure, "");
  EXPECT_TRUE(r.right_size_on);
  EXPECT_EQ(r.right_sized, 2);  // the first run has no history
  EXPECT_EQ(r.right_size_retries, 0);
  for (const auto& j : r.jobs) EXPECT_GE(j.end_ns, 0);
  EXPECT_EQ(r.jobs[1].gpu_milli, 1000 / 7);  // a 1g slice: a seventh of the GPU's compute
  // Off: nothing is right-sized, and the decisions are those of a run without the option.
  SimOptions off;
  off.check_invariants = true;
  const SimResult plain = simulate(config, t.jobs, off);
  EXPECT_FALSE(plain.right_size_on);
  EXPECT_EQ(plain.right_sized, 0);
  o.right_size = false;
  EXPECT_EQ(simulate(config, t.jobs, o).decision_digest, plain.decision_digest);
}

TEST(SimRightSize, ARunAboveItsSliceIsRetriedWholeAndCompletes) {
  auto config = load_config(kMig);
  SimOptions o;
  o.right_size = true;
  o.right_size_headroom = 0;  // the history's peak alone decides
  o.check_invariants = true;
  // Run 0 fits 10 GiB, run 1 does not: run 1 is placed on 1g.10gb and runs out of memory.
  const std::string model = family_where(
      o.seed, [](int64_t a, int64_t b, int64_t) { return a <= 10 * kGi && b > 10 * kGi; });
  const TraceOutput t = recurring(*config, model, 2);
  const SimResult r = simulate(config, t.jobs, o);
  EXPECT_EQ(r.invariant_failure, "");
  EXPECT_EQ(r.right_sized, 1);
  EXPECT_EQ(r.right_size_retries, 1);
  const JobOutcome& j = r.jobs[1];
  EXPECT_EQ(j.starts, 2);
  EXPECT_FALSE(j.rejected);
  // Out of memory 60 s in; then whole, at once (the whole GPU is free): 100 s more.
  EXPECT_EQ(j.first_start_ns, 260 * kNsPerSec);
  EXPECT_EQ(j.end_ns, 360 * kNsPerSec);
  EXPECT_EQ(j.gpu_milli, 1000);
}

}  // namespace
}  // namespace right_size_sim_test
}  // namespace sluice::sim
