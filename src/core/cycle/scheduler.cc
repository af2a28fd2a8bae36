#include "core/cycle/scheduler.h"

#include <algorithm>
#include <cstring>
#include <functional>

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
  debt_.resize(nq);
  pending_per_local_queue_.assign(config_->local_queues.size(), 0);
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
  by_key_[p.queue].insert({-p.key, p.job.submit_ns, id});
  by_submit_[p.queue].insert({p.job.submit_ns, id});
  if (auto lq = config_->find_local_queue(p.job.namespace_, p.job.queue))
    ++pending_per_local_queue_[*lq];
  pending_.emplace(id, std::move(p));
}

void Scheduler::erase_pending(JobId id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  const auto& p = it->second;
  interactive_deadlines_.erase({interactive_deadline(p.job), id});
  by_key_[p.queue].erase({-p.key, p.job.submit_ns, id});
  by_submit_[p.queue].erase({p.job.submit_ns, id});
  if (auto lq = config_->find_local_queue(p.job.namespace_, p.job.queue))
    --pending_per_local_queue_[*lq];
  pending_.erase(it);
}

void Scheduler::release_running(const RunningJob& r) {
  release_in(r, quota_, alloc_);
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
  release_running(it->second);
  PendingJob p{std::move(it->second.job), it->second.admission.queue, 0};
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
  commit_in(r, quota_, alloc_);
  if (preemptions > 0) preempt_count_[r.job.id] = preemptions;
  running_.emplace(r.job.id, std::move(r));
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

bool Scheduler::try_preempt(const PendingJob& p, QuotaTree& quota, ClusterAlloc& alloc, TimeNs now,
                            std::set<JobId>& evicted, Attempt& at,
                            std::vector<Preemption>& out) const {
  const QueueId q = p.queue;
  const auto& pc = config_->cluster_queues[q].preemption;
  const bool within = pc.within_cluster_queue != WithinQueuePolicy::kNever;
  const bool reclaim = pc.reclaim_within_cohort != ReclaimPolicy::kNever;
  if (!within && !reclaim) return false;
  const auto& policy = config_->policy;

  // 1. Candidates: preemptible, past their minimum runtime, under the preemption cap, and
  // allowed by the preemptor's queue policy (Kueue's meanings).
  struct Candidate {
    const RunningJob* r;
    PreemptReason why;
    int64_t lost;  // GPU-milli-ns since the last checkpoint
  };
  std::vector<Candidate> cands;
  const int root = quota.root(q);
  for (const auto& [id, r] : running_) {
    if (evicted.count(id)) continue;
    const QueueId vq = r.admission.queue;
    const auto& vcq = config_->cluster_queues[vq];
    if (!r.job.preemptible || !vcq.preemptible) continue;
    if (now - r.start_ns < vcq.min_runtime_ns) continue;
    if (preemption_count(id) >= policy.max_preemptions_per_job) continue;
    PreemptReason why;
    if (vq == q) {
      if (!within) continue;
      const bool lower = r.job.priority < p.job.priority;
      const bool newer_equal =
          r.job.priority == p.job.priority &&
          std::tie(r.job.submit_ns, r.job.id) > std::tie(p.job.submit_ns, p.job.id);
      if (!lower && !(pc.within_cluster_queue == WithinQueuePolicy::kLowerOrNewerEqualPriority &&
                      newer_equal))
        continue;
      why = PreemptReason::kWithinClusterQueue;
    } else {
      if (!reclaim || quota.root(vq) != root || vq >= quota.num_queues()) continue;
      if (pc.reclaim_within_cohort == ReclaimPolicy::kLowerPriority &&
          r.job.priority >= p.job.priority)
        continue;
      bool borrowing = false;  // only borrowed quota is reclaimed
      for (const auto& u : r.admission.usage)
        if (quota.usage(vq, u.flavor, u.resource) > quota.nominal(vq, u.flavor, u.resource))
          borrowing = true;
      if (!borrowing) continue;
      why = PreemptReason::kReclaimWithinCohort;
    }
    const int64_t gpu = r.job.total_requests()[kGpu];
    cands.push_back({&r, why, gpu * std::max<TimeNs>(0, now - r.checkpoint_ns)});
  }
  if (cands.empty()) return false;
  // 2. Cheapest first: lower priority, then least work lost, then most recently started.
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    if (a.r->job.priority != b.r->job.priority) return a.r->job.priority < b.r->job.priority;
    if (a.lost != b.lost) return a.lost < b.lost;
    if (a.r->start_ns != b.r->start_ns) return a.r->start_ns > b.r->start_ns;
    return a.r->job.id < b.r->job.id;
  });
  // 3. Evict on copies until the preemptor fits where it will run (the placer decides, so gang
  // and topology constraints are honoured); no memo: capacity grows here. Pass one takes
  // candidates in cost order; when the cheapest ones are scattered (their freed GPUs do not
  // add up on any node), pass two takes them node by node, the nodes that would free the most
  // GPUs first, so that capacity comes free where a pod can use it.
  constexpr size_t kMaxCandidates = 128;
  std::vector<size_t> order;
  for (size_t i = 0; i < std::min(cands.size(), kMaxCandidates); ++i) order.push_back(i);
  QuotaTree q2 = quota;
  ClusterAlloc a2 = alloc;
  Attempt trial;
  std::vector<size_t> chosen;
  bool fits = false;
  auto run_pass = [&](const std::vector<size_t>& seq) {
    q2 = quota;
    a2 = alloc;
    chosen.clear();
    for (size_t i = 0; i < seq.size() && !fits; ++i) {
      release_in(*cands[seq[i]].r, q2, a2);
      chosen.push_back(seq[i]);
      trial.memo.clear();
      fits = try_admit(p, q2, a2, trial);
    }
  };
  run_pass(order);
  if (!fits && cands.size() > 1) {
    std::map<NodeId, int64_t> gain;  // GPU milli a node would have free after its evictions
    for (const auto& c : cands)
      for (const auto& pod : c.r->admission.placement.pods)
        for (const auto& g : pod.gpus) gain[pod.node] += g.milli;
    for (auto& [n, g] : gain)
      for (int k = 0; k < alloc.gpu_count(n); ++k) g += alloc.gpu_free_milli(n, k);
    std::vector<std::pair<int64_t, NodeId>> nodes;
    for (const auto& [n, g] : gain) nodes.push_back({-g, n});
    std::sort(nodes.begin(), nodes.end());
    std::map<NodeId, size_t> rank;
    for (size_t i = 0; i < nodes.size(); ++i) rank[nodes[i].second] = i;
    std::vector<size_t> by_node(cands.size());
    for (size_t i = 0; i < cands.size(); ++i) by_node[i] = i;
    auto first_node = [&](size_t i) {
      size_t best = nodes.size();
      for (const auto& pod : cands[i].r->admission.placement.pods)
        best = std::min(best, rank[pod.node]);
      return best;
    };
    std::stable_sort(by_node.begin(), by_node.end(),
                     [&](size_t a, size_t b) { return first_node(a) < first_node(b); });
    if (by_node.size() > 2 * kMaxCandidates) by_node.resize(2 * kMaxCandidates);
    run_pass(by_node);
  }
  if (!fits) return false;
  // 4. Minimal set: put back every victim (most expensive first) the preemptor can do without.
  for (size_t k = chosen.size(); k-- > 0 && chosen.size() > 1;) {
    commit_in(*cands[chosen[k]].r, q2, a2);
    trial.memo.clear();
    if (try_admit(p, q2, a2, trial)) {
      chosen.erase(chosen.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      release_in(*cands[chosen[k]].r, q2, a2);
    }
  }
  trial.memo.clear();
  if (!try_admit(p, q2, a2, trial)) return false;  // cannot happen; be safe
  // Reclaim only takes back lent quota: the preemptor must then be within its nominal quota.
  bool reclaims = false;
  for (size_t i : chosen) reclaims |= cands[i].why == PreemptReason::kReclaimWithinCohort;
  if (reclaims && trial.admission.borrowing) return false;

  // 5. Commit the evictions to the cycle's working state; the caller commits the admission.
  for (size_t i : chosen) {
    const auto& c = cands[i];
    release_in(*c.r, quota, alloc);
    evicted.insert(c.r->job.id);
    out.push_back({c.r->job.id, p.job.id, c.why, c.r->job.checkpoint_grace_ns, c.lost});
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
  std::vector<End> ends;
  ends.reserve(running_.size() + admitted_now.size());
  for (const auto& [id, r] : running_)
    ends.push_back(
        {r.start_ns + walltime(r.job, r.admission.queue), id, &r.job, &r.admission.placement});
  for (const auto& a : admitted_now) {
    const auto& pj = pending_.at(a.job);
    ends.push_back({now + walltime(pj.job, pj.queue), a.job, &pj.job, &a.placement});
  }
  std::sort(ends.begin(), ends.end(),
            [](const End& a, const End& b) { return std::tie(a.at, a.id) < std::tie(b.at, b.id); });
  const NodeSet& nodes = nodes_for(flavors, scratch);
  // Placement after the first k jobs ended; monotone in k, so binary search (log n probes).
  auto probe = [&](size_t k) -> std::optional<Placement> {
    ClusterAlloc trial = alloc;
    for (size_t i = 0; i < k; ++i) trial.release(*ends[i].job, *ends[i].placement);
    auto placed = placer_.place(p.job, nodes, trial);
    if (auto* pl = std::get_if<Placement>(&placed)) return std::move(*pl);
    return std::nullopt;
  };
  Reservation res;
  auto full = probe(ends.size());
  if (!full) return res;            // does not fit even when everything ends: nothing to reserve
  size_t lo = 0, hi = ends.size();  // probe(hi) fits; find the smallest such k
  std::optional<Placement> best = std::move(full);
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (auto pl = probe(mid)) {
      hi = mid;
      best = std::move(pl);
    } else {
      lo = mid + 1;
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
  for (const auto& [negkey, submit, id] : by_key_[q])
    if (!is_starving(pending_.at(id).job, policy, now)) out.push_back(id);
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

bool Scheduler::try_admit(const PendingJob& p, const QuotaTree& quota, const ClusterAlloc& alloc,
                          Attempt& at) const {
  const Job& job = p.job;
  const QueueId q = p.queue;
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
    for (const auto& fq : group.flavors) {
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

CycleResult Scheduler::run_cycle(TimeNs now, CycleMode mode) const {
  CycleResult result;
  result.now = now;
  result.generation = submissions_;
  result.free_epoch = free_epoch_;
  const auto& policy = config_->policy;
  const int nq = static_cast<int>(by_key_.size());
  QuotaTree quota = quota_;
  ClusterAlloc alloc = alloc_;
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
  // Preemption breaks the argument (an older job may evict work that passed its minimum
  // runtime since, or that a bounded number of attempts did not reach): queues that preempt
  // and have older pending work get a full cycle.
  for (int q = 0; q < nq && incremental; ++q) {
    const auto& pc = config_->cluster_queues[q].preemption;
    if ((pc.within_cluster_queue != WithinQueuePolicy::kNever ||
         pc.reclaim_within_cohort != ReclaimPolicy::kNever) &&
        by_key_[q].size() > 0)
      incremental = false;
  }
  if (incremental && policy.aging_horizon_ns > 0) {
    const TimeNs was = last_cycle_ns_ - policy.aging_horizon_ns;
    const TimeNs is = now - policy.aging_horizon_ns;
    for (int q = 0; q < nq && incremental; ++q) {
      auto it = by_submit_[q].lower_bound({was + 1, 0});
      if (it != by_submit_[q].end() && it->first <= is) incremental = false;
    }
  }
  result.incremental = incremental;
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
  }

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
      const PendingJob& p = pending_.at(std::get<2>(*c.rest));
      if (!is_starving(p.job, policy, now)) return &p;
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
  auto refresh = [&](int q) { dyn[q] = -w.drf * drf_share(q, quota) - w.debt * fairness_debt(q); };
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

  constexpr int kMaxPreemptionAttempts = 16;
  int preempt_attempts = 0;
  std::vector<bool> preempt_tried(nq, false);
  std::set<JobId> evicted;

  std::vector<const PendingJob*> heads(nq, nullptr);
  for (int q = 0; q < nq; ++q) heads[q] = head(q);
  while (true) {
    // 1. Pick the best head across queues: starving first (oldest), then the highest score.
    int best = -1;
    bool best_starving = false;
    for (int q = 0; q < nq; ++q) {
      const PendingJob* p = heads[q];
      if (!p) continue;
      const bool st = is_starving(p->job, policy, now);
      if (best < 0) {
        best = q, best_starving = st;
        continue;
      }
      const PendingJob* b = heads[best];
      bool better;
      if (st != best_starving) {
        better = st;
      } else if (st) {
        better = std::tie(p->job.submit_ns, p->job.id) < std::tie(b->job.submit_ns, b->job.id);
      } else {
        const double sp = p->key + dyn[q], sb = b->key + dyn[best];
        better = sp != sb ? sp > sb
                          : std::tie(p->job.submit_ns, p->job.id) <
                                std::tie(b->job.submit_ns, b->job.id);
      }
      if (better) best = q, best_starving = st;
    }
    if (best < 0) break;
    const int q = best;
    const PendingJob& p = *heads[q];
    advance(q);
    heads[q] = head(q);

    PendingDecision pd;
    pd.job = p.job.id;
    pd.starving = best_starving;
    pd.reason.queue = q;
    const int root = quota.root(q);
    // 2. Held back: behind a StrictFIFO head, or behind a starving job's claim.
    const auto blocker =
        cur[q].strict_blocker ? pending_.find(cur[q].strict_blocker) : pending_.end();
    if (blocker != pending_.end() && !ranks_before(p, blocker->second)) {
      pd.reason.code = PendingCode::kStrictFifoBlocked;
      pd.reason.blocker = cur[q].strict_blocker;
      result.pending.push_back(std::move(pd));
      continue;
    }
    if (held_by || held_root[root] || held_queue[q]) {
      pd.reason.code = PendingCode::kHeldForStarving;
      pd.reason.blocker = held_by ? held_by : held_root[root] ? held_root[root] : held_queue[q];
      result.pending.push_back(std::move(pd));
      continue;
    }
    // 3. Try it; when it does not fit, its queue's preemption policy may evict running work
    // (at most one attempt per queue and kMaxPreemptionAttempts per cycle bound the cost).
    ++result.evaluated;
    bool admitted = try_admit(p, quota, alloc, attempt);
    bool via_preemption = false;
    if (!admitted && attempt.reason.code != PendingCode::kNeverFitsQuota &&
        preempt_attempts < kMaxPreemptionAttempts && !preempt_tried[q]) {
      preempt_tried[q] = true;
      ++preempt_attempts;
      PendingReason keep = attempt.reason;
      admitted = try_preempt(p, quota, alloc, now, evicted, attempt, result.preempted);
      via_preemption = admitted;
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
      std::vector<NodeId> others;
      for (NodeId n : nodes_for(attempt.admission.flavors, attempt.scratch).ids())
        if (!std::binary_search(reservation.nodes.begin(), reservation.nodes.end(), n))
          others.push_back(n);
      auto placed = placer_.place(
          p.job, NodeSet(static_cast<int32_t>(config_->cluster.nodes.size()), std::move(others)),
          alloc);
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
      Admission& a = attempt.admission;
      alloc.commit(p.job, a.placement);
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
      reservation =
          reserve(p, attempt.failed_flavors, alloc, result.admitted, now, attempt.scratch);
    // A starving job that could fit some day holds capacity for itself.
    if (best_starving && pd.reason.code != PendingCode::kNeverFitsQuota) {
      if (pd.reason.code != PendingCode::kPlacement) {
        // Quota: if the queue can borrow, other queues of its cohort tree must stop taking
        // what it needs; if it cannot, only its own queue's usage matters.
        if (pd.reason.flavor >= 0 && !quota.can_borrow(q, pd.reason.flavor, pd.reason.resource))
          held_queue[q] = p.job.id;
        else
          held_root[root] = p.job.id;
      } else if (std::holds_alternative<Placement>(placer_.place(
                     p.job, nodes_for(attempt.failed_flavors, attempt.scratch), empty_alloc_))) {
        held_by = p.job.id;  // fits an idle cluster: worth draining capacity for
      }
    }
    result.pending.push_back(std::move(pd));
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
      if (expired.count(pd.job)) {
        result.rejected.push_back({pd.job, std::move(pd.reason)});
      } else {
        keep.push_back(std::move(pd));
      }
    }
    result.pending = std::move(keep);
  }
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
  // Bookkeeping for the next incremental cycle.
  need_full_ = result.free_epoch != free_epoch_;
  last_cycle_ns_ = result.now;
  last_strict_blockers_ = result.strict_blockers;
  last_held_by_ = result.held_by;
  last_held_root_ = result.held_root;
  last_held_queue_ = result.held_queue;
  last_reservation_ = result.reservation;
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
    PendingJob back{std::move(it->second.job), it->second.admission.queue, 0};
    running_.erase(it);
    back.key = queue_key(back.job, config_->policy, priority_scale_);
    insert_pending(std::move(back));
    need_full_ = true;
  }
  for (const auto& rj : result.rejected) {
    if (!pending_.count(rj.job)) continue;
    erase_pending(rj.job);
    preempt_count_.erase(rj.job);
    ++counters_.rejected_interactive;
  }
  refresh_workload();
  for (const auto& a : result.admitted) {
    auto it = pending_.find(a.job);
    if (it == pending_.end()) continue;  // cancelled in between: nothing to apply
    RunningJob r{it->second.job, a, now, now};
    erase_pending(a.job);
    commit_in(r, quota_, alloc_);
    running_.emplace(a.job, std::move(r));
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
    for (const auto& k : q) jobs.push_back(&pending_.at(std::get<2>(k)).job);
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
