// The server's orders and the agent's reports: stop orders and assignments as a sync reply
// brings them, the runner's events (starts, exits, checkpoints) gathered for the next sync, the
// lease each successful request renews, and exits.json (unacknowledged exits across restarts).
#include <csignal>

#include "agent/agent.h"
#include "agent/pod_env.h"
#include "agent/proc.h"
#include "agent/server_client.h"

extern char** environ;

namespace sluice::agent {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

void Agent::apply_stops(const std::vector<proto::StopOrder>& stops) {
  std::lock_guard reports_lock(reports_mu_);
  for (const auto& s : stops) {
    const proto::PodRef ref{s.job, s.pod};
    auto sig = parse_signal(s.signal);
    if (!sig) {
      log("stop order for " + ref_name(ref) + " has unknown signal \"" + s.signal +
          "\": using SIGTERM");
      sig = SIGTERM;
    }
    if (runner_->stop(ref, *sig, s.grace_ms, "stopped", s.reason, s.run)) {
      log("stopping " + ref_name(ref) + " (" + s.reason + "): " + signal_name(*sig) + ", grace " +
          std::to_string(s.grace_ms) + " ms");
      continue;
    }
    // Not running here (not this run of it). Unless an exit for that run is already queued, say
    // so, so that the server does not wait for a pod that will never report.
    bool queued = false;
    for (const auto& e : exits_)
      queued = queued || (e.job == s.job && e.pod == s.pod && (s.run == 0 || e.run == s.run));
    if (queued) continue;
    report_unstarted({s.job, s.pod}, s.run, "stopped",
                     "stop order (" + s.reason + ") for a pod that does not run on this agent");
  }
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

void Agent::apply_assignments(const std::vector<proto::Assignment>& assign, bool stale) {
  std::lock_guard reports_lock(reports_mu_);
  const auto& gpus = gpus_->gpus();
  for (const auto& a : assign) {
    const proto::PodRef ref{a.job, a.pod};
    if (runner_->known(ref)) continue;  // a repeat of an assignment we already carry out
    if (stale) {
      // Not started; said as fenced, so the server requeues it if it is still the job's
      // current run (and ignores it otherwise).
      report_unstarted(ref, a.run, "fenced",
                       "not started: the reply that assigned it was stale (its lease had run "
                       "out, or the agent had registered again since its request)");
      log("not starting " + ref_name(ref) + ": assigned by a stale reply");
      continue;
    }
    std::string bad;
    for (int32_t g : a.gpus) {
      if (g < 0 || static_cast<size_t>(g) >= gpus.size()) {
        bad = "GPU " + std::to_string(g) + " does not exist on node " + options_.node + " (" +
              std::to_string(gpus.size()) + " GPUs)";
      }
    }
    if (a.gpu_milli <= 0 || a.gpu_milli > 1000)
      bad = "gpu_milli " + std::to_string(a.gpu_milli) + " is outside 1..1000";
    PodLaunch launch;
    launch.ref = ref;
    launch.run = a.run;
    launch.argv = a.command;
    launch.gpus = a.gpus;
    launch.gpu_milli = a.gpu_milli;
    launch.walltime_ms = a.walltime_ms;
    launch.walltime_grace_ms = a.grace_ms;
    if (bad.empty()) {
      const PodPaths paths = pod_paths(options_.state_dir, ref);
      bad = isolation_->prepare(
          a, {options_.node, address_, paths.checkpoint_file, identity_->checkpoint_token(ref)},
          environ, launch);
    }
    if (!bad.empty()) {
      report_unstarted(ref, a.run, "start-failed", bad);
      log("cannot start " + ref_name(ref) + ": " + bad);
      continue;
    }
    runner_->launch(std::move(launch));
  }
}

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

// The lease runs from when the last successful request was sent: the server saw it no earlier,
// so the agent's deadline never falls after the server's (docs/agent.md, "Fencing").
bool Agent::reply_is_stale(Clock::time_point sent) const {
  std::lock_guard lock(mu_);
  // Also a reply to a request sent before the agent's last registration: the server took what
  // the agent reported there as all it runs, and declared anything else of this node lost
  // (tests/chaos, etcd mode, seed 10: a long poll's late reply started a run the server had
  // already placed elsewhere).
  return sent < registered_sent_ ||
         (lease_ms_ > 0 && Clock::now() >= sent + milliseconds(lease_ms_));
}

void Agent::renew_lease(Clock::time_point sent) {
  int64_t lease = 0;
  {
    std::lock_guard lock(mu_);
    lease = lease_ms_;
  }
  if (lease <= 0) return;
  const auto deadline = sent + milliseconds(lease);
  runner_->set_lease(deadline);
  std::lock_guard lock(util_mu_);  // the lease file's writer: the sync and report threads
  std::string why;
  if (!lease_file_->write(deadline, &why)) log("cannot record the lease: " + why);
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
