#pragma once
// Puts a running one-pod job back into a scheduler for a test (Scheduler::restore_running):
// the cycle tests' way to start from a cluster that already runs work; and the invariant check
// those tests end with.
#include <gtest/gtest.h>

#include <string>

#include "../test_config.h"
#include "core/cycle/scheduler.h"

namespace sluice::testing {

// `j` (one pod) runs for queue `q` on `node`, GPUs [first, first + its GPUs), since `start`.
inline void restore_one_pod(Scheduler& s, const Job& j, QueueId q, NodeId node, int first,
                            TimeNs start = 0) {
  const int gpus = j.pod_sets.at(0).gpus;
  Admission a;
  a.job = j.id;
  a.queue = q;
  a.flavors = {0};
  a.usage = {{0, kGpu, gpus * kMilliPerGpu}};
  PodPlacement pod;
  pod.node = node;
  for (int g = first; g < first + gpus; ++g)
    pod.gpus.push_back({static_cast<int16_t>(g), -1, 1000});
  a.placement.pods = {pod};
  std::string why;
  ASSERT_TRUE(s.restore_running(j, a, start, start, 0, &why)) << why;
}

// Job `id` of queue "q" (the first ClusterQueue) runs one pod of `gpus` GPUs on `node`, GPUs
// [first, first + gpus), since `start_s`, with a walltime of `walltime_s` seconds.
inline void run_on(Scheduler& s, JobId id, int gpus, NodeId node, TimeNs walltime_s, int first = 0,
                   TimeNs start_s = 0) {
  Job j = make_job(id, "q", gpus);
  j.walltime_ns = walltime_s * kNsPerSec;
  restore_one_pod(s, j, 0, node, first, start_s * kNsPerSec);
}

// The scheduler's internal consistency (Scheduler::check_invariants), as a test expectation.
inline void expect_invariants(const Scheduler& s) {
  std::string why;
  EXPECT_TRUE(s.check_invariants(&why)) << why;
}

}  // namespace sluice::testing
