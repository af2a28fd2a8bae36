#include "core/preempt/preemptor.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <tuple>

#include "core/order/score.h"
#include "core/place/pod_room.h"

namespace sluice {

namespace {

// Whether every resource of `req` that a resource group of queue q covers has a flavor in its
// group that does not limit it (not quota-managed there) or where holds(flavor, resource,
// amount): each resource on its own, as Kueue checks them.
template <class Holds>
bool each_resource_has_flavor(const ClusterQueue& cq, QueueId q, const QuotaTree& quota,
                              const ResourceVec& req, Holds&& holds) {
  for (int r = 0; r < kMaxResources; ++r) {
    if (req[r] <= 0) continue;
    const auto res = static_cast<ResourceId>(r);
    const int g = quota.group_of(q, res);
    if (g < 0) continue;
    const auto& flavors = cq.resource_groups[static_cast<size_t>(g)].flavors;
    if (std::none_of(flavors.begin(), flavors.end(), [&](const auto& fq) {
          return !quota.managed(q, fq.flavor, res) || holds(fq.flavor, res, req[r]);
        }))
      return false;
  }
  return true;
}

}  // namespace

Preemptor::Preemptor(const Config& config, const FlavorAssigner& assigner)
    : config_(config), assigner_(assigner) {}

bool Preemptor::under_nominal_now(const PendingRecord& p, const QuotaTree& quota) const {
  const QueueId q = p.queue;
  // A resource needs no preemption where some flavor holds it now; else some flavor of its
  // group must be below nominal.
  return each_resource_has_flavor(config_.cluster_queues[q], q, quota, p.job.total_requests(),
                                  [&](FlavorId f, ResourceId res, int64_t amount) {
                                    return amount <= quota.available(q, f, res) ||
                                           quota.usage(q, f, res) < quota.nominal(q, f, res);
                                  });
}

bool Preemptor::may_end_within_nominal(const PendingRecord& p, const std::vector<Candidate>& cands,
                                       const QuotaTree& quota) const {
  const QueueId q = p.queue;
  // Some flavor of its group must hold the request within nominal once every same-queue
  // candidate is gone (each resource on its own: weaker than all of them on one flavor, so
  // still only a necessary condition).
  return each_resource_has_flavor(config_.cluster_queues[q], q, quota, p.job.total_requests(),
                                  [&](FlavorId f, ResourceId res, int64_t amount) {
                                    int64_t used = quota.usage(q, f, res);
                                    for (const auto& c : cands)
                                      if (!c.other_queue)
                                        for (const auto& u : c.r->admission.usage)
                                          if (u.flavor == f && u.resource == res) used -= u.amount;
                                    return used + amount <= quota.nominal(q, f, res);
                                  });
}

namespace {

// Sorts the first n of v by `less` (a total order: the same prefix as a full sort) and drops
// the rest.
template <class Less>
void keep_first(std::vector<size_t>& v, size_t n, Less&& less) {
  const auto end = v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size()));
  if (end != v.end()) std::nth_element(v.begin(), end, v.end(), less);
  std::sort(v.begin(), end, less);
  v.erase(end, v.end());
}

std::vector<size_t> indexes(size_t n) {
  std::vector<size_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

}  // namespace

// One victim search (Preemptor::search) on the working state itself: the candidates taken so
// far (*chosen) are released from quota and alloc, and undo() commits them again (release and
// commit are exact inverses on integers): no copy of 5,000 nodes' state per attempt.
class Preemptor::VictimSearch {
 public:
  static constexpr size_t kMaxCandidates = 128;

  VictimSearch(const PendingRecord& p, const Tier& tier, const FlavorAssigner& assigner,
               const Config& config, QuotaTree& quota, ClusterAlloc& alloc,
               const std::vector<Candidate>& cands, Borrowing borrowing,
               std::vector<size_t>* chosen, FlavorAttempt& trial)
      : p_(p),
        tier_(tier),
        assigner_(assigner),
        quota_(quota),
        alloc_(alloc),
        cands_(cands),
        borrowing_(borrowing),
        chosen_(*chosen),
        trial_(trial),
        // With the deadline term on, the cost order looks at slack (cheaper()).
        by_slack_(config.policy.weights.deadline > 0 &&
                  config.policy.ordering != OrderingMode::kKueue) {}

