// The requests to the server: the sync loop (registration, then syncs: reports and a long
// poll for orders), the report loop (reports during a long poll), the final sync of a drain.
#include "agent/agent.h"
#include "agent/server_client.h"
#include "proto/protocol_plain.h"

namespace sluice::agent {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::string Agent::server() const {
  return servers_[server_at_ % servers_.size()];
}

std::unique_ptr<net::Client> Agent::make_client() const {
  return std::make_unique<net::Client>(
      server(), net::ClientOptions{.connect_timeout = std::chrono::seconds(2),
                                   .write_timeout = std::chrono::seconds(10)});
}

// Clears the pointer that stop() uses to cut a request short, before the client it points to
// is destroyed (also when the loop leaves by an exception).
struct Agent::InFlight {
  Agent& agent;
  net::Client*& slot;
  InFlight(Agent& a, net::Client*& s, net::Client* cli) : agent(a), slot(s) {
    std::lock_guard lock(agent.mu_);
    slot = cli;
  }
  ~InFlight() {
    std::lock_guard lock(agent.mu_);
    slot = nullptr;
  }
  void set(net::Client* cli) {
    std::lock_guard lock(agent.mu_);
    slot = cli;
  }
};

// The retry delay of the sync loop after a failed request.
struct Agent::Backoff {
  Agent& agent;
  int64_t ms = kMinBackoffMs;
  size_t failed = 0;    // requests failed since the last that succeeded
  bool jumped = false;  // the last request went where a standby named the leader, at once

  void reset() {
    ms = kMinBackoffMs;
    failed = 0;
  }
  void wait() {
    // Where a standby named the leader: at once (once: two standbys that name each other do
    // not make a loop without delays).
    if (agent.named_leader_.exchange(false) && !jumped) {
      jumped = true;
      return;
    }
    jumped = false;
    agent.sleep_unless_quit(milliseconds(ms));
    // With replicas, the delay grows once per round over all of them, not per server tried:
    // during a failover the next one may lead already (the agent reaches the new leader
    // within a few hundred ms of its election, docs/ha.md).
    // Capped at 1 s then: a replica's leadership can be short when several fail in a row,
    // and an agent silent for --agent-timeout has its jobs requeued.
    const size_t servers = agent.servers_.size();
    if (++failed % servers != 0) return;
    const int64_t cap = servers > 1 ? std::min<int64_t>(agent.options_.max_backoff_ms, 1000)
                                    : agent.options_.max_backoff_ms;
    ms = std::min(ms * 2, std::max<int64_t>(cap, kMinBackoffMs));
  }
};

void Agent::sync_loop() {
  auto cli = make_client();
  size_t at = server_at_;
  InFlight in_flight(*this, in_flight_, cli.get());
  // A failed request may have moved to another server (follow_leader): a client for it.
  auto follow = [&] {
    if (server_at_ == at) return;
    at = server_at_;
    auto next = make_client();
    in_flight.set(next.get());
    cli = std::move(next);
  };
  Backoff backoff{*this};
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (quit_) break;
    }
    bool registered = false;
    {
      std::lock_guard lock(mu_);
      registered = status_.registered;
    }
    // 1. (Re-)register: first start, server restart (sync 404), or after errors.
    if (!registered) {
      if (!do_register(*cli, at)) {
        follow();
        backoff.wait();
        continue;
      }
      backoff.reset();
    }
    // 2. Sync: reports when there are any, else a long poll for orders (sync_round()).
    if (!sync_round(*cli, at)) {
      follow();
      backoff.wait();
      continue;
    }
    backoff.reset();
  }
}

