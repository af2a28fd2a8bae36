#include "core/cycle/scheduler.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>

namespace sluice {

namespace {

// A hash of everything that decides whether a job can be placed (not who it is).
uint64_t shape_hash(const Job& job) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const auto& ps : job.pod_sets) {
    mix(static_cast<uint64_t>(ps.count));
    mix(static_cast<uint64_t>(ps.gpus));
    mix(static_cast<uint64_t>(ps.gpu_milli));
    for (int r = 0; r < kMaxResources; ++r) mix(static_cast<uint64_t>(ps.requests[r]));
  }
  for (const auto& m : job.allowed_models) mix(std::hash<std::string>{}(m));
  mix(static_cast<uint64_t>(job.topology.level + 7) * 2 + job.topology.required);
  mix(static_cast<uint64_t>(job.gpu_locality));
  return h;
}

bool same_shape(const Job& a, const Job& b) {
  if (a.pod_sets.size() != b.pod_sets.size() || a.allowed_models != b.allowed_models ||
      a.topology.level != b.topology.level || a.topology.required != b.topology.required ||
      a.gpu_locality != b.gpu_locality)
    return false;
  for (size_t i = 0; i < a.pod_sets.size(); ++i) {
    const auto& x = a.pod_sets[i];
    const auto& y = b.pod_sets[i];
    if (x.count != y.count || x.gpus != y.gpus || x.gpu_milli != y.gpu_milli ||
        !(x.requests == y.requests))
      return false;
  }
  return true;
}

bool quota_optional(ResourceId r) {
  // CPU and memory a queue does not cover are not quota-managed; GPUs, MIG slices and other
  // extended resources must be covered by the queue (as in Kueue).
  return r == kCpu || r == kMemory;
}

bool uses_any(const Placement& p, const std::vector<NodeId>& sorted_nodes) {
  for (const auto& pod : p.pods)
    if (std::binary_search(sorted_nodes.begin(), sorted_nodes.end(), pod.node)) return true;
  return false;
}

}  // namespace

// Scratch state of one evaluation, reused across jobs of a cycle.
struct Scheduler::Attempt {
  Admission admission;
  PendingReason reason;
  // Placement failures memoised within a cycle: capacity only shrinks during a cycle, so a
  // shape that did not fit on a node set still does not fit.
  struct Memo {
    const Job* job;
    std::vector<FlavorId> flavors;
    PlaceFailure failure;
  };
  std::unordered_map<uint64_t, std::vector<Memo>> memo;
  NodeSet scratch;
  std::vector<FlavorId> failed_flavors;  // flavors of the first placement failure
  bool evaluated = false;
};

Scheduler::Scheduler(std::shared_ptr<const Config> config)
    : config_(std::move(config)),
      priority_scale_(priority_scale(*config_)),
      quota_(*config_),
      alloc_(config_->cluster),
      empty_alloc_(config_->cluster),
      placer_(config_->cluster, config_->policy.gpu_scoring,
              PlacerOptions{.resources = &config_->resources}),
      all_nodes_(select_nodes(config_->cluster, Labels{})) {
  const auto nq = config_->cluster_queues.size();
  for (const auto& f : config_->flavors)
    flavor_nodes_.push_back(select_nodes(config_->cluster, f.node_labels));
  entitlement_.assign(nq, std::vector<int64_t>(kMaxResources, 0));
  for (size_t q = 0; q < nq; ++q)
    for (const auto& g : config_->cluster_queues[q].resource_groups)
      for (const auto& fq : g.flavors)
        for (const auto& rq : fq.resources) entitlement_[q][rq.resource] += rq.nominal;
  by_key_.resize(nq);
  by_submit_.resize(nq);
  shape_counts_.resize(nq);
  not_by_shape_.assign(nq, 0);
  debt_.resize(nq);
  pending_per_local_queue_.assign(config_->local_queues.size(), 0);
  victims_by_queue_.resize(nq);
  budget_state_.resize(config_->budgets.size());
  for (size_t b = 0; b < config_->budgets.size(); ++b)
    budget_of_namespace_.emplace(config_->budgets[b].namespace_, static_cast<int32_t>(b));
  int32_t lowest = 0;
  for (const auto& pc : config_->priority_classes) lowest = std::min(lowest, pc.value);
  best_effort_priority_ = lowest == INT32_MIN ? lowest : lowest - 1;
}

SubmitResult Scheduler::resolve(const Job& job) const {
  SubmitResult res;
  auto lq = config_->find_local_queue(job.namespace_, job.queue);
  if (!lq) {
    res.status = SubmitStatus::kUnknownQueue;
    res.message = "no LocalQueue \"" + job.queue + "\" in namespace \"" + job.namespace_ + "\"";
    return res;
  }
  res.queue = config_->local_queues[*lq].cluster_queue;
  const ClusterQueue& cq = config_->cluster_queues[res.queue];
  if (!selects_namespace(cq.namespace_selector, job.namespace_)) {
    res.status = SubmitStatus::kNotSelected;
    res.message = "LocalQueue \"" + job.queue + "\" leads to ClusterQueue \"" + cq.name +
                  "\", whose namespaceSelector does not select namespace \"" + job.namespace_ +
                  "\"";
    return res;
  }
  if (job.pod_sets.empty() || job.pod_count() <= 0) {
    res.status = SubmitStatus::kInvalid;
    res.message = "job has no pods";
    return res;
  }
  for (const auto& ps : job.pod_sets) {
    for (int r = 0; r < kMaxResources; ++r)
      if (ps.requests[r] < 0) {
        res.status = SubmitStatus::kInvalid;
        res.message = "pod set \"" + ps.name + "\": negative request for " +
                      config_->resources.name(static_cast<ResourceId>(r));
        return res;
      }
  }
  return res;
}

SubmitResult Scheduler::submit(Job job) {
  SubmitResult res = resolve(job);
  if (res.status != SubmitStatus::kAccepted) return res;
  if (pending_.count(job.id) || running_.count(job.id)) {
    res.status = SubmitStatus::kDuplicate;
    res.message = "job id " + std::to_string(job.id) + " already exists";
    return res;
  }
  const auto lq = *config_->find_local_queue(job.namespace_, job.queue);
  const auto& lqc = config_->local_queues[lq];
  const auto& cq = config_->cluster_queues[res.queue];
  auto full = [&](int32_t cap, size_t count, const std::string& what) {
    if (cap <= 0 || count < static_cast<size_t>(cap)) return false;
    res.status = SubmitStatus::kPendingCap;
    res.message = what + " has " + std::to_string(count) + " pending jobs (cap " +
                  std::to_string(cap) + "); retry later";
    return true;
  };
  if (full(lqc.max_pending, static_cast<size_t>(pending_per_local_queue_[lq]),
           "LocalQueue " + lqc.namespace_ + "/" + lqc.name) ||
      full(cq.max_pending, by_key_[res.queue].size(), "ClusterQueue " + cq.name) ||
      full(config_->policy.max_pending_total, pending_.size(), "the cluster"))
    return res;
  PendingJob p{std::move(job), res.queue, 0};
  p.key = queue_key(p.job, config_->policy, priority_scale_);
  new_jobs_.push_back({++submissions_, p.job.id});
  insert_pending(std::move(p));
  refresh_workload();
  return res;
}

void Scheduler::insert_pending(PendingJob p) {
  const JobId id = p.job.id;
  if (is_interactive(p.job, p.queue))
    interactive_deadlines_.insert({interactive_deadline(p.job), id});
  if (!budget_of_namespace_.empty()) {
    auto b = budget_of_namespace_.find(p.job.namespace_);
    p.budget = b == budget_of_namespace_.end() ? -1 : b->second;
  }
  // The times its fallback tier opens something: one per later flavor, the first also its
  // shapes (bounded: at most kMaxSteps per job).
  const Tier t = tier_of(p.job, p.queue, p.job.submit_ns);
  if (t.after_ns > 0) {
    constexpr int64_t kMaxSteps = 64;
    int64_t steps = p.job.fallback.shapes.empty() ? 0 : 1;
    for (const auto& g : config_->cluster_queues[p.queue].resource_groups)
      steps = std::max<int64_t>(steps, static_cast<int64_t>(g.flavors.size()) - t.preferred);
    for (int64_t k = 1; k <= std::min(steps, kMaxSteps); ++k)
      fallback_opens_.insert({p.job.submit_ns + k * t.after_ns, id});
  }
  p.shape = intern_shape(p.job);
  p.by_shape =
      t.after_ns == 0 && p.job.fallback.shapes.empty() &&
      !(p.budget >= 0 && config_->cluster_queues[p.queue].over_budget == OverBudgetPolicy::kReject);
  if (p.by_shape)
    ++shape_counts_[p.queue][p.shape];
  else
    ++not_by_shape_[p.queue];
  if (auto lq = config_->find_local_queue(p.job.namespace_, p.job.queue))
    ++pending_per_local_queue_[*lq];
  const PendingJob& in = pending_.emplace(id, std::move(p)).first->second;
  by_key_[in.queue].insert({-in.key, in.job.submit_ns, id, &in});
  by_submit_[in.queue].insert({in.job.submit_ns, id});
}

uint64_t Scheduler::intern_shape(const Job& job) {
  auto& bucket = shapes_[shape_hash(job)];
  for (auto& e : bucket)
    if (same_shape(e.proto, job)) {
      ++e.refs;
      return e.id;
    }
  ShapeRef e;
  e.proto.pod_sets = job.pod_sets;
  e.proto.allowed_models = job.allowed_models;
  e.proto.topology = job.topology;
  e.proto.gpu_locality = job.gpu_locality;
  e.id = next_shape_++;
  e.refs = 1;
  bucket.push_back(std::move(e));
  return bucket.back().id;
}

void Scheduler::release_shape(const Job& job, uint64_t id) {
  auto it = shapes_.find(shape_hash(job));
  if (it == shapes_.end()) return;
  auto& bucket = it->second;
  for (size_t i = 0; i < bucket.size(); ++i)
    if (bucket[i].id == id && --bucket[i].refs == 0) {
      bucket.erase(bucket.begin() + static_cast<std::ptrdiff_t>(i));
      if (bucket.empty()) shapes_.erase(it);
      return;
    }
}

void Scheduler::erase_pending(JobId id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  const auto& p = it->second;
  interactive_deadlines_.erase({interactive_deadline(p.job), id});
  const Tier t = tier_of(p.job, p.queue, p.job.submit_ns);
  if (t.after_ns > 0)
    for (int64_t k = 1; k <= 64; ++k) fallback_opens_.erase({p.job.submit_ns + k * t.after_ns, id});
  by_key_[p.queue].erase({-p.key, p.job.submit_ns, id, nullptr});
  if (!p.by_shape) {
    --not_by_shape_[p.queue];
  } else if (auto c = shape_counts_[p.queue].find(p.shape); --c->second == 0) {
    shape_counts_[p.queue].erase(c);
  }
  release_shape(p.job, p.shape);
  by_submit_[p.queue].erase({p.job.submit_ns, id});
  if (auto lq = config_->find_local_queue(p.job.namespace_, p.job.queue))
    --pending_per_local_queue_[*lq];
  pending_.erase(it);
}

void Scheduler::release_running(const RunningJob& r) {
  release_in(r, quota_, alloc_);
  running_removed(r);
}

