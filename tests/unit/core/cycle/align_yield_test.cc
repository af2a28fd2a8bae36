// End alignment yields to small jobs (spec.alignEndsYieldToSmall, core/cycle/align_yield.h):
// the job pending the longest among those of the highest priority decides whether placements
// align: yes while it has a pod of more than one GPU, no while it asks for one GPU per pod.
#include "core/cycle/align_yield.h"

#include <gtest/gtest.h>

#include "../test_config.h"

namespace sluice {
namespace align_yield_test {  // its own namespace: the unit tests build in unity batches
namespace {

Job job(JobId id, int gpus_per_pod, TimeNs submit, int32_t priority = 0, int pods = 1) {
  return testing::make_job(id, "q", gpus_per_pod, pods, submit, priority);
}

TEST(AlignYield, NobodyPendingAligns) {
  AlignYield y;
  EXPECT_TRUE(y.aligns());
  EXPECT_EQ(y.longest(), nullptr);
}

TEST(AlignYield, AOneGpuJobPendingTheLongestTurnsItOff) {
  const Job small = job(1, 1, 10), big = job(2, 8, 20);
  AlignYield y;
  y.offer(big);
  y.offer(small);
  EXPECT_EQ(y.longest(), &small);
  EXPECT_FALSE(y.aligns());
}

TEST(AlignYield, AMultiGpuPodPendingTheLongestKeepsItOn) {
  const Job small = job(1, 1, 20), big = job(2, 2, 10);
  AlignYield y;
  y.offer(small);
  y.offer(big);
  EXPECT_TRUE(y.aligns());
}

TEST(AlignYield, ManyOneGpuPodsAreSmall) {
  const Job wide = job(1, 1, 10, 0, 16);
  AlignYield y;
  y.offer(wide);
  EXPECT_FALSE(y.aligns());  // sixteen single GPUs: each GPU that comes free serves a pod
}

TEST(AlignYield, TheHighestPriorityComesBeforeTheWait) {
  const Job old_small = job(1, 1, 0, 100), young_big = job(2, 8, 50, 1000);
  AlignYield y;
  y.offer(old_small);
  y.offer(young_big);
  EXPECT_EQ(y.longest(), &young_big);
  EXPECT_TRUE(y.aligns());
}

TEST(AlignYield, EqualSubmitTimesGoToTheLowerId) {
  const Job big = job(3, 8, 10), small = job(4, 1, 10);
  AlignYield first, second;
  first.offer(small);
  first.offer(big);
  second.offer(big);
  second.offer(small);
  EXPECT_EQ(first.longest(), &big);
  EXPECT_EQ(second.longest(), &big);  // the order offered does not matter
}

}  // namespace
}  // namespace align_yield_test
}  // namespace sluice
