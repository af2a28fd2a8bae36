// The Prometheus text of the control plane's state (docs/api.md "Metrics"). Split from
// state_views.cc. Every series a dashboard or an alert selects exists from the first scrape:
// pending depth per queue, priority class and workload class at 0 when empty, counters at 0
// before their first event, so `rate()` and Grafana's variables see idle queues too.
#include <algorithm>
#include <array>
#include <functional>

#include "server/job_codec.h"
#include "server/state.h"

namespace sluice::server {

namespace {

constexpr std::array<const char*, 3> kClasses = {"interactive", "batch", "best-effort"};
// Reasons of sluice_jobs_rejected_total: submissions refused (state_submit.cc's SubmitStatus
// names) and jobs the scheduler gave up on.
constexpr std::array<const char*, 9> kRejectReasons = {
    "invalid",     "unknown-queue",          "duplicate",
    "pending-cap", "namespace-not-selected", "interactive-timeout",
    "budget",      "namespace-pending-cap",  "namespace-submit-rate"};
constexpr std::array<const char*, 3> kPreemptReasons = {
    "within-cluster-queue", "reclaim-within-cohort", "borrow-within-cohort"};
constexpr std::array<const char*, 3> kEndStates = {"succeeded", "failed", "cancelled"};

// The priority classes a queue's jobs can carry: every configured class, plus none ("") where
// the queue has no default class for jobs that name none.
std::vector<std::string> priority_classes(const Config& cfg, const ClusterQueue& cq) {
  std::vector<std::string> out;
  if (cq.default_priority_class.empty()) out.push_back("");
  for (const auto& pc : cfg.priority_classes) out.push_back(pc.name);
  return out;
}

// Pending depth: the cross product of queue, priority class and workload class at 0, then the
// scheduler's pending jobs (a class outside the product, should one appear, still shows).
void write_pending(PromWriter& w, const Config& cfg, const Scheduler& sched) {
  std::map<LabelSet, int64_t> pending;
  for (const auto& cq : cfg.cluster_queues)
    for (const auto& pc : priority_classes(cfg, cq))
      for (const char* c : kClasses)
        pending[{{"cluster_queue", cq.name}, {"priority_class", pc}, {"class", c}}] = 0;
  sched.for_each_pending([&](const Scheduler::PendingJob& p) {
    pending[{{"cluster_queue", cfg.cluster_queues[static_cast<size_t>(p.queue)].name},
             {"priority_class", p.job.exec().priority_class},
             {"class", workload_class(p.job, cfg)}}]++;
  });
  w.family("sluice_pending_jobs", "gauge", "Jobs waiting in a queue.");
  for (const auto& [l, v] : pending) w.sample("sluice_pending_jobs", l, static_cast<double>(v));
}

// How long the oldest job of each queue and workload class has waited in the scheduler's backlog
// (since its submission or last requeue), 0 while none waits: the admission-wait histogram is
// observed only when a job is admitted, so a job that never is would never alert on it.
void write_oldest_pending(PromWriter& w, const Config& cfg, const Scheduler& sched,
                          const std::function<TimeNs(JobId)>& queued_at, TimeNs now) {
  std::map<LabelSet, double> oldest;
  for (const auto& cq : cfg.cluster_queues)
    for (const char* c : kClasses) oldest[{{"cluster_queue", cq.name}, {"class", c}}] = 0;
  sched.for_each_pending([&](const Scheduler::PendingJob& p) {
    const TimeNs since = queued_at(p.job.id);
    if (since <= 0 || since > now) return;
    double& v = oldest[{{"cluster_queue", cfg.cluster_queues[static_cast<size_t>(p.queue)].name},
                        {"class", workload_class(p.job, cfg)}}];
    v = std::max(v, static_cast<double>(now - since) / 1e9);
  });
  w.family("sluice_oldest_pending_seconds", "gauge",
           "How long the oldest job in a queue's backlog has waited for admission.");
  for (const auto& [l, v] : oldest) w.sample("sluice_oldest_pending_seconds", l, v);
}

// Pending jobs the scheduler does not see yet (state_gates.cc), per ClusterQueue and what
// gates them, each at 0 while none: held, waiting for a dependency, ... (kGateKinds).
void write_gated(PromWriter& w, const Config& cfg, const std::map<LabelSet, int64_t>& counted) {
  std::map<LabelSet, int64_t> gated;
  for (const auto& cq : cfg.cluster_queues)
    for (const char* k : kGateKinds) gated[{{"cluster_queue", cq.name}, {"reason", k}}] = 0;
  for (const auto& [l, v] : counted) gated[l] += v;
  w.family("sluice_gated_jobs", "gauge",
           "Pending jobs kept from the scheduler: held, waiting for a dependency, ...");
  for (const auto& [l, v] : gated) w.sample("sluice_gated_jobs", l, static_cast<double>(v));
}

// Event counters, each at 0 until its first event.
void write_counters(PromWriter& w, const Config& cfg, const Metrics& m) {
  w.family("sluice_admission_wait_seconds", "histogram",
           "Time from submission (or requeue) to admission.");
  for (const auto& [l, h] : m.admission_wait) w.histogram("sluice_admission_wait_seconds", l, h);
  auto preemptions = m.preemptions;
  auto finished = m.finished;
  auto lost = m.preempted_gpu_seconds;
  auto submitted = m.submitted;
  auto rejected = m.rejected;
  for (const auto& cq : cfg.cluster_queues) {
    for (const char* r : kPreemptReasons)
      preemptions.try_emplace({{"cluster_queue", cq.name}, {"reason", r}}, 0.0);
    for (const char* s : kEndStates)
      finished.try_emplace({{"cluster_queue", cq.name}, {"state", s}}, 0.0);
    lost.try_emplace(cq.name, 0.0);
    submitted.try_emplace(cq.name, 0.0);
  }
  for (const char* r : kRejectReasons) rejected.try_emplace(r, 0.0);
  w.family("sluice_preemptions_total", "counter", "Jobs evicted to make room for others.");
  for (const auto& [l, v] : preemptions) w.sample("sluice_preemptions_total", l, v);
  w.family("sluice_preempted_gpu_seconds_total", "counter",
           "GPU-seconds lost to preemption since the victims' last checkpoints.");
  for (const auto& [q, v] : lost)
    w.sample("sluice_preempted_gpu_seconds_total", {{"cluster_queue", q}}, v);
  w.family("sluice_jobs_submitted_total", "counter", "Accepted submissions.");
  for (const auto& [q, v] : submitted)
    w.sample("sluice_jobs_submitted_total", {{"cluster_queue", q}}, v);
  w.family("sluice_jobs_rejected_total", "counter", "Submissions or jobs refused.");
  for (const auto& [reason, v] : rejected)
    w.sample("sluice_jobs_rejected_total", {{"reason", reason}}, v);
  w.family("sluice_jobs_finished_total", "counter", "Jobs that ended.");
  for (const auto& [l, v] : finished) w.sample("sluice_jobs_finished_total", l, v);
  // Deadlines (core/model/deadline.h): met / (met + missed) is the satisfaction ratio.
  auto deadlines = m.deadlines;
  for (const auto& cq : cfg.cluster_queues)
    for (const auto& pc : priority_classes(cfg, cq))
      for (const char* o : {"met", "missed"})
        deadlines.try_emplace({{"cluster_queue", cq.name}, {"priority_class", pc}, {"outcome", o}},
                              0.0);
  w.family("sluice_job_deadlines_total", "counter",
           "Jobs with a deadline that ended: met (succeeded by it) or missed (ended after it).");
  for (const auto& [l, v] : deadlines) w.sample("sluice_job_deadlines_total", l, v);
}

// Quota per queue, flavor and resource, in base units (GPUs, cores, bytes).
void write_quota(PromWriter& w, const Config& cfg, const QuotaTree& quota) {
  PromWriter wn, wb;
  w.family("sluice_cluster_queue_usage", "gauge", "Quota in use (GPUs, cores, bytes).");
  wn.family("sluice_cluster_queue_nominal_quota", "gauge", "Nominal quota.");
  wb.family("sluice_cluster_queue_borrowed", "gauge", "Usage above the nominal quota.");
  auto scale = [](ResourceId r, int64_t v) {
    if (r == kGpu || r == kCpu) return static_cast<double>(v) / 1000.0;
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
  w.append(wn);
  w.append(wb);
}

// Fairness, chargeback and budgets.
void write_accounting(PromWriter& w, const Config& cfg, const Scheduler& sched,
                      const std::map<std::string, double>& gpu_seconds, TimeNs now,
                      const NamespaceFilter& sees) {
  w.family("sluice_cluster_queue_drf_share", "gauge", "Dominant share against entitlement.");
  for (size_t qi = 0; qi < cfg.cluster_queues.size(); ++qi)
    w.sample("sluice_cluster_queue_drf_share", {{"cluster_queue", cfg.cluster_queues[qi].name}},
             sched.drf_share(static_cast<QueueId>(qi)));
  w.family("sluice_cluster_queue_fairness_debt", "gauge", "Decayed fairness debt.");
  for (size_t qi = 0; qi < cfg.cluster_queues.size(); ++qi)
    w.sample("sluice_cluster_queue_fairness_debt", {{"cluster_queue", cfg.cluster_queues[qi].name}},
             sched.fairness_debt(static_cast<QueueId>(qi)));
  w.family("sluice_namespace_gpu_seconds_total", "counter",
           "Allocated GPU-seconds (chargeback; divide by 3600 for GPU-hours).");
  for (const auto& [ns, v] : gpu_seconds)
    if (!sees || sees(ns)) w.sample("sluice_namespace_gpu_seconds_total", {{"namespace", ns}}, v);
  auto budgets = sched.budget_usage(now);
  if (sees) std::erase_if(budgets, [&](const auto& b) { return !sees(b.namespace_); });
  w.family("sluice_namespace_budget_gpu_hours", "gauge",
           "A namespace's GPU-hour budget for the current period (weighted GPU-hours).");
  for (const auto& b : budgets)
    w.sample("sluice_namespace_budget_gpu_hours", {{"namespace", b.namespace_}},
             static_cast<double>(b.budget_milli_gpu_hours) / 1000.0);
  w.family("sluice_namespace_budget_used_gpu_hours", "gauge",
           "Weighted GPU-hours a namespace used in the current budget period.");
  for (const auto& b : budgets)
    w.sample("sluice_namespace_budget_used_gpu_hours", {{"namespace", b.namespace_}},
             static_cast<double>(b.used_milli_gpu_hours) / 1000.0);
}

void write_scheduler(PromWriter& w, const Metrics& m) {
  w.family("sluice_scheduling_cycle_seconds", "histogram", "Time of one scheduling cycle.");
  for (const auto& [mode, h] : m.cycle_seconds)
    w.histogram("sluice_scheduling_cycle_seconds", {{"mode", mode}}, h);
  w.family("sluice_server_stalled_seconds_total", "counter",
           "Time the server could not look at its agents (a frozen process, a hung fsync, a "
           "lock held long), given back to every node's lease instead of counting as silence.");
  w.sample("sluice_server_stalled_seconds_total", {}, m.stalled_seconds);
  w.family("sluice_scheduling_cycles_total", "counter", "Scheduling cycles run.");
  w.sample("sluice_scheduling_cycles_total", {}, static_cast<double>(m.cycles));
  w.family("sluice_last_cycle_timestamp_seconds", "gauge", "Unix time of the last cycle.");
  w.sample("sluice_last_cycle_timestamp_seconds", {}, m.last_cycle_unix_s);
  w.family("sluice_store_commit_seconds", "histogram",
           "Time of one durable commit (SQLite, or the etcd txns of one batch).");
  std::lock_guard lk(m.commit_mu);
  w.histogram("sluice_store_commit_seconds", {}, m.commit_seconds);
  w.family("sluice_store_commit_writes", "histogram",
           "Writes that shared one durable commit (group commit): submissions, scheduling "
           "decisions, agents' reports.");
  w.histogram("sluice_store_commit_writes", {}, m.commit_writes);
}

}  // namespace

std::string ServerState::metrics_text(TimeNs now, const NamespaceFilter& sees) const {
  const auto& cfg = *config_;
  PromWriter w;
  write_pending(w, cfg, *sched_);
  write_oldest_pending(
      w, cfg, *sched_,
      [this](JobId id) {
        const JobRecord* r = find(id);
        return r ? r->queued_ns : TimeNs{0};
      },
      now);
  std::map<LabelSet, int64_t> gated;
  for (JobId id : gated_)
    if (const JobRecord* r = find(id); r && r->state == JobState::kPending && r->gated)
      gated[{{"cluster_queue", r->cluster_queue}, {"reason", gate_kind(*r)}}]++;
  write_gated(w, cfg, gated);
  std::map<std::string, int64_t> running;  // per queue
  for (const auto& [id, rj] : sched_->running())
    if (const JobRecord* r = find(id)) running[r->cluster_queue]++;
  w.family("sluice_running_jobs", "gauge", "Jobs admitted and placed.");
  for (const auto& cq : cfg.cluster_queues)
    w.sample("sluice_running_jobs", {{"cluster_queue", cq.name}},
             static_cast<double>(running.count(cq.name) ? running[cq.name] : 0));
  write_counters(w, cfg, metrics_);
  write_node_metrics(w);
  write_quota(w, cfg, sched_->quota());
  write_accounting(w, cfg, *sched_, namespace_gpu_seconds(now), now, sees);
  // Right-sizing: GPU-hours requested against used, per namespace (bounded labels).
  const auto use = namespace_gpu_use_seconds(now);
  w.family("sluice_namespace_gpu_seconds_measured_total", "counter",
           "Allocated GPU-seconds of jobs whose GPU use the agents measured.");
  for (const auto& [ns, v] : use)
    if (!sees || sees(ns))
      w.sample("sluice_namespace_gpu_seconds_measured_total", {{"namespace", ns}}, v.first);
  w.family("sluice_namespace_gpu_seconds_used_total", "counter",
           "Those GPU-seconds times the jobs' measured mean utilisation (compare with "
           "sluice_namespace_gpu_seconds_measured_total; `sluice advise`).");
  for (const auto& [ns, v] : use)
    if (!sees || sees(ns))
      w.sample("sluice_namespace_gpu_seconds_used_total", {{"namespace", ns}}, v.second);
  write_scheduler(w, metrics_);
  return w.text();
}

std::map<std::string, std::pair<double, double>> ServerState::namespace_gpu_use_seconds(
    TimeNs now) const {
  auto out = gpu_use_seconds_;
  for (const auto& [id, rj] : sched_->running()) {
    const JobRecord* r = find(id);
    if (!r || now <= r->admit_ns || r->gpu_use.samples == 0) continue;
    const double secs = static_cast<double>(job_gpu_milli(r->job, *config_)) / 1000.0 *
                        static_cast<double>(now - r->admit_ns) / 1e9;
    auto& [measured, used] = out[r->job.namespace_];
    measured += secs;
    used += secs * r->gpu_use.mean_util_pct() / 100.0;
  }
  return out;
}

std::map<std::string, double> ServerState::namespace_gpu_seconds(TimeNs now) const {
  std::map<std::string, double> out = gpu_seconds_;
  for (const auto& [id, rj] : sched_->running()) {
    const JobRecord* r = find(id);
    if (r && now > r->admit_ns)
      out[r->job.namespace_] += static_cast<double>(job_gpu_milli(r->job, *config_)) / 1000.0 *
                                static_cast<double>(now - r->admit_ns) / 1e9;
  }
  return out;
}

// Nodes: readiness, GPUs, allocation and the agents' NVML samples.
void ServerState::write_node_metrics(PromWriter& w) const {
  const auto& cfg = *config_;
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
  // The node pools (docs/autoscaling.md).
  const auto& pools = pools_.pools();
  if (pools.empty()) return;
  w.family("sluice_pool_nodes", "gauge",
           "A node pool's nodes by state: creating, joining, ready, leaving, deleting.");
  for (size_t p = 0; p < pools.size(); ++p)
    for (const auto& [state, count] : pools_.count_phases(p))
      w.sample("sluice_pool_nodes", {{"pool", pools[p].name}, {"state", state}}, count);
  w.family("sluice_provisioner_calls_total", "counter",
           "Calls of a node pool's provisioner, by operation (create, delete) and result (ok, "
           "failed, timeout).");
  for (const auto& [key, count] : pools_.calls_total())
    w.sample("sluice_provisioner_calls_total",
             {{"pool", std::get<0>(key)}, {"op", std::get<1>(key)}, {"result", std::get<2>(key)}},
             static_cast<double>(count));
}

}  // namespace sluice::server
