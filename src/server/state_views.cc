// The read-only views of the control plane's state: a job's explanation and JobView, the
// queues and nodes views, and the Prometheus text (docs/api.md). Split from state.cc, which
// holds the state machine.
#include <algorithm>

#include "server/job_codec.h"
#include "server/state.h"

namespace sluice::server {

using nlohmann::json;

namespace {

json time_or_null(TimeNs ns) {
  return ns > 0 ? json(unix_s(ns)) : json(nullptr);
}

}  // namespace

std::string ServerState::explain(JobId id, TimeNs now) const {
  const JobRecord* r = find(id);
  if (!r) return "no job " + std::to_string(id);
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
      if (pd) {
        s += ".\nWhy: " + describe(pd->reason, *config_);
        if (pd->starving) s += "\nIt has waited past the aging horizon: capacity is held for it.";
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
      if (r->admission && r->admission->borrowing) s += "; it borrows quota from its cohort";
      return s;
    }
    default:
      return head + " " + state_name(r->state) + (r->reason.empty() ? "" : ": " + r->reason);
  }
}

json ServerState::job_view(const JobRecord& r, TimeNs now) const {
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
  json flavors = json::array();
  if (r.admission)
    for (FlavorId f : r.admission->flavors)
      if (f >= 0) flavors.push_back(config_->flavors[static_cast<size_t>(f)].name);
  json reason = nullptr;
  if (r.state == JobState::kPending) {
    auto pd = pending_decision(r.job.id);
    reason = pd ? describe(pd->reason, *config_) : std::string("waiting for the next cycle");
  } else if (!r.reason.empty()) {
    reason = r.reason;
  }
  const int64_t gpu_milli = job_gpu_milli(r.job, *config_);
  // Started: every pod's process ran (the job may have ended since); start_time is the last.
  bool started = !r.pods.empty();
  TimeNs start_ns = 0;
  for (const auto& p : r.pods) {
    started = started && p.started;
    start_ns = std::max(start_ns, p.started_ns);
  }
  (void)now;
  return {{"id", r.job.id},
          {"name", r.job.name},
          {"namespace", r.job.namespace_},
          {"queue", r.job.queue},
          {"cluster_queue", r.cluster_queue},
          {"priority_class", r.job.priority_class},
          {"priority", r.job.priority},
          {"preemptible", r.job.preemptible},
          {"interactive", r.job.interactive},
          {"state", state_name(r.state)},
          {"started", started},
          {"submit_time", unix_s(r.job.submit_ns)},
          {"admit_time", time_or_null(r.state == JobState::kPending ? 0 : r.admit_ns)},
          {"start_time", time_or_null(started ? start_ns : 0)},
          {"end_time", time_or_null(r.end_ns)},
          {"pods", r.job.pod_count()},
          {"gpus", (gpu_milli + 999) / 1000},
          {"gpu_milli", gpu_milli},
          {"command", r.job.command},
          {"user", r.job.user},
          {"run_as_uid", r.job.run_as_uid >= 0 ? json(r.job.run_as_uid) : json(nullptr)},
          {"run_as_gid", r.job.run_as_gid >= 0 ? json(r.job.run_as_gid) : json(nullptr)},
          {"flavors", flavors},
          {"borrowing", r.admission ? r.admission->borrowing : false},
          {"placement", placement},
          {"reason", reason},
          {"exit_code", r.exit_code ? json(*r.exit_code) : json(nullptr)},
          {"preemptions", r.preemptions},
          {"attempts", r.attempts},
          {"pod_exits", exits},
          // A batch Job's completions (docs/workloads.md): how many of them succeeded.
          {"completions", r.job.completions.total > 0 ? json{{"total", r.job.completions.total},
                                                             {"succeeded", r.completed.size()},
                                                             {"indexed", r.job.completions.indexed}}
                                                      : json(nullptr)}};
}

