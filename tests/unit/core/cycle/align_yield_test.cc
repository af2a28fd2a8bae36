// End alignment yields to small jobs (spec.alignEndsYieldToSmall, core/cycle/align_yield.h):
// the job pending the longest among those of the highest priority decides whether placements
// align: yes while it has a pod of more than one GPU, no while it asks for one GPU per pod.
#include "core/cycle/align_yield.h"

#include <gtest/gtest.h>

#include <initializer_list>

#include "../test_config.h"

namespace sluice {
namespace align_yield_test {  // its own namespace: the unit tests build in unity batches
namespace {

Job job(JobId id, int gpus_per_pod, TimeNs submit, int32_t priority = 0, int pods = 1) {
  return testing::make_job(id, "q", gpus_per_pod, pods, submit, priority);
}

// The jobs offered in this order.
AlignYield offered(std::initializer_list<const Job*> jobs) {
  AlignYield y;
  for (const Job* j : jobs) y.offer(*j);
  return y;
}

TEST(AlignYield, NobodyPendingAligns) {
  const AlignYield y = offered({});
  EXPECT_TRUE(y.aligns());
  EXPECT_EQ(y.longest(), nullptr);
}

TEST(AlignYield, AOneGpuJobPendingTheLongestTurnsItOff) {
  const Job small = job(1, 1, 10), big = job(2, 8, 20);
  const AlignYield y = offered({&big, &small});
  EXPECT_EQ(y.longest(), &small);
  EXPECT_FALSE(y.aligns());
}

TEST(AlignYield, AMultiGpuPodPendingTheLongestKeepsItOn) {
  const Job small = job(1, 1, 20), big = job(2, 2, 10);
  EXPECT_TRUE(offered({&small, &big}).aligns());
}

TEST(AlignYield, ManyOneGpuPodsAreSmall) {
  const Job wide = job(1, 1, 10, 0, 16);
  // Sixteen single GPUs: each GPU that comes free serves a pod.
  EXPECT_FALSE(offered({&wide}).aligns());
}

TEST(AlignYield, TheHighestPriorityComesBeforeTheWait) {
  const Job old_small = job(1, 1, 0, 100), young_big = job(2, 8, 50, 1000);
  const AlignYield y = offered({&old_small, &young_big});
  EXPECT_EQ(y.longest(), &young_big);
  EXPECT_TRUE(y.aligns());
}

TEST(AlignYield, EqualSubmitTimesGoToTheLowerId) {
  const Job big = job(3, 8, 10), small = job(4, 1, 10);
  EXPECT_EQ(offered({&small, &big}).longest(), &big);
  EXPECT_EQ(offered({&big, &small}).longest(), &big);  // the order offered does not matter
}

}  // namespace
}  // namespace align_yield_test
}  // namespace sluice