  // 0. Necessary conditions, checked on the packed records without touching the cluster
  // state: evicting every candidate at once must free enough GPUs, in all (free GPUs of ready
  // nodes plus the candidates') and per node (PodRoom's bound). When either fails, no subset
  // can succeed either: the search fails as it would after trying them all.
  bool may_succeed() {
    int64_t gpu_need = 0, gpu_room = 0;
    for (const auto& ps : p_.job.pod_sets) gpu_need += ps.requests[kGpu] * ps.count;
    if (gpu_need > 0) {
      for (const auto& c : cands_) gpu_room += c.v->gpu_milli;
      if (gpu_room < gpu_need) gpu_room += alloc_.total_gpu_milli_free();
      if (gpu_room < gpu_need) return false;
    }
    room_.emplace(p_.job, alloc_);  // O(nodes): only past the cheap check above
    return room_->may_fit_if_released([&](auto&& add) { each_release(add); });
  }

  // Cost order: jobs of other ClusterQueues first (they run on quota their queue borrowed: as
  // Kueue, take lent quota back before evicting the preemptor's own queue's work), then lower
  // priority, then (with the deadline term on) no deadline or the most slack, then least work
  // lost, then most recently started, then id (a total order). Only the passes' prefixes are
  // ordered: most searches end at the necessary conditions above or within a few candidates,
  // so sorting every candidate is wasted.
  std::vector<size_t> cost_order() const {
    std::vector<size_t> order = indexes(cands_.size());
    keep_first(order, kMaxCandidates, [&](size_t a, size_t b) { return cheaper(a, b); });
    return order;
  }

  // Node by node, for when the cheapest candidates are scattered (their freed GPUs do not add
  // up on any node): the nodes that would free the most GPUs first, so that capacity comes
  // free where a pod can use it; within a node, cost order.
  std::vector<size_t> node_order() const;

  // Takes the candidates of `seq` in turn (skipping those whose queue no longer borrows) until
  // the preemptor fits; all put back when it does not.
  void run_pass(const std::vector<size_t>& seq) {
    for (size_t i = 0; i < seq.size() && !fits_; ++i) {
      const Candidate& c = cands_[seq[i]];
      if (!still_borrowing(c)) continue;
      release_in(*c.r, quota_, alloc_);
      room_->touch(c.r->admission.placement);
      chosen_.push_back(seq[i]);
      if (room_->may_fit()) fits_ = admit();
    }
    if (!fits_) undo();
  }
  bool fits() const { return fits_; }

