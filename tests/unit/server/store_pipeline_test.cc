// Pipelined commits in the Store's writer (store.h): with a depth above 1 the next batch is
// staged and sent while the previous one is in flight, batches are still acknowledged in ticket
// order, and none is acknowledged after one that failed, whatever order the backend answers in.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "server/store.h"

namespace sluice::server {
namespace store_pipeline_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

using namespace std::chrono_literals;

// A backend whose commits land when the test says so, with the outcome it says.
class GatedStore final : public Store {
 public:
  explicit GatedStore(size_t depth, std::chrono::milliseconds gather = 5ms)
      : depth_(depth), gather_(gather) {}
  ~GatedStore() override {
    {
      std::lock_guard lk(mu_);
      for (size_t n = 0; n < 64; ++n) outcome_.emplace(n, false);  // lands whatever is left
    }
    cv_.notify_all();
    stop_writer();
  }
  Result<std::vector<StoredJob>> load_jobs() override { return std::vector<StoredJob>{}; }
  std::optional<std::string> get_meta(const std::string&) override { return std::nullopt; }
  std::vector<std::pair<std::string, std::string>> meta_with_prefix(const std::string&) override {
    return {};
  }
  std::string describe() const override { return "gated"; }

  // Batch n (in staging order) lands, committed or failed.
  void land(size_t n, bool ok) {
    {
      std::lock_guard lk(mu_);
      outcome_[n] = ok;
    }
    cv_.notify_all();
  }
  size_t staged_now() {
    std::lock_guard lk(mu_);
    return staged_;
  }
  // How many writes batch n carried (0: not staged).
  size_t batch_size(size_t n) {
    std::lock_guard lk(mu_);
    return n < sizes_.size() ? sizes_[n] : 0;
  }
  // Waits (2 s at most) until n batches were staged; how many were.
  size_t staged(size_t n) {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, 2s, [&] { return staged_ >= n; });
    return staged_;
  }

 private:
  bool commit(std::vector<Write>&, std::string*) override { return true; }  // stage() does it
  size_t pipeline_depth() const override { return depth_; }
  std::chrono::duration<double> gather_pause(double) const override { return gather_; }
  Send stage(std::vector<Write>& batch) override {
    std::lock_guard lk(mu_);
    sizes_.push_back(batch.size());
    const size_t n = staged_++;
    cv_.notify_all();
    return [this, n](std::string* error) {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return outcome_.count(n) > 0; });
      if (!outcome_[n]) *error = "batch " + std::to_string(n) + " failed";
      return outcome_[n];
    };
  }

  const size_t depth_;
  const std::chrono::duration<double> gather_;
  std::vector<size_t> sizes_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t staged_ = 0;
  std::map<size_t, bool> outcome_;
};

Write job(uint64_t id) {
  return Write{{{id, "pending", "{}"}}, {}, {}, {}};
}

// A waiter on its own thread: done when wait() returned, with its result.
struct Waiter {
  std::atomic<bool> done{false}, ok{false};
  std::thread thread;
  Waiter(Store& s, uint64_t ticket)
      : thread([this, &s, ticket] {
          ok = s.wait(ticket);
          done = true;
        }) {}
  void join() {
    if (thread.joinable()) thread.join();
  }
  ~Waiter() { join(); }
};

// Two batches, the second staged while the first is in flight: their tickets.
std::pair<uint64_t, uint64_t> two_in_flight(GatedStore& s) {
  s.start();
  const uint64_t t1 = s.enqueue(job(1));
  EXPECT_EQ(s.staged(1), 1u);
  const uint64_t t2 = s.enqueue(job(2));
  EXPECT_EQ(s.staged(2), 2u);  // staged before batch 0 landed
  return {t1, t2};
}

TEST(StorePipeline, NextBatchIsSentWhileThePreviousIsInFlight) {
  GatedStore s(2);
  const auto [t1, t2] = two_in_flight(s);
  Waiter w1(s, t1), w2(s, t2);
  s.land(1, true);  // the second answers first: not acknowledged before the first
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(w2.done);
  s.land(0, true);
  w1.join();
  w2.join();
  EXPECT_TRUE(w1.ok);
  EXPECT_TRUE(w2.ok);
  EXPECT_FALSE(s.failed());
}

TEST(StorePipeline, NothingIsAcknowledgedAfterABatchThatFailed) {
  GatedStore s(2);
  const auto [t1, t2] = two_in_flight(s);
  s.land(1, true);   // committed by the backend, but after one that failed:
  s.land(0, false);  // neither is acknowledged
  EXPECT_FALSE(s.wait(t1));
  EXPECT_FALSE(s.wait(t2));
  EXPECT_EQ(s.error(), "batch 0 failed");
  EXPECT_FALSE(s.write(job(3)));  // and no later one: it is not even staged
  EXPECT_EQ(s.staged_now(), 2u);
}

