#pragma once
// A fixed set of threads running queued jobs. The queue is bounded: try_post() refuses a job
// when it is full (the caller answers 503) instead of letting a burst grow memory without end.
//
// Jobs may carry a key (a tenant: one caller's token). Keyed jobs are taken in turn, one key
// after the other (round robin), and at most `per_key_running` of one key run at once: a caller
// with a thousand requests queued delays another's next request by at most one turn, not by a
// thousand requests (issue 41). Jobs without a key ("") share one turn and have no such cap.
//
// Idle workers wait on a stack, each on its own condition variable: a new job wakes the worker
// that went idle last (its stack and caches still warm), a worker that finishes takes the next
// turn itself before it sleeps, and a wake-up goes to a worker only when a turn waits for it.
// With one shared condition variable, notify_one woke the longest-idle of a few hundred threads
// and a finishing worker woke another for a turn it then often took itself.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace sluice::net {

class WorkerPool {
 public:
  // per_key_running 0: no cap per key.
  WorkerPool(size_t threads, size_t max_queued, size_t per_key_running = 0);
  ~WorkerPool();  // stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // False when max_queued jobs already wait beyond the idle workers, or the pool is stopping.
  bool try_post(std::function<void()> job, const std::string& key = {});
  // Lets the running jobs finish, drops the queued ones (destroying them on this thread), joins.
  void stop();

  size_t busy() const;    // jobs running now
  size_t queued() const;  // jobs waiting
  size_t idle() const;    // workers asleep until a job comes

 private:
  struct Key {
    std::deque<std::function<void()>> queue;
    size_t running = 0;
    bool in_turn = false;  // in turns_
  };
  struct Sleeper {  // an idle worker, on idle_
    std::condition_variable cv;
    bool woken = false;
  };
  void run();
  // With mu_ held: the last worker to go idle, taken off the stack to be woken (nullptr: none
  // idle, or no turn waits). Notify its cv after unlocking.
  Sleeper* wake_one();
  // With mu_ held: puts `name` at the end of the turns if it has a job it may start now.
  void offer_turn(const std::string& name, Key& k);

  const size_t max_queued_;
  const size_t threads_n_;
  const size_t per_key_running_;
  mutable std::mutex mu_;
  std::vector<Sleeper*> idle_;                 // idle workers, the last to go idle at the back
  std::unordered_map<std::string, Key> keys_;  // keys with jobs queued or running
  std::deque<std::string> turns_;              // keys with a job that may start, in turn
  size_t queued_ = 0;
  size_t busy_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace sluice::net