  // Minimal set: puts back every victim (most expensive first) the preemptor can do without.
  void minimize() {
    for (size_t k = chosen_.size(); k-- > 0 && chosen_.size() > 1;) {
      const RunningRecord& r = *cands_[chosen_[k]].r;
      commit_in(r, quota_, alloc_);
      room_->touch(r.admission.placement);
      if (room_->may_fit() && admit()) {
        chosen_.erase(chosen_.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        release_in(r, quota_, alloc_);
        room_->touch(r.admission.placement);
      }
    }
  }

  // The preemptor's admission into trial, on the state as it is now.
  bool admit() {
    trial_.memo.clear();
    return assigner_.assign(p_.job, p_.queue, quota_, alloc_, trial_, tier_.open,
                            tier_.preferred) &&
           !(trial_.admission.borrowing && !may_borrow());
  }

  void undo() {
    for (size_t k = chosen_.size(); k-- > 0;) {
      commit_in(*cands_[chosen_[k]].r, quota_, alloc_);
      room_->touch(cands_[chosen_[k]].r->admission.placement);
    }
    chosen_.clear();
  }

 private:
  // add(node, GPU milli) for every candidate's pods: from the packed record for one pod.
  template <class Add>
  void each_release(Add&& add) const {
    for (const auto& c : cands_) {
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
  }

  // Whether the preemptor may still borrow: never (kForbidden), always (kAllowed), or until a
  // victim of another queue above the borrowWithinCohort threshold is among the chosen.
  bool may_borrow() const {
    if (borrowing_ != Borrowing::kBelowThreshold) return borrowing_ == Borrowing::kAllowed;
    for (size_t i : chosen_)
      if (cands_[i].other_queue && !cands_[i].borrow_victim) return false;
    return true;
  }

  // A victim of another queue helps only while that queue still borrows (Kueue skips it once
  // earlier evictions brought the queue back within its nominal quota).
  bool still_borrowing(const Candidate& c) const {
    if (!c.other_queue) return true;
    const QueueId vq = c.r->admission.queue;
    for (const auto& u : c.r->admission.usage)
      if (quota_.usage(vq, u.flavor, u.resource) > quota_.nominal(vq, u.flavor, u.resource))
        return true;
    return false;
  }

  bool cheaper(size_t a, size_t b) const {
    const Candidate& x = cands_[a];
    const Candidate& y = cands_[b];
    if (x.other_queue != y.other_queue) return x.other_queue;
    if (x.v->priority != y.v->priority) return x.v->priority < y.v->priority;
    if (by_slack_ && x.v->latest_start_ns != y.v->latest_start_ns)
      return x.v->latest_start_ns > y.v->latest_start_ns;
    if (x.lost != y.lost) return x.lost < y.lost;
    if (x.v->start_ns != y.v->start_ns) return x.v->start_ns > y.v->start_ns;
    return x.v->id < y.v->id;
  }

  const PendingRecord& p_;
  const Tier& tier_;
  const FlavorAssigner& assigner_;
  QuotaTree& quota_;
  ClusterAlloc& alloc_;
  const std::vector<Candidate>& cands_;
  const Borrowing borrowing_;
  std::vector<size_t>& chosen_;
  FlavorAttempt& trial_;
  std::optional<PodRoom> room_;  // from may_succeed() on
  const bool by_slack_;
  bool fits_ = false;
};

std::vector<size_t> Preemptor::VictimSearch::node_order() const {
  // GPU milli a node would have free after all its candidates' evictions.
  std::vector<int64_t> gain(static_cast<size_t>(alloc_.node_count()), -1);
  std::vector<NodeId> touched;
  each_release([&](NodeId node, int64_t milli) {
    auto& g = gain[static_cast<size_t>(node)];
    if (g < 0) {
      g = 0;
      touched.push_back(node);
      for (int k = 0; k < alloc_.gpu_count(node); ++k) g += alloc_.gpu_free_milli(node, k);
    }
    g += milli;
  });
  std::vector<std::pair<int64_t, NodeId>> nodes;
  for (NodeId n : touched) nodes.push_back({-gain[static_cast<size_t>(n)], n});
  std::sort(nodes.begin(), nodes.end());
  std::vector<size_t> rank(static_cast<size_t>(alloc_.node_count()), nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) rank[static_cast<size_t>(nodes[i].second)] = i;
  // Each candidate's best node rank, then cost order within a node.
  std::vector<size_t> first_node(cands_.size());
  for (size_t i = 0; i < cands_.size(); ++i) {
    size_t best = nodes.size();
    if (cands_[i].v->node >= 0)
      best = rank[static_cast<size_t>(cands_[i].v->node)];
    else
      for (const auto& pod : cands_[i].r->admission.placement.pods)
        best = std::min(best, rank[static_cast<size_t>(pod.node)]);
    first_node[i] = best;
  }
  std::vector<size_t> by_node = indexes(cands_.size());
  keep_first(by_node, 2 * kMaxCandidates, [&](size_t a, size_t b) {
    return first_node[a] != first_node[b] ? first_node[a] < first_node[b] : cheaper(a, b);
  });
  return by_node;
}

// Pass one takes candidates in cost order; when that fails, pass two takes them node by node.
// The placer decides (gang and topology constraints honoured); no memo: capacity grows here.
bool Preemptor::search(const PendingRecord& p, const Tier& tier, QuotaTree& quota,
                       ClusterAlloc& alloc, const std::vector<Candidate>& cands,
                       Borrowing borrowing, std::vector<size_t>* chosen,
                       FlavorAttempt& trial) const {
  chosen->clear();
  VictimSearch s(p, tier, assigner_, config_, quota, alloc, cands, borrowing, chosen, trial);
  if (!s.may_succeed()) return false;
  s.run_pass(s.cost_order());
  if (!s.fits() && cands.size() > 1) s.run_pass(s.node_order());
  if (!s.fits()) return false;
  s.minimize();
  if (s.admit()) return true;
  s.undo();  // cannot happen; be safe
  return false;
}

bool Preemptor::fits_nominal(const PendingRecord& p, const QuotaTree& quota) const {
  // Per pod set and flavor, as Kueue's flavor assigner checks it (a launcher on one flavor and
  // workers on another may each fit their flavor's nominal quota when the job fits neither).
  return assigner_.fits_nominal_per_pod_set(p.job, p.queue, quota);
}

// Which searches run, in Kueue's order (pkg/scheduler/preemption, GetTargets):
//   - only same-queue candidates: (c) below;
//   - fair sharing: its own search (fair_search), and no other;
//   - borrowWithinCohort: one search over the same-queue candidates and the other queues' (only
//     those at or below the threshold when the queue is at or above its nominal quota in what
//     needs preemption), borrowing allowed until a victim above the threshold is taken;
//   - else (a) all candidates, the preemptor ending within its nominal quota (skipped when the
//     queue is at or above it, or when even evicting every same-queue candidate leaves the
//     preemptor borrowing), then (c) same-queue candidates only, borrowing allowed.
bool Preemptor::choose(const PendingRecord& p, const Tier& tier, QuotaTree& quota,
                       ClusterAlloc& alloc, std::vector<Candidate>& cands,
                       bool within_nominal_possible, std::vector<size_t>* chosen,
                       FlavorAttempt& trial, bool* while_borrowing) const {
  const auto& pc = config_.cluster_queues[p.queue].preemption;
  const bool borrow = pc.reclaim_within_cohort != ReclaimPolicy::kNever &&
                      pc.borrow_within_cohort != BorrowWithinCohortPolicy::kNever;
  const bool others =
      std::any_of(cands.begin(), cands.end(), [](const Candidate& c) { return c.other_queue; });
  if (others && config_.policy.fair_sharing.enable)
    return fair_search(p, tier, quota, alloc, cands, chosen, trial);
  if (others && borrow) {
    if (!under_nominal_now(p, quota))
      std::erase_if(cands, [](const Candidate& c) { return c.other_queue && !c.borrow_victim; });
    if (!search(p, tier, quota, alloc, cands, Borrowing::kBelowThreshold, chosen, trial))
      return false;
    *while_borrowing = trial.admission.borrowing;
    return true;
  }
  if (others && within_nominal_possible &&
      search(p, tier, quota, alloc, cands, Borrowing::kForbidden, chosen, trial))
    return true;
  std::erase_if(cands, [](const Candidate& c) { return c.other_queue; });
  return !cands.empty() && search(p, tier, quota, alloc, cands, Borrowing::kAllowed, chosen, trial);
}

// preempt()'s step 1: the candidates, the running jobs preemptor p may evict. Preemptible (or
// admitted as best-effort), past their minimum runtime, under the preemption cap, not starving
// on return (below), and allowed by the preemptor's queue policy (Kueue's meanings). Only the
// queues the preemptor may take from are scanned (VictimIndex).
class Preemptor::CandidateScan {
 public:
  // `borrow`: the preemptor's queue may borrow within its cohort (borrowWithinCohort).
  CandidateScan(const Config& config, const PendingRecord& p, const QuotaTree& quota, TimeNs now,
                const std::set<JobId>& evicted, bool borrow)
      : config_(config),
        p_(p),
        pc_(config.cluster_queues[p.queue].preemption),
        quota_(quota),
        now_(now),
        evicted_(evicted),
        borrow_(borrow),
        preemptor_starving_(is_starving(p.job, config.policy, now)),
        aging_(config.policy.ordering != OrderingMode::kKueue &&
               config.policy.aging_horizon_ns > 0) {}

  // The preemptor's own queue. (No job of it can be a victim when none has a lower priority,
  // or an equal one under LowerOrNewerEqualPriority: the scan is skipped.)
  void own_queue(const VictimIndex& victims) {
    const QueueId q = p_.queue;
    const int32_t lowest = victims.min_priority(q);
    if (!(lowest < p_.job.priority ||
          (lowest == p_.job.priority &&
           pc_.within_cluster_queue == WithinQueuePolicy::kLowerOrNewerEqualPriority)))
      return;
    cands.reserve(victims.queue(q).size());
    for (const auto& v : victims.queue(q)) consider(v, config_.cluster_queues[q], false);
  }

  // The other queues of its cohort that use more than their nominal quota of something (else
  // none of their jobs is borrowing, and reclaim has nothing to take there).
  void other_queues(const VictimIndex& victims) {
    const QueueId q = p_.queue;
    const int root = quota_.root(q);
    for (QueueId vq = 0; vq < victims.num_queues(); ++vq) {
      if (vq == q || vq >= quota_.num_queues() || quota_.root(vq) != root) continue;
      if (victims.queue(vq).empty() || !over_nominal(vq)) continue;
      for (const auto& v : victims.queue(vq)) consider(v, config_.cluster_queues[vq], true);
    }
  }

  std::vector<Candidate> cands;

 private:
  // is_starving() of a job submitted at `submit_ns`, without a Job at hand.
  bool starving_on_return(const VictimRecord& v) const {
    return aging_ && now_ - v.submit_ns >= config_.policy.aging_horizon_ns;
  }

  // Does queue vq use more than its nominal quota of anything? Sets over_bits_ for its pairs.
  bool over_nominal(QueueId vq) {
    bool over = false;
    over_bits_ = 0;
    for (FlavorId f = 0; f < quota_.num_flavors(); ++f)
      for (int res = 0; res < kMaxResources; ++res) {
        const auto r = static_cast<ResourceId>(res);
        if (quota_.usage(vq, f, r) <= quota_.nominal(vq, f, r)) continue;
        over = true;
        if (const int bit = usage_bit(f, r); bit >= 0) over_bits_ |= uint64_t{1} << bit;
      }
    return over;
  }

  // Only borrowed quota is taken from another queue: some pair of the victim's usage is over
  // its queue's nominal quota (over_bits_: those of the queue being scanned).
  bool borrowing(const VictimRecord& v) const {
    if (v.usage_bits != VictimRecord::kUsageInexact) return (v.usage_bits & over_bits_) != 0;
    const QueueId vq = v.r->admission.queue;
    for (const auto& u : v.r->admission.usage)
      if (quota_.usage(vq, u.flavor, u.resource) > quota_.nominal(vq, u.flavor, u.resource))
        return true;
    return false;
  }

  void consider(const VictimRecord& v, const ClusterQueue& vcq, bool other) {
    // (Eligibility that is fixed while a job runs was checked when it was listed.)
    if (now_ - v.start_ns < vcq.min_runtime_ns) return;
    // A victim queued (submitted or requeued) an aging horizon ago already waited out a
    // horizon: evicting it would restart its age (it is queued as of its eviction) and throw
    // its work away, pushing it past the starvation bound again (issue 19).
    if (starving_on_return(v) && !(preemptor_starving_ && std::tie(p_.job.submit_ns, p_.job.id) <
                                                              std::tie(v.submit_ns, v.id)))
      return;
    const bool lower = v.priority < p_.job.priority;
    Candidate c;
    if (!other) {
      const bool newer_equal = v.priority == p_.job.priority &&
                               std::tie(v.submit_ns, v.id) > std::tie(p_.job.submit_ns, p_.job.id);
      if (!lower && !(pc_.within_cluster_queue == WithinQueuePolicy::kLowerOrNewerEqualPriority &&
                      newer_equal))
        return;
      c.why = PreemptReason::kWithinClusterQueue;
    } else {
      // Reclaim: LowerPriority takes only lower-priority work back, Any takes any.
      // borrowWithinCohort: strictly lower priority, and at most maxPriorityThreshold.
      c.borrow_victim = borrow_ && lower &&
                        (!pc_.max_priority_threshold || v.priority <= *pc_.max_priority_threshold);
      if (pc_.reclaim_within_cohort == ReclaimPolicy::kLowerPriority && !lower && !c.borrow_victim)
        return;
      if (!borrowing(v)) return;
      c.why = PreemptReason::kReclaimWithinCohort;
    }
    if (!evicted_.empty() && evicted_.count(v.id)) return;
    c.r = v.r;
    c.v = &v;
    c.other_queue = other;
    c.lost = v.gpu_milli * std::max<TimeNs>(0, now_ - v.checkpoint_ns);
    cands.push_back(c);
  }

  const Config& config_;
  const PendingRecord& p_;
  const PreemptionConfig& pc_;
  const QuotaTree& quota_;
  const TimeNs now_;
  const std::set<JobId>& evicted_;
  const bool borrow_;
  const bool preemptor_starving_;
  const bool aging_;
  uint64_t over_bits_ = 0;  // usage_bit()s of the scanned queue's pairs over nominal
};

bool Preemptor::preempt(const PendingRecord& p, const Tier& tier, const VictimIndex& victims,
                        QuotaTree& quota, ClusterAlloc& alloc, TimeNs now, std::set<JobId>& evicted,
                        FlavorAttempt& at, std::vector<Preemption>& out) const {
  const auto& pc = config_.cluster_queues[p.queue].preemption;
  const bool within = pc.within_cluster_queue != WithinQueuePolicy::kNever;
  const bool reclaim = pc.reclaim_within_cohort != ReclaimPolicy::kNever;
  const bool borrow = reclaim && pc.borrow_within_cohort != BorrowWithinCohortPolicy::kNever;
  if (!within && !reclaim) return false;
  // Kueue (ordering: kueue): a request that does not fit now may preempt only within the
  // queue's nominal quota, unless borrowWithinCohort (or fair sharing) lets it borrow.
  const bool fair = config_.policy.fair_sharing.enable && reclaim;
  if (config_.policy.ordering == OrderingMode::kKueue && !borrow && !fair &&
      !fits_nominal(p, quota))
    return false;

  // 1. Candidates. The other queues' jobs are needed by search (a), which runs only when the
  // preemptor's queue is below its nominal quota now in what needs preemption (Kueue's rule: a
  // queue already above it only evicts its own work, borrowing) and evicting every same-queue
  // candidate could bring the preemptor within its nominal quota (checked on those candidates
  // alone), and by the borrowWithinCohort and fair-sharing searches.
  CandidateScan scan(config_, p, quota, now, evicted, borrow);
  if (within) scan.own_queue(victims);
  const bool within_nominal_possible =
      reclaim && under_nominal_now(p, quota) && may_end_within_nominal(p, scan.cands, quota);
  if (within_nominal_possible || borrow || fair) scan.other_queues(victims);
  std::vector<Candidate>& cands = scan.cands;
  if (cands.empty()) return false;
  // 2. The searches, as Kueue's classical (or fair-sharing) preemption decides them.
  FlavorAttempt trial;
  std::vector<size_t> chosen;
  bool while_borrowing = false;
  if (!choose(p, tier, quota, alloc, cands, within_nominal_possible, &chosen, trial,
              &while_borrowing))
    return false;

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

}  // namespace sluice
