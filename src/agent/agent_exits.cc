// The agent's reports: the runner's events (starts, exits, checkpoints) gathered for the next
// sync, exits of pods it never started, and exits.json (unacknowledged exits across restarts).
#include "agent/agent.h"
#include "agent/proc.h"

namespace sluice::agent {

void Agent::take_runner_events() {
  {
    std::lock_guard lock(mu_);
    events_pending_ = false;
  }
  std::lock_guard reports_lock(reports_mu_);
  RunnerEvents ev = runner_->take_events();
  started_.insert(started_.end(), ev.started.begin(), ev.started.end());
  checkpoints_.insert(checkpoints_.end(), ev.checkpoints.begin(), ev.checkpoints.end());
  if (!ev.exits.empty()) {
    exits_.insert(exits_.end(), ev.exits.begin(), ev.exits.end());
    save_exits();
  }
  std::lock_guard lock(mu_);
  status_.unacked_exits = exits_.size();
}

void Agent::report_unstarted(proto::PodRef ref, uint64_t run, const std::string& reason,
                             std::string message) {
  proto::PodExit exit;
  exit.job = ref.job;
  exit.pod = ref.pod;
  exit.run = run;
  exit.reason = reason;
  exit.exit_code = -1;
  exit.message = std::move(message);
  exit.at_unix_ns = unix_now_ns();
  exits_.push_back(std::move(exit));
  save_exits();
}

// exits.json: exits not yet acknowledged, so a restarted agent still delivers them.
void Agent::save_exits() {
  std::lock_guard reports_lock(reports_mu_);
  std::string why;
  if (!exits_file_.save(nlohmann::json(exits_), &why)) log(why);
}

void Agent::load_exits() {
  std::string why;
  auto doc = exits_file_.load(&why);
  if (!why.empty()) log("ignoring unreadable state: " + why);
  if (!doc) return;
  try {
    exits_ = doc->get<std::vector<proto::PodExit>>();
  } catch (const std::exception& e) {
    log("ignoring unreadable " + exits_file_.path() + ": " + e.what());
  }
}

}  // namespace sluice::agent