TEST(StorePipeline, DepthOneCommitsOneBatchAtATime) {
  GatedStore s(1);
  s.start();
  const uint64_t t1 = s.enqueue(job(1));
  ASSERT_EQ(s.staged(1), 1u);
  const uint64_t t2 = s.enqueue(job(2));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(s.staged_now(), 1u);  // it waits for the first to land
  s.land(0, true);
  EXPECT_EQ(s.staged(2), 2u);
  s.land(1, true);
  EXPECT_TRUE(s.wait(t1));
  EXPECT_TRUE(s.wait(t2));
}

// A callback's outcome, awaited for 2 s at most.
struct Answer {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<bool> ok;
  std::function<void(bool)> callback() {
    return [this](bool v) {
      {
        std::lock_guard lk(mu);
        ok = v;
      }
      cv.notify_all();
    };
  }
  std::optional<bool> get() {
    std::unique_lock lk(mu);
    cv.wait_for(lk, 2s, [&] { return ok.has_value(); });
    return ok;
  }
  bool called() {
    std::lock_guard lk(mu);
    return ok.has_value();
  }
};

TEST(StoreWhenDurable, AnswersAfterTheCommitAndAtOnceWhenAlreadyDone) {
  GatedStore s(1);
  s.start();
  const uint64_t t1 = s.enqueue(job(1));
  Answer a;
  s.when_durable(t1, a.callback());
  ASSERT_EQ(s.staged(1), 1u);
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(a.called());  // not before the commit landed
  s.land(0, true);
  EXPECT_EQ(a.get(), std::optional<bool>(true));
  Answer late;
  s.when_durable(t1, late.callback());  // already committed: called on this thread
  EXPECT_TRUE(late.called());
  EXPECT_EQ(late.get(), std::optional<bool>(true));
}

TEST(StoreWhenDurable, AFailedCommitAnswersFalseAndSoDoesEveryLaterOne) {
  GatedStore s(1);
  s.start();
  const uint64_t t1 = s.enqueue(job(1));
  Answer a, b;
  s.when_durable(t1, a.callback());
  ASSERT_EQ(s.staged(1), 1u);
  s.land(0, false);
  EXPECT_EQ(a.get(), std::optional<bool>(false));
  s.when_durable(s.enqueue(job(2)), b.callback());
  EXPECT_EQ(b.get(), std::optional<bool>(false));
}

TEST(StoreWhenDurable, DrainReturnsOnceEveryQueuedWriteAnswered) {
  GatedStore s(1);
  s.start();
  Answer a;
  s.when_durable(s.enqueue(job(1)), a.callback());
  ASSERT_EQ(s.staged(1), 1u);
  std::thread lander([&] {
    std::this_thread::sleep_for(50ms);
    s.land(0, true);
  });
  s.drain();
  EXPECT_TRUE(a.called());
  lander.join();
}

// The commit answered one caller (when_durable) while another write was queued: the next batch
// waits for that caller's next write and carries both (group commit fills the sync instead of
// alternating half batches). The pause is long here (10 s) so that the test does not depend on
// how fast the caller comes back; it ends as soon as the write is there.
TEST(StoreGather, TheNextBatchWaitsForTheCallersTheCommitAnswered) {
  GatedStore s(1, 10000ms);
  s.start();
  const uint64_t t1 = s.enqueue(job(1));
  ASSERT_EQ(s.staged(1), 1u);
  s.enqueue(job(2));  // queued during the commit
  std::atomic<bool> answered{false};
  s.when_durable(t1, [&](bool) { answered = true; });
  std::thread caller([&] {  // comes back after its answer
    while (!answered) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(20ms);
    s.enqueue(job(3));
  });
  s.land(0, true);
  EXPECT_EQ(s.staged(2), 2u);
  EXPECT_EQ(s.batch_size(1), 2u);  // job 2 and the caller's job 3
  caller.join();
  s.land(1, true);
}

TEST(StoreGather, NobodyAnsweredNoWait) {
  GatedStore s(1, 10000ms);
  s.start();
  const uint64_t t1 = s.enqueue(job(1));
  ASSERT_EQ(s.staged(1), 1u);
  s.enqueue(job(2));
  s.land(0, true);  // answered no when_durable() caller: the next batch goes at once
  EXPECT_EQ(s.staged(2), 2u);
  EXPECT_EQ(s.batch_size(1), 1u);
  EXPECT_TRUE(s.wait(t1));
  s.land(1, true);
}

}  // namespace
}  // namespace store_pipeline_test
}  // namespace sluice::server
