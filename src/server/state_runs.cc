// A job's run: its pods staged for their agents, each told its command and env (pod_launch.h),
// and the slots of a batch Job with completions, which run completion after completion.
#include <algorithm>

#include "server/pod_launch.h"
#include "server/run_as.h"
#include "server/state.h"

namespace sluice::server {

void ServerState::start_run(JobRecord& r, const Admission& a, TimeNs now) {
  set_state(r, JobState::kRunning);
  r.admission = a;
  r.admit_ns = now;
  r.attempts += 1;
  r.reason.clear();
  r.exit_code.reset();
  r.pods.clear();
  const auto& cfg = *config_;
  for (const auto& pp : a.placement.pods) {
    PodRun run;
    run.node = cfg.cluster.nodes[static_cast<size_t>(pp.node)].name;
    for (const auto& g : pp.gpus) run.gpus.push_back(g.gpu);
    run.gpu_milli = pp.gpus.size() == 1 ? pp.gpus.front().milli : 1000;
    r.pods.push_back(run);
  }
  r.master_port = r.job.exec().gang_env == GangEnv::kNone ? 0 : pick_master_port(r);
  const std::vector<proto::PeerPod> peers = run_peers(r);
  trace_admit(r, now);  // before the pods are staged: they carry the run's TRACEPARENT
  for (size_t i = 0; i < r.pods.size(); ++i) {
    if (r.job.exec().completions.total > 0) {
      // Completions: each slot takes the next one left; a slot with none left has nothing to
      // run this time (its GPUs stay the job's until the run ends, as Kueue's quota does).
      auto next = next_completion(r);
      if (!next) {
        r.pods[i].exited = true;
        r.pods[i].exit = proto::PodExit{r.job.id, static_cast<int32_t>(i),           0,  0,
                                        "exited", "no completion left for this pod", now};
        continue;
      }
      r.pods[i].completion = *next;
    }
    stage_pod(r, i, peers);
  }
  const double wait_s = unix_s(now - r.queued_ns);
  LabelSet labels{{"cluster_queue", r.cluster_queue},
                  {"priority_class", r.job.exec().priority_class},
                  {"class", workload_class(r.job, cfg)}};
  metrics_.admission_wait.try_emplace(labels, Metrics::wait_histogram())
      .first->second.observe(wait_s);
  event({{"event", "start"}, {"time", unix_s(now)}, {"id", r.job.id}});
  touch(r);
}

std::vector<proto::PeerPod> ServerState::run_peers(const JobRecord& r) const {
  std::vector<proto::PeerPod> peers;
  for (size_t i = 0; i < r.pods.size(); ++i) {
    const NodeState* n = node_by_name(r.pods[i].node);
    peers.push_back({static_cast<int32_t>(i), r.pods[i].node, n ? n->address : ""});
  }
  return peers;
}

void ServerState::stage_pod(JobRecord& r, size_t i, const std::vector<proto::PeerPod>& peers) {
  proto::Assignment as;
  as.job = r.job.id;
  as.pod = static_cast<int32_t>(i);
  r.pods[i].run = ++r.launches;  // a new run: stale orders and reports cannot touch it
  r.pods[i].deleted = false;     // a new pod in the Kubernetes API's view
  as.run = r.pods[i].run;
  as.attempt = r.attempts;
  as.job_name = r.job.name;
  as.job_namespace = r.job.namespace_;
  as.gang_size = static_cast<int32_t>(r.pods.size());
  as.peers = peers;
  pod_command_env(r.job, *r.admission, i, peers, r.master_port, r.pods[i].completion, as);
  if (tracer_)  // W3C trace context: the pod's own spans join the job's trace (tracing.h)
    if (auto tp = tracer_->traceparent(r.job.id)) as.env["TRACEPARENT"] = *tp;
  as.gpus = r.pods[i].gpus;
  as.gpu_milli = r.pods[i].gpu_milli;
  as.walltime_ms = r.job.walltime_ns / 1'000'000;
  as.grace_ms = r.job.checkpoint_grace_ns / 1'000'000;
  set_pod_identity(as, r.job, *r.admission, i, *config_);
  staged_.push_back({r.pods[i].node, std::move(as)});
}

int32_t ServerState::pick_master_port(const JobRecord& r) const {
  auto master_node = [](const JobRecord& x) -> const std::string* {
    if (!x.admission) return nullptr;
    for (size_t i = 0; i < x.pods.size(); ++i)
      if (pod_rank(*x.admission, i) == 0) return &x.pods[i].node;
    return nullptr;
  };
  const std::string* mine = master_node(r);
  std::set<int32_t> used;
  for (const auto& [id, other] : records_)
    if (id != r.job.id && other.state == JobState::kRunning && other.master_port) {
      const std::string* theirs = master_node(other);
      if (mine && theirs && *mine == *theirs) used.insert(other.master_port);
    }
  return MasterPorts::pick(r.job.id, used);
}

std::optional<int32_t> ServerState::next_completion(const JobRecord& r) const {
  for (int32_t c = 0; c < r.job.exec().completions.total; ++c) {
    if (std::binary_search(r.completed.begin(), r.completed.end(), c)) continue;
    const bool running = std::any_of(r.pods.begin(), r.pods.end(), [&](const PodRun& p) {
      return !p.exited && p.completion == c;
    });
    if (!running) return c;
  }
  return std::nullopt;
}

bool ServerState::run_next_completion(JobRecord& r, size_t pod) {
  PodRun& p = r.pods[pod];
  if (p.completion < 0) return false;
  auto at = std::lower_bound(r.completed.begin(), r.completed.end(), p.completion);
  if (at == r.completed.end() || *at != p.completion) r.completed.insert(at, p.completion);
  p.completion = -1;
  auto next = next_completion(r);
  if (!next) return false;
  p.exited = false;
  p.started = false;
  p.rerun = true;
  p.completion = *next;
  stage_pod(r, pod, run_peers(r));
  // Staged assignments reach agents after the next cycle's commit (release_staged).
  dirty_ = true;
  return true;
}

}  // namespace sluice::server
