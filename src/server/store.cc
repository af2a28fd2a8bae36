#include "server/store.h"

#include <chrono>

namespace sluice::server {

Store::~Store() {
  stop_writer();
}

std::string Store::for_each_event(const std::function<void(const std::string&)>&) {
  return "this store cannot read its event log back";
}

void Store::stop_writer() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  queued_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Store::start(std::function<void(double, size_t)> on_commit) {
  on_commit_ = std::move(on_commit);
  thread_ = std::thread([this] { run(); });
}

uint64_t Store::enqueue(Write w) {
  std::lock_guard lk(mu_);
  queue_.push_back(std::move(w));
  const uint64_t t = next_ticket_++;
  queued_cv_.notify_one();
  return t;
}

bool Store::wait(uint64_t ticket) {
  std::unique_lock lk(mu_);
  done_cv_.wait(lk, [&] { return committed_ >= ticket; });
  return first_failed_ == 0 || ticket < first_failed_;
}

std::string Store::error() const {
  std::lock_guard lk(mu_);
  return error_;
}

bool Store::failed() const {
  return first_failed_ != 0;
}

void Store::fail_from_now(const std::string& why) {
  std::lock_guard lk(mu_);
  if (first_failed_ != 0) return;
  first_failed_ = committed_ + 1;  // a batch being committed now is not acknowledged either
  error_ = why;
}

void Store::run() {
  for (;;) {
    std::vector<Write> batch;
    uint64_t first = 0;
    {
      std::unique_lock lk(mu_);
      queued_cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping with nothing left to write
      first = committed_ + 1;
      batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
    }
    const auto t0 = std::chrono::steady_clock::now();
    bool ok = false;
    std::string err;
    if (!failed()) {
      try {
        ok = commit(batch, &err);
      } catch (const std::exception& e) {  // last resort: the writer thread must not die
        err = std::string("internal error while writing: ") + e.what();
      }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
      std::lock_guard lk(mu_);
      const uint64_t last = first + batch.size() - 1;
      if (!ok && first_failed_ == 0) {
        first_failed_ = first;
        error_ = err;
      }
      committed_ = last;
    }
    done_cv_.notify_all();
    if (ok && !failed() && on_commit_) on_commit_(secs, batch.size());
  }
}

}  // namespace sluice::server
