#include "agent/leader_watch.h"

#include "agent/agent.h"
#include "agent/server_client.h"

namespace sluice::agent {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

bool Agent::follow_leader(const net::ClientResult& res, size_t at) {
  if (servers_.size() < 2) return false;
  if (res && !(res->status == 503 && error_code(res) == "not_leader")) return false;
  if (server_at_ != at) return true;  // the leader watch (or the other loop) moved already
  // The standby names the leader when it knows it: straight there, else the next server. Not
  // back to the server just left: a standby names a dead leader until its lease expires, and
  // following that would bounce between the two and never try a third. A replica that names
  // itself has just won the election: ask it again.
  size_t next = (at + 1) % servers_.size();
  bool named = false;
  if (res) {
    const auto body = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
    const std::string leader = body.is_object() ? body.value("leader", std::string()) : "";
    for (size_t i = 0; i < servers_.size(); ++i)
      if (!leader.empty() && servers_[i] == leader && i != left_at_) {
        next = i;
        named = true;
      }
  }
  if (next != at) left_at_ = at;
  server_at_ = next;
  named_leader_ = named;
  std::lock_guard lock(mu_);
  status_.registered = false;  // the next server may not know this agent: register there
  return true;
}

// Marks a request to servers[at] that should be answered by `due`; watch_loop() looks at the
// oldest one.
Agent::Awaiting::Awaiting(Agent& a, size_t at, Clock::time_point due) : agent(a) {
  std::lock_guard lock(agent.mu_);
  it = agent.awaiting_.insert(agent.awaiting_.end(), {at, due});
}

Agent::Awaiting::~Awaiting() {
  std::lock_guard lock(agent.mu_);
  agent.awaiting_.erase(it);
}

// With several servers: while a request to the current server is kOverdueMs past due, ask the
// others who leads every kWitnessEveryMs; when one names another server, go there and cut the
// requests in flight (their failure then moves nowhere else: follow_leader()).
void Agent::watch_loop() {
  for (;;) {
    std::optional<size_t> at;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, milliseconds(kWitnessEveryMs), [&] { return quit_; });
      if (quit_) return;
      const auto now = Clock::now();
      for (const auto& [sent_at, due] : awaiting_)
        if (sent_at == server_at_ && now > due + milliseconds(kOverdueMs)) at = sent_at;
    }
    if (!at) continue;
    const auto next = witness_leader(servers_, *at, kWitnessTimeoutMs);
    if (!next) continue;
    std::lock_guard lock(mu_);
    if (server_at_ != *at || quit_) continue;  // moved meanwhile
    log(servers_[*at] + " has not answered for " + std::to_string(kOverdueMs) +
        " ms past due and " + servers_[*next] + " leads now: going there");
    left_at_ = *at;
    server_at_ = *next;
    named_leader_ = true;  // no back-off delay before asking it
    status_.registered = false;
    if (in_flight_) in_flight_->cancel();
    if (report_in_flight_) report_in_flight_->cancel();
  }
}

}  // namespace sluice::agent
