#include "core/cycle/scheduler.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>

#include "core/model/deadline.h"
#include "core/model/job_shape.h"
#include "core/order/deadline_term.h"
#include "core/order/fairness_bounds.h"
#include "core/order/nominal_fairness.h"

namespace sluice {

Scheduler::Scheduler(std::shared_ptr<const Config> config)
    : config_(std::move(config)),
      priority_scale_(priority_scale(*config_)),
      deadline_cap_(fairness_bounds(*config_, priority_scale_).cap),
      quota_(*config_),
      alloc_(config_->cluster),
      empty_alloc_(config_->cluster),
      placer_(config_->cluster, config_->policy.gpu_scoring,
              PlacerOptions{.resources = &config_->resources}),
      assigner_(*config_, placer_),
      preemptor_(*config_, assigner_),
      victims_(config_->cluster_queues.size()),
      budgets_(*config_),
      waits_(config_->policy.fairness_yield_percentile) {
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
  if (config_->policy.align_ends) {
    node_ends_.resize(config_->cluster.nodes.size());
    node_end_.assign(config_->cluster.nodes.size(), 0);
  }
  counts_workload_ = config_->policy.gpu_scoring == ScoringPolicy::kFgd ||
                     config_->policy.gpu_scoring == ScoringPolicy::kFgdPack ||
                     config_->policy.gpu_scoring == ScoringPolicy::kFgdMix;
  int32_t lowest = 0;
  for (const auto& pc : config_->priority_classes) lowest = std::min(lowest, pc.value);
  best_effort_priority_ = lowest == INT32_MIN ? lowest : lowest - 1;
}

SubmitResult Scheduler::resolve(const Job& job) const {
  SubmitResult res;
  auto lq = config_->local_queue_of(job);
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
  if (auto why = deadline_error(job); !why.empty()) {
    res.status = SubmitStatus::kInvalid;
    res.message = why;
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
  const auto lq = *config_->local_queue_of(job);
  const auto& lqc = config_->local_queues[lq];
  const auto& cq = config_->cluster_queues[res.queue];
  // `what` names the full queue; built only when it is full (not on every submission).
  auto full = [&](int32_t cap, size_t count, const auto& what) {
    if (cap <= 0 || count < static_cast<size_t>(cap)) return false;
    res.status = SubmitStatus::kPendingCap;
    res.message = what() + " has " + std::to_string(count) + " pending jobs (cap " +
                  std::to_string(cap) + "); retry later";
    return true;
  };
  if (full(lqc.max_pending, static_cast<size_t>(pending_per_local_queue_[lq]),
           [&] { return "LocalQueue " + lqc.namespace_ + "/" + lqc.name; }) ||
      full(cq.max_pending, by_key_[res.queue].size(), [&] { return "ClusterQueue " + cq.name; }) ||
      full(config_->policy.max_pending_total, pending_.size(),
           [] { return std::string("the cluster"); }))
    return res;
  resolve_deadline(job);
  PendingJob p;
  p.queue = res.queue;
  p.job = std::move(job);
  p.key = key_of(p.job);
  ++submissions_;
  new_jobs_.push_back(p.job.id);
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
  if (auto lq = config_->local_queue_of(p.job)) ++pending_per_local_queue_[*lq];
  if (may_be_victim(p)) ++pending_victims_;
  const PendingJob& in = pending_.emplace(id, std::move(p)).first->second;
  count_workload(in.job, 1);
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

void Scheduler::erase_pending(JobId id, Job* taken) {
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
  if (auto lq = config_->local_queue_of(p.job)) --pending_per_local_queue_[*lq];
  if (may_be_victim(p)) --pending_victims_;
  count_workload(p.job, -1);
  if (taken) *taken = std::move(it->second.job);
  pending_.erase(it);
}

void Scheduler::release_running(const RunningJob& r) {
  release_in(r, quota_, alloc_);
  running_removed(r);
}

void Scheduler::track_node_ends(const RunningJob& r, int sign) {
  if (node_end_.empty()) return;
  const TimeNs end = expected_end(r.job, r.admission.queue, r.start_ns);
  // One entry per pod (a gang's pods on one node add equal ends; only the latest counts).
  for (const auto& pod : r.admission.placement.pods) {
    const auto n = static_cast<size_t>(pod.node);
    auto& ends = node_ends_[n];
    if (sign > 0) {
      ends.insert(end);
    } else if (auto it = ends.find(end); it != ends.end()) {
      ends.erase(it);
    }
    node_end_[n] = ends.empty() ? 0 : *ends.rbegin();
  }
}

void Scheduler::running_added(const RunningJob& r) {
  track_node_ends(r, 1);
  ends_.emplace(std::pair{r.start_ns + walltime(r.job, r.admission.queue), r.job.id}, &r);
  const auto& vcq = config_->cluster_queues[r.admission.queue];
  if ((r.admission.best_effort || (r.job.preemptible && vcq.preemptible)) &&
      preemption_count(r.job.id) < config_->policy.max_preemptions_per_job) {
    victims_.add(r);
    if (vcq.min_runtime_ns > 0)
      protected_until_.insert({r.start_ns + vcq.min_runtime_ns, r.job.id});
  }
  budgets_.add_running(r.job, r.admission.placement);
  count_workload(r.job, 1);
}

void Scheduler::running_removed(const RunningJob& r) {
  track_node_ends(r, -1);
  ends_.erase({r.start_ns + walltime(r.job, r.admission.queue), r.job.id});
  if (victims_.remove(r.job.id, r.admission.queue)) {
    if (const TimeNs m = config_->cluster_queues[r.admission.queue].min_runtime_ns; m > 0)
      protected_until_.erase({r.start_ns + m, r.job.id});
  }
  budgets_.remove_running(r.job, r.admission.placement);
  count_workload(r.job, -1);
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
  if (!running_.count(id)) return false;
  advance_debt(now);
  budgets_.advance(now);
  back_to_pending(id, 0);
  mark_freed();
  return true;
}

// Running job `id` pending again as it was requested, its age restarting no earlier than
// `since` (0: as it was).
void Scheduler::back_to_pending(JobId id, TimeNs since) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  release_running(it->second);
  PendingJob p;
  p.queue = it->second.admission.queue;
  p.job = requested_job(std::move(it->second));
  running_.erase(it);
  p.job.submit_ns = std::max(p.job.submit_ns, since);
  p.key = key_of(p.job);
  insert_pending(std::move(p));
}

bool Scheduler::report_checkpoint(JobId id, TimeNs at) {
  auto it = running_.find(id);
  if (it == running_.end()) return false;
  it->second.checkpoint_ns = std::max(it->second.checkpoint_ns, at);
  if (victims_.set_checkpoint(id, it->second.admission.queue, it->second.checkpoint_ns))
    preempt_stale_ = true;  // the victims' cost order changed
  return true;
}

bool Scheduler::shorten_pending(JobId id, TimeNs kept_ns) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return false;
  if (kept_ns <= 0 || it->second.job.walltime_ns <= 0) return true;
  PendingJob p;
  p.queue = it->second.queue;
  erase_pending(id, &p.job);
  const TimeNs w = p.job.walltime_ns;
  p.job.walltime_ns = std::max(std::min(kNsPerSec, w), w - kept_ns);
  p.key = key_of(p.job);
  insert_pending(std::move(p));
  need_full_ = true;  // its reservation and backfill fit changed
  return true;
}

namespace {

// The job as it was admitted: with its fallback shape (as best-effort work), and with the pods
// per pod set it was partially admitted with; *requested: its pod sets as submitted when they
// changed. The error text when the admission does not match the job ("": none).
std::string as_admitted(Job& job, const Admission& admission, std::vector<PodSet>* requested) {
  if (admission.shape >= 0) {
    if (static_cast<size_t>(admission.shape) >= job.fallback.shapes.size() ||
        job.pod_sets.size() != 1)
      return "was admitted with fallback shape #" + std::to_string(admission.shape + 1) +
             ", which the job does not declare";
    *requested = job.pod_sets;
    job = reshaped(job, job.fallback.shapes[static_cast<size_t>(admission.shape)]);
  }
  if (admission.pod_set_counts.empty()) return "";
  if (admission.pod_set_counts.size() != job.pod_sets.size())
    return "was admitted with counts for " + std::to_string(admission.pod_set_counts.size()) +
           " pod sets, the job has " + std::to_string(job.pod_sets.size());
  for (size_t i = 0; i < job.pod_sets.size(); ++i) {
    const PodSet& ps = job.pod_sets[i];
    const int32_t least = ps.min_count > 0 ? ps.min_count : ps.count;
    if (admission.pod_set_counts[i] < least || admission.pod_set_counts[i] > ps.count)
      return "was admitted with " + std::to_string(admission.pod_set_counts[i]) +
             " pods of pod set " + ps.name + ", which asks for " +
             (least == ps.count ? std::to_string(ps.count)
                                : std::to_string(least) + " to " + std::to_string(ps.count));
  }
  if (requested->empty()) *requested = job.pod_sets;
  job = with_counts(job, admission.pod_set_counts);
  return "";
}

// Whether every pod's node and devices exist and are free enough in `alloc` (checked on
// integers, so that committing the placement cannot push any free count negative); the error
// text when not ("": they are).
std::string placement_fits(const Job& job, const Placement& placement, const Cluster& cluster,
                           const ClusterAlloc& alloc) {
  const auto& nodes = cluster.nodes;
  size_t expected_pods = 0;
  for (const auto& ps : job.pod_sets) expected_pods += static_cast<size_t>(ps.count);
  if (placement.pods.size() != expected_pods)
    return "placement has " + std::to_string(placement.pods.size()) + " pods, the job " +
           std::to_string(expected_pods);
  ClusterAlloc probe = alloc;
  for (const auto& pp : placement.pods) {
    if (pp.node < 0 || static_cast<size_t>(pp.node) >= nodes.size())
      return "placement names node #" + std::to_string(pp.node) + ", which does not exist";
    if (pp.pod_set < 0 || static_cast<size_t>(pp.pod_set) >= job.pod_sets.size())
      return "placement names a pod set that does not exist";
    const auto& ps = job.pod_sets[static_cast<size_t>(pp.pod_set)];
    const auto& node = nodes[static_cast<size_t>(pp.node)];
    if (probe.cpu_free_milli(pp.node) < ps.requests[kCpu] ||
        probe.memory_free_mib(pp.node) < ps.requests[kMemory])
      return "node " + node.name + " has too little CPU or memory free";
    for (const auto& g : pp.gpus) {
      if (g.gpu < 0 || static_cast<size_t>(g.gpu) >= node.gpus.size())
        return "node " + node.name + " has no GPU " + std::to_string(g.gpu);
      const auto& gpu = node.gpus[static_cast<size_t>(g.gpu)];
      if (g.mig_slice >= 0) {
        if (static_cast<size_t>(g.mig_slice) >= gpu.mig.size() ||
            probe.mig_slice_used(pp.node, g.gpu, g.mig_slice))
          return "MIG slice " + std::to_string(g.mig_slice) + " of GPU " + std::to_string(g.gpu) +
                 " on " + node.name + " is missing or in use";
      } else if (probe.gpu_is_mig(pp.node, g.gpu) ||
                 probe.gpu_free_milli(pp.node, g.gpu) < g.milli) {
        return "GPU " + std::to_string(g.gpu) + " on " + node.name + " is not free";
      }
    }
    Job one = job;  // commit one pod at a time so two pods on one GPU are caught too
    Placement single{{pp}};
    probe.commit(one, single);
  }
  return "";
}

}  // namespace

bool Scheduler::restore_running(Job job, const Admission& admission, TimeNs start_ns,
                                TimeNs checkpoint_ns, int32_t preemptions, std::string* why) {
  auto fail = [&](std::string m) {
    if (why) *why = "job " + std::to_string(job.id) + ": " + std::move(m);
    return false;
  };
  SubmitResult res = resolve(job);
  if (res.status != SubmitStatus::kAccepted) return fail(res.message);
  if (pending_.count(job.id) || running_.count(job.id)) return fail("id already exists");
  resolve_deadline(job);
  if (res.queue != admission.queue)
    return fail("was admitted by ClusterQueue #" + std::to_string(admission.queue) +
                ", its LocalQueue now points at " + config_->cluster_queues[res.queue].name);
  // 0. It runs as it was admitted.
  std::vector<PodSet> requested_pod_sets;
  if (std::string bad = as_admitted(job, admission, &requested_pod_sets); !bad.empty())
    return fail(std::move(bad));
  // 1. Its pods fit where they run.
  if (std::string bad = placement_fits(job, admission.placement, config_->cluster, alloc_);
      !bad.empty())
    return fail(std::move(bad));
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
  return sluice::reserve(p.job, assigner_.nodes_for(p.job, flavors, scratch), placer_, alloc, ends_,
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

double Scheduler::fairness_penalty(QueueId q, const QuotaTree& quota) const {
  const auto& w = config_->policy.weights;
  return w.drf * drf_share(q, quota) + w.debt * fairness_debt(q);
}

double Scheduler::nominal_factor(QueueId q, const Job& job, const QuotaTree& quota) const {
  const double scale = config_->policy.fairness_within_nominal;
  if (scale >= 1) return 1;
  return nominal_fairness_factor(scale, quota, q, entitlement_[q], job.total_requests());
}

double Scheduler::key_of(const Job& job) const {
  return queue_key(job, config_->policy, priority_scale_) +
         deadline_term(job, config_->policy, deadline_cap_);
}

double Scheduler::score(JobId id, TimeNs now) const {
  auto it = pending_.find(id);
  if (it == pending_.end()) return 0;
  const auto& p = it->second;
  const auto& w = config_->policy.weights;
  const bool by_arrival = config_->policy.arrival_without_victims && nothing_preemptible();
  const double fairness =
      by_arrival ? 0 : fairness_penalty(p.queue, quota_) * nominal_factor(p.queue, p.job, quota_);
  const FairnessBounds bounds = fairness_bounds(*config_, priority_scale_);
  return w.priority * p.job.priority / priority_scale_ + age_term(p.job, config_->policy, now) +
         deadline_term(p.job, config_->policy, deadline_cap_) +
         bounded_fairness(fairness, bounds, now - p.job.submit_ns, fairness_window(p.job, bounds));
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

// A cycle's decisions into the state, as a pipeline: what the next cycle needs to know of this
// one; victims first (their capacity is what the preemptors were placed on), queued as of their
// eviction; then rejections; then admissions.
void Scheduler::apply(const CycleResult& result, TimeNs now) {
  advance_debt(now);
  budgets_.advance(now);
  note_cycle(result);
  for (const auto& pr : result.preempted) requeue_victim(pr, now);
  for (const auto& rj : result.rejected) drop_rejected(rj);
  refresh_workload();
  for (const auto& a : result.admitted) start_admitted(a, now);
}

// Bookkeeping for the next incremental cycle.
void Scheduler::note_cycle(const CycleResult& result) {
  need_full_ = result.free_epoch != free_epoch_;
  last_cycle_ns_ = result.now;
  kueue_settled_ = result.settled;
  last_without_victims_ = result.without_victims;
  last_strict_blockers_ = result.strict_blockers;
  last_held_by_ = result.held_by;
  last_held_root_ = result.held_root;
  last_held_queue_ = result.held_queue;
  last_reservations_.clear();
  if (result.reservation.job) last_reservations_.push_back(result.reservation);
  last_reservations_.insert(last_reservations_.end(), result.later_reservations.begin(),
                            result.later_reservations.end());
  // The older jobs' preemption attempts stay valid while the running set stays as they saw it.
  const bool changed = !result.admitted.empty() || !result.preempted.empty();
  preempt_stale_ = result.incremental ? (preempt_stale_ || changed) : changed;
  last_preempt_attempted_ = result.preempt_attempted;
  if (!result.incremental) last_preempt_capped_ = result.preempt_capped;
  // The submissions that cycle saw (sequence numbers up to its generation) are the oldest ones.
  const uint64_t first = submissions_ - new_jobs_.size();  // new_jobs_[0]'s, less one
  if (result.generation > first)
    new_jobs_.erase(new_jobs_.begin(),
                    new_jobs_.begin() + static_cast<std::ptrdiff_t>(std::min<uint64_t>(
                                            result.generation - first, new_jobs_.size())));
}

void Scheduler::requeue_victim(const Preemption& pr, TimeNs now) {
  if (!running_.count(pr.victim)) return;
  ++counters_.preemptions;
  counters_.lost_gpu_milli_ns += pr.lost_gpu_milli_ns;
  ++preempt_count_[pr.victim];
  // Its age restarts at the eviction (Kueue: requeuingStrategy timestamp Eviction), so work
  // evicted under overload does not come back aged or starving (docs/scheduling.md).
  back_to_pending(pr.victim, now);
  need_full_ = true;
}

void Scheduler::drop_rejected(const Rejection& rj) {
  if (!pending_.count(rj.job)) return;
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

void Scheduler::start_admitted(const Admission& a, TimeNs now) {
  auto it = pending_.find(a.job);
  if (it == pending_.end()) return;  // cancelled in between: nothing to apply
  RunningJob r{Job{}, a, now, now};
  erase_pending(a.job, &r.job);  // (moved: a copy of a Job is a dozen strings)
  // Fairness yield: a class threshold that moved may reorder older pending jobs.
  if (waits_.record(r.job.priority, now - r.job.submit_ns)) need_full_ = true;
  // It runs as admitted: with the fallback shape it got, as best-effort work if so.
  if (a.shape >= 0 && static_cast<size_t>(a.shape) < r.job.fallback.shapes.size()) {
    r.requested_pod_sets = r.job.pod_sets;
    r.job = reshaped(r.job, r.job.fallback.shapes[static_cast<size_t>(a.shape)]);
  }
  if (!a.pod_set_counts.empty()) {  // partial admission
    if (r.requested_pod_sets.empty()) r.requested_pod_sets = r.job.pod_sets;
    r.job = with_counts(r.job, a.pod_set_counts);
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

void Scheduler::refresh_workload() {
  // FGD scores placements against the expected workload: the shapes of pending and running
  // jobs. Refreshed on every call while the population is small, then whenever 5% (at least
  // 100) new submissions arrived since the last refresh, so the cost stays amortised O(1).
  if (!counts_workload_) return;
  const uint64_t step = std::max<uint64_t>(100, (pending_.size() + running_.size()) / 20);
  if (workload_refreshed_at_ != 0 && submissions_ - workload_refreshed_at_ < step &&
      submissions_ > 2 * step)
    return;
  workload_refreshed_at_ = std::max<uint64_t>(1, submissions_);
  placer_.set_workload_from_counts(workload_);
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
  // FGD's workload counts equal a count over every pending and running job.
  if (counts_workload_) {
    PodShapeCounts recount;
    for (const auto& [id, r] : running_) placer_.count_workload(r.job, 1, recount);
    for (const auto& [id, p] : pending_) placer_.count_workload(p.job, 1, recount);
    if (recount != workload_) {
      if (why) *why = "FGD's workload counts drifted from the pending and running jobs";
      return false;
    }
  }
  int64_t victims = 0;
  for (const auto& [id, p] : pending_) victims += may_be_victim(p);
  if (victims != pending_victims_) {
    if (why) *why = "the count of pending possible victims drifted";
    return false;
  }
  return true;
}

}  // namespace sluice
