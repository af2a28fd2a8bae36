#include "server/store.h"

#include <chrono>
#include <memory>

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

// One batch between its staging and its acknowledgement.
struct Store::Flight {
  uint64_t first = 0, last = 0;  // its tickets
  size_t writes = 0;
  std::chrono::steady_clock::time_point t0, t1;
  bool done = false, ok = false;  // under mu_
  std::string error;
  std::thread thread;  // the send, when pipelined
};

Store::Send Store::stage(std::vector<Write>& batch) {
  auto owned = std::make_shared<std::vector<Write>>(std::move(batch));
  return [this, owned](std::string* error) { return commit(*owned, error); };
}

// Stages the batch and sends it: on this thread (depth 1) or on the flight's own.
void Store::launch(Flight& f, std::vector<Write>& batch, bool inline_send) {
  f.t0 = std::chrono::steady_clock::now();
  auto land = [this, &f](bool ok, std::string error) {
    {
      std::lock_guard lk(mu_);
      f.ok = ok;
      f.error = std::move(error);
      f.t1 = std::chrono::steady_clock::now();
      f.done = true;
    }
    queued_cv_.notify_all();
  };
  Send send;
  try {
    if (!failed()) send = stage(batch);
  } catch (const std::exception& e) {  // last resort: the writer thread must not die
    return land(false, std::string("internal error while writing: ") + e.what());
  }
  if (!send) return land(false, "");  // a write failed before: this one is not tried
  auto run_send = [land, send = std::move(send)] {
    std::string err;
    bool ok = false;
    try {
      ok = send(&err);
    } catch (const std::exception& e) {
      err = std::string("internal error while writing: ") + e.what();
    }
    land(ok, std::move(err));
  };
  if (inline_send)
    run_send();
  else
    f.thread = std::thread(std::move(run_send));
}

// Acknowledges a flight: its tickets committed, or failed with every later one.
void Store::finish(Flight& f) {
  if (f.thread.joinable()) f.thread.join();
  {
    std::lock_guard lk(mu_);
    if (!f.ok && first_failed_ == 0) {
      first_failed_ = f.first;
      error_ = f.error;
    }
    committed_ = f.last;
  }
  done_cv_.notify_all();
  const double secs = std::chrono::duration<double>(f.t1 - f.t0).count();
  if (f.ok && !failed() && on_commit_) on_commit_(secs, f.writes);
}

// Takes what is queued as one batch while fewer than pipeline_depth() are in flight, and
// acknowledges the flights in ticket order as they land.
void Store::run() {
  const size_t depth = std::max<size_t>(1, pipeline_depth());
  std::deque<std::unique_ptr<Flight>> flights;
  uint64_t staged = 0;  // the last ticket staged
  for (;;) {
    std::unique_lock lk(mu_);
    queued_cv_.wait(lk, [&] {
      return (!flights.empty() && flights.front()->done) ||
             (flights.size() < depth && !queue_.empty()) || (stop_ && flights.empty());
    });
    if (!flights.empty() && flights.front()->done) {
      auto f = std::move(flights.front());
      flights.pop_front();
      lk.unlock();
      finish(*f);
      continue;
    }
    if (queue_.empty()) return;  // stopping with nothing left to write or in flight
    auto f = std::make_unique<Flight>();
    std::vector<Write> batch(std::make_move_iterator(queue_.begin()),
                             std::make_move_iterator(queue_.end()));
    queue_.clear();
    f->first = staged + 1;
    f->last = staged = f->first + batch.size() - 1;
    f->writes = batch.size();
    lk.unlock();
    Flight& ref = *f;
    flights.push_back(std::move(f));  // the deque is this thread's; `done` is under mu_
    launch(ref, batch, depth == 1);
  }
}

}  // namespace sluice::server
