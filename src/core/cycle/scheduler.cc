#include "core/cycle/scheduler.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>

#include "core/model/job_shape.h"

namespace sluice {

namespace {

bool uses_any(const Placement& p, const std::vector<NodeId>& sorted_nodes) {
  for (const auto& pod : p.pods)
    if (std::binary_search(sorted_nodes.begin(), sorted_nodes.end(), pod.node)) return true;
  return false;
}

}  // namespace

Scheduler::Scheduler(std::shared_ptr<const Config> config)
    : config_(std::move(config)),
      priority_scale_(priority_scale(*config_)),
      quota_(*config_),
      alloc_(config_->cluster),
      empty_alloc_(config_->cluster),
      placer_(config_->cluster, config_->policy.gpu_scoring,
              PlacerOptions{.resources = &config_->resources}),
      assigner_(*config_, placer_),
      preemptor_(*config_, assigner_),
      victims_(config_->cluster_queues.size()),
      budgets_(*config_) {
  const auto nq = config_->cluster_queues.size();
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
  if (!budgets_.empty()) p.budget = budgets_.index_of(p.job.namespace_);
  // The times its fallback tier opens something: one per later flavor, the first also its
  // shapes (bounded: at most kMaxSteps per job).
  const Tier t = assigner_.tier_of(p.job, p.queue, p.job.submit_ns);
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
  const Tier t = assigner_.tier_of(p.job, p.queue, p.job.submit_ns);
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
    victims_.add(r);
    if (vcq.min_runtime_ns > 0)
      protected_until_.insert({r.start_ns + vcq.min_runtime_ns, r.job.id});
  }
  budgets_.add_running(r.job, r.admission.placement);
}

void Scheduler::running_removed(const RunningJob& r) {
  ends_.erase({r.start_ns + walltime(r.job, r.admission.queue), r.job.id});
  if (victims_.remove(r.job.id, r.admission.queue)) {
    if (const TimeNs m = config_->cluster_queues[r.admission.queue].min_runtime_ns; m > 0)
      protected_until_.erase({r.start_ns + m, r.job.id});
  }
  budgets_.remove_running(r.job, r.admission.placement);
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
  budgets_.advance(now);
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
  budgets_.advance(now);
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
  if (victims_.set_checkpoint(id, it->second.admission.queue, it->second.checkpoint_ns))
    preempt_stale_ = true;  // the victims' cost order changed
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
  budgets_.restore_running(r.job, r.admission.placement, start_ns);
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

Reservation Scheduler::reserve(const PendingJob& p, const std::vector<FlavorId>& flavors,
                               const ClusterAlloc& alloc,
                               const std::vector<Admission>& admitted_now, TimeNs now,
                               NodeSet& scratch) const {
  // Jobs admitted in this cycle end `now` + walltime, holding what they were admitted with.
  std::vector<JobEnd> now_ends;
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
  return sluice::reserve(p.job, assigner_.nodes_for(flavors, scratch), placer_, alloc, ends_,
                         std::move(now_ends), now);
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
  FlavorAttempt attempt;

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
  std::vector<int64_t> budget_used_milli(config_->budgets.size(), 0);
  std::vector<bool> over_budget(config_->budgets.size(), false);
  for (size_t b = 0; b < config_->budgets.size(); ++b) {
    budget_used_milli[b] = budgets_.used_milli_gpu_hours(static_cast<int32_t>(b), now);
    over_budget[b] = budgets_.over(static_cast<int32_t>(b), now);
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
          placer_.place(p.job, assigner_.nodes_for(flavors, attempt.scratch), empty_alloc_));
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
    const Tier tier = assigner_.tier_of(p.job, q, now);
    const Job* used = &p.job;
    const bool plain = tier.after_ns == 0 && p.job.fallback.shapes.empty();
    const Failed* known = nullptr;
    if (plain)
      if (auto it = failed.find(fkey); it != failed.end()) known = &it->second;
    bool admitted = false;
    if (known) {
      attempt.reason = known->reason;  // (its failed flavors are read from `known` below)
    } else {
      admitted = assigner_.assign_tiered(p, tier, quota, alloc, now, attempt, shaped, &used);
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
      admitted = preemptor_.preempt(p, tier, victims_, quota, alloc, now, evicted, attempt,
                                    result.preempted);
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
        const auto& allowed = assigner_.nodes_for(attempt.admission.flavors, attempt.scratch).ids();
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
  budgets_.advance(now);
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
