// VictimIndex (core/preempt/victims.h): the packed records a victim search scans, the lowest
// priority per queue (a preemptor that may take only lower-priority work skips a queue without
// any) and the usage bits a reclaim scan reads instead of the RunningRecord.
#include "core/preempt/victims.h"

#include <gtest/gtest.h>

#include <limits>

namespace sluice {
namespace victims_test {  // its own namespace: the unit tests build in unity batches
namespace {

RunningRecord running(JobId id, int32_t priority, QueueId q, FlavorId flavor) {
  RunningRecord r;
  r.job.id = id;
  r.job.priority = priority;
  r.admission.job = id;
  r.admission.queue = q;
  r.admission.usage = {{flavor, kGpu, 1000}};
  return r;
}

TEST(VictimIndex, LowestPriorityFollowsAddsAndRemovals) {
  VictimIndex v(2);
  const RunningRecord a = running(1, 100, 0, 0), b = running(2, 50, 0, 0), c = running(3, 50, 0, 0);
  EXPECT_EQ(v.min_priority(0), std::numeric_limits<int32_t>::max());
  v.add(a);
  EXPECT_EQ(v.min_priority(0), 100);
  v.add(b);
  v.add(c);
  EXPECT_EQ(v.min_priority(0), 50);
  EXPECT_EQ(v.min_priority(1), std::numeric_limits<int32_t>::max());
  EXPECT_TRUE(v.remove(2, 0));
  EXPECT_EQ(v.min_priority(0), 50);  // job 3 still has 50
  EXPECT_TRUE(v.remove(3, 0));
  EXPECT_EQ(v.min_priority(0), 100);
  EXPECT_FALSE(v.remove(3, 0));  // not listed any more: nothing changes
  EXPECT_EQ(v.min_priority(0), 100);
  EXPECT_TRUE(v.remove(1, 0));
  EXPECT_EQ(v.min_priority(0), std::numeric_limits<int32_t>::max());
}

TEST(VictimIndex, UsageBitsNameTheFlavorAndResourceOrSayInexact) {
  VictimIndex v(1);
  const RunningRecord a = running(1, 0, 0, 2), far = running(2, 0, 0, 9);
  v.add(a);
  v.add(far);
  ASSERT_EQ(v.queue(0).size(), 2u);
  EXPECT_EQ(v.queue(0)[0].usage_bits, uint64_t{1} << usage_bit(2, kGpu));
  EXPECT_EQ(usage_bit(9, kGpu), -1);  // past 64 bits
  EXPECT_EQ(v.queue(0)[1].usage_bits, VictimRecord::kUsageInexact);
}

}  // namespace
}  // namespace victims_test
}  // namespace sluice