void Scheduler::running_added(const RunningJob& r) {
  ends_.emplace(std::pair{r.start_ns + walltime(r.job, r.admission.queue), r.job.id}, &r);
  const auto& vcq = config_->cluster_queues[r.admission.queue];
  if ((r.admission.best_effort || (r.job.preemptible && vcq.preemptible)) &&
      preemption_count(r.job.id) < config_->policy.max_preemptions_per_job) {
    VictimRec v;
    v.id = r.job.id;
    v.start_ns = r.start_ns;
    v.checkpoint_ns = r.checkpoint_ns;
    v.submit_ns = r.job.submit_ns;
    for (const auto& ps : r.job.pod_sets) v.gpu_milli += ps.requests[kGpu] * ps.count;
    v.priority = r.job.priority;
    if (r.admission.placement.pods.size() == 1) {
      v.node = r.admission.placement.pods[0].node;
      for (const auto& g : r.admission.placement.pods[0].gpus) v.node_gpu_milli += g.milli;
    }
    v.r = &r;
    auto& vs = victims_by_queue_[r.admission.queue];
    victim_slot_[v.id] = vs.size();
    vs.push_back(v);
    if (vcq.min_runtime_ns > 0) protected_until_.insert({r.start_ns + vcq.min_runtime_ns, v.id});
  }
  if (auto b = budget_of_namespace_.find(r.job.namespace_); b != budget_of_namespace_.end())
    budget_state_[b->second].rate += budget_rate(b->second, r.job, r.admission.placement);
}

void Scheduler::running_removed(const RunningJob& r) {
  ends_.erase({r.start_ns + walltime(r.job, r.admission.queue), r.job.id});
  if (auto it = victim_slot_.find(r.job.id); it != victim_slot_.end()) {
    auto& vs = victims_by_queue_[r.admission.queue];
    if (it->second + 1 != vs.size()) {  // move the last one into the hole
      vs[it->second] = vs.back();
      victim_slot_[vs[it->second].id] = it->second;
    }
    vs.pop_back();
    victim_slot_.erase(it);
    if (const TimeNs m = config_->cluster_queues[r.admission.queue].min_runtime_ns; m > 0)
      protected_until_.erase({r.start_ns + m, r.job.id});
  }
  if (auto b = budget_of_namespace_.find(r.job.namespace_); b != budget_of_namespace_.end())
    budget_state_[b->second].rate -= budget_rate(b->second, r.job, r.admission.placement);
}

Job Scheduler::requested_job(RunningJob&& r) {
  Job job = std::move(r.job);
  if (!r.requested_pod_sets.empty()) job.pod_sets = std::move(r.requested_pod_sets);
  if (r.admission.best_effort) {
    job.priority = r.requested_priority;
    job.preemptible = r.requested_preemptible;
  }
  return job;
}

TimeNs Scheduler::period_start(const Budget& b, TimeNs t) const {
  const TimeNs period = std::max<TimeNs>(1, b.period_ns);
  const TimeNs d = t - b.anchor_ns;
  TimeNs k = d / period;
  if (d % period < 0) --k;  // floor, also before the anchor
  return b.anchor_ns + k * period;
}

Scheduler::Int128 Scheduler::budget_used(int32_t b, TimeNs now) const {
  const BudgetState& s = budget_state_[static_cast<size_t>(b)];
  if (!s.started || now <= s.at) return s.used;
  // The rate was constant since `at`: a period boundary in between restarts the count there.
  const TimeNs p = period_start(config_->budgets[static_cast<size_t>(b)], now);
  if (s.at < p) return s.rate * (now - p);
  return s.used + s.rate * (now - s.at);
}

Scheduler::Int128 Scheduler::budget_rate(int32_t b, const Job&, const Placement& placement) const {
  // Weight-milli x GPU-milli per ns: each GPU share weighted by its model.
  const Budget& budget = config_->budgets[static_cast<size_t>(b)];
  Int128 rate = 0;
  for (const auto& pod : placement.pods) {
    const Node& node = config_->cluster.nodes[static_cast<size_t>(pod.node)];
    for (const auto& g : pod.gpus)
      rate += static_cast<Int128>(g.milli) *
              budget.weight_milli(node.gpus[static_cast<size_t>(g.gpu)].model);
  }
  return rate;
}

Scheduler::Int128 Scheduler::budget_limit(const Budget& b) {
  // gpu_hours_milli / 1000 GPU-hours x 1000 GPU-milli x 1000 weight-milli x 3600e9 ns.
  return static_cast<Int128>(b.gpu_hours_milli) * 1000 * 3600 * kNsPerSec;
}

void Scheduler::advance_budgets(TimeNs now) {
  for (size_t b = 0; b < budget_state_.size(); ++b) {
    BudgetState& s = budget_state_[b];
    s.used = budget_used(static_cast<int32_t>(b), now);
    if (!s.started || now > s.at) s.at = now;
    s.started = true;
  }
}

