// The server's orders: stop orders and assignments as a sync reply brings them. What cannot be
// carried out is reported as an exit (agent_exits.cc).
#include <csignal>

#include "agent/agent.h"
#include "agent/pod_env.h"
#include "agent/proc.h"
#include "agent/server_client.h"

extern char** environ;

namespace sluice::agent {

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
      PodContext ctx{options_.node, address_, paths.checkpoint_file,
                     identity_->checkpoint_token(ref)};
      if (gpus_->kind() == "fake" && !a.gpus.empty()) ctx.gpu_use_file = paths.gpu_use_file;
      bad = isolation_->prepare(a, ctx, environ, launch);
    }
    if (bad.empty()) track_gpu_use(ref, a.run, a.gpus);
    if (!bad.empty()) {
      report_unstarted(ref, a.run, "start-failed", bad);
      log("cannot start " + ref_name(ref) + ": " + bad);
      continue;
    }
    runner_->launch(std::move(launch));
  }
}

}  // namespace sluice::agent
