#pragma once
// A fixed set of threads running queued jobs. The queue is bounded: try_post() refuses a job
// when it is full (the caller answers 503) instead of letting a burst grow memory without end.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice::net {

class WorkerPool {
 public:
  WorkerPool(size_t threads, size_t max_queued);
  ~WorkerPool();  // stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // False when max_queued jobs already wait beyond the idle workers, or the pool is stopping.
  bool try_post(std::function<void()> job);
  // Lets the running jobs finish, drops the queued ones (destroying them on this thread), joins.
  void stop();

  size_t busy() const;    // jobs running now
  size_t queued() const;  // jobs waiting

 private:
  void run();

  const size_t max_queued_;
  const size_t threads_n_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t busy_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace sluice::net