std::vector<Scheduler::BudgetUsage> Scheduler::budget_usage(TimeNs now) const {
  std::vector<BudgetUsage> out;
  constexpr Int128 kUnitsPerMilliGpuHour = static_cast<Int128>(3600) * kNsPerSec * 1000;
  for (size_t b = 0; b < config_->budgets.size(); ++b) {
    const Budget& budget = config_->budgets[b];
    BudgetUsage u;
    u.namespace_ = budget.namespace_;
    u.used_milli_gpu_hours =
        static_cast<int64_t>(budget_used(static_cast<int32_t>(b), now) / kUnitsPerMilliGpuHour);
    u.budget_milli_gpu_hours = budget.gpu_hours_milli;
    u.period_start_ns = period_start(budget, now);
    u.period_end_ns = u.period_start_ns + budget.period_ns;
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<Scheduler::BudgetSnapshot> Scheduler::budget_snapshot(TimeNs now) const {
  std::vector<BudgetSnapshot> out;
  for (size_t b = 0; b < config_->budgets.size(); ++b) {
    Int128 v = budget_used(static_cast<int32_t>(b), now);
    std::string digits;
    do {
      digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
      v /= 10;
    } while (v > 0);
    out.push_back({config_->budgets[b].namespace_, now, std::move(digits)});
  }
  return out;
}

void Scheduler::restore_budgets(const std::vector<BudgetSnapshot>& snapshot, TimeNs now) {
  for (const auto& snap : snapshot) {
    auto it = budget_of_namespace_.find(snap.namespace_);
    // (36 digits stay well inside __int128, whose maximum has 39.)
    if (it == budget_of_namespace_.end() || snap.used.empty() || snap.used.size() > 36 ||
        snap.at_ns > now)
      continue;
    const Budget& budget = config_->budgets[static_cast<size_t>(it->second)];
    if (period_start(budget, snap.at_ns) != period_start(budget, now)) continue;
    Int128 used = 0;
    bool ok = true;
    for (char c : snap.used) {
      if (c < '0' || c > '9') {
        ok = false;
        break;
      }
      used = used * 10 + (c - '0');
    }
    if (!ok) continue;
    BudgetState& st = budget_state_[static_cast<size_t>(it->second)];
    st.used = used;
    st.at = snap.at_ns;
    st.started = true;
  }
}

std::optional<Scheduler::BudgetUsage> Scheduler::budget_usage(const std::string& ns,
                                                              TimeNs now) const {
  auto it = budget_of_namespace_.find(ns);
  if (it == budget_of_namespace_.end()) return std::nullopt;
  return budget_usage(now)[static_cast<size_t>(it->second)];
}

bool Scheduler::cancel(JobId id, TimeNs now) {
  if (pending_.count(id)) {
    erase_pending(id);
    preempt_count_.erase(id);
    mark_freed();  // it may have been a StrictFIFO head or a starving holder
    return true;
  }
  return finish(id, now);
}

bool Scheduler::finish(JobId id, TimeNs now) {
  auto it = running_.find(id);
  if (it == running_.end()) return false;
  advance_debt(now);
  advance_budgets(now);
  release_running(it->second);
  running_.erase(it);
  preempt_count_.erase(id);
  mark_freed();
  return true;
}

bool Scheduler::requeue(JobId id, TimeNs now) {
  auto it = running_.find(id);
  if (it == running_.end()) return false;
  advance_debt(now);
  advance_budgets(now);
  release_running(it->second);
  const QueueId q = it->second.admission.queue;
  PendingJob p{requested_job(std::move(it->second)), q, 0};
  running_.erase(it);
  p.key = queue_key(p.job, config_->policy, priority_scale_);
  insert_pending(std::move(p));
  mark_freed();
  return true;
}

bool Scheduler::report_checkpoint(JobId id, TimeNs at) {
  auto it = running_.find(id);
  if (it == running_.end()) return false;
  it->second.checkpoint_ns = std::max(it->second.checkpoint_ns, at);
  if (auto v = victim_slot_.find(id); v != victim_slot_.end()) {
    victims_by_queue_[it->second.admission.queue][v->second].checkpoint_ns =
        it->second.checkpoint_ns;
    preempt_stale_ = true;  // the victims' cost order changed
  }
  return true;
}

bool Scheduler::restore_running(Job job, const Admission& admission, TimeNs start_ns,
                                TimeNs checkpoint_ns, int32_t preemptions, std::string* why) {
  auto fail = [&](std::string m) {
    if (why) *why = "job " + std::to_string(job.id) + ": " + std::move(m);
    return false;
  };
  SubmitResult res = resolve(job);
  if (res.status != SubmitStatus::kAccepted) return fail(res.message);
  if (pending_.count(job.id) || running_.count(job.id)) return fail("id already exists");
  if (res.queue != admission.queue)
    return fail("was admitted by ClusterQueue #" + std::to_string(admission.queue) +
                ", its LocalQueue now points at " + config_->cluster_queues[res.queue].name);
  // 0. It runs as it was admitted: with its fallback shape, as best-effort work.
  std::vector<PodSet> requested_pod_sets;
  if (admission.shape >= 0) {
    if (static_cast<size_t>(admission.shape) >= job.fallback.shapes.size() ||
        job.pod_sets.size() != 1)
      return fail("was admitted with fallback shape #" + std::to_string(admission.shape + 1) +
                  ", which the job does not declare");
    requested_pod_sets = job.pod_sets;
    job = reshaped(job, job.fallback.shapes[static_cast<size_t>(admission.shape)]);
  }
  // 1. Every pod's node and devices exist and are free enough (checked on integers, so the
  //    commit below cannot push any free count negative).
  const auto& nodes = config_->cluster.nodes;
  size_t expected_pods = 0;
  for (const auto& ps : job.pod_sets) expected_pods += static_cast<size_t>(ps.count);
  if (admission.placement.pods.size() != expected_pods)
    return fail("placement has " + std::to_string(admission.placement.pods.size()) +
                " pods, the job " + std::to_string(expected_pods));
  ClusterAlloc probe = alloc_;
  for (const auto& pp : admission.placement.pods) {
    if (pp.node < 0 || static_cast<size_t>(pp.node) >= nodes.size())
      return fail("placement names node #" + std::to_string(pp.node) + ", which does not exist");
    if (pp.pod_set < 0 || static_cast<size_t>(pp.pod_set) >= job.pod_sets.size())
      return fail("placement names a pod set that does not exist");
    const auto& ps = job.pod_sets[static_cast<size_t>(pp.pod_set)];
    const auto& node = nodes[static_cast<size_t>(pp.node)];
    if (probe.cpu_free_milli(pp.node) < ps.requests[kCpu] ||
        probe.memory_free_mib(pp.node) < ps.requests[kMemory])
      return fail("node " + node.name + " has too little CPU or memory free");
    for (const auto& g : pp.gpus) {
      if (g.gpu < 0 || static_cast<size_t>(g.gpu) >= node.gpus.size())
        return fail("node " + node.name + " has no GPU " + std::to_string(g.gpu));
      const auto& gpu = node.gpus[static_cast<size_t>(g.gpu)];
      if (g.mig_slice >= 0) {
        if (static_cast<size_t>(g.mig_slice) >= gpu.mig.size() ||
            probe.mig_slice_used(pp.node, g.gpu, g.mig_slice))
          return fail("MIG slice " + std::to_string(g.mig_slice) + " of GPU " +
                      std::to_string(g.gpu) + " on " + node.name + " is missing or in use");
      } else if (probe.gpu_is_mig(pp.node, g.gpu) ||
                 probe.gpu_free_milli(pp.node, g.gpu) < g.milli) {
        return fail("GPU " + std::to_string(g.gpu) + " on " + node.name + " is not free");
      }
    }
    Job one = job;  // commit one pod at a time so two pods on one GPU are caught too
    Placement single{{pp}};
    probe.commit(one, single);
  }
  // 2. Take it.
  RunningJob r{std::move(job), admission, start_ns, std::max(start_ns, checkpoint_ns)};
  r.requested_pod_sets = std::move(requested_pod_sets);
  if (admission.best_effort) {
    r.requested_priority = r.job.priority;
    r.requested_preemptible = r.job.preemptible;
    r.job.priority = best_effort_priority_;
    r.job.preemptible = true;
  }
  commit_in(r, quota_, alloc_);
  if (preemptions > 0) preempt_count_[r.job.id] = preemptions;
  // Its GPU time since it started counts against its namespace's budget (this period only).
  if (auto b = budget_of_namespace_.find(r.job.namespace_); b != budget_of_namespace_.end()) {
    BudgetState& st = budget_state_[static_cast<size_t>(b->second)];
    const Int128 rate = budget_rate(b->second, r.job, r.admission.placement);
    if (!st.started) {
      st.at = start_ns;
      st.started = true;
    } else if (start_ns < st.at) {
      const TimeNs from =
          std::max(start_ns, period_start(config_->budgets[static_cast<size_t>(b->second)], st.at));
      if (from < st.at) st.used += rate * (st.at - from);
    } else {
      st.used = budget_used(b->second, start_ns);
      st.at = start_ns;
    }
  }
  const JobId id = r.job.id;
  running_added(running_.emplace(id, std::move(r)).first->second);
  preempt_stale_ = true;  // a new possible victim
  refresh_workload();
  return true;
}

int32_t Scheduler::preemption_count(JobId id) const {
  auto it = preempt_count_.find(id);
  return it == preempt_count_.end() ? 0 : it->second;
}

void Scheduler::release_in(const RunningJob& r, QuotaTree& quota, ClusterAlloc& alloc) const {
  alloc.release(r.job, r.admission.placement);
  for (const auto& u : r.admission.usage)
    quota.add_usage(r.admission.queue, u.flavor, u.resource, -u.amount);
}

void Scheduler::commit_in(const RunningJob& r, QuotaTree& quota, ClusterAlloc& alloc) const {
  alloc.commit(r.job, r.admission.placement);
  for (const auto& u : r.admission.usage)
    quota.add_usage(r.admission.queue, u.flavor, u.resource, u.amount);
}

struct Scheduler::Candidate {
  const RunningJob* r = nullptr;
  const VictimRec* v = nullptr;  // what the search reads without touching *r
  PreemptReason why = PreemptReason::kWithinClusterQueue;
  int64_t lost = 0;            // GPU-milli-ns since the last checkpoint
  bool other_queue = false;    // another ClusterQueue of the cohort (reclaim / borrow)
  bool borrow_victim = false;  // allowed by borrowWithinCohort (lower priority, threshold)
};

namespace {

// A necessary condition for placing a one-pod-set job, kept up to date as victims are
// released and put back: how many of its pods the free GPUs of ready nodes could hold, at
// most. While it is below the pod count no placement exists, so the placer is not asked; this
// is what keeps a victim search over scattered small jobs cheap. Topology, NVLink, CPU and
// memory only make placement harder, so skipping on this bound never skips a fit.
class PodRoom {
 public:
  PodRoom(const Job& job, const ClusterAlloc& alloc) : alloc_(alloc) {
    if (job.pod_sets.size() != 1) return;
    const PodSet& ps = job.pod_sets.front();
    for (int r = 0; r < kMaxResources; ++r)
      if (r != kGpu && r != kCpu && r != kMemory && ps.requests[r] > 0) return;  // MIG etc.
    if (ps.gpus <= 0 || ps.gpu_milli <= 0 || (ps.gpus > 1 && ps.gpu_milli != 1000)) return;
    gpus_ = ps.gpus;
    milli_ = ps.gpu_milli;
    need_ = ps.count;
    per_node_.assign(static_cast<size_t>(alloc.node_count()), 0);
    for (NodeId n = 0; n < alloc.node_count(); ++n) {
      per_node_[static_cast<size_t>(n)] = room(n);
      total_ += per_node_[static_cast<size_t>(n)];
    }
    active_ = true;
  }
  // Recount node n after its free capacity changed.
  void touch(NodeId n) {
    if (!active_) return;
    auto& v = per_node_[static_cast<size_t>(n)];
    total_ -= v;
    v = room(n);
    total_ += v;
  }
  void touch(const Placement& p) {
    for (const auto& pod : p.pods) touch(pod.node);
  }
  bool may_fit() const { return !active_ || total_ >= need_; }
  // An upper bound of the same were GPU milli released on nodes at once (`each` yields
  // (node, milli) pairs), computed on the side (the state is not changed): per touched node, its
  // free GPU milli after the release, as if it could be pooled. Releasing less only leaves less
  // room, so when this fails no subset of the releases can make the job fit.
  template <class Each>
  bool may_fit_if_released(Each&& each) const {
    if (!active_) return true;
    std::vector<int64_t> extra(per_node_.size(), -1);
    std::vector<NodeId> touched;
    each([&](NodeId n, int64_t milli) {
      int64_t& e = extra[static_cast<size_t>(n)];
      if (e < 0) {
        e = 0;
        touched.push_back(n);
      }
      e += milli;
    });
    int64_t total = total_;
    for (NodeId n : touched) {
      total -= per_node_[static_cast<size_t>(n)];
      if (!alloc_.ready(n)) continue;
      int64_t free = extra[static_cast<size_t>(n)];
      for (int32_t f : alloc_.gpu_free_span(n)) free += f;
      total += gpus_ > 1 || milli_ == 1000 ? free / 1000 / gpus_ : free / milli_;
    }
    return total >= need_;
  }

 private:
  int64_t room(NodeId n) const {
    if (!alloc_.ready(n)) return 0;
    if (gpus_ > 1 || milli_ == 1000) return alloc_.whole_gpus_free(n) / gpus_;
    int64_t pods = 0;
    for (int32_t f : alloc_.gpu_free_span(n)) pods += f / milli_;
    return pods;
  }
  const ClusterAlloc& alloc_;
  bool active_ = false;
  int32_t gpus_ = 0, milli_ = 0;
  int64_t need_ = 0, total_ = 0;
  std::vector<int64_t> per_node_;
};

}  // namespace

bool Scheduler::may_end_within_nominal(const PendingJob& p, const std::vector<Candidate>& cands,
                                       const QuotaTree& quota) const {
  const QueueId q = p.queue;
  const auto& cq = config_->cluster_queues[q];
  const ResourceVec req = p.job.total_requests();
  for (int r = 0; r < kMaxResources; ++r) {
    if (req[r] <= 0) continue;
    const auto res = static_cast<ResourceId>(r);
    const int g = quota.group_of(q, res);
    if (g < 0) continue;
    // Some flavor of its group must hold the request within nominal once every same-queue
    // candidate is gone (each resource on its own: weaker than all of them on one flavor, so
    // still only a necessary condition).
    bool some = false;
    for (const auto& fq : cq.resource_groups[static_cast<size_t>(g)].flavors) {
      if (!quota.managed(q, fq.flavor, res)) {
        some = true;
        break;
      }
      int64_t used = quota.usage(q, fq.flavor, res);
      for (const auto& c : cands)
        if (!c.other_queue)
          for (const auto& u : c.r->admission.usage)
            if (u.flavor == fq.flavor && u.resource == res) used -= u.amount;
      if (used + req[r] <= quota.nominal(q, fq.flavor, res)) {
        some = true;
        break;
      }
    }
    if (!some) return false;
  }
  return true;
}

bool Scheduler::search_victims(const PendingJob& p, const Tier& tier, QuotaTree& quota,
                               ClusterAlloc& alloc, const std::vector<Candidate>& cands,
                               bool within_nominal, std::vector<size_t>* chosen,
                               Attempt& trial) const {
  // Evicts on the working state itself and undoes what it does not keep (release and commit
  // are exact inverses on integers): no copy of 5,000 nodes' state per attempt. Pass one takes
  // candidates in cost order; when the cheapest ones are scattered (their freed GPUs do not
  // add up on any node), pass two takes them node by node, the nodes that would free the most
  // GPUs first, so that capacity comes free where a pod can use it. The placer decides (gang
  // and topology constraints honoured); no memo: capacity grows here.
  constexpr size_t kMaxCandidates = 128;
  chosen->clear();
  // 0. Necessary conditions, checked on the packed records without touching the cluster
  // state: evicting every candidate at once must free enough GPUs, in all (free GPUs of ready
  // nodes plus the candidates') and per node (PodRoom's bound). When either fails, no subset
  // can succeed either: the search fails as it would after trying them all.
  int64_t gpu_need = 0, gpu_room = 0;
  for (const auto& ps : p.job.pod_sets) gpu_need += ps.requests[kGpu] * ps.count;
  if (gpu_need > 0) {
    for (const auto& c : cands) gpu_room += c.v->gpu_milli;
    if (gpu_room < gpu_need) gpu_room += alloc.total_gpu_milli_free();
    if (gpu_room < gpu_need) return false;
  }
  // (node, GPU milli) of every candidate's pods: from the packed record for one pod.
  auto each_release = [&](auto&& add) {
    for (const auto& c : cands) {
      if (c.v->node >= 0) {
        add(c.v->node, c.v->node_gpu_milli);
        continue;
      }
      for (const auto& pod : c.r->admission.placement.pods) {
        int64_t milli = 0;
        for (const auto& g : pod.gpus) milli += g.milli;
        add(pod.node, milli);
      }
    }
  };
  PodRoom room(p.job, alloc);
  if (!room.may_fit_if_released(each_release)) return false;
  bool fits = false;
  auto admit = [&]() {
    trial.memo.clear();
    return try_admit(p.job, p.queue, quota, alloc, trial, tier.open, tier.preferred) &&
           !(within_nominal && trial.admission.borrowing);
  };
  // A victim of another queue helps only while that queue still borrows (Kueue skips it once
  // earlier evictions brought the queue back within its nominal quota).
  auto still_borrowing = [&](const Candidate& c) {
    if (!c.other_queue) return true;
    const QueueId vq = c.r->admission.queue;
    for (const auto& u : c.r->admission.usage)
      if (quota.usage(vq, u.flavor, u.resource) > quota.nominal(vq, u.flavor, u.resource))
        return true;
    return false;
  };
  auto undo = [&]() {
    for (size_t k = chosen->size(); k-- > 0;) {
      commit_in(*cands[(*chosen)[k]].r, quota, alloc);
      room.touch(cands[(*chosen)[k]].r->admission.placement);
    }
    chosen->clear();
  };
  auto run_pass = [&](const std::vector<size_t>& seq) {
    for (size_t i = 0; i < seq.size() && !fits; ++i) {
      const Candidate& c = cands[seq[i]];
      if (!still_borrowing(c)) continue;
      release_in(*c.r, quota, alloc);
      room.touch(c.r->admission.placement);
      chosen->push_back(seq[i]);
      if (room.may_fit()) fits = admit();
    }
    if (!fits) undo();
  };
  // Cost order: lower priority, then least work lost, then most recently started, then id (a
  // total order). Only the passes' prefixes are ordered: most searches end at the necessary
  // conditions above or within a few candidates, so sorting every candidate is wasted.
  auto cheaper = [&](size_t a, size_t b) {
    const Candidate& x = cands[a];
    const Candidate& y = cands[b];
    if (x.v->priority != y.v->priority) return x.v->priority < y.v->priority;
    if (x.lost != y.lost) return x.lost < y.lost;
    if (x.v->start_ns != y.v->start_ns) return x.v->start_ns > y.v->start_ns;
    return x.v->id < y.v->id;
  };
  std::vector<size_t> order(cands.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto first = [](std::vector<size_t>& v, size_t n, auto&& less) {
    const auto end = v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size()));
    if (end != v.end()) std::nth_element(v.begin(), end, v.end(), less);  // (a total order:
    std::sort(v.begin(), end, less);  // the same prefix as a full sort)
    v.erase(end, v.end());
  };
  first(order, kMaxCandidates, cheaper);
  run_pass(order);
  if (!fits && cands.size() > 1) {
    // GPU milli a node would have free after all its candidates' evictions.
    std::vector<int64_t> gain(static_cast<size_t>(alloc.node_count()), -1);
    std::vector<NodeId> touched;
    auto add_gain = [&](NodeId node, int64_t milli) {
      auto& g = gain[static_cast<size_t>(node)];
      if (g < 0) {
        g = 0;
        touched.push_back(node);
        for (int k = 0; k < alloc.gpu_count(node); ++k) g += alloc.gpu_free_milli(node, k);
      }
      g += milli;
    };
    each_release(add_gain);
    std::vector<std::pair<int64_t, NodeId>> nodes;
    for (NodeId n : touched) nodes.push_back({-gain[static_cast<size_t>(n)], n});
    std::sort(nodes.begin(), nodes.end());
    std::vector<size_t> rank(static_cast<size_t>(alloc.node_count()), nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) rank[static_cast<size_t>(nodes[i].second)] = i;
    // Each candidate's best node rank, then cost order within a node.
    std::vector<size_t> first_node(cands.size());
    for (size_t i = 0; i < cands.size(); ++i) {
      size_t best = nodes.size();
      if (cands[i].v->node >= 0)
        best = rank[static_cast<size_t>(cands[i].v->node)];
      else
        for (const auto& pod : cands[i].r->admission.placement.pods)
          best = std::min(best, rank[static_cast<size_t>(pod.node)]);
      first_node[i] = best;
    }
    std::vector<size_t> by_node(cands.size());
    for (size_t i = 0; i < by_node.size(); ++i) by_node[i] = i;
    first(by_node, 2 * kMaxCandidates, [&](size_t a, size_t b) {
      return first_node[a] != first_node[b] ? first_node[a] < first_node[b] : cheaper(a, b);
    });
    run_pass(by_node);
  }
  if (!fits) return false;
  // Minimal set: put back every victim (most expensive first) the preemptor can do without.
  for (size_t k = chosen->size(); k-- > 0 && chosen->size() > 1;) {
    const RunningJob& r = *cands[(*chosen)[k]].r;
    commit_in(r, quota, alloc);
    room.touch(r.admission.placement);
    if (room.may_fit() && admit()) {
      chosen->erase(chosen->begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      release_in(r, quota, alloc);
      room.touch(r.admission.placement);
    }
  }
  if (admit()) return true;
  undo();  // cannot happen; be safe
  return false;
}

bool Scheduler::try_preempt(const PendingJob& p, const Tier& tier, QuotaTree& quota,
                            ClusterAlloc& alloc, TimeNs now, std::set<JobId>& evicted, Attempt& at,
                            std::vector<Preemption>& out) const {
  const QueueId q = p.queue;
  const auto& pc = config_->cluster_queues[q].preemption;
  const bool within = pc.within_cluster_queue != WithinQueuePolicy::kNever;
  const bool reclaim = pc.reclaim_within_cohort != ReclaimPolicy::kNever;
  const bool borrow = reclaim && pc.borrow_within_cohort != BorrowWithinCohortPolicy::kNever;
  if (!within && !reclaim) return false;

  // 1. Candidates: preemptible (or admitted as best-effort), past their minimum runtime, under
  // the preemption cap, and allowed by the preemptor's queue policy (Kueue's meanings). Only
  // the queues the preemptor may take from are scanned (running_by_queue_).
  std::vector<Candidate> cands;
  auto consider = [&](const VictimRec& v, const ClusterQueue& vcq, bool other) {
    // (Eligibility that is fixed while a job runs was checked when it was listed.)
    if (now - v.start_ns < vcq.min_runtime_ns) return;
    const bool lower = v.priority < p.job.priority;
    Candidate c;
    if (!other) {
      const bool newer_equal = v.priority == p.job.priority &&
                               std::tie(v.submit_ns, v.id) > std::tie(p.job.submit_ns, p.job.id);
      if (!lower && !(pc.within_cluster_queue == WithinQueuePolicy::kLowerOrNewerEqualPriority &&
                      newer_equal))
        return;
      c.why = PreemptReason::kWithinClusterQueue;
    } else {
      // Reclaim: LowerPriority takes only lower-priority work back, Any takes any.
      // borrowWithinCohort: strictly lower priority, and at most maxPriorityThreshold.
      c.borrow_victim = borrow && lower &&
                        (!pc.max_priority_threshold || v.priority <= *pc.max_priority_threshold);
      if (pc.reclaim_within_cohort == ReclaimPolicy::kLowerPriority && !lower && !c.borrow_victim)
        return;
      bool borrowing = false;  // only borrowed quota is taken
      const QueueId vq = v.r->admission.queue;
      for (const auto& u : v.r->admission.usage)
        if (quota.usage(vq, u.flavor, u.resource) > quota.nominal(vq, u.flavor, u.resource))
          borrowing = true;
      if (!borrowing) return;
      c.why = PreemptReason::kReclaimWithinCohort;
    }
    if (!evicted.empty() && evicted.count(v.id)) return;
    c.r = v.r;
    c.v = &v;
    c.other_queue = other;
    c.lost = v.gpu_milli * std::max<TimeNs>(0, now - v.checkpoint_ns);
    cands.push_back(c);
  };
  // Does queue vq use more than its nominal quota of anything (else none of its jobs is
  // borrowing and reclaim has nothing to take there)?
  auto over_nominal = [&](QueueId vq) {
    for (FlavorId f = 0; f < quota.num_flavors(); ++f)
      for (int res = 0; res < kMaxResources; ++res)
        if (quota.usage(vq, f, static_cast<ResourceId>(res)) >
            quota.nominal(vq, f, static_cast<ResourceId>(res)))
          return true;
    return false;
  };
  if (within) {
    cands.reserve(victims_by_queue_[q].size());
    for (const auto& v : victims_by_queue_[q]) consider(v, config_->cluster_queues[q], false);
  }
  // The other queues' jobs are needed by search (a), which runs only when evicting every
  // same-queue candidate could bring the preemptor within its nominal quota (checked on the
  // same-queue candidates alone), and by search (b).
  const bool within_nominal_possible = reclaim && may_end_within_nominal(p, cands, quota);
  if (within_nominal_possible || borrow) {
    const int root = quota.root(q);
    for (QueueId vq = 0; vq < static_cast<QueueId>(victims_by_queue_.size()); ++vq) {
      if (vq == q || vq >= quota.num_queues() || quota.root(vq) != root) continue;
      if (victims_by_queue_[vq].empty() || !over_nominal(vq)) continue;
      for (const auto& v : victims_by_queue_[vq]) consider(v, config_->cluster_queues[vq], true);
    }
  }
  if (cands.empty()) return false;
  // 2. Up to three searches (each walks its candidates cheapest first), as Kueue's classical
  // preemption: (a) when other queues' jobs are candidates: all candidates, the preemptor ending
  // within its nominal quota (taking back lent quota only for work that fits its own share); (b)
  // with borrowWithinCohort, same-queue candidates plus the other queues' jobs it allows, the
  // preemptor borrowing; (c) same-queue candidates only, borrowing allowed. (a) is skipped outright
  // when even evicting every same-queue candidate leaves the preemptor borrowing.
  Attempt trial;
  std::vector<size_t> chosen;
  bool ok = false;
  bool while_borrowing = false;
  const bool others =
      std::any_of(cands.begin(), cands.end(), [](const Candidate& c) { return c.other_queue; });
  if (others && within_nominal_possible) {
    ok = search_victims(p, tier, quota, alloc, cands, true, &chosen, trial);
  }
  size_t searched = 0;  // size of the last list searched with borrowing allowed (a subset)
  for (int round = 0; round < 2 && !ok; ++round) {
    if (round == 0 && !borrow) continue;
    std::vector<Candidate> subset;
    for (const auto& c : cands)
      if (!c.other_queue || (round == 0 && c.borrow_victim)) subset.push_back(c);
    if (subset.empty() || subset.size() == searched) continue;
    searched = subset.size();
    if (search_victims(p, tier, quota, alloc, subset, false, &chosen, trial)) {
      cands = std::move(subset);
      ok = true;
      while_borrowing = round == 0 && trial.admission.borrowing;
    }
  }
  if (!ok) return false;

  // 3. The evictions stay in the cycle's working state; the caller commits the admission.
  for (size_t i : chosen) {
    const auto& c = cands[i];
    evicted.insert(c.r->job.id);
    Preemption pr{c.r->job.id, p.job.id, c.why};
    pr.borrow_within_cohort = while_borrowing && c.other_queue;
    pr.grace_ns = c.r->job.checkpoint_grace_ns;
    pr.lost_gpu_milli_ns = c.lost;
    out.push_back(pr);
  }
  at.admission = std::move(trial.admission);
  at.memo.clear();  // capacity grew: earlier failures in this cycle may fit now
  return true;
}

Reservation Scheduler::reserve(const PendingJob& p, const std::vector<FlavorId>& flavors,
                               const ClusterAlloc& alloc,
                               const std::vector<Admission>& admitted_now, TimeNs now,
                               NodeSet& scratch) const {
  struct End {
    TimeNs at;
    JobId id;
    const Job* job;
    const Placement* placement;
  };
  // Jobs admitted in this cycle end `now` + walltime; they are merged, in (at, id) order, with
  // the running jobs' ends (ends_, already in that order) as far as the walk below asks.
  std::vector<End> now_ends;
  std::deque<Job> shaped;  // admitted now with a fallback shape: that is what they hold
  for (const auto& a : admitted_now) {
    const auto& pj = pending_.at(a.job);
    const Job* job = &pj.job;
    if (a.shape >= 0) {
      shaped.push_back(reshaped(pj.job, pj.job.fallback.shapes[static_cast<size_t>(a.shape)]));
      job = &shaped.back();
    }
    now_ends.push_back({now + walltime(pj.job, pj.queue), a.job, job, &a.placement});
  }
  auto earlier = [](const End& a, const End& b) {
    return std::tie(a.at, a.id) < std::tie(b.at, b.id);
  };
  std::sort(now_ends.begin(), now_ends.end(), earlier);
  std::vector<End> ends;  // the first ends in order, materialised on demand
  auto run_it = ends_.begin();
  size_t now_i = 0;
  auto materialise = [&](size_t k) {
    while (ends.size() < k) {
      if (run_it != ends_.end()) {
        const RunningJob& r = *run_it->second;
        End e{run_it->first.first, run_it->first.second, &r.job, &r.admission.placement};
        if (now_i == now_ends.size() || earlier(e, now_ends[now_i])) {
          ends.push_back(e);
          ++run_it;
          continue;
        }
      }
      ends.push_back(now_ends[now_i++]);
    }
  };
  const NodeSet& nodes = nodes_for(flavors, scratch);
  // Placement after the first k jobs ended; monotone in k. One working copy moves between k
  // values by releasing / re-committing jobs (exact inverses), and the placer is asked only
  // where the pod-room bound allows a fit: a linear walk while the bound fails (cheap), then
  // galloping probes, then a binary search between the last failure and the first fit.
  ClusterAlloc trial = alloc;
  PodRoom room(p.job, trial);
  size_t at = 0;  // ends released into `trial`
  auto move_to = [&](size_t k) {
    materialise(k);
    for (; at < k; ++at) {
      trial.release(*ends[at].job, *ends[at].placement);
      room.touch(*ends[at].placement);
    }
    while (at > k) {
      --at;
      trial.commit(*ends[at].job, *ends[at].placement);
      room.touch(*ends[at].placement);
    }
  };
  auto probe = [&](size_t k) -> std::optional<Placement> {
    move_to(k);
    if (!room.may_fit()) return std::nullopt;
    auto placed = placer_.place(p.job, nodes, trial);
    if (auto* pl = std::get_if<Placement>(&placed)) return std::move(*pl);
    return std::nullopt;
  };
  Reservation res;
  const size_t n = ends_.size() + now_ends.size();
  size_t lo = 0, hi = 0;  // probe(lo) fails (it failed now); probe(hi) fits once hi > 0
  std::optional<Placement> best;
  for (size_t k = 1, step = 1; k <= n;) {
    move_to(k);
    if (room.may_fit()) {
      if ((best = probe(k))) {
        hi = k;
        break;
      }
      lo = k;
      k = k + step > n && k < n ? n : k + step;
      step *= 2;
    } else {
      lo = k++;
    }
  }
  if (!best) return res;  // does not fit even when everything ends: nothing to reserve
  while (lo + 1 < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (auto pl = probe(mid)) {
      hi = mid;
      best = std::move(pl);
    } else {
      lo = mid;
    }
  }
  if (hi == 0) return res;  // fits now (cannot happen for a failed job; be safe)
  res.job = p.job.id;
  res.start_ns = std::max(now, ends[hi - 1].at);
  for (const auto& pod : best->pods) res.nodes.push_back(pod.node);
  std::sort(res.nodes.begin(), res.nodes.end());
  res.nodes.erase(std::unique(res.nodes.begin(), res.nodes.end()), res.nodes.end());
  return res;
}

void Scheduler::set_node_ready(NodeId node, bool ready) {
  alloc_.set_ready(node, ready);
  mark_freed();
}

void Scheduler::advance_debt(TimeNs now) {
  for (size_t q = 0; q < debt_.size(); ++q) {
    int64_t gpu = 0;
    for (FlavorId f = 0; f < quota_.num_flavors(); ++f)
      gpu += quota_.usage(static_cast<QueueId>(q), f, kGpu);
    debt_[q].advance(now, gpu, config_->policy.debt_half_life_ns);
  }
}

double Scheduler::fairness_debt(QueueId q) const {
  return debt_[q].normalized(entitlement_[q][kGpu], config_->policy.debt_half_life_ns);
}

double Scheduler::drf_share(QueueId q, const QuotaTree& quota) const {
  // Dominant share: max over resources of usage / (entitlement * weight). A queue with no
  // entitlement of a resource it uses (a pure borrower) counts as share 2.
  const double weight = std::max(1e-3, config_->cluster_queues[q].fair_weight);
  double share = 0;
  for (int r = 0; r < kMaxResources; ++r) {
    int64_t used = 0;
    for (FlavorId f = 0; f < quota.num_flavors(); ++f)
      if (quota.managed(q, f, static_cast<ResourceId>(r)))
        used += quota.usage(q, f, static_cast<ResourceId>(r));
    if (used <= 0) continue;
    const int64_t ent = entitlement_[q][r];
    const double s = ent > 0 ? static_cast<double>(used) / static_cast<double>(ent) : 2.0;
    share = std::max(share, s / weight);
  }
  return std::min(share, 4.0);
}

double Scheduler::score(JobId id, TimeNs now) const {
  auto it = pending_.find(id);
  if (it == pending_.end()) return 0;
  const auto& p = it->second;
  const auto& w = config_->policy.weights;
  return w.priority * p.job.priority / priority_scale_ + age_term(p.job, config_->policy, now) -
         w.drf * drf_share(p.queue) - w.debt * fairness_debt(p.queue);
}

const Scheduler::PendingJob* Scheduler::find_pending(JobId id) const {
  auto it = pending_.find(id);
  return it == pending_.end() ? nullptr : &it->second;
}

const Scheduler::RunningJob* Scheduler::find_running(JobId id) const {
  auto it = running_.find(id);
  return it == running_.end() ? nullptr : &it->second;
}

std::vector<JobId> Scheduler::pending_in_queue(QueueId q, TimeNs now) const {
  std::vector<JobId> out;
  const auto& policy = config_->policy;
  for (const auto& [submit, id] : by_submit_[q]) {
    if (!is_starving(pending_.at(id).job, policy, now)) break;
    out.push_back(id);
  }
  for (const auto& k : by_key_[q])
    if (!is_starving(k.job->job, policy, now)) out.push_back(k.id);
  return out;
}

const NodeSet& Scheduler::nodes_for(const std::vector<FlavorId>& flavors, NodeSet& scratch) const {
  const FlavorId* only = nullptr;
  bool several = false;
  for (const FlavorId& f : flavors) {
    if (f < 0 || config_->flavors[f].node_labels.empty()) continue;
    if (only && *only != f) several = true;
    only = &f;
  }
  if (!only) return all_nodes_;
  if (!several) return flavor_nodes_[*only];
  // Several labelled flavors (several resource groups): nodes must carry all their labels.
  Labels merged;
  for (FlavorId f : flavors)
    if (f >= 0)
      for (const auto& kv : config_->flavors[f].node_labels) merged.push_back(kv);
  std::sort(merged.begin(), merged.end());
  merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
  for (size_t i = 1; i < merged.size(); ++i)
    if (merged[i].first == merged[i - 1].first) merged.clear();  // conflicting: no node
  scratch = select_nodes(config_->cluster, merged);
  return scratch;
}

bool Scheduler::try_admit(const Job& job, QueueId q, const QuotaTree& quota,
                          const ClusterAlloc& alloc, Attempt& at, int32_t open,
                          int32_t preferred) const {
  const auto& cq = config_->cluster_queues[q];
  const ResourceVec req = job.total_requests();
  at.evaluated = true;
  at.reason = PendingReason{};
  at.reason.queue = q;

  // 1. Which resource groups the job touches; a resource the queue cannot grant fails for good.
  std::vector<int> groups;
  for (int r = 0; r < kMaxResources; ++r) {
    if (req[r] <= 0) continue;
    const int g = quota.group_of(q, static_cast<ResourceId>(r));
    if (g < 0) {
      if (quota_optional(static_cast<ResourceId>(r))) continue;
      at.reason.code = PendingCode::kNeverFitsQuota;
      at.reason.resource = static_cast<ResourceId>(r);
      at.reason.requested = req[r];
      return false;
    }
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  std::sort(groups.begin(), groups.end());

  // 2. Per group, the flavors (in the queue's order) whose quota holds the request now.
  std::vector<std::vector<FlavorId>> candidates(groups.size());
  bool first_quota_failure = true;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    bool all_never = true;
    const auto& group = cq.resource_groups[groups[gi]];
    // Flavors past the open ones are the fallback tier's, not yet reachable: "never" only
    // when the job could not fit any of them either, some day.
    const size_t n_open = std::min(group.flavors.size(), static_cast<size_t>(std::max(0, open)));
    if (n_open < group.flavors.size()) all_never = false;
    for (size_t fi = 0; fi < n_open; ++fi) {
      const auto& fq = group.flavors[fi];
      bool fits = true;
      for (ResourceId r : group.covered) {
        if (req[r] <= 0 || !quota.managed(q, fq.flavor, r)) continue;
        const int64_t avail = quota.available(q, fq.flavor, r);
        if (req[r] <= avail) continue;
        fits = false;
        const bool never = req[r] > quota.max_available(q, fq.flavor, r);
        if (!never) all_never = false;
        if (first_quota_failure) {
          first_quota_failure = false;
          at.reason.flavor = fq.flavor;
          at.reason.resource = r;
          at.reason.requested = req[r];
          at.reason.available = std::max<int64_t>(0, avail);
        }
        break;
      }
      if (fits) candidates[gi].push_back(fq.flavor);
    }
    if (candidates[gi].empty()) {
      at.reason.code = all_never ? PendingCode::kNeverFitsQuota : PendingCode::kQuota;
      return false;
    }
  }

  // 3. Flavor combinations in order (first group varies slowest); the first that places wins.
  std::vector<size_t> pick(groups.size(), 0);
  std::vector<FlavorId> flavors(cq.resource_groups.size(), -1);
  bool have_failure = false;
  constexpr int kMaxCombinations = 64;
  for (int combo = 0; combo < kMaxCombinations; ++combo) {
    for (size_t gi = 0; gi < groups.size(); ++gi) flavors[groups[gi]] = candidates[gi][pick[gi]];

    const uint64_t h = shape_hash(job);
    const PlaceFailure* memo_hit = nullptr;
    auto& bucket = at.memo[h];
    for (const auto& m : bucket)
      if (m.flavors == flavors && same_shape(*m.job, job)) memo_hit = &m.failure;
    std::variant<Placement, PlaceFailure> placed;
    if (memo_hit) {
      placed = *memo_hit;
    } else {
      placed = placer_.place(job, nodes_for(flavors, at.scratch), alloc);
      if (auto* f = std::get_if<PlaceFailure>(&placed)) bucket.push_back({&job, flavors, *f});
    }
    if (auto* pl = std::get_if<Placement>(&placed)) {
      Admission& a = at.admission;
      a = Admission{};
      a.job = job.id;
      a.queue = q;
      a.flavors = flavors;
      a.placement = std::move(*pl);
      // A flavor past the preferred ones is a downgrade: record what it preferred.
      for (size_t gj = 0; gj < groups.size() && a.preferred_flavor < 0; ++gj) {
        const auto& fl = cq.resource_groups[groups[gj]].flavors;
        for (size_t fi = 0; fi < fl.size(); ++fi)
          if (fl[fi].flavor == flavors[groups[gj]] &&
              fi >= static_cast<size_t>(std::max(1, preferred)))
            a.preferred_flavor = fl.front().flavor;
      }
      for (int r = 0; r < kMaxResources; ++r) {
        if (req[r] <= 0) continue;
        const int g = quota.group_of(q, static_cast<ResourceId>(r));
        if (g < 0) continue;
        const FlavorId f = flavors[g];
        if (!quota.managed(q, f, static_cast<ResourceId>(r))) continue;
        a.usage.push_back({f, static_cast<ResourceId>(r), req[r]});
        if (quota.usage(q, f, static_cast<ResourceId>(r)) + req[r] >
            quota.nominal(q, f, static_cast<ResourceId>(r)))
          a.borrowing = true;
      }
      return true;
    }
    if (!have_failure) {
      have_failure = true;
      at.failed_flavors = flavors;
      const auto& f = std::get<PlaceFailure>(placed);
      at.reason.code = PendingCode::kPlacement;
      at.reason.flavor = groups.empty() ? -1 : flavors[groups.front()];
      at.reason.place_code = f.code;
      at.reason.pods_needed = f.pods_needed;
      at.reason.pods_fit = f.pods_fit;
      at.reason.detail = f.detail;
    }
    // Next combination (odometer, last group fastest).
    size_t gi = groups.size();
    while (gi > 0) {
      --gi;
      if (++pick[gi] < candidates[gi].size()) break;
      pick[gi] = 0;
      if (gi == 0) return false;
    }
    if (groups.empty()) return false;
  }
  return false;
}

Scheduler::Tier Scheduler::tier_of(const Job& job, QueueId q, TimeNs now) const {
  const FallbackPolicy& fb = config_->cluster_queues[q].fallback;
  const TimeNs after = job.fallback.after_ns >= 0 ? job.fallback.after_ns : fb.after_ns;
  Tier t;
  if (after <= 0) return t;  // no tier: every flavor and shape at once
  t.after_ns = after;
  t.preferred = std::max(1, fb.preferred);
  const int64_t steps = std::max<TimeNs>(0, now - job.submit_ns) / after;
  t.open = steps >= INT32_MAX - t.preferred ? INT32_MAX : t.preferred + static_cast<int32_t>(steps);
  t.shapes = steps >= 1;
  return t;
}

bool Scheduler::try_admit_tiered(const PendingJob& p, const Tier& tier, const QuotaTree& quota,
                                 const ClusterAlloc& alloc, TimeNs now, Attempt& at,
                                 std::deque<Job>& shaped, const Job** used) const {
  *used = &p.job;
  if (tier.after_ns == 0 && p.job.fallback.shapes.empty())
    return try_admit(p.job, p.queue, quota, alloc, at);  // the common case: no tier
  // 1. Its own shape on the open flavors; 2. each fallback shape, in order, once they opened.
  bool ok = try_admit(p.job, p.queue, quota, alloc, at, tier.open, tier.preferred);
  if (!ok && tier.shapes && p.job.pod_sets.size() == 1 &&
      at.reason.code != PendingCode::kNeverFitsQuota) {
    PendingReason keep = at.reason;
    std::vector<FlavorId> keep_failed = at.failed_flavors;
    for (size_t i = 0; i < p.job.fallback.shapes.size() && !ok; ++i) {
      shaped.push_back(reshaped(p.job, p.job.fallback.shapes[i]));
      if (try_admit(shaped.back(), p.queue, quota, alloc, at, tier.open, tier.preferred)) {
        ok = true;
        at.admission.shape = static_cast<int32_t>(i);
        *used = &shaped.back();
      }
    }
    if (!ok) {
      at.reason = std::move(keep);
      at.failed_flavors = std::move(keep_failed);
    }
  }
  if (ok) {
    if (at.admission.downgraded()) at.admission.waited_ns = now - p.job.submit_ns;
    return true;
  }
  // 3. Say when the next flavor of its first resource group opens, if one is still closed.
  if (tier.after_ns > 0 && tier.open < INT32_MAX) {
    const auto& groups = config_->cluster_queues[p.queue].resource_groups;
    for (const auto& g : groups) {
      if (static_cast<size_t>(tier.open) >= g.flavors.size()) continue;
      const int64_t step = tier.open - tier.preferred + 1;
      at.reason.fallback_flavor = g.flavors[static_cast<size_t>(tier.open)].flavor;
      at.reason.fallback_in_ns = p.job.submit_ns + step * tier.after_ns - now;
      break;
    }
  }
  return false;
}

// The cycle's working copies of quota and capacity: the scheduler's kept ones when free (copied
// into by assignment; the capacity only where it changed), else fresh copies.
class Scheduler::ScratchLease {
 public:
  ScratchLease(CycleScratch* scratch, const QuotaTree& quota, const ClusterAlloc& alloc)
      : s_(scratch && !scratch->busy.exchange(true) ? scratch : nullptr) {
    if (s_) {
      if (s_->quota)
        *s_->quota = quota;
      else
        s_->quota.emplace(quota);
      if (s_->alloc)
        s_->alloc->assign_from(alloc);
      else
        s_->alloc.emplace(alloc);
    } else {
      own_quota_.emplace(quota);
      own_alloc_.emplace(alloc);
    }
  }
  ~ScratchLease() { release(); }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  QuotaTree& quota() { return s_ ? *s_->quota : *own_quota_; }
  ClusterAlloc& alloc() { return s_ ? *s_->alloc : *own_alloc_; }
  // The kept scratch while held (for caches that outlive a cycle), else nullptr.
  CycleScratch* kept() const { return s_; }
  // Gives the kept copies back early (before a nested cycle; this one must not use them after).
  void release() {
    if (s_) s_->busy.store(false);
    s_ = nullptr;
  }

 private:
  CycleScratch* s_;
  std::optional<QuotaTree> own_quota_;
  std::optional<ClusterAlloc> own_alloc_;
};

CycleResult Scheduler::run_cycle(TimeNs now, CycleMode mode) const {
  CycleResult result;
  result.now = now;
  result.generation = submissions_;
  result.free_epoch = free_epoch_;
  const auto& policy = config_->policy;
  const int nq = static_cast<int>(by_key_.size());
  ScratchLease lease(scratch_.get(), quota_, alloc_);
  QuotaTree& quota = lease.quota();
  ClusterAlloc& alloc = lease.alloc();
  // An incremental cycle that turns out not to be exact starts over as a full one.
  auto restart_full = [&]() {
    lease.release();
    return run_cycle(now, CycleMode::kFull);
  };
  Attempt attempt;

  // Within a queue: starving first (oldest first), then by key, then submit time, then id.
  auto ranks_before = [&](const PendingJob& a, const PendingJob& b) {
    const bool sa = is_starving(a.job, policy, now), sb = is_starving(b.job, policy, now);
    if (sa != sb) return sa;
    if (!sa && a.key != b.key) return a.key > b.key;
    return std::tie(a.job.submit_ns, a.job.id) < std::tie(b.job.submit_ns, b.job.id);
  };

  // 0. Incremental when nothing was freed since the last applied cycle and no older job
  // became starving since (that would change who holds capacity).
  bool incremental = mode == CycleMode::kAuto && !need_full_;
  // Preemption: an older job of a queue that preempts failed its queue's attempt in the last
  // full cycle (or never got one: an older job of its queue had it). The attempt fails again
  // while the running jobs it could evict are the same ones (no admission or eviction since:
  // preempt_stale_), none of them passed its minimum runtime since, and every such queue got
  // its attempt then (the per-cycle cap was not reached), and the job that made it is still
  // pending (else an older job that never tried would try now). Budgets can open the right to
  // preempt as time passes (a new period): with them, full cycles as before.
  // Only queues whose policy may preempt make attempts (and count against the cap).
  std::vector<char> may_preempt(nq, 0);
  bool preempt_pending = false;
  for (int q = 0; q < nq; ++q) {
    const auto& pc = config_->cluster_queues[q].preemption;
    may_preempt[q] = pc.within_cluster_queue != WithinQueuePolicy::kNever ||
                     pc.reclaim_within_cohort != ReclaimPolicy::kNever;
    preempt_pending = preempt_pending || (may_preempt[q] && !by_key_[q].empty());
  }
  if (incremental && preempt_pending) {
    if (preempt_stale_ || last_preempt_capped_ || !config_->budgets.empty()) {
      incremental = false;
    } else if (!protected_until_.empty()) {
      auto it = protected_until_.lower_bound({last_cycle_ns_ + 1, 0});
      if (it != protected_until_.end() && it->first <= now) incremental = false;
    }
    for (JobId id : last_preempt_attempted_)
      if (id && !pending_.count(id)) incremental = false;
  }
  // A fallback tier that opened a flavor or shape since the last cycle: the job may fit now.
  if (incremental && !fallback_opens_.empty()) {
    auto it = fallback_opens_.lower_bound({last_cycle_ns_ + 1, 0});
    if (it != fallback_opens_.end() && it->first <= now) incremental = false;
  }
  if (incremental && policy.aging_horizon_ns > 0) {
    const TimeNs was = last_cycle_ns_ - policy.aging_horizon_ns;
    const TimeNs is = now - policy.aging_horizon_ns;
    for (int q = 0; q < nq && incremental; ++q) {
      auto it = by_submit_[q].lower_bound({was + 1, 0});
      if (it != by_submit_[q].end() && it->first <= is) incremental = false;
    }
  }
  std::vector<std::vector<const PendingJob*>> fresh(incremental ? nq : 0);
  if (incremental) {
    std::set<JobId> seen;
    for (const auto& [seq, id] : new_jobs_) {
      auto it = pending_.find(id);
      if (it != pending_.end() && seen.insert(id).second)
        fresh[it->second.queue].push_back(&it->second);
    }
    // Interactive jobs whose timeout passed get a fresh look (and a reason) before rejection.
    for (const auto& [deadline, id] : interactive_deadlines_) {
      if (deadline > now) break;
      auto it = pending_.find(id);
      if (it != pending_.end() && seen.insert(id).second)
        fresh[it->second.queue].push_back(&it->second);
    }
    for (auto& v : fresh)
      std::sort(v.begin(), v.end(), [&](auto* a, auto* b) { return ranks_before(*a, *b); });
    // A starving job's claim holds back only what a full cycle walks after it: a new job that
    // ranks before a standing holder (starving, and submitted earlier: a job that arrives with
    // an old submit time) would be walked before the claim exists. A full cycle decides then.
    std::vector<const PendingJob*> holders;
    auto add_holder = [&](JobId id) {
      if (!id) return;
      if (auto it = pending_.find(id); it != pending_.end()) holders.push_back(&it->second);
    };
    add_holder(last_held_by_);
    for (JobId id : last_held_root_) add_holder(id);
    for (JobId id : last_held_queue_) add_holder(id);
    for (const auto& v : fresh)
      for (const PendingJob* f : v)
        for (const PendingJob* h : holders)
          if (is_starving(f->job, policy, now) && ranks_before(*f, *h)) incremental = false;
    if (!incremental) fresh.clear();
  }
  result.incremental = incremental;

  // Per-queue cursors: starving jobs (oldest first), then the rest in key order; or, when
  // incremental, the new jobs in the same order.
  struct Cursor {
    std::set<SubmitOrder>::const_iterator starving;
    std::set<KeyOrder>::const_iterator rest;
    size_t fresh = 0;
    bool in_starving = true;
    JobId strict_blocker = 0;  // StrictFIFO head that did not fit
  };
  std::vector<Cursor> cur(nq);
  for (int q = 0; q < nq; ++q) {
    cur[q].starving = by_submit_[q].begin();
    cur[q].rest = by_key_[q].begin();
  }
  auto head = [&](int q) -> const PendingJob* {
    Cursor& c = cur[q];
    if (incremental) return c.fresh < fresh[q].size() ? fresh[q][c.fresh] : nullptr;
    while (true) {
      if (c.in_starving) {
        if (c.starving != by_submit_[q].end()) {
          const PendingJob& p = pending_.at(c.starving->second);
          if (is_starving(p.job, policy, now)) return &p;
        }
        c.in_starving = false;
      }
      if (c.rest == by_key_[q].end()) return nullptr;
      // (is_starving() on the copy of the submit time in the order: the job itself is not
      // touched until it is picked.)
      if (!(policy.aging_horizon_ns > 0 && now - c.rest->submit_ns >= policy.aging_horizon_ns))
        return c.rest->job;
      ++c.rest;  // already served from the starving list
    }
  };
  auto advance = [&](int q) {
    Cursor& c = cur[q];
    if (incremental)
      ++c.fresh;
    else if (c.in_starving)
      ++c.starving;
    else
      ++c.rest;
  };

  // Dynamic part of each queue's score; refreshed for a queue when it admits.
  const auto& w = policy.weights;
  std::vector<double> dyn(nq);
  // Each queue's head and what picking the best head compares, packed (one pass over 100,000
  // pending jobs compares the heads of every queue per job).
  struct HeadKey {
    double score = 0;  // key + dyn
    TimeNs submit_ns = 0;
    JobId id = 0;
    bool starving = false;  // a head's starving state is fixed within the cycle
  };
  std::vector<const PendingJob*> heads(nq, nullptr);
  std::vector<HeadKey> head_key(nq);
  auto refresh = [&](int q) {
    dyn[q] = -w.drf * drf_share(q, quota) - w.debt * fairness_debt(q);
    if (heads[q]) head_key[q].score = heads[q]->key + dyn[q];
  };
  for (int q = 0; q < nq; ++q) refresh(q);

  // Capacity held for a starving job: globally (placement) or for one cohort tree (quota).
  JobId held_by = 0;
  std::vector<JobId> held_root(quota.num_queues() + config_->cohorts.size(), 0);
  std::vector<JobId> held_queue(nq, 0);  // a starving job that cannot borrow holds its queue
  Reservation reservation;
  if (incremental && last_reservation_.job && pending_.count(last_reservation_.job))
    reservation = last_reservation_;
  if (incremental) {
    held_by = last_held_by_;
    if (!last_held_root_.empty()) held_root = last_held_root_;
    if (!last_held_queue_.empty()) held_queue = last_held_queue_;
    for (int q = 0; q < nq && q < static_cast<int>(last_strict_blockers_.size()); ++q)
      cur[q].strict_blocker = last_strict_blockers_[q];
  }

  // Budgets: usage at `now` of every namespace that has one (constant within the cycle: work
  // admitted now has not run yet).
  constexpr Int128 kUnitsPerMilliGpuHour = static_cast<Int128>(3600) * kNsPerSec * 1000;
  std::vector<int64_t> budget_used_milli(config_->budgets.size(), 0);
  std::vector<bool> over_budget(config_->budgets.size(), false);
  for (size_t b = 0; b < config_->budgets.size(); ++b) {
    const Int128 used = budget_used(static_cast<int32_t>(b), now);
    budget_used_milli[b] = static_cast<int64_t>(used / kUnitsPerMilliGpuHour);
    over_budget[b] = used >= budget_limit(config_->budgets[b]);
  }
  std::deque<Job> shaped;  // fallback shapes tried this cycle (the memo points into it)
  // Nodes a backfilled job may use: those of its flavors outside the reservation.
  NodeSet backfill_nodes;
  JobId backfill_for = 0;
  std::vector<FlavorId> backfill_flavors;

  constexpr int kMaxPreemptionAttempts = 16;
  int preempt_attempts = 0;
  std::vector<bool> preempt_tried(nq, false);
  // The job that has (or, incremental, holds from the last cycles) each queue's attempt.
  std::vector<JobId> attempted(nq, 0);
  bool capped = false;
  // Cohort trees where a held attempt may reclaim: an admission there changes which running
  // jobs count as borrowing (reclaimable), so the held attempt might succeed in a full cycle.
  std::vector<char> reclaim_held(quota.num_queues() + config_->cohorts.size(), 0);
  if (incremental)
    for (int q = 0; q < nq && q < static_cast<int>(last_preempt_attempted_.size()); ++q)
      if (last_preempt_attempted_[q]) {
        attempted[q] = last_preempt_attempted_[q];
        ++preempt_attempts;
        if (config_->cluster_queues[q].preemption.reclaim_within_cohort != ReclaimPolicy::kNever)
          reclaim_held[quota.root(q)] = 1;
      }
  std::set<JobId> evicted;

  // Failures memoised by (queue, shape) until the next admission or eviction of the cycle:
  // the same request against the same quota and capacity fails again, for the same reason.
  // This is what makes a pass over 100,000 pending jobs behind a full cluster cheap. Only for
  // jobs without a fallback tier (theirs depends on how long they waited).
  struct Failed {
    PendingReason reason;
    std::vector<FlavorId> failed_flavors;
  };
  std::unordered_map<uint64_t, Failed> failed;  // by (interned shape, queue)
  if (!incremental && !summarize_) result.pending.reserve(pending_.size());

  auto next_head = [&](int q) {
    heads[q] = head(q);
    const PendingJob* p = heads[q];
    if (!p) return;
    const Cursor& c = cur[q];
    if (!incremental && !c.in_starving) {
      // From the order's copies; fetch the job meanwhile: it is read when it is picked, after
      // the other queues' heads had their turn.
      const char* line = reinterpret_cast<const char*>(p);
      for (size_t off = 0; off < sizeof(PendingJob); off += 64) __builtin_prefetch(line + off);
      head_key[q] = {-c.rest->neg_key + dyn[q], c.rest->submit_ns, c.rest->id, false};
    } else {
      head_key[q] = {p->key + dyn[q], p->job.submit_ns, p->job.id,
                     is_starving(p->job, policy, now)};
    }
  };
  for (int q = 0; q < nq; ++q) next_head(q);
  // Could the job be placed on an idle cluster (on these flavors' nodes)? Remembered per shape.
  auto fits_idle = [&](const PendingJob& p, const std::vector<FlavorId>& flavors) {
    auto place = [&]() {
      return std::holds_alternative<Placement>(
          placer_.place(p.job, nodes_for(flavors, attempt.scratch), empty_alloc_));
    };
    CycleScratch* kept = lease.kept();
    if (!kept) return place();
    auto& memo = kept->fits_idle;
    auto key = std::make_pair(p.shape, flavors);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    if (memo.size() >= 100'000) memo.clear();  // shapes come and go: bound it
    const bool fits = place();
    memo.emplace(std::move(key), fits);
    return fits;
  };
  // Why a job of queue q is held back, if it is: behind a StrictFIFO head that did not fit, or
  // behind a starving job's claim (on the whole cluster, its cohort tree or its queue).
  auto held_reason = [&](const PendingJob& p, int q, PendingReason& reason) {
    reason.queue = q;
    const auto blocker =
        cur[q].strict_blocker ? pending_.find(cur[q].strict_blocker) : pending_.end();
    if (blocker != pending_.end() && !ranks_before(p, blocker->second)) {
      reason.code = PendingCode::kStrictFifoBlocked;
      reason.blocker = cur[q].strict_blocker;
      return true;
    }
    const int root = quota.root(q);
    if (held_by || held_root[root] || held_queue[q]) {
      reason.code = PendingCode::kHeldForStarving;
      reason.blocker = held_by ? held_by : held_root[root] ? held_root[root] : held_queue[q];
      return true;
    }
    return false;
  };
  // Every queue with jobs left to walk is under a starving job's claim (claims only grow
  // within a cycle, so this stays true).
  auto all_held = [&]() {
    if (held_by) return true;
    for (int k = 0; k < nq; ++k)
      if (heads[k] && !held_root[quota.root(k)] && !held_queue[k]) return false;
    return true;
  };
  // Summarising (set_summarize_pending; full cycles only: an incremental one walks new jobs
  // only). What the walk reached so far: jobs by (shape, queue) key and, per queue, those not
  // decided by their shape; and after how many more jobs left pending to look again whether
  // the rest can be summarised (as many as the last look cost: looks stay a fraction of the walk).
  const bool summarize = summarize_ && !incremental;
  std::unordered_map<uint64_t, int64_t> walked;
  std::vector<int64_t> walked_other(summarize ? nq : 0, 0);
  int64_t quiet = 0, next_look = 1;
  // Whether every job left to walk would stay pending without effect on the rest of the cycle,
  // as the walk below would decide it; if so, their summary goes into the result. A held queue
  // holds all its rest (they rank after its head). Otherwise no job left may be starving (those
  // come first) or be decided otherwise than by shape, and every shape left must have failed in
  // this queue already (the memo: it fails again, for the same reason) for a reason that would
  // start no preemption attempt, reservation or StrictFIFO block.
  auto summarize_rest = [&](int64_t& cost) {
    std::vector<PendingSummary> out;
    for (int q = 0; q < nq; ++q) {
      if (!heads[q]) continue;
      ++cost;
      PendingSummary sum;
      sum.queue = q;
      if (held_reason(*heads[q], q, sum.reason)) {
        sum.held = true;
        out.push_back(std::move(sum));
        continue;
      }
      if (head_key[q].starving || walked_other[q] < not_by_shape_[q]) return false;
      const bool strict = config_->cluster_queues[q].strategy == QueueingStrategy::kStrictFIFO;
      for (const auto& [shape, count] : shape_counts_[q]) {
        ++cost;
        const uint64_t key = shape * static_cast<uint64_t>(nq) + static_cast<uint64_t>(q);
        if (auto w = walked.find(key); w != walked.end() && w->second >= count) continue;
        auto f = failed.find(key);
        if (f == failed.end()) return false;
        const PendingReason& r = f->second.reason;
        const bool fits_quota_some_day = r.code != PendingCode::kNeverFitsQuota;
        if ((may_preempt[q] && fits_quota_some_day && !preempt_tried[q]) ||
            (policy.backfill && !reservation.job && r.code == PendingCode::kPlacement) ||
            (strict && fits_quota_some_day))
          return false;
        sum.by_shape.emplace_back(shape, r);
      }
      std::sort(sum.by_shape.begin(), sum.by_shape.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      out.push_back(std::move(sum));
    }
    result.summary = std::move(out);
    return true;
  };
  // After a job stayed pending: whether the walk stops here, the rest summarised.
  auto stop_here = [&](bool held) {
    if (!summarize) return false;
    ++quiet;
    if (quiet < next_look && !(held && all_held())) return false;
    int64_t cost = 0;
    if (summarize_rest(cost)) return true;
    next_look = quiet + std::max<int64_t>(4, cost);
    return false;
  };
  while (true) {
    // 1. Pick the best head across queues: starving first (oldest), then the highest score.
    int best = -1;
    for (int q = 0; q < nq; ++q) {
      if (!heads[q]) continue;
      if (best < 0) {
        best = q;
        continue;
      }
      const HeadKey& a = head_key[q];
      const HeadKey& b = head_key[best];
      bool better;
      if (a.starving != b.starving) {
        better = a.starving;
      } else if (a.starving) {
        better = std::tie(a.submit_ns, a.id) < std::tie(b.submit_ns, b.id);
      } else {
        better = a.score != b.score ? a.score > b.score
                                    : std::tie(a.submit_ns, a.id) < std::tie(b.submit_ns, b.id);
      }
      if (better) best = q;
    }
    if (best < 0) break;
    const bool best_starving = head_key[best].starving;
    const int q = best;
    const PendingJob& p = *heads[q];
    advance(q);
    next_head(q);
    const uint64_t fkey = p.shape * static_cast<uint64_t>(nq) + static_cast<uint64_t>(q);
    if (summarize) {
      if (p.by_shape)
        ++walked[fkey];
      else
        ++walked_other[q];
    }

    PendingDecision pd;
    pd.job = p.job.id;
    pd.starving = best_starving;
    const int root = quota.root(q);
    // 2. Held back: behind a StrictFIFO head, or behind a starving job's claim.
    if (held_reason(p, q, pd.reason)) {
      result.pending.push_back(std::move(pd));
      if (stop_here(true)) break;
      continue;
    }
    pd.reason.queue = q;
    // 3. Budget: a namespace over its GPU-hour budget gets new work in only as preemptible
    // best-effort work, or not at all, as its queue says.
    const bool over = p.budget >= 0 && over_budget[static_cast<size_t>(p.budget)];
    if (over && config_->cluster_queues[q].over_budget == OverBudgetPolicy::kReject) {
      const Budget& b = config_->budgets[static_cast<size_t>(p.budget)];
      Rejection rj;
      rj.job = p.job.id;
      rj.reason.code = PendingCode::kOverBudget;
      rj.reason.queue = q;
      rj.reason.detail = b.namespace_;
      rj.reason.requested = budget_used_milli[static_cast<size_t>(p.budget)];
      rj.reason.available = b.gpu_hours_milli;
      result.rejected.push_back(std::move(rj));
      continue;
    }
    // 4. Try it (through its fallback tier); when it does not fit, its queue's preemption
    // policy may evict running work (at most one attempt per queue and kMaxPreemptionAttempts
    // per cycle bound the cost). Best-effort work never preempts.
    ++result.evaluated;
    const Tier tier = tier_of(p.job, q, now);
    const Job* used = &p.job;
    const bool plain = tier.after_ns == 0 && p.job.fallback.shapes.empty();
    const Failed* known = nullptr;
    if (plain)
      if (auto it = failed.find(fkey); it != failed.end()) known = &it->second;
    bool admitted = false;
    if (known) {
      attempt.reason = known->reason;  // (its failed flavors are read from `known` below)
    } else {
      admitted = try_admit_tiered(p, tier, quota, alloc, now, attempt, shaped, &used);
      if (!admitted && plain) failed.emplace(fkey, Failed{attempt.reason, attempt.failed_flavors});
    }
    bool via_preemption = false;
    // Incremental: a full cycle would give the queue's attempt to the older job that holds it,
    // unless this one ranks before it.
    const bool older_first =
        incremental && attempted[q] && !ranks_before(p, pending_.at(attempted[q]));
    if (!admitted && !over && may_preempt[q] &&
        attempt.reason.code != PendingCode::kNeverFitsQuota && !preempt_tried[q] && !older_first) {
      // Incremental cycles stop being exact past the cap, or once an eviction frees capacity
      // that older jobs might use: a full cycle decides instead.
      if (preempt_attempts >= kMaxPreemptionAttempts) {
        if (incremental) return restart_full();
        capped = true;
      }
    }
    if (!admitted && !over && may_preempt[q] &&
        attempt.reason.code != PendingCode::kNeverFitsQuota &&
        preempt_attempts < kMaxPreemptionAttempts && !preempt_tried[q] && !older_first) {
      preempt_tried[q] = true;
      if (!attempted[q]) ++preempt_attempts;
      attempted[q] = p.job.id;
      PendingReason keep = attempt.reason;
      admitted = try_preempt(p, tier, quota, alloc, now, evicted, attempt, result.preempted);
      if (admitted && incremental) return restart_full();
      via_preemption = admitted;
      if (admitted && attempt.admission.downgraded())
        attempt.admission.waited_ns = now - p.job.submit_ns;
      if (admitted) {
        for (int k = 0; k < nq; ++k) refresh(k);  // victims' queues lost usage
      } else {
        attempt.reason = std::move(keep);
      }
    }
    // Backfill: with a reservation in force, a job starts only if it ends (by walltime) before
    // the reservation starts or runs on nodes the reservation does not need.
    // (A preemptor is exempt: its victims were chosen for it and must not be evicted in vain.)
    if (admitted && !via_preemption && reservation.job && reservation.job != p.job.id &&
        now + walltime(p.job, q) > reservation.start_ns &&
        uses_any(attempt.admission.placement, reservation.nodes)) {
      // The flavors' nodes less the reserved ones, kept while the reservation and the flavors
      // stay the same (both lists ascending: one merge walk, the result ascending too).
      if (backfill_for != reservation.job || backfill_flavors != attempt.admission.flavors) {
        std::vector<NodeId> others;
        const auto& allowed = nodes_for(attempt.admission.flavors, attempt.scratch).ids();
        others.reserve(allowed.size());
        std::set_difference(allowed.begin(), allowed.end(), reservation.nodes.begin(),
                            reservation.nodes.end(), std::back_inserter(others));
        backfill_nodes =
            NodeSet(static_cast<int32_t>(config_->cluster.nodes.size()), std::move(others));
        backfill_for = reservation.job;
        backfill_flavors = attempt.admission.flavors;
      }
      auto placed = placer_.place(*used, backfill_nodes, alloc);
      if (auto* pl = std::get_if<Placement>(&placed)) {
        attempt.admission.placement = std::move(*pl);
      } else {
        admitted = false;
        attempt.reason = PendingReason{};
        attempt.reason.code = PendingCode::kReservation;
        attempt.reason.queue = q;
        attempt.reason.blocker = reservation.job;
        attempt.reason.reserved_in_ns = reservation.start_ns - now;
      }
    }
    if (admitted) {
      if (incremental && reclaim_held[root]) return restart_full();
      failed.clear();  // quota and capacity changed
      Admission& a = attempt.admission;
      a.best_effort = over;
      alloc.commit(*used, a.placement);
      for (const auto& u : a.usage) quota.add_usage(q, u.flavor, u.resource, u.amount);
      refresh(q);
      result.admitted.push_back(std::move(a));
      continue;
    }
    pd.reason = std::move(attempt.reason);
    if (config_->cluster_queues[q].strategy == QueueingStrategy::kStrictFIFO &&
        pd.reason.code != PendingCode::kNeverFitsQuota)
      cur[q].strict_blocker = p.job.id;
    // The highest-ranked job that cannot be placed reserves what it will get.
    if (policy.backfill && !reservation.job && !best_starving &&
        pd.reason.code == PendingCode::kPlacement)
      reservation = reserve(p, known ? known->failed_flavors : attempt.failed_flavors, alloc,
                            result.admitted, now, attempt.scratch);
    // A starving job that could fit some day holds capacity for itself.
    if (best_starving && pd.reason.code != PendingCode::kNeverFitsQuota) {
      if (pd.reason.code != PendingCode::kPlacement) {
        // Quota: if the queue can borrow, other queues of its cohort tree must stop taking
        // what it needs; if it cannot, only its own queue's usage matters.
        if (pd.reason.flavor >= 0 && !quota.can_borrow(q, pd.reason.flavor, pd.reason.resource))
          held_queue[q] = p.job.id;
        else
          held_root[root] = p.job.id;
      } else if (fits_idle(p, known ? known->failed_flavors : attempt.failed_flavors)) {
        held_by = p.job.id;  // fits an idle cluster: worth draining capacity for
      }
    }
    result.pending.push_back(std::move(pd));
    if (stop_here(false)) break;
  }
  // 4. Interactive jobs past their timeout that did not start are rejected, not queued.
  if (!interactive_deadlines_.empty() && interactive_deadlines_.begin()->first <= now) {
    std::set<JobId> expired;
    for (const auto& [deadline, id] : interactive_deadlines_) {
      if (deadline > now) break;
      expired.insert(id);
    }
    std::vector<PendingDecision> keep;
    keep.reserve(result.pending.size());
    for (auto& pd : result.pending) {
      if (expired.erase(pd.job)) {
        result.rejected.push_back({pd.job, std::move(pd.reason)});
      } else {
        keep.push_back(std::move(pd));
      }
    }
    result.pending = std::move(keep);
    // Those the walk did not reach (it stopped, summarising the rest) have their summary's reason.
    for (const auto& a : result.admitted) expired.erase(a.job);
    for (const auto& rj : result.rejected) expired.erase(rj.job);
    for (JobId id : expired) {
      const PendingJob& p = pending_.at(id);
      if (const PendingReason* why = summarized_reason(result.summary, p.queue, p.shape))
        result.rejected.push_back({id, *why});
    }
  }
  result.preempt_attempted = std::move(attempted);
  result.preempt_capped = capped;
  result.strict_blockers.resize(nq);
  for (int q = 0; q < nq; ++q) result.strict_blockers[q] = cur[q].strict_blocker;
  result.held_by = held_by;
  result.held_root = std::move(held_root);
  result.held_queue = std::move(held_queue);
  result.reservation = std::move(reservation);
  return result;
}

void Scheduler::apply(const CycleResult& result, TimeNs now) {
  advance_debt(now);
  advance_budgets(now);
  // Bookkeeping for the next incremental cycle.
  need_full_ = result.free_epoch != free_epoch_;
  last_cycle_ns_ = result.now;
  last_strict_blockers_ = result.strict_blockers;
  last_held_by_ = result.held_by;
  last_held_root_ = result.held_root;
  last_held_queue_ = result.held_queue;
  last_reservation_ = result.reservation;
  // The older jobs' preemption attempts stay valid while the running set stays as they saw it.
  const bool changed = !result.admitted.empty() || !result.preempted.empty();
  preempt_stale_ = result.incremental ? (preempt_stale_ || changed) : changed;
  last_preempt_attempted_ = result.preempt_attempted;
  if (!result.incremental) last_preempt_capped_ = result.preempt_capped;
  std::erase_if(new_jobs_, [&](const auto& e) { return e.first <= result.generation; });
  // Victims first (their capacity is what the preemptors were placed on), keeping their
  // original submit time; then rejections; then admissions.
  for (const auto& pr : result.preempted) {
    auto it = running_.find(pr.victim);
    if (it == running_.end()) continue;
    ++counters_.preemptions;
    counters_.lost_gpu_milli_ns += pr.lost_gpu_milli_ns;
    ++preempt_count_[pr.victim];
    release_running(it->second);
    const QueueId q = it->second.admission.queue;
    PendingJob back{requested_job(std::move(it->second)), q, 0};
    running_.erase(it);
    back.key = queue_key(back.job, config_->policy, priority_scale_);
    insert_pending(std::move(back));
    need_full_ = true;
  }
  for (const auto& rj : result.rejected) {
    if (!pending_.count(rj.job)) continue;
    erase_pending(rj.job);
    preempt_count_.erase(rj.job);
    // As a cancellation: it may have been a StrictFIFO head, a starving holder, the backfill
    // reservation or its queue's preemption attempt, which the next cycle must not keep.
    need_full_ = true;
    if (rj.reason.code == PendingCode::kOverBudget) {
      ++counters_.rejected_over_budget;
    } else {
      ++counters_.rejected_interactive;
    }
  }
  refresh_workload();
  for (const auto& a : result.admitted) {
    auto it = pending_.find(a.job);
    if (it == pending_.end()) continue;  // cancelled in between: nothing to apply
    RunningJob r{it->second.job, a, now, now};
    erase_pending(a.job);
    // It runs as admitted: with the fallback shape it got, as best-effort work if so.
    if (a.shape >= 0 && static_cast<size_t>(a.shape) < r.job.fallback.shapes.size()) {
      r.requested_pod_sets = r.job.pod_sets;
      r.job = reshaped(r.job, r.job.fallback.shapes[static_cast<size_t>(a.shape)]);
    }
    if (a.best_effort) {
      r.requested_priority = r.job.priority;
      r.requested_preemptible = r.job.preemptible;
      r.job.priority = best_effort_priority_;
      r.job.preemptible = true;
      ++counters_.admitted_best_effort;
    }
    if (a.downgraded()) ++counters_.admitted_downgraded;
    commit_in(r, quota_, alloc_);
    running_added(running_.emplace(a.job, std::move(r)).first->second);
  }
}

void Scheduler::refresh_workload() {
  // FGD scores placements against the expected workload: the shapes of pending and running
  // jobs. Refreshed on every call while the population is small, then whenever 5% (at least
  // 100) new submissions arrived since the last refresh, so the cost stays amortised O(1).
  if (config_->policy.gpu_scoring != ScoringPolicy::kFgd &&
      config_->policy.gpu_scoring != ScoringPolicy::kFgdPack)
    return;
  const uint64_t step = std::max<uint64_t>(100, (pending_.size() + running_.size()) / 20);
  if (workload_refreshed_at_ != 0 && submissions_ - workload_refreshed_at_ < step &&
      submissions_ > 2 * step)
    return;
  workload_refreshed_at_ = std::max<uint64_t>(1, submissions_);
  std::vector<const Job*> jobs;
  jobs.reserve(pending_.size() + running_.size());
  for (const auto& [id, r] : running_) jobs.push_back(&r.job);
  for (const auto& q : by_key_)
    for (const auto& k : q) jobs.push_back(&k.job->job);
  placer_.set_workload_from_jobs(jobs);
}

bool Scheduler::check_invariants(std::string* why) const {
  if (!alloc_.check_invariants(why)) return false;
  // Quota usage equals the sum of running jobs' usage.
  QuotaTree expect(*config_);
  for (const auto& [id, r] : running_)
    for (const auto& u : r.admission.usage)
      expect.add_usage(r.admission.queue, u.flavor, u.resource, u.amount);
  for (QueueId q = 0; q < quota_.num_queues(); ++q)
    for (FlavorId f = 0; f < quota_.num_flavors(); ++f)
      for (int r = 0; r < kMaxResources; ++r) {
        const auto res = static_cast<ResourceId>(r);
        if (expect.usage(q, f, res) != quota_.usage(q, f, res)) {
          if (why) *why = "quota usage drifted for queue " + config_->cluster_queues[q].name;
          return false;
        }
        if (quota_.managed(q, f, res) && quota_.available(q, f, res) < 0) {
          if (why) *why = "queue " + config_->cluster_queues[q].name + " exceeds its quota";
          return false;
        }
      }
  return true;
}

}  // namespace sluice
