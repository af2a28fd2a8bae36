// Reclaiming lent quota (reclaimWithinCohort): the preemptor must end within its nominal quota,
// as in Kueue's classical preemption. The search keeps evicting (cheapest first) until the
// preemptor fits *and* stays within nominal; a fit that would borrow is not a stopping point.
#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"
#include "restore_helper.h"

namespace sluice {
namespace reclaim_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

constexpr TimeNs kSec = kNsPerSec;
constexpr int32_t kLow = 0, kHigh = 100;

// Two nodes of 4 GPUs; one cohort: team-a (nominal 4, preempts lower-priority work of its own
// and reclaims lent quota), team-b (nominal 2) and team-c (nominal 2).
std::shared_ptr<Config> world() {
  auto c = std::make_shared<Config>();
  c->cluster = testing::make_cluster(2, 4);
  testing::add_queue(*c, "a", 4);
  testing::add_queue(*c, "b", 2);
  testing::add_queue(*c, "c", 2);
  c->cluster_queues[0].preemption.within_cluster_queue = WithinQueuePolicy::kLowerPriority;
  c->cluster_queues[0].preemption.reclaim_within_cohort = ReclaimPolicy::kAny;
  c->priority_classes = {{"low", kLow}, {"high", kHigh}};
  c->policy.backfill = false;
  return c;
}

// Puts a running job on `node`, GPUs [first, first + gpus).
void run_on(Scheduler& s, JobId id, const std::string& queue, QueueId q, int gpus, NodeId node,
            int first, int32_t priority, bool preemptible, TimeNs start) {
  Job j = testing::make_job(id, queue, gpus, 1, 0, priority);
  j.preemptible = preemptible;
  testing::restore_one_pod(s, j, q, node, first, start);
}

TEST(Reclaim, NoReclaimWhileThePreemptorsQueueIsAtItsNominalQuota) {
  Scheduler s(world());
  // n0: b1 (team-b, borrowing), a2 (team-a, low), c1, b2 (not preemptible).
  // n1: a1 (team-a, low), a3 (team-a, high: not a victim), b3 (not preemptible).
  // team-a uses 4 of 4, team-b 3 of 2 (borrows the GPU team-c lends), team-c 1 of 2.
  // Cost order (least work lost first): a1, b1, a2.
  run_on(s, 1, "a", 0, 1, 1, 0, kLow, true, 30 * kSec);   // a1
  run_on(s, 2, "a", 0, 1, 0, 1, kLow, true, 10 * kSec);   // a2
  run_on(s, 3, "a", 0, 2, 1, 1, kHigh, true, 10 * kSec);  // a3
  run_on(s, 4, "b", 1, 1, 0, 0, kLow, true, 20 * kSec);   // b1
  run_on(s, 5, "b", 1, 1, 0, 3, kLow, false, 10 * kSec);  // b2
  run_on(s, 6, "b", 1, 1, 1, 3, kLow, false, 10 * kSec);  // b3
  run_on(s, 7, "c", 2, 1, 0, 2, kLow, false, 10 * kSec);  // c1
  // A high-priority team-a job of 2 GPUs on one node.
  ASSERT_EQ(s.submit(testing::make_job(10, "a", 2, 1, 40 * kSec, kHigh)).status,
            SubmitStatus::kAccepted);
  const CycleResult r = s.run_cycle(100 * kSec);
  // team-a already uses its whole nominal quota (4 of 4) of the GPUs the job needs: as in
  // Kueue (queueUnderNominalInResourcesNeedingPreemption), it may then only evict its own
  // lower-priority work and borrow, not take lent quota back from team-b. Only n0 could be
  // freed enough (b3 and a3 stay on n1), and not by team-a's own jobs alone: nothing happens.
  // (Before, sluice evicted b1, a2 and a1 here.)
  EXPECT_TRUE(r.admitted.empty());
  EXPECT_TRUE(r.preempted.empty());
}

TEST(Reclaim, NoReclaimWhenThePreemptorCannotEndWithinNominal) {
  Scheduler s(world());
  // Same cluster, but team-a's low-priority jobs are gone: team-a runs a3 (high, 2 GPUs) and
  // two more high-priority jobs, 4 of 4, none of them a victim. team-b borrows on n0.
  run_on(s, 3, "a", 0, 2, 1, 1, kHigh, true, 10 * kSec);
  run_on(s, 8, "a", 0, 1, 1, 0, kHigh, true, 10 * kSec);
  run_on(s, 9, "a", 0, 1, 0, 1, kHigh, true, 10 * kSec);
  run_on(s, 4, "b", 1, 1, 0, 0, kLow, true, 20 * kSec);
  run_on(s, 5, "b", 1, 1, 0, 3, kLow, false, 10 * kSec);
  run_on(s, 6, "b", 1, 1, 1, 3, kLow, false, 10 * kSec);
  run_on(s, 7, "c", 2, 1, 0, 2, kLow, false, 10 * kSec);
  ASSERT_EQ(s.submit(testing::make_job(10, "a", 1, 1, 40 * kSec, kHigh)).status,
            SubmitStatus::kAccepted);
  // Evicting b1 would make room for it, but team-a would then use 5 of 4: it may not take
  // back lent quota to borrow, so it waits.
  const CycleResult r = s.run_cycle(100 * kSec);
  EXPECT_TRUE(r.admitted.empty());
  EXPECT_TRUE(r.preempted.empty());
}

}  // namespace
}  // namespace reclaim_test
}  // namespace sluice
