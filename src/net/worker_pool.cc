#include "net/worker_pool.h"

#include <algorithm>

namespace sluice::net {

WorkerPool::WorkerPool(size_t threads, size_t max_queued)
    : max_queued_(max_queued), threads_n_(std::max<size_t>(threads, 1)) {
  threads_.reserve(threads_n_);
  for (size_t i = 0; i < threads_n_; ++i) threads_.emplace_back([this] { run(); });
}

WorkerPool::~WorkerPool() {
  stop();
}

bool WorkerPool::try_post(std::function<void()> job) {
  {
    std::lock_guard lk(mu_);
    // Jobs not yet picked up by an idle worker do not count against the bound: a burst that
    // arrives faster than idle workers wake is not refused.
    const size_t idle = threads_n_ > busy_ ? threads_n_ - busy_ : 0;
    if (stopping_ || queue_.size() >= max_queued_ + idle) return false;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::stop() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lk(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  dropped.clear();  // outside the lock: a job's captures may do work when destroyed
}

size_t WorkerPool::busy() const {
  std::lock_guard lk(mu_);
  return busy_;
}

size_t WorkerPool::queued() const {
  std::lock_guard lk(mu_);
  return queue_.size();
}

void WorkerPool::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      ++busy_;
    }
    // Jobs catch their own exceptions (Connection::run_handler); this is the last line of
    // defence, so that nothing escapes a thread.
    try {
      job();
    } catch (...) {
    }
    job = nullptr;
    std::lock_guard lk(mu_);
    --busy_;
  }
}

}  // namespace sluice::net
