// Scheduler::shorten_pending: a requeued job that kept work at a checkpoint goes on with only
// the rest as its walltime estimate (the simulator's checkpoint model, docs/simulator.md,
// "Checkpoints"); the estimate the consolidation and the backfill read.
#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace {

using testing::add_queue;
using testing::make_cluster;
using testing::make_job;

TEST(ShortenPending, CutsARequeuedJobsWalltimeByTheKeptWork) {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(1, 8);
  add_queue(*c, "team", 8);
  Scheduler s(c);
  Job j = make_job(1, "team", 8);
  j.walltime_ns = 100 * kNsPerSec;
  ASSERT_EQ(s.submit(j).status, SubmitStatus::kAccepted);
  const CycleResult r = s.run_cycle(0);
  ASSERT_EQ(r.admitted.size(), 1u);
  s.apply(r, 0);
  EXPECT_FALSE(s.shorten_pending(1, 30 * kNsPerSec));  // running: not pending
  ASSERT_TRUE(s.requeue(1, 50 * kNsPerSec));
  ASSERT_TRUE(s.shorten_pending(1, 30 * kNsPerSec));
  ASSERT_NE(s.find_pending(1), nullptr);
  EXPECT_EQ(s.find_pending(1)->job.walltime_ns, 70 * kNsPerSec);
  // Never below a second; nothing kept, nothing changes; unknown job: false.
  ASSERT_TRUE(s.shorten_pending(1, 500 * kNsPerSec));
  EXPECT_EQ(s.find_pending(1)->job.walltime_ns, kNsPerSec);
  ASSERT_TRUE(s.shorten_pending(1, 0));
  EXPECT_EQ(s.find_pending(1)->job.walltime_ns, kNsPerSec);
  EXPECT_FALSE(s.shorten_pending(2, kNsPerSec));
  // It is pending as before: the next cycle starts it again.
  const CycleResult again = s.run_cycle(60 * kNsPerSec);
  ASSERT_EQ(again.admitted.size(), 1u);
  EXPECT_EQ(again.admitted[0].job, 1u);
  std::string why;
  s.apply(again, 60 * kNsPerSec);
  EXPECT_TRUE(s.check_invariants(&why)) << why;
}

}  // namespace
}  // namespace sluice
