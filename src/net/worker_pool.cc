#include "net/worker_pool.h"

#include <algorithm>

namespace sluice::net {

WorkerPool::WorkerPool(size_t threads, size_t max_queued, size_t per_key_running)
    : max_queued_(max_queued),
      threads_n_(std::max<size_t>(threads, 1)),
      per_key_running_(per_key_running) {
  threads_.reserve(threads_n_);
  for (size_t i = 0; i < threads_n_; ++i) threads_.emplace_back([this] { run(); });
}

WorkerPool::~WorkerPool() {
  stop();
}

void WorkerPool::offer_turn(const std::string& name, Key& k) {
  if (k.in_turn || k.queue.empty()) return;
  if (!name.empty() && per_key_running_ > 0 && k.running >= per_key_running_) return;
  k.in_turn = true;
  turns_.push_back(name);
}

bool WorkerPool::try_post(std::function<void()> job, const std::string& key) {
  Sleeper* sleeper = nullptr;
  {
    std::lock_guard lk(mu_);
    // Jobs not yet picked up by an idle worker do not count against the bound: a burst that
    // arrives faster than idle workers wake is not refused.
    const size_t idle = threads_n_ > busy_ ? threads_n_ - busy_ : 0;
    if (stopping_ || queued_ >= max_queued_ + idle) return false;
    Key& k = keys_[key];
    k.queue.push_back(std::move(job));
    ++queued_;
    offer_turn(key, k);
    sleeper = wake_one();
  }
  if (sleeper) sleeper->cv.notify_one();
  return true;
}

WorkerPool::Sleeper* WorkerPool::wake_one() {
  if (turns_.empty() || idle_.empty()) return nullptr;
  Sleeper* s = idle_.back();
  idle_.pop_back();
  s->woken = true;
  return s;
}

void WorkerPool::stop() {
  std::unordered_map<std::string, Key> dropped;
  {
    std::lock_guard lk(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    dropped.swap(keys_);
    turns_.clear();
    queued_ = 0;
    for (Sleeper* s : idle_) {
      s->woken = true;
      s->cv.notify_one();  // under the lock: a woken worker may return and free its Sleeper
    }
    idle_.clear();
  }
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
  return queued_;
}

size_t WorkerPool::idle() const {
  std::lock_guard lk(mu_);
  return idle_.size();
}

void WorkerPool::run() {
  Sleeper me;
  std::unique_lock lk(mu_);
  for (;;) {
    // 1. A turn, else sleep on the idle stack until a job (or the stop) wakes this worker.
    while (!stopping_ && turns_.empty()) {
      me.woken = false;
      idle_.push_back(&me);
      me.cv.wait(lk, [&] { return me.woken; });
    }
    if (stopping_) return;
    std::string name = std::move(turns_.front());
    turns_.pop_front();
    Key& k = keys_[name];
    k.in_turn = false;
    std::function<void()> job = std::move(k.queue.front());
    k.queue.pop_front();
    --queued_;
    ++k.running;
    ++busy_;
    offer_turn(name, k);          // its next job waits behind the other keys' turns
    Sleeper* other = wake_one();  // a turn still waits: another worker takes it meanwhile
    lk.unlock();
    if (other) other->cv.notify_one();
    // 2. Jobs catch their own exceptions (Connection::run_handler); this is the last line of
    // defence, so that nothing escapes a thread.
    try {
      job();
    } catch (...) {
    }
    job = nullptr;
    // 3. Back under the lock: the key's next job may take a turn, which this worker (awake
    // anyway) takes first in step 1.
    lk.lock();
    --busy_;
    auto it = keys_.find(name);
    if (it == keys_.end()) continue;  // stopping: the keys were dropped
    --it->second.running;
    if (it->second.running == 0 && it->second.queue.empty()) {
      keys_.erase(it);
      continue;
    }
    offer_turn(name, it->second);
  }
}

}  // namespace sluice::net
