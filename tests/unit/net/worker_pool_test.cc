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
#include <thread>
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

// One request at a time (a client at batch 1) keeps running on the worker that went idle last,
// not on the longest idle of many: its stack and caches stay warm, and the other threads stay
// asleep. With one shared condition variable, notify_one spread the jobs over the pool.
TEST(WorkerPool, AJobGoesToTheWorkerThatWentIdleLast) {
  WorkerPool pool(8, 100);
  std::mutex mu;
  std::vector<std::thread::id> ran_on;
  while (pool.idle() != 8) std::this_thread::yield();  // every thread started and asleep
  for (int i = 0; i < 40; ++i) {
    std::atomic<bool> done{false};
    ASSERT_TRUE(pool.try_post([&] {
      {
        std::lock_guard lk(mu);
        ran_on.push_back(std::this_thread::get_id());
      }
      done = true;
    }));
    // Idle again: a worker counts itself idle only after its job, under the pool's lock.
    while (!done || pool.busy() != 0) std::this_thread::yield();
  }
  // The first job may go to any worker; every later one to that same worker.
  const std::thread::id first = ran_on.front();
  size_t same = 0;
  for (const auto& id : ran_on) same += id == first;
  EXPECT_EQ(same, ran_on.size());
}

// A finishing worker takes the next queued job itself: with one worker busy and two jobs
// queued behind it (one key, so one at a time), all three run on the one thread while the
// others sleep.
TEST(WorkerPool, AFinishingWorkerTakesTheNextTurnItself) {
  WorkerPool pool(4, 100, /*per_key_running=*/1);
  Gate gate;
  std::mutex mu;
  std::vector<std::thread::id> ran_on;
  std::atomic<int> done{0};
  auto record = [&] {
    std::lock_guard lk(mu);
    ran_on.push_back(std::this_thread::get_id());
  };
  ASSERT_TRUE(pool.try_post(
      [&] {
        record();
        gate.pass();
        ++done;
      },
      "a"));
  while (pool.busy() != 1) std::this_thread::yield();
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(pool.try_post(
        [&] {
          record();
          ++done;
        },
        "a"));
  gate.release();
  while (done < 3) std::this_thread::yield();
  ASSERT_EQ(ran_on.size(), 3u);
  EXPECT_EQ(ran_on[1], ran_on[0]);
  EXPECT_EQ(ran_on[2], ran_on[0]);
}

}  // namespace worker_pool_test
}  // namespace sluice::net
