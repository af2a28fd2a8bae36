// WorkerPool's turns between keys (tenants): one key's backlog does not delay another's job by
// more than one turn, and a key never runs more than its cap at once. No timing: the order of
// start is observed with one worker.
#include "net/worker_pool.h"

#include "gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::net {
namespace worker_pool_test {

using test::Gate;  // the first job waits at it, so that every later job is queued first

TEST(WorkerPool, KeysTakeTurnsSoABacklogDelaysOthersByOneTurn) {
  WorkerPool pool(1, 1000);
  Gate gate;
  std::mutex mu;
  std::vector<std::string> order;
  std::atomic<int> done{0};
  auto job = [&](std::string tag) {
    return [&, tag] {
      {
        std::lock_guard lk(mu);
        order.push_back(tag);
      }
      ++done;
    };
  };
  ASSERT_TRUE(pool.try_post([&] { gate.pass(); }, "a"));
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(pool.try_post(job("a"), "a"));
  ASSERT_TRUE(pool.try_post(job("b"), "b"));
  ASSERT_TRUE(pool.try_post(job("b"), "b"));
  gate.release();
  while (done < 52) std::this_thread::yield();
  // b's first job runs after at most one of a's queued ones, its second after at most one more.
  std::vector<size_t> b_at;
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] == "b") b_at.push_back(i);
  ASSERT_EQ(b_at.size(), 2u);
  EXPECT_LE(b_at[0], 1u);
  EXPECT_LE(b_at[1], 3u);
}

TEST(WorkerPool, AKeyRunsAtMostItsCapAtOnceAndOthersUseTheRest) {
  WorkerPool pool(4, 1000, /*per_key_running=*/2);
  Gate gate;
  std::atomic<int> running_a{0}, max_a{0}, ran_b{0};
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(pool.try_post(
        [&] {
          const int now = ++running_a;
          int seen = max_a;
          while (now > seen && !max_a.compare_exchange_weak(seen, now)) {
          }
          gate.pass();
          --running_a;
        },
        "a"));
  // a holds two workers, blocked; b's jobs still run on the other two.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(pool.try_post([&] { ++ran_b; }, "b"));
  // (b's jobs may all end before a's second starts, and a worker counts itself idle only after
  // its job: wait for the state, not for b alone.)
  while (ran_b < 5 || running_a < 2 || pool.busy() != 2) std::this_thread::yield();
  EXPECT_EQ(max_a.load(), 2);
  EXPECT_EQ(pool.busy(), 2u);
  EXPECT_EQ(pool.queued(), 8u);
  gate.release();
  pool.stop();
  EXPECT_EQ(max_a.load(), 2);
}

TEST(WorkerPool, UnkeyedJobsHaveNoCapAndTheQueueStaysBounded) {
  WorkerPool pool(2, 1, /*per_key_running=*/1);
  Gate gate;
  std::atomic<int> started{0};
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(pool.try_post([&] {
      ++started;
      gate.pass();
    }));
  while (started < 2) std::this_thread::yield();  // two unkeyed jobs at once: no cap on ""
  EXPECT_TRUE(pool.try_post([] {}));              // one may wait
  EXPECT_FALSE(pool.try_post([] {}));             // the bound
  gate.release();
}

}  // namespace worker_pool_test
}  // namespace sluice::net