// One sync: reports at once (wait_ms 0) when there are any, else a long poll. False when it
// failed (the caller backs off).
bool Agent::sync_round(net::Client& cli, size_t at) {
  take_runner_events();
  const bool reports = has_reports();
  int64_t hb = 0;
  {
    std::lock_guard lock(mu_);
    hb = heartbeat_ms_;
  }
  const int64_t wait_ms = reports ? 0 : (options_.long_poll_ms > 0 ? options_.long_poll_ms : hb);
  const auto t0 = Clock::now();
  bool work = false;
  bool missed = false;
  {
    std::lock_guard lock(mu_);
    polling_ = wait_ms > 0;
    poll_since_ = t0;
    // A pod that started or ended since take_runner_events() above notified the report loop
    // while no poll was in flight, so it went back to sleep: wake it now, or the report waits
    // for this long poll to end.
    missed = polling_ && events_pending_;
  }
  if (missed) cv_.notify_all();
  const bool ok = do_sync(cli, at, wait_ms, reports, &work);
  {
    std::lock_guard lock(mu_);
    polling_ = false;
  }
  if (!ok) return false;
  // A server that answers an idle long poll at once must not make us spin: wait out the
  // heartbeat unless a pod starts or ends meanwhile.
  const auto elapsed = std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
  if (!work && wait_ms > 0 && elapsed < wait_ms / 2) wait_for_work(milliseconds(hb - elapsed));
  return true;
}

bool Agent::has_reports() {
  std::lock_guard reports_lock(reports_mu_);
  return !exits_.empty() || !started_.empty() || !checkpoints_.empty();
}

// While the sync loop sits in a long poll, a pod that starts or ends is reported at once by a
// short sync of its own (the server applies reports on arrival and lets either reply carry the
// node's orders). Only one report-carrying sync is in flight at a time (reports_mu_).
void Agent::report_loop() {
  // The server must have read the long poll before a newer report overtakes it.
  constexpr auto kSettle = milliseconds(20);
  auto cli = make_client();
  size_t at = server_at_;
  InFlight in_flight(*this, report_in_flight_, cli.get());
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return quit_ || (events_pending_ && polling_ && status_.registered); });
      if (quit_) break;
      // The settling, then report_delay_ms (reports of pods that start or end meanwhile go
      // along): one timed wait for both, not two in a row.
      const auto until = std::max(Clock::now(), poll_since_ + kSettle) +
                         milliseconds(std::max<int64_t>(options_.report_delay_ms, 0));
      if (Clock::now() < until) {
        cv_.wait_until(lock, until, [&] { return quit_; });
        if (quit_) break;
      }
      if (!polling_) continue;  // the sync loop is back and will carry the reports itself
    }
    take_runner_events();
    if (!has_reports()) continue;
    if (at != server_at_) {  // the sync loop moved to another server
      at = server_at_;
      auto next = make_client();
      in_flight.set(next.get());
      cli = std::move(next);
    }
    bool work = false;
    if (!do_sync(*cli, at, 0, /*carry=*/true, &work))
      sleep_unless_quit(milliseconds(kMinBackoffMs));
    if (work) cv_.notify_all();
  }
}

// GPU utilisation for a sync: sampled at most once a second (NVML takes the device lock).
std::vector<int32_t> Agent::sample_utilization() {
  std::lock_guard lock(util_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now - util_at_ >= std::chrono::seconds(1)) {
    util_ = gpus_->utilization_pct();
    util_at_ = now;
  }
  return util_;
}

