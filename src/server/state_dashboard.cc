// The web dashboard's samples (docs/dashboard.md): what its charts draw, at one instant, from
// the same numbers as /metrics (state_metrics.cc). DashboardHistory keeps them over time.
#include <algorithm>
#include <cmath>

#include "server/job_codec.h"
#include "server/state.h"

namespace sluice::server {

using nlohmann::json;

namespace {

std::string class_key(const std::string& priority_class) {
  return priority_class.empty() ? "none" : priority_class;
}

// The exact q-quantile of a few values (nearest rank); null when there are none.
json quantile(std::vector<double> v, double q) {
  if (v.empty()) return nullptr;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

// GPUs (not milli-GPUs) of `q`'s quota over every flavor: used, nominal, borrowed.
json queue_gpus(const ClusterQueue& cq, QueueId q, const QuotaTree& quota) {
  int64_t used = 0, nominal = 0, borrowed = 0;
  for (const auto& rg : cq.resource_groups)
    for (const auto& fq : rg.flavors)
      for (const auto& rq : fq.resources)
        if (rq.resource == kGpu) {
          used += quota.usage(q, fq.flavor, kGpu);
          nominal += rq.nominal;
          borrowed += quota.borrowed(q, fq.flavor, kGpu);
        }
  return {{"gpu_used", static_cast<double>(used) / 1000.0},
          {"gpu_nominal", static_cast<double>(nominal) / 1000.0},
          {"gpu_borrowed", static_cast<double>(borrowed) / 1000.0}};
}

// Per node: GPUs, allocated (fractions count), mean utilisation of the sampled GPUs.
json nodes_sample(const json& view) {
  json nodes = json::object();
  for (const auto& n : view["nodes"]) {
    double alloc = 0, util = 0;
    int sampled = 0;
    for (const auto& g : n["gpus"]) {
      alloc += g["allocated_milli"].get<double>() / 1000.0;
      if (g["utilization_pct"].is_number()) {
        util += g["utilization_pct"].get<double>();
        ++sampled;
      }
    }
    nodes[n["name"].get<std::string>()] = {
        // Ready for work: up and not held by an admin (cordoned, draining or drained; "hold").
        {"ready", n["ready"].get<bool>() && n["hold"].is_null()},
        {"hold", n["hold"]},
        {"gpus", n["gpu_count"]},
        {"gpu_allocated", alloc},
        {"gpu_util_pct", sampled ? json(util / sampled) : json(nullptr)}};
  }
  return nodes;
}

}  // namespace

DashboardSample ServerState::dashboard_sample(TimeNs now) const {
  const auto& cfg = *config_;
  DashboardSample s;
  s.t = unix_s(now);
  json& d = s.data;
  // 1. Per priority class: pending depth, running, and how long the pending ones have waited.
  json classes = json::object();
  std::map<std::string, std::vector<double>> waiting;
  for (const auto& pc : cfg.priority_classes) waiting[pc.name];
  std::map<std::string, int64_t> running;
  sched_->for_each_pending([&](const Scheduler::PendingJob& p) {
    const JobRecord* r = find(p.job.id);
    waiting[class_key(p.job.exec().priority_class)].push_back(r ? unix_s(now - r->queued_ns) : 0.0);
  });
  for (const auto& [id, rj] : sched_->running())
    if (const JobRecord* r = find(id)) running[class_key(r->job.exec().priority_class)]++;
  for (const auto& [pc, w] : waiting)
    classes[pc] = {
        {"pending", w.size()}, {"running", running[pc]}, {"pending_wait_p99_s", quantile(w, 0.99)}};
  // 2. Admission waits per class, cumulative (the ring takes the recent window's p99).
  for (const auto& [labels, h] : metrics_.admission_wait) {
    std::string pc;
    for (const auto& [k, v] : labels)
      if (k == "priority_class") pc = class_key(v);
    auto& c = s.wait_counts[pc];
    c.resize(h.bounds().size() + 1, 0);
    uint64_t finite = 0;
    for (size_t i = 0; i < h.counts().size(); ++i) {
      c[i] += h.counts()[i];
      finite += h.counts()[i];
    }
    c.back() += h.count() - finite;  // above the last bound: +Inf
    if (!classes.contains(pc)) classes[pc] = {{"pending", 0}, {"running", running[pc]}};
  }
  d["classes"] = std::move(classes);
  // 3. Nodes: GPUs, allocated (fractions count), mean utilisation of the sampled GPUs.
  const json view = nodes_view(now);  // named: a loop over a temporary's member would dangle
  json nodes = nodes_sample(view);
  d["nodes"] = std::move(nodes);
  // 4. ClusterQueues: quota in use against nominal, borrowing, fairness.
  json queues = json::object();
  std::vector<int64_t> q_pending(cfg.cluster_queues.size(), 0), q_running(q_pending);
  sched_->for_each_pending(
      [&](const Scheduler::PendingJob& p) { q_pending[static_cast<size_t>(p.queue)]++; });
  for (const auto& [id, rj] : sched_->running())
    q_running[static_cast<size_t>(rj.admission.queue)]++;
  for (size_t qi = 0; qi < cfg.cluster_queues.size(); ++qi) {
    const auto q = static_cast<QueueId>(qi);
    json v = queue_gpus(cfg.cluster_queues[qi], q, sched_->quota());
    v["pending"] = q_pending[qi];
    v["running"] = q_running[qi];
    v["fairness_debt"] = sched_->fairness_debt(q);
    v["drf_share"] = sched_->drf_share(q);
    queues[cfg.cluster_queues[qi].name] = std::move(v);
  }
  d["queues"] = std::move(queues);
  // 5. Namespaces: GPU-hours allocated since the start, and against their budget.
  json namespaces = json::object();
  for (const auto& [ns, secs] : namespace_gpu_seconds(now))
    namespaces[ns] = {{"gpu_hours", secs / 3600.0}};
  for (const auto& b : sched_->budget_usage(now)) {
    json& v = namespaces[b.namespace_];
    if (!v.contains("gpu_hours")) v["gpu_hours"] = 0.0;
    v["budget_gpu_hours"] = static_cast<double>(b.budget_milli_gpu_hours) / 1000.0;
    v["budget_used_gpu_hours"] = static_cast<double>(b.used_milli_gpu_hours) / 1000.0;
  }
  d["namespaces"] = std::move(namespaces);
  // 6. Preemptions since the start (the dashboard draws the rate between samples).
  double preemptions = 0;
  for (const auto& [l, v] : metrics_.preemptions) preemptions += v;
  d["preemptions_total"] = preemptions;
  return s;
}

}  // namespace sluice::server