json ServerState::queues_view(TimeNs now) const {
  (void)now;
  const auto& cfg = *config_;
  // From the scheduler's pending and running jobs: records of finished jobs are not walked.
  std::vector<std::map<std::string, int64_t>> pending(cfg.cluster_queues.size());
  std::vector<int64_t> running(cfg.cluster_queues.size(), 0);
  sched_->for_each_pending([&](const Scheduler::PendingJob& p) {
    pending[static_cast<size_t>(p.queue)]
           [p.job.priority_class.empty() ? "none" : p.job.priority_class]++;
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

json ServerState::nodes_view(TimeNs now) const {
  const auto& cfg = *config_;
  // The job on each device.
  std::map<std::pair<std::string, int32_t>, std::vector<JobId>> on;
  for (const auto& [id, rj] : sched_->running())
    if (const JobRecord* r = find(id))
      for (const auto& p : r->pods)
        for (int32_t g : p.gpus) on[{p.node, g}].push_back(id);
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
      gpus.push_back({{"index", g},
                      {"model", cn.gpus[g].model},
                      {"memory_mib", cn.gpus[g].memory_mib},
                      {"allocated_milli", used},
                      {"utilization_pct", sampled ? json(n.gpu_util_pct[g]) : json(nullptr)},
                      {"jobs", it == on.end() ? json::array() : json(it->second)}});
    }
    out.push_back(
        {{"name", n.name},
         {"ready", n.ready},
         {"registered", n.registered},
         {"agent", n.address},
         {"last_seen_s_ago", n.registered ? json(unix_s(now - n.last_seen_ns)) : json(nullptr)},
         {"gpus", gpus},
         {"gpu_count", cn.gpus.size()},
         {"gpus_allocated", static_cast<double>(alloc_milli) / 1000.0}});
  }
  return {{"nodes", out}};
}

std::string ServerState::metrics_text(TimeNs now) const {
  const auto& cfg = *config_;
  PromWriter w;
  // Pending per queue, priority class, workload class; running per queue.
  std::map<LabelSet, int64_t> pending;
  std::map<std::string, int64_t> running;
  std::map<std::string, double> gpu_seconds = gpu_seconds_;
  // From the scheduler's pending and running jobs: records of finished jobs are not walked.
  sched_->for_each_pending([&](const Scheduler::PendingJob& p) {
    pending[{{"cluster_queue", cfg.cluster_queues[static_cast<size_t>(p.queue)].name},
             {"priority_class", p.job.priority_class},
             {"class", workload_class(p.job, cfg)}}]++;
  });
  for (const auto& [id, rj] : sched_->running()) {
    const JobRecord* r = find(id);
    if (!r) continue;
    running[r->cluster_queue]++;
    if (now > r->admit_ns)
      gpu_seconds[r->job.namespace_] += static_cast<double>(job_gpu_milli(r->job, cfg)) / 1000.0 *
                                        static_cast<double>(now - r->admit_ns) / 1e9;
  }
  w.family("sluice_pending_jobs", "gauge", "Jobs waiting in a queue.");
  for (const auto& [l, v] : pending) w.sample("sluice_pending_jobs", l, static_cast<double>(v));
  w.family("sluice_running_jobs", "gauge", "Jobs admitted and placed.");
  for (const auto& cq : cfg.cluster_queues)
    w.sample("sluice_running_jobs", {{"cluster_queue", cq.name}},
             static_cast<double>(running.count(cq.name) ? running[cq.name] : 0));
  w.family("sluice_admission_wait_seconds", "histogram",
           "Time from submission (or requeue) to admission.");
  for (const auto& [l, h] : metrics_.admission_wait)
    w.histogram("sluice_admission_wait_seconds", l, h);
  w.family("sluice_preemptions_total", "counter", "Jobs evicted to make room for others.");
  for (const auto& [l, v] : metrics_.preemptions) w.sample("sluice_preemptions_total", l, v);
  w.family("sluice_preempted_gpu_seconds_total", "counter",
           "GPU-seconds lost to preemption since the victims' last checkpoints.");
  for (const auto& [q, v] : metrics_.preempted_gpu_seconds)
    w.sample("sluice_preempted_gpu_seconds_total", {{"cluster_queue", q}}, v);
  w.family("sluice_jobs_submitted_total", "counter", "Accepted submissions.");
  for (const auto& [q, v] : metrics_.submitted)
    w.sample("sluice_jobs_submitted_total", {{"cluster_queue", q}}, v);
  w.family("sluice_jobs_rejected_total", "counter", "Submissions or jobs refused.");
  for (const auto& [reason, v] : metrics_.rejected)
    w.sample("sluice_jobs_rejected_total", {{"reason", reason}}, v);
  w.family("sluice_jobs_finished_total", "counter", "Jobs that ended.");
  for (const auto& [l, v] : metrics_.finished) w.sample("sluice_jobs_finished_total", l, v);
  // Nodes.
  w.family("sluice_node_ready", "gauge", "1 while the node's agent is heartbeating.");
  for (const auto& n : nodes_) w.sample("sluice_node_ready", {{"node", n.name}}, n.ready ? 1 : 0);
  w.family("sluice_node_gpus", "gauge", "GPUs on the node.");
  for (const auto& n : nodes_)
    w.sample("sluice_node_gpus", {{"node", n.name}},
             static_cast<double>(cfg.cluster.nodes[static_cast<size_t>(n.id)].gpus.size()));
  w.family("sluice_node_gpus_allocated", "gauge", "GPUs allocated on the node (fractions count).");
  const auto& alloc = sched_->alloc();
  for (const auto& n : nodes_) {
    int64_t used = 0;
    const auto& cn = cfg.cluster.nodes[static_cast<size_t>(n.id)];
    for (size_t g = 0; g < cn.gpus.size(); ++g)
      if (!alloc.gpu_is_mig(n.id, static_cast<int>(g)))
        used += 1000 - alloc.gpu_free_milli(n.id, static_cast<int>(g));
    w.sample("sluice_node_gpus_allocated", {{"node", n.name}}, static_cast<double>(used) / 1000.0);
  }
  w.family("sluice_node_gpu_utilization_ratio", "gauge",
           "GPU utilisation (0-1) sampled by the node's agent through NVML; absent for fake GPUs.");
  for (const auto& n : nodes_) {
    if (!n.ready) continue;  // a stale sample of a silent node would read as current
    for (size_t g = 0; g < n.gpu_util_pct.size(); ++g)
      if (n.gpu_util_pct[g] >= 0)
        w.sample("sluice_node_gpu_utilization_ratio",
                 {{"node", n.name}, {"gpu", std::to_string(g)}},
                 static_cast<double>(n.gpu_util_pct[g]) / 100.0);
  }
  // Queues.
  const auto& quota = sched_->quota();
  w.family("sluice_cluster_queue_usage", "gauge", "Quota in use (GPUs, cores, bytes).");
  PromWriter wn, wb;
  wn.family("sluice_cluster_queue_nominal_quota", "gauge", "Nominal quota.");
  wb.family("sluice_cluster_queue_borrowed", "gauge", "Usage above the nominal quota.");
  auto scale = [](ResourceId r, int64_t v) {
    if (r == kGpu) return static_cast<double>(v) / 1000.0;
    if (r == kCpu) return static_cast<double>(v) / 1000.0;
    if (r == kMemory) return static_cast<double>(v) * 1024.0 * 1024.0;
    return static_cast<double>(v);
  };
  for (size_t qi = 0; qi < cfg.cluster_queues.size(); ++qi) {
    const auto& cq = cfg.cluster_queues[qi];
    const auto q = static_cast<QueueId>(qi);
    for (const auto& rg : cq.resource_groups)
      for (const auto& fq : rg.flavors)
        for (const auto& rq : fq.resources) {
          LabelSet l{{"cluster_queue", cq.name},
                     {"flavor", cfg.flavors[static_cast<size_t>(fq.flavor)].name},
                     {"resource", cfg.resources.name(rq.resource)}};
          w.sample("sluice_cluster_queue_usage", l,
                   scale(rq.resource, quota.usage(q, fq.flavor, rq.resource)));
          wn.sample("sluice_cluster_queue_nominal_quota", l, scale(rq.resource, rq.nominal));
          wb.sample("sluice_cluster_queue_borrowed", l,
                    scale(rq.resource, quota.borrowed(q, fq.flavor, rq.resource)));
        }
  }
  std::string text = w.text() + wn.text() + wb.text();
  PromWriter w2;
  w2.family("sluice_cluster_queue_drf_share", "gauge", "Dominant share against entitlement.");
  for (size_t qi = 0; qi < cfg.cluster_queues.size(); ++qi)
    w2.sample("sluice_cluster_queue_drf_share", {{"cluster_queue", cfg.cluster_queues[qi].name}},
              sched_->drf_share(static_cast<QueueId>(qi)));
  w2.family("sluice_cluster_queue_fairness_debt", "gauge", "Decayed fairness debt.");
  for (size_t qi = 0; qi < cfg.cluster_queues.size(); ++qi)
    w2.sample("sluice_cluster_queue_fairness_debt",
              {{"cluster_queue", cfg.cluster_queues[qi].name}},
              sched_->fairness_debt(static_cast<QueueId>(qi)));
  w2.family("sluice_namespace_gpu_seconds_total", "counter",
            "Allocated GPU-seconds (chargeback; divide by 3600 for GPU-hours).");
  for (const auto& [ns, v] : gpu_seconds)
    w2.sample("sluice_namespace_gpu_seconds_total", {{"namespace", ns}}, v);
  w2.family("sluice_scheduling_cycle_seconds", "histogram", "Time of one scheduling cycle.");
  for (const auto& [mode, h] : metrics_.cycle_seconds)
    w2.histogram("sluice_scheduling_cycle_seconds", {{"mode", mode}}, h);
  w2.family("sluice_scheduling_cycles_total", "counter", "Scheduling cycles run.");
  w2.sample("sluice_scheduling_cycles_total", {}, static_cast<double>(metrics_.cycles));
  w2.family("sluice_last_cycle_timestamp_seconds", "gauge", "Unix time of the last cycle.");
  w2.sample("sluice_last_cycle_timestamp_seconds", {}, metrics_.last_cycle_unix_s);
  w2.family("sluice_store_commit_seconds", "histogram",
            "Time of one durable commit (SQLite, or the etcd txns of one batch).");
  {
    std::lock_guard lk(metrics_.commit_mu);
    w2.histogram("sluice_store_commit_seconds", {}, metrics_.commit_seconds);
  }
  return text + w2.text();
}

}  // namespace sluice::server
