#include "server/store.h"

#include <algorithm>
#include <chrono>
#include <future>
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
  return ticket_ok(ticket);
}

void Store::when_durable(uint64_t ticket, std::function<void(bool ok)> f) {
  std::unique_lock lk(mu_);
  if (committed_ < ticket) {
    callbacks_.emplace_back(ticket, std::move(f));
    return;
  }
  const bool ok = ticket_ok(ticket);
  lk.unlock();
  f(ok);
}

void Store::drain() {
  uint64_t last = 0;
  {
    std::lock_guard lk(mu_);
    last = next_ticket_ - 1;
  }
  // Callbacks run in the order they were registered: this one, registered last, runs last.
  std::promise<void> done;
  when_durable(last, [&done](bool) { done.set_value(); });
  done.get_future().wait();
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
  std::vector<std::pair<uint64_t, std::function<void(bool)>>> due;
  {
    std::lock_guard lk(mu_);
    if (!f.ok && first_failed_ == 0) {
      first_failed_ = f.first;
      error_ = f.error;
    }
    committed_ = f.last;
    auto later = std::stable_partition(callbacks_.begin(), callbacks_.end(),
                                       [&](const auto& c) { return c.first <= committed_; });
    due.assign(std::make_move_iterator(callbacks_.begin()), std::make_move_iterator(later));
    callbacks_.erase(callbacks_.begin(), later);
    gather_target_ = due.empty() ? 0 : queue_.size() + due.size();
  }
  done_cv_.notify_all();
  for (auto& [ticket, f_done] : due) {
    try {
      f_done(ticket_ok(ticket));
    } catch (const std::exception&) {  // last resort: the writer thread must not die
    }
  }
  const double secs = std::chrono::duration<double>(f.t1 - f.t0).count();
  if (f.ok && !failed() && on_commit_) on_commit_(secs, f.writes);
}

// Group commit's gather. The callers a commit answered through when_durable() (a client's
// submission) mostly send their next write at once; staged before they are back, N such
// clients split into two batches of about N/2 that take turns in the commits. So before the
// next batch, wait for as many writes as were queued when that commit ended plus the callers it
// answered, at most half the last commit's time (and 5 ms): with nobody coming back a batch
// waits that long once; with N clients each commit carries about N (issue 38).
void Store::gather(std::unique_lock<std::mutex>& lk, double last_commit_s) {
  const size_t target = std::exchange(gather_target_, 0);
  if (queue_.size() >= target) return;
  queued_cv_.wait_for(lk, gather_pause(last_commit_s),
                      [&] { return queue_.size() >= target || stop_; });
}

// Takes what is queued as one batch while fewer than pipeline_depth() are in flight, and
// acknowledges the flights in ticket order as they land.
void Store::run() {
  const size_t depth = std::max<size_t>(1, pipeline_depth());
  std::deque<std::unique_ptr<Flight>> flights;
  uint64_t staged = 0;  // the last ticket staged
  double last_commit_s = 0;
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
      last_commit_s = std::chrono::duration<double>(f->t1 - f->t0).count();
      continue;
    }
    if (queue_.empty()) return;  // stopping with nothing left to write or in flight
    if (flights.empty()) gather(lk, last_commit_s);
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