bool Agent::do_sync(net::Client& cli, size_t at, int64_t wait_ms, bool carry, bool* work) {
  std::unique_lock reports_lock(reports_mu_, std::defer_lock);
  proto::SyncRequest req;
  req.agent_id = agent_id_;
  req.running = runner_->running();
  if (carry) {
    reports_lock.lock();
    req.exits = exits_;
    req.started = started_;
    req.checkpoints = checkpoints_;
  }
  req.wait_ms = wait_ms;
  req.gpu_utilization_pct = sample_utilization();
  req.gpu_use = take_gpu_use(req.running, req.exits);
  cli.options().read_timeout = std::chrono::seconds(wait_ms / 1000 + read_margin_s());
  const auto sent = Clock::now();
  std::optional<Awaiting> awaiting(std::in_place, *this, at, sent + milliseconds(wait_ms));
  auto res =
      cli.post("/v1/agents/" + options_.node + "/sync", proto::dump_json(nlohmann::json(req)),
               "application/json", bearer(identity_->credential()));
  awaiting.reset();
  if (res && (res->status == 404 || res->status == 401)) {
    // The server does not know us (it restarted, forgot the node, or lost its credential):
    // register again, with the pods we run; the reports stay queued for the next sync.
    log("server answered " + std::to_string(res->status) + " to sync: registering again");
    restore_gpu_use(req.gpu_use);
    std::lock_guard lock(mu_);
    status_.registered = false;
    return false;
  }
  if (!res || res->status != 200) {
    restore_gpu_use(req.gpu_use);
    note_error("sync with " + servers_[at] + " failed: " + error_text(res));
    follow_leader(res, at);
    return false;
  }
  proto::SyncResponse resp;
  try {
    resp = proto::parse_message<proto::SyncResponse>(res->body);
  } catch (const std::exception& e) {
    note_error(std::string("sync: bad response: ") + e.what());
    return false;
  }
  // Delivered: drop what this request carried (newer reports were appended after it).
  if (!reports_lock.owns_lock()) reports_lock.lock();
  exits_.erase(exits_.begin(), exits_.begin() + static_cast<std::ptrdiff_t>(req.exits.size()));
  started_.erase(started_.begin(),
                 started_.begin() + static_cast<std::ptrdiff_t>(req.started.size()));
  checkpoints_.erase(checkpoints_.begin(),
                     checkpoints_.begin() + static_cast<std::ptrdiff_t>(req.checkpoints.size()));
  if (!req.exits.empty()) save_exits();
  {
    std::lock_guard lock(mu_);
    ++status_.syncs;
    status_.unacked_exits = exits_.size();
    if (resp.heartbeat_ms > 0) heartbeat_ms_ = resp.heartbeat_ms;
    if (!last_logged_error_.empty()) {
      last_logged_error_.clear();
      status_.last_error.clear();
    }
  }
  renew_lease(sent);
  // Stops first: an assignment in the same reply may need the GPUs a stopped pod frees. A stale
  // reply (applied after the lease its request would have renewed ran out: the agent was
  // frozen, or the reply sat in a stalled link; or to a request sent before the agent
  // registered again) starts nothing: the server may have run those pods elsewhere meanwhile
  // (found by tests/chaos).
  apply_stops(resp.stop);
  apply_assignments(resp.assign, reply_is_stale(sent));
  upload_logs(resp.logs);
  apply_tty(resp.tty);
  // A reply that carried anything is not an idle one: the next poll goes out at once (a user
  // following a log or typing into a terminal waits for it).
  *work = !resp.stop.empty() || !resp.assign.empty() || !resp.logs.empty() || !resp.tty.empty();
  return true;
}

void Agent::final_sync() {
  std::lock_guard reports_lock(reports_mu_);
  take_runner_events();
  if (exits_.empty() && started_.empty() && checkpoints_.empty()) return;
  auto cli = make_client();
  proto::SyncRequest req;
  req.agent_id = agent_id_;
  req.running = runner_->running();
  req.exits = exits_;
  req.started = started_;
  req.checkpoints = checkpoints_;
  req.gpu_use = take_gpu_use(req.running, req.exits);
  cli->options().read_timeout = std::chrono::seconds(kReadMarginS);
  auto res =
      cli->post("/v1/agents/" + options_.node + "/sync", proto::dump_json(nlohmann::json(req)),
                "application/json", bearer(identity_->credential()));
  if (res && res->status == 200) {
    exits_.clear();
    started_.clear();
    checkpoints_.clear();
    // Orders in this reply are not applied: the agent is going away.
  } else {
    log("final sync failed (" + error_text(res) + "); " + std::to_string(exits_.size()) +
        " exits stay in " + options_.state_dir + "/exits.json for the next start");
  }
}

}  // namespace sluice::agent
