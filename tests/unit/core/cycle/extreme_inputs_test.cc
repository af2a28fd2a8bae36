// The largest values a submission may carry, through the scheduler on the daemon's clock (Unix
// time): every duration at its 10-year bound (kMaxDurationNs), a deadline ten years ahead, the
// queue's own durations at the bound, end alignment and the deadline term on. Under the
// sanitizer pass (-fno-sanitize-recover=undefined) a time that overflows int64 nanoseconds aborts
// the test: a walltime of 100,000 days once did (start + walltime in the backfill step).
#include <gtest/gtest.h>

#include "../test_config.h"
#include "config/parse_jobs.h"
#include "core/cycle/scheduler.h"
#include "core/model/deadline.h"
#include "restore_helper.h"

namespace sluice {
namespace extreme_inputs_test {  // its own namespace: the unit tests build in unity batches
namespace {

constexpr TimeNs kNow = 1'764'650'000 * kNsPerSec;  // 2025-12-02, as the daemon stamps it

std::shared_ptr<Config> world() {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(2, 8);
  testing::add_queue(*c, "q", 16);
  auto& q = c->cluster_queues[0];
  q.default_walltime_ns = kMaxDurationNs;
  q.min_runtime_ns = kMaxDurationNs;
  c->policy.align_ends = true;
  c->policy.aging_horizon_ns = kMaxDurationNs;
  c->policy.weights.deadline = 1;
  return c;
}

constexpr const char* kJobs = R"(
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: longest}
spec: {queue: q, gpus: 8, walltime: 3660d, checkpointGrace: 3660d, completeWithin: 3660d}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: gang}
spec: {queue: q, gpus: 8, pods: 2, walltime: 3660d}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: late-deadline}
spec: {queue: q, gpus: 1, completeBy: "2035-12-01T00:00:00Z"}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: no-walltime}
spec: {queue: q, gpus: 1}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: shortest}
spec: {queue: q, gpus: 1, walltime: 1ns}
---
apiVersion: sluice.dev/v1alpha1
kind: Job
metadata: {name: sliver}
spec: {queue: q, gpus: 1, gpuFraction: 0.001, walltime: 3660d}
)";

TEST(ExtremeInputs, LargestDurationsScheduleWithoutOverflow) {
  auto config = world();
  JobsOutput parsed = config_detail::parse_jobs_yaml({"jobs.yaml", kJobs}, *config);
  ASSERT_TRUE(parsed.errors.empty()) << parsed.errors.front();
  ASSERT_EQ(parsed.jobs.size(), 6u);
  Scheduler s(config);
  JobId id = 1;
  for (Job& j : parsed.jobs) {
    j.id = id++;
    j.submit_ns = kNow;  // as the daemon does, then completeWithin becomes completeBy
    resolve_deadline(j);
    ASSERT_EQ(s.submit(j).status, SubmitStatus::kAccepted) << j.name;
  }
  // Cycles now, as the work ends one job at a time, and ten years on.
  TimeNs now = kNow;
  for (int round = 0; round < 6; ++round) {
    const CycleResult r = s.run_cycle(now);
    s.apply(r, now);
    testing::expect_invariants(s);
    for (const auto& a : r.admitted) EXPECT_FALSE(a.placement.pods.empty());
    if (round % 2 == 1)
      for (JobId j = 1; j < id; ++j)
        if (s.finish(j, now)) break;
    now += round < 4 ? kNsPerSec : kMaxDurationNs;
  }
}

}  // namespace
}  // namespace extreme_inputs_test
}  // namespace sluice
