// The read-only views of the control plane's state: a job's explanation and JobView, the
// queues and nodes views (docs/api.md); the Prometheus text is state_metrics.cc. Split from
// state.cc, which holds the state machine.
#include <algorithm>

#include "core/model/deadline.h"
#include "server/job_codec.h"
#include "server/state.h"

namespace sluice::server {

using nlohmann::json;

namespace {

json time_or_null(TimeNs ns) {
  return ns > 0 ? json(unix_s(ns)) : json(nullptr);
}

// Why a gated job waits (state_gates.cc); a hold is known before the gates' next pass.
std::string gate_text(const JobRecord& r) {
  if (r.held) return "held by a user (sluice release " + std::to_string(r.job.id) + ")";
  return r.gate_reason.empty()
             ? "waiting for its dependency or array throttle to be looked at (next cycle)"
             : r.gate_reason;
}

// "3h 5m", "42s": a span for people.
std::string span_text(TimeNs ns) {
  const int64_t s = ns / kNsPerSec;
  if (s >= 3600) return std::to_string(s / 3600) + "h " + std::to_string(s / 60 % 60) + "m";
  if (s >= 60) return std::to_string(s / 60) + "m " + std::to_string(s % 60) + "s";
  return std::to_string(s) + "s";
}

// The explanation's deadline line (core/model/deadline.h); "" without a deadline.
std::string deadline_text(const JobRecord& r, TimeNs now) {
  const Job& job = r.job;
  if (job.complete_by_ns <= 0) return "";
  std::string s = "\nDeadline: complete by " + format_rfc3339(job.complete_by_ns);
  if (r.state != JobState::kPending && r.state != JobState::kRunning) {
    const char* v = deadline_outcome(job, r.state == JobState::kSucceeded,
                                     r.state == JobState::kRejected, r.end_ns);
    return s + (v ? std::string(" (") + v + ")" : std::string());
  }
  if (now > job.complete_by_ns)
    return s + " (passed " + span_text(now - job.complete_by_ns) + " ago)";
  s += " (in " + span_text(job.complete_by_ns - now);
  if (r.state == JobState::kPending && job.walltime_ns > 0) {
    const TimeNs slack = deadline_slack(job, now);
    s += slack >= 0 ? "; slack " + span_text(slack) + " after its walltime"
                    : "; its walltime no longer fits: it will miss it by " + span_text(-slack);
  }
  return s + ")";
}

// A JobView's deadline verdict once the job ended; null before, or without a deadline.
json deadline_verdict(const JobRecord& r) {
  if (r.state == JobState::kPending || r.state == JobState::kRunning) return nullptr;
  const char* v = deadline_outcome(r.job, r.state == JobState::kSucceeded,
                                   r.state == JobState::kRejected, r.end_ns);
  return v ? json(v) : json(nullptr);
}

}  // namespace

// The nodes an admin took out of scheduling, for a pending job's explanation: the core says only
// that a node takes no new pods, not whether it is NotReady, cordoned or drained.
std::string ServerState::held_nodes_text() const {
  std::string out;
  size_t n = 0;
  for (const auto& node : nodes_) {
    if (node.hold.empty()) continue;
    if (++n > 8) continue;
    out += (n > 1 ? ", " : "") + node.name + " (" +
           (node.hold == "drain" ? "drained" : "cordoned") +
           (node.hold_reason.empty() ? "" : ": " + node.hold_reason) + ")";
  }
  if (n > 8) out += " and " + std::to_string(n - 8) + " more";
  return n ? "\nOut of scheduling by an admin: " + out + " (`sluice nodes`; back with " +
                 "`sluice nodes resume NODE`)"
           : "";
}

std::string ServerState::explain(JobId id, TimeNs now) const {
  const JobRecord* r = find(id);
  if (!r) return "no job " + std::to_string(id);
  return explain_state(id, r, now) + deadline_text(*r, now);
}

std::string ServerState::explain_state(JobId id, const JobRecord* r, TimeNs now) const {
  const std::string head = "job " + std::to_string(id) + " (" + r->job.name + ", " +
                           r->job.namespace_ + "/" + r->job.queue + " -> ClusterQueue " +
                           r->cluster_queue + ")";
  switch (r->state) {
    case JobState::kPending: {
      std::string s = head + " is pending";
      const double waited = unix_s(now - r->queued_ns);
      s += " for " + std::to_string(static_cast<int64_t>(waited)) + "s";
      if (r->preemptions > 0)
        s += "; preempted " + std::to_string(r->preemptions) + " time(s), last: " + r->reason;
      else if (!r->reason.empty())
        s += "; requeued: " + r->reason;
      auto pd = pending_decision(id);
      if (r->gated) {
        // Not the scheduler's to decide yet (state_gates.cc).
        s += ".\nWhy: " + gate_text(*r);
        if (!r->job.exec().dependency.empty()) s += "\nDependency: " + r->job.exec().dependency;
        return s;
      }
      if (pd) {
        s += ".\nWhy: " + describe(pd->reason, *config_);
        if (pd->starving) s += "\nIt has waited past the aging horizon: capacity is held for it.";
        s += held_nodes_text();
      } else {
        s += ".\nWhy: not looked at yet; the next scheduling cycle will.";
      }
      s += "\nScore " + std::to_string(sched_->score(id, now)) + " (priority " +
           std::to_string(r->job.priority) + ", class " + workload_class(r->job, *config_) + ")";
      return s;
    }
    case JobState::kRunning: {
      std::string s = head + " is running since " +
                      std::to_string(static_cast<int64_t>(unix_s(now - r->admit_ns))) + "s on";
      for (size_t i = 0; i < r->pods.size(); ++i)
        s += (i ? ", " : " ") + r->pods[i].node + (r->pods[i].started ? "" : " (starting)");
      if (r->admission) {
        const std::string flavors = describe_flavors(*r->admission, r->job, *config_);
        if (!flavors.empty()) s += "; " + flavors;
      }
      if (r->admission && r->admission->borrowing) s += "; it borrows quota from its cohort";
      return s;
    }
    default:
      return head + " " + state_name(r->state) + (r->reason.empty() ? "" : ": " + r->reason);
  }
}

namespace {

// Every run this server saw, oldest first: the ones that ended with the job requeued
// (PastRun), then the one going on (end and why null) or the one that ended the job (from its
// own fields). A run: its pods' nodes, admission, start (every pod running), end, why.
json runs_view(const JobRecord& r, TimeNs start_ns) {
  json runs = json::array();
  const auto add = [&](const std::vector<std::string>& nodes, TimeNs admit, TimeNs start,
                       TimeNs end, const std::string& why) {
    runs.push_back({{"nodes", nodes},
                    {"admit_time", time_or_null(admit)},
                    {"start_time", time_or_null(start)},
                    {"end_time", time_or_null(end)},
                    {"why", end ? json(why) : json(nullptr)}});
  };
  for (const auto& p : r.past_runs) add(p.nodes, p.admit_ns, p.start_ns, p.end_ns, p.why);
  // The last run, unless it is the requeued one above (a job cancelled while pending again).
  const bool recorded = !r.past_runs.empty() && r.past_runs.back().admit_ns == r.admit_ns;
  if (r.admit_ns == 0 || r.pods.empty() || recorded || r.state == JobState::kPending) return runs;
  std::vector<std::string> nodes;
  for (const auto& p : r.pods) nodes.push_back(p.node);
  if (r.state == JobState::kRunning) {
    add(nodes, r.admit_ns, start_ns, 0, "");
  } else {
    const std::string why = state_name(r.state) + (r.reason.empty() ? "" : ": " + r.reason);
    add(nodes, r.admit_ns, start_ns, r.end_ns, why);
  }
  return runs;
}

// The pods' placement and the exits seen so far, in pod order.
std::pair<json, json> pods_view(const JobRecord& r) {
  json placement = json::array();
  json exits = json::array();
  for (size_t i = 0; i < r.pods.size(); ++i) {
    placement.push_back({{"pod", i},
                         {"node", r.pods[i].node},
                         {"gpus", r.pods[i].gpus},
                         {"started", r.pods[i].started}});
    if (r.pods[i].exited)
      exits.push_back({{"pod", i},
                       {"exit_code", r.pods[i].exit.exit_code},
                       {"signal", r.pods[i].exit.signal},
                       {"reason", r.pods[i].exit.reason},
                       {"message", r.pods[i].exit.message}});
  }
  return {placement, exits};
}

// The flavors it was admitted with, and per pod set where pod sets got different ones.
std::pair<json, json> flavors_view(const JobRecord& r, const Config& config) {
  json flavors = json::array();
  json per_pod_set = nullptr;
  if (!r.admission) return {flavors, per_pod_set};
  for (FlavorId f : r.admission->flavors_used())
    flavors.push_back(config.flavors[static_cast<size_t>(f)].name);
  const auto& per = r.admission->pod_set_flavors;
  for (size_t i = 0; i < per.size() && i < r.job.pod_sets.size(); ++i) {
    json names = json::array();
    for (FlavorId f : per[i])
      if (f >= 0) names.push_back(config.flavors[static_cast<size_t>(f)].name);
    per_pod_set[r.job.pod_sets[i].name] = names;
  }
  return {flavors, per_pod_set};
}

// Measured GPU use: peak and mean memory per GPU, mean utilisation; null: nothing measured.
json gpu_use_view(const JobRecord& r) {
  if (r.gpu_use.samples <= 0) return nullptr;
  return {{"peak_mib", r.gpu_use.peak_mib},
          {"mean_mib", r.gpu_use.mean_mib()},
          {"mean_util_pct", r.gpu_use.mean_util_pct()},
          {"samples", r.gpu_use.samples}};
}

// The shape a right-sized job was placed on and why; null: as requested.
json right_size_view(const JobRecord& r) {
  if (!r.right_size) return nullptr;
  return {{"shape", r.right_size->shape},           {"mig", r.right_size->mig},
          {"memory_mib", r.right_size->memory_mib}, {"runs", r.right_size->runs},
          {"peak_mib", r.right_size->peak_mib},     {"retried", r.right_size->retried}};
}

// A batch Job's completions: how many of them succeeded; null: not a batch Job.
json completions_view(const JobRecord& r) {
  const auto& c = r.job.exec().completions;
  if (c.total <= 0) return nullptr;
  return {{"total", c.total}, {"succeeded", r.completed.size()}, {"indexed", c.indexed}};
}

}  // namespace

// Why it waits (pending), or why it ended or was requeued last; null: nothing to say.
json ServerState::reason_view(const JobRecord& r) const {
  if (r.state == JobState::kPending && r.gated) return gate_text(r);
  if (r.state == JobState::kPending) {
    auto pd = pending_decision(r.job.id);
    return pd ? describe(pd->reason, *config_) : std::string("waiting for the next cycle");
  }
  return r.reason.empty() ? json(nullptr) : json(r.reason);
}

json ServerState::job_view(const JobRecord& r, TimeNs now) const {
  const auto [placement, exits] = pods_view(r);
  const auto [flavors, per_pod_set] = flavors_view(r, *config_);
  const json reason = reason_view(r);
  const int64_t gpu_milli = job_gpu_milli(r.job, *config_);
  // Started: every pod's process ran (the job may have ended since); start_time is the last.
  bool started = !r.pods.empty();
  TimeNs start_ns = 0;
  for (const auto& p : r.pods) {
    started = started && p.started;
    start_ns = std::max(start_ns, p.started_ns);
  }
  (void)now;
  return {
      {"id", r.job.id},
      {"name", r.job.name},
      {"namespace", r.job.namespace_},
      {"queue", r.job.queue},
      {"cluster_queue", r.cluster_queue},
      {"priority_class", r.job.exec().priority_class},
      {"priority", r.job.priority},
      {"preemptible", r.job.preemptible},
      {"interactive", r.job.interactive},
      {"tty", r.job.exec().tty},
      {"state", state_name(r.state)},
      {"timed_out", timed_out(r.state, r.reason)},  // Slurm's TIMEOUT: failed by a walltime kill
      {"started", started},
      {"submit_time", unix_s(r.job.submit_ns)},
      {"admit_time", time_or_null(r.state == JobState::kPending ? 0 : r.admit_ns)},
      {"start_time", time_or_null(started ? start_ns : 0)},
      {"end_time", time_or_null(r.end_ns)},
      // Its deadline (spec.completeBy / completeWithin): the time, and once it ended, the
      // verdict ("met", "missed"; null: none).
      {"complete_by",
       r.job.complete_by_ns > 0 ? json(format_rfc3339(r.job.complete_by_ns)) : json(nullptr)},
      {"deadline", deadline_verdict(r)},
      {"pods", r.job.pod_count()},
      {"gpus", (gpu_milli + 999) / 1000},
      {"gpu_milli", gpu_milli},
      {"command", r.job.exec().command},
      {"user", r.job.exec().user},
      {"run_as_uid", r.job.exec().run_as_uid >= 0 ? json(r.job.exec().run_as_uid) : json(nullptr)},
      {"run_as_gid", r.job.exec().run_as_gid >= 0 ? json(r.job.exec().run_as_gid) : json(nullptr)},
      {"working_dir", r.job.exec().working_dir},
      {"flavors", flavors},
      {"pod_set_flavors", per_pod_set},
      {"borrowing", r.admission ? r.admission->borrowing : false},
      {"placement", placement},
      {"reason", reason},
      {"exit_code", r.exit_code ? json(*r.exit_code) : json(nullptr)},
      {"preemptions", r.preemptions},
      {"attempts", r.attempts},
      {"runs", runs_view(r, started ? start_ns : 0)},
      {"pod_exits", exits},
      {"gpu_use", gpu_use_view(r)},          // right-sizing, `sluice advise`
      {"right_size", right_size_view(r)},    // spec.rightSize: auto
      {"completions", completions_view(r)},  // docs/workloads.md
      // Slurm's job control (state_gates.cc).
      {"held", r.held},
      {"dependency",
       r.job.exec().dependency.empty() ? json(nullptr) : json(r.job.exec().dependency)},
      {"array_job", r.job.exec().array_task >= 0 ? json(r.job.exec().array_job) : json(nullptr)},
      {"array_task", r.job.exec().array_task >= 0 ? json(r.job.exec().array_task) : json(nullptr)}};
}

json ServerState::queues_view(TimeNs now) const {
  (void)now;
  const auto& cfg = *config_;
  // From the scheduler's pending and running jobs: records of finished jobs are not walked.
  std::vector<std::map<std::string, int64_t>> pending(cfg.cluster_queues.size());
  std::vector<int64_t> running(cfg.cluster_queues.size(), 0);
  sched_->for_each_pending([&](const Scheduler::PendingJob& p) {
    pending[static_cast<size_t>(p.queue)]
           [p.job.exec().priority_class.empty() ? "none" : p.job.exec().priority_class]++;
  });
  for (const auto& [id, rj] : sched_->running()) running[static_cast<size_t>(rj.admission.queue)]++;
  json out = json::array();
  const auto& quota = sched_->quota();
  for (size_t qi = 0; qi < cfg.cluster_queues.size(); ++qi) {
    const auto& cq = cfg.cluster_queues[qi];
    const auto q = static_cast<QueueId>(qi);
    json usage = json::array();
    for (const auto& rg : cq.resource_groups)
      for (const auto& fq : rg.flavors)
        for (const auto& rq : fq.resources)
          usage.push_back(
              {{"flavor", cfg.flavors[static_cast<size_t>(fq.flavor)].name},
               {"resource", cfg.resources.name(rq.resource)},
               {"used", format_canonical(rq.resource, quota.usage(q, fq.flavor, rq.resource))},
               {"nominal", format_canonical(rq.resource, rq.nominal)},
               {"borrowed",
                format_canonical(rq.resource, quota.borrowed(q, fq.flavor, rq.resource))},
               {"used_raw", quota.usage(q, fq.flavor, rq.resource)},
               {"nominal_raw", rq.nominal}});
    int64_t total_pending = 0;
    for (const auto& [k, v] : pending[qi]) total_pending += v;
    out.push_back({{"name", cq.name},
                   {"cohort", cq.cohort ? json(cfg.cohorts[static_cast<size_t>(*cq.cohort)].name)
                                        : json(nullptr)},
                   {"pending", total_pending},
                   {"pending_by_class", pending[qi]},
                   {"running", running[qi]},
                   {"usage", usage},
                   {"drf_share", sched_->drf_share(q)},
                   {"fairness_debt", sched_->fairness_debt(q)},
                   {"preemptible", cq.preemptible},
                   {"interactive", cq.interactive}});
  }
  return {{"queues", out}};
}

json ServerState::local_queues_view(TimeNs now) const {
  const auto& cfg = *config_;
  const json cqs = queues_view(now)["queues"];
  // Pending and running per LocalQueue (namespace, name), from the scheduler's jobs.
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> counts;
  sched_->for_each_pending([&](const Scheduler::PendingJob& p) {
    counts[{p.job.namespace_, p.job.queue}].first++;
  });
  for (JobId id : gated_)  // held, or waiting for a dependency: pending too, to their users
    if (const JobRecord* r = find(id); r && r->state == JobState::kPending && r->gated)
      counts[{r->job.namespace_, r->job.queue}].first++;
  for (const auto& [id, rj] : sched_->running())
    if (const JobRecord* r = find(id)) counts[{r->job.namespace_, r->job.queue}].second++;
  json out = json::array();
  for (const auto& lq : cfg.local_queues) {
    const json& cq = cqs[static_cast<size_t>(lq.cluster_queue)];
    const auto c = counts[{lq.namespace_, lq.name}];
    out.push_back({{"namespace", lq.namespace_},
                   {"name", lq.name},
                   {"cluster_queue", cq["name"]},
                   {"pending", c.first},
                   {"running", c.second},
                   {"cluster_queue_pending", cq["pending"]},
                   {"cluster_queue_running", cq["running"]},
                   {"usage", cq["usage"]}});
  }
  return {{"local_queues", out}};
}

json ServerState::nodes_view(TimeNs now) const {
  const auto& cfg = *config_;
  // The job on each device.
  std::map<std::pair<std::string, int32_t>, std::vector<JobId>> on;
  for (const auto& [id, rj] : sched_->running())
    if (const JobRecord* r = find(id))
      for (const auto& p : r->pods)
        for (int32_t g : p.gpus) on[{p.node, g}].push_back(id);
  std::set<std::string> on_node;  // nodes that run a pod (CPU-only ones too)
  for (const auto& [id, rj] : sched_->running())
    if (const JobRecord* r = find(id))
      for (const auto& p : r->pods)
        if (!p.exited) on_node.insert(p.node);
  json out = json::array();
  const auto& alloc = sched_->alloc();
  for (const auto& n : nodes_) {
    const auto& cn = cfg.cluster.nodes[static_cast<size_t>(n.id)];
    json gpus = json::array();
    int64_t alloc_milli = 0;
    for (size_t g = 0; g < cn.gpus.size(); ++g) {
      const int32_t free = alloc.gpu_free_milli(n.id, static_cast<int>(g));
      const int32_t used = alloc.gpu_is_mig(n.id, static_cast<int>(g)) ? 0 : 1000 - free;
      alloc_milli += used;
      auto it = on.find({n.name, static_cast<int32_t>(g)});
      const bool sampled = n.ready && g < n.gpu_util_pct.size() && n.gpu_util_pct[g] >= 0;
      json mig = json::array();  // its MIG slices' profiles ("1g.20gb"), as configured
      for (const auto& slice : cn.gpus[g].mig) {
        const std::string& name = cfg.resources.name(slice.profile);  // nvidia.com/mig-1g.20gb
        mig.push_back(name.substr(std::min(name.size(), std::string_view(kMigPrefix).size())));
      }
      gpus.push_back({{"index", g},
                      {"model", cn.gpus[g].model},
                      {"memory_mib", cn.gpus[g].memory_mib},
                      {"mig", mig},
                      {"allocated_milli", used},
                      {"utilization_pct", sampled ? json(n.gpu_util_pct[g]) : json(nullptr)},
                      {"jobs", it == on.end() ? json::array() : json(it->second)}});
    }
    out.push_back(
        {{"name", n.name},
         {"ready", n.ready},
         {"registered", n.registered},
         // An admin's hold: "cordoned", "draining" (pods still run), "drained"; null: none.
         {"hold", n.hold.empty() ? json(nullptr)
                                 : json(n.hold == "cordon"      ? "cordoned"
                                        : on_node.count(n.name) ? "draining"
                                                                : "drained")},
         {"hold_reason", n.hold_reason},
         {"agent", n.address},
         // A node that went NotReady keeps its last sync's time; only one never seen has none.
         {"last_seen_s_ago",
          n.last_seen_ns > 0 ? json(unix_s(now - n.last_seen_ns)) : json(nullptr)},
         {"gpus", gpus},
         {"gpu_count", cn.gpus.size()},
         {"gpus_allocated", static_cast<double>(alloc_milli) / 1000.0}});
    // A node pool's node (docs/autoscaling.md): its pool, and where its slot stands.
    size_t p = 0, k = 0;
    if (pools_.locate(n.name, p, k)) {
      out.back()["pool"] = pools_.pools()[p].name;
      out.back()["pool_state"] = phase_name(pools_.phase(p, k));
    }
  }
  return {{"nodes", out}};
}

}  // namespace sluice::server
