#include "core/flavor/assigner.h"

#include <algorithm>

#include "core/model/job_shape.h"

namespace sluice {

namespace {

bool quota_optional(ResourceId r) {
  // CPU and memory a queue does not cover are not quota-managed; GPUs, MIG slices and other
  // extended resources must be covered by the queue (as in Kueue).
  return r == kCpu || r == kMemory;
}

// Whether every requested resource of the group is at most flavor f's nominal quota for queue q
// (preemption could then make room without borrowing).
bool within_nominal(const ResourceVec& req, QueueId q, FlavorId f, const ResourceGroup& group,
                    const QuotaTree& quota) {
  for (ResourceId r : group.covered)
    if (req[r] > 0 && quota.managed(q, f, r) && req[r] > quota.nominal(q, f, r)) return false;
  return true;
}

// Where the flavor search stops for preemption (with stop_at_preempt, for a queue that may
// preempt): whenCanPreempt: MayStopSearch at the first flavor it could preempt on; preference
// PreemptionOverBorrowing (Kueue's isPreferred; acted on with ordering: kueue only, sluice's
// own order prefers borrowing) at a flavor where preemption keeps the job within nominal quota
// (borrowing level 0) when only borrowing flavors fit.
struct PreemptStops {
  bool on_preempt = false;
  bool preempt_first = false;
};
PreemptStops preempt_stops(const ClusterQueue& cq, OrderingMode ordering, bool stop_at_preempt) {
  const FlavorFungibility& fung = cq.flavor_fungibility;
  const bool may =
      stop_at_preempt && (cq.preemption.within_cluster_queue != WithinQueuePolicy::kNever ||
                          cq.preemption.reclaim_within_cohort != ReclaimPolicy::kNever);
  return {may && fung.when_can_preempt == FungibilityPolicy::kMayStopSearch,
          may && fung.when_can_borrow == FungibilityPolicy::kTryNextFlavor &&
              fung.preference == FungibilityPreference::kPreemptionOverBorrowing &&
              ordering == OrderingMode::kKueue};
}

}  // namespace

FlavorAssigner::FlavorAssigner(const Config& config, const Placer& placer)
    : config_(config), placer_(placer), all_nodes_(select_nodes(config.cluster, Labels{})) {
  for (const auto& f : config.flavors)
    flavor_nodes_.push_back(select_nodes(config.cluster, f.node_labels));
  for (const auto& cq : config.cluster_queues) {
    auto& per_group = group_keys_.emplace_back();
    for (const auto& g : cq.resource_groups) {
      auto& keys = per_group.emplace_back();
      for (const auto& fq : g.flavors)
        for (const auto& [key, value] : config.flavors[static_cast<size_t>(fq.flavor)].node_labels)
          keys.insert(key);
    }
  }
}

// Kueue's flavor check: the pod set's nodeSelector and required affinity, on the label keys
// the group's flavors use, hold for the flavor's nodeLabels; its pods tolerate the flavor's
// taints. *why says what failed.
bool FlavorAssigner::pod_set_allows(const PodSet& ps, QueueId q, int group, FlavorId f,
                                    std::string* why) const {
  const ResourceFlavor& flavor = config_.flavors[static_cast<size_t>(f)];
  static const std::vector<Toleration> kNone;
  const auto& keys = group_keys_[static_cast<size_t>(q)][static_cast<size_t>(group)];
  if (ps.node && !node_matches(*ps.node, flavor.node_labels, &keys)) {
    *why = "flavor " + flavor.name + " does not match the node selector or affinity of pod set " +
           ps.name;
    return false;
  }
  if (const Taint* t =
          untolerated_taint(flavor.node_taints, ps.node ? ps.node->tolerations : kNone)) {
    *why = "pod set " + ps.name + " does not tolerate flavor " + flavor.name + "'s taint " +
           t->key + (t->value.empty() ? "" : "=" + t->value) + ":" + t->effect;
    return false;
  }
  return true;
}

// The same for every pod set of the job (one flavor for all of them).
bool FlavorAssigner::flavor_allows(const Job& job, QueueId q, int group, FlavorId f,
                                   std::string* why) const {
  for (const auto& ps : job.pod_sets)
    if (!pod_set_allows(ps, q, group, f, why)) return false;
  return true;
}

const NodeSet& FlavorAssigner::nodes_for(const Job& job, const std::vector<FlavorId>& flavors,
                                         NodeSet& scratch) const {
  const NodeSet& base = nodes_for(flavors, scratch);
  if (!constrains_nodes(job)) return base;
  // As the node scheduler would: every pod set's selector and affinity, on every key.
  std::vector<NodeId> ids;
  for (NodeId n : base.ids()) {
    const Labels& labels = config_.cluster.nodes[static_cast<size_t>(n)].labels;
    if (std::all_of(job.pod_sets.begin(), job.pod_sets.end(),
                    [&](const PodSet& ps) { return !ps.node || node_matches(*ps.node, labels); }))
      ids.push_back(n);
  }
  std::string name = base.name();
  scratch =
      NodeSet(static_cast<int32_t>(config_.cluster.nodes.size()), std::move(ids), std::move(name));
  return scratch;
}

const NodeSet& FlavorAssigner::nodes_for(const std::vector<FlavorId>& flavors,
                                         NodeSet& scratch) const {
  const FlavorId* only = nullptr;
  bool several = false;
  for (const FlavorId& f : flavors) {
    if (f < 0 || config_.flavors[f].node_labels.empty()) continue;
    if (only && *only != f) several = true;
    only = &f;
  }
  if (!only) return all_nodes_;
  if (!several) return flavor_nodes_[*only];
  // Several labelled flavors (several resource groups): nodes must carry all their labels.
  Labels merged;
  for (FlavorId f : flavors)
    if (f >= 0)
      for (const auto& kv : config_.flavors[f].node_labels) merged.push_back(kv);
  std::sort(merged.begin(), merged.end());
  merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
  bool conflicting = false;  // two flavors want different values of one label: no node
  for (size_t i = 1; i < merged.size(); ++i)
    conflicting = conflicting || merged[i].first == merged[i - 1].first;
  scratch = conflicting ? NodeSet(static_cast<int32_t>(config_.cluster.nodes.size()), {})
                        : select_nodes(config_.cluster, merged);
  return scratch;
}

bool FlavorAssigner::groups_of(QueueId q, const QuotaTree& quota, const ResourceVec& req,
                               std::vector<int>* groups, FlavorAttempt& at) const {
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
    if (std::find(groups->begin(), groups->end(), g) == groups->end()) groups->push_back(g);
  }
  std::sort(groups->begin(), groups->end());
  return true;
}

bool FlavorAssigner::per_pod_set(const Job& job, QueueId q, const QuotaTree& quota, int32_t open,
                                 std::vector<std::vector<FlavorId>>* out, Bound bound) const {
  const auto& cq = config_.cluster_queues[q];
  const bool next_on_borrow =
      cq.flavor_fungibility.when_can_borrow == FungibilityPolicy::kTryNextFlavor;
  out->assign(job.pod_sets.size(), std::vector<FlavorId>(cq.resource_groups.size(), -1));
  std::vector<UsageEntry> taken;  // what earlier pod sets took, per (flavor, resource)
  auto taken_of = [&](FlavorId f, ResourceId r) -> int64_t& {
    for (auto& u : taken)
      if (u.flavor == f && u.resource == r) return u.amount;
    return taken.emplace_back(UsageEntry{f, r, 0}).amount;
  };
  std::string why;
  for (size_t i = 0; i < job.pod_sets.size(); ++i) {
    const PodSet& ps = job.pod_sets[i];
    for (size_t g = 0; g < cq.resource_groups.size(); ++g) {
      const auto& group = cq.resource_groups[g];
      auto need = [&](ResourceId r) { return ps.requests[r] * ps.count; };
      if (std::none_of(group.covered.begin(), group.covered.end(),
                       [&](ResourceId r) { return need(r) > 0; }))
        continue;
      FlavorId pick = -1, borrowing = -1;
      const size_t n_open = std::min(group.flavors.size(), static_cast<size_t>(std::max(0, open)));
      for (size_t fi = 0; fi < n_open && pick < 0; ++fi) {
        const FlavorId f = group.flavors[fi].flavor;
        if (!pod_set_allows(ps, q, static_cast<int>(g), f, &why)) continue;
        bool fits = true, borrows = false;
        for (ResourceId r : group.covered) {
          if (need(r) <= 0 || !quota.managed(q, f, r)) continue;
          const int64_t with = taken_of(f, r) + need(r);
          switch (bound) {
            case Bound::kNow:
              fits = fits && with <= quota.available(q, f, r);
              break;
            case Bound::kSomeDay:
              fits = fits && with <= quota.max_available(q, f, r);
              break;
            case Bound::kNominal:
              fits = fits && (with <= quota.available(q, f, r) || with <= quota.nominal(q, f, r));
              break;
          }
          borrows = borrows || quota.usage(q, f, r) + with > quota.nominal(q, f, r);
        }
        if (!fits) continue;
        if (!borrows || !next_on_borrow)
          pick = f;
        else if (borrowing < 0)
          borrowing = f;
      }
      if (pick < 0) pick = borrowing;
      if (pick < 0) return false;
      (*out)[i][g] = pick;
      for (ResourceId r : group.covered)
        if (need(r) > 0 && quota.managed(q, pick, r)) taken_of(pick, r) += need(r);
    }
  }
  return true;
}

bool FlavorAssigner::place_per_pod_set(const Job& job,
                                       const std::vector<std::vector<FlavorId>>& per,
                                       const ClusterAlloc& alloc, FlavorAttempt& at) const {
  // A copy of the capacity to place pod set after pod set on: only jobs whose pod sets got
  // different flavors come here. (A whole-gang topology request holds per pod set.)
  ClusterAlloc work = alloc;
  Placement all;
  Job part = job;
  for (size_t i = 0; i < job.pod_sets.size(); ++i) {
    part.pod_sets = {job.pod_sets[i]};
    auto placed = placer_.place(part, nodes_for(part, per[i], at.scratch), work);
    if (auto* f = std::get_if<PlaceFailure>(&placed)) {
      at.failed_flavors = per[i];
      at.reason.code = PendingCode::kPlacement;
      at.reason.flavor = -1;
      for (FlavorId fl : per[i])
        if (at.reason.flavor < 0) at.reason.flavor = fl;
      at.reason.place_code = f->code;
      at.reason.pods_needed = f->pods_needed;
      at.reason.pods_fit = f->pods_fit;
      at.reason.detail = "pod set " + job.pod_sets[i].name + ": " + f->detail;
      return false;
    }
    auto& pl = std::get<Placement>(placed);
    work.commit(part, pl);
    for (auto& pp : pl.pods) {
      pp.pod_set = static_cast<int32_t>(i);
      all.pods.push_back(std::move(pp));
    }
  }
  Admission& a = at.admission;
  a = Admission{};
  a.job = job.id;
  a.pod_set_flavors = per;
  a.flavors.assign(per.empty() ? 0 : per.front().size(), -1);
  for (const auto& fl : per)
    for (size_t g = 0; g < fl.size(); ++g)
      if (a.flavors[g] < 0) a.flavors[g] = fl[g];
  a.placement = std::move(all);
  return true;
}

void FlavorAssigner::finish(const Job& job, const ResourceVec& req, QueueId q,
                            const QuotaTree& quota, int32_t preferred, Admission& a) const {
  const auto& cq = config_.cluster_queues[q];
  a.queue = q;
  // A flavor past the preferred ones is a downgrade: record what it preferred.
  for (size_t i = 0; i < job.pod_sets.size() && a.preferred_flavor < 0; ++i) {
    const auto& flavors = a.flavors_of(i);
    for (size_t g = 0; g < flavors.size() && a.preferred_flavor < 0; ++g) {
      const auto& fl = cq.resource_groups[g].flavors;
      for (size_t fi = 0; fi < fl.size(); ++fi)
        if (fl[fi].flavor == flavors[g] && fi >= static_cast<size_t>(std::max(1, preferred)))
          a.preferred_flavor = fl.front().flavor;
    }
  }
  // Usage per (flavor, resource) in resource order; it borrows where it passes nominal.
  for (int r = 0; r < kMaxResources; ++r) {
    const auto res = static_cast<ResourceId>(r);
    const int g = req[r] > 0 ? quota.group_of(q, res) : -1;
    if (g < 0) continue;
    const size_t first = a.usage.size();
    for (size_t i = 0; i < job.pod_sets.size(); ++i) {
      const PodSet& ps = job.pod_sets[i];
      const int64_t need = ps.requests[r] * ps.count;
      const FlavorId f = a.flavors_of(i)[static_cast<size_t>(g)];
      if (need <= 0 || f < 0 || !quota.managed(q, f, res)) continue;
      auto it = std::find_if(a.usage.begin() + static_cast<std::ptrdiff_t>(first), a.usage.end(),
                             [&](const UsageEntry& u) { return u.flavor == f; });
      if (it == a.usage.end())
        a.usage.push_back({f, res, need});
      else
        it->amount += need;
    }
    for (size_t k = first; k < a.usage.size(); ++k)
      if (quota.usage(q, a.usage[k].flavor, res) + a.usage[k].amount >
          quota.nominal(q, a.usage[k].flavor, res))
        a.borrowing = true;
  }
}

// Step 3 of assign(): per group, the open flavors (in the queue's order) whose quota holds the
// whole request now; whenCanBorrow: TryNextFlavor puts those that would borrow after those that
// would not. False (at.reason set) when some group has none.
bool FlavorAssigner::quota_candidates(const Job& job, QueueId q, const QuotaTree& quota,
                                      const ResourceVec& req, const std::vector<int>& groups,
                                      int32_t open, bool stop_at_preempt,
                                      std::vector<std::vector<FlavorId>>& candidates,
                                      FlavorAttempt& at) const {
  const auto& cq = config_.cluster_queues[q];
  const FlavorFungibility& fung = cq.flavor_fungibility;
  const bool next_on_borrow = fung.when_can_borrow == FungibilityPolicy::kTryNextFlavor;
  const PreemptStops stops = preempt_stops(cq, config_.policy.ordering, stop_at_preempt);
  const bool stop_on_preempt = stops.on_preempt, preempt_first = stops.preempt_first;
  candidates.assign(groups.size(), {});
  bool first_quota_failure = true;
  std::string not_allowed;  // why the last flavor was excluded by selectors or taints
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    bool all_never = true;
    bool preempt_within = false;  // a flavor that does not fit now but holds it within nominal
    std::vector<FlavorId> borrowing;
    const auto& group = cq.resource_groups[groups[gi]];
    // Flavors past the open ones are the fallback tier's, not yet reachable: "never" only
    // when the job could not fit any of them either, some day.
    const size_t n_open = std::min(group.flavors.size(), static_cast<size_t>(std::max(0, open)));
    if (n_open < group.flavors.size()) all_never = false;
    for (size_t fi = 0; fi < n_open; ++fi) {
      const auto& fq = group.flavors[fi];
      if (!flavor_allows(job, q, groups[gi], fq.flavor, &not_allowed)) continue;
      bool fits = true, never = false, borrows = false;
      for (ResourceId r : group.covered) {
        if (req[r] <= 0 || !quota.managed(q, fq.flavor, r)) continue;
        const int64_t avail = quota.available(q, fq.flavor, r);
        if (req[r] <= avail) {
          borrows = borrows || (next_on_borrow && quota.usage(q, fq.flavor, r) + req[r] >
                                                      quota.nominal(q, fq.flavor, r));
          continue;
        }
        fits = false;
        never = req[r] > quota.max_available(q, fq.flavor, r);
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
      if (fits) {
        (borrows && next_on_borrow ? borrowing : candidates[gi]).push_back(fq.flavor);
        continue;
      }
      if (preempt_first && !never)
        preempt_within = preempt_within || within_nominal(req, q, fq.flavor, group, quota);
      // whenCanPreempt: MayStopSearch: a flavor its queue could preempt on, before any that
      // fits, ends the search (the preemptor then works on it).
      if (!never && stop_on_preempt && candidates[gi].empty() && borrowing.empty() &&
          fi + 1 < n_open) {
        at.stopped_at_preempt = true;
        break;
      }
    }
    // Only borrowing fits, and preemption is preferred on a flavor where it would not borrow:
    // the preemptor works on that one first (as whenCanPreempt: MayStopSearch stops there),
    // the caller tries the borrowing flavors when nothing can be evicted.
    if (preempt_within && candidates[gi].empty() && !borrowing.empty()) {
      at.stopped_at_preempt = true;
      at.reason.code = PendingCode::kQuota;
      return false;
    }
    candidates[gi].insert(candidates[gi].end(), borrowing.begin(), borrowing.end());
    if (candidates[gi].empty()) {
      at.reason.code = all_never ? PendingCode::kNeverFitsQuota : PendingCode::kQuota;
      // No flavor looked at for quota: each was excluded by the pods' selectors or taints.
      if (first_quota_failure && !not_allowed.empty()) at.reason.detail = not_allowed;
      return false;
    }
  }
  return true;
}

bool FlavorAssigner::assign(const Job& job, QueueId q, const QuotaTree& quota,
                            const ClusterAlloc& alloc, FlavorAttempt& at, int32_t open,
                            int32_t preferred, bool stop_at_preempt) const {
  const auto& cq = config_.cluster_queues[q];
  const ResourceVec req = job.total_requests();
  at.evaluated = true;
  at.stopped_at_preempt = false;
  at.reason = PendingReason{};
  at.reason.queue = q;
  if (!cq.inactive.empty()) {  // names an undefined flavor: nothing is admitted (Kueue)
    at.reason.code = PendingCode::kInactive;
    at.reason.detail = cq.inactive;
    return false;
  }

  // 1. Which resource groups the job touches; a resource the queue cannot grant fails for good.
  std::vector<int> groups;
  if (!groups_of(q, quota, req, &groups, at)) return false;

  // 2. Several pod sets: Kueue's assignment, pod set by pod set. When it gives them different
  // flavors and they place, that is the admission; else the whole job's search decides.
  bool per_pod_set_placement_failed = false;
  PendingReason placement_failure;
  if (job.pod_sets.size() > 1) {
    std::vector<std::vector<FlavorId>> per;
    if (per_pod_set(job, q, quota, open, &per) && pod_sets_differ(per)) {
      if (place_per_pod_set(job, per, alloc, at)) {
        finish(job, req, q, quota, preferred, at.admission);
        return true;
      }
      per_pod_set_placement_failed = true;
      placement_failure = at.reason;
    }
  }

  // 3. Per group, the flavors whose quota holds the whole request now (quota_candidates).
  std::vector<std::vector<FlavorId>> candidates;
  if (!quota_candidates(job, q, quota, req, groups, open, stop_at_preempt, candidates, at)) {
    // Its pod sets fit the quota on different flavors but could not be placed there.
    if (per_pod_set_placement_failed && !at.stopped_at_preempt) at.reason = placement_failure;
    // No one flavor could ever hold the whole job, but its pod sets on different ones could:
    // it waits for quota (and may preempt), it is not beyond what the queue can get.
    std::vector<std::vector<FlavorId>> some_day;
    if (at.reason.code == PendingCode::kNeverFitsQuota && job.pod_sets.size() > 1 &&
        per_pod_set(job, q, quota, open, &some_day, Bound::kSomeDay))
      at.reason.code = PendingCode::kQuota;
    return false;
  }

  // 4. Flavor combinations in order; the first that places wins.
  if (per_pod_set_placement_failed) at.reason = placement_failure;
  return place_combinations(job, req, q, quota, alloc, groups, candidates, preferred,
                            per_pod_set_placement_failed, at);
}

std::variant<Placement, PlaceFailure> FlavorAssigner::place_memo(
    const Job& job, const std::vector<FlavorId>& flavors, const ClusterAlloc& alloc,
    FlavorAttempt& at) const {
  const uint64_t h = shape_hash(job);
  auto& bucket = at.memo[h];
  for (const auto& m : bucket)
    if (m.flavors == flavors && same_shape(*m.job, job)) return m.failure;
  std::variant<Placement, PlaceFailure> placed =
      placer_.place(job, nodes_for(job, flavors, at.scratch), alloc);
  if (auto* f = std::get_if<PlaceFailure>(&placed)) bucket.push_back({&job, flavors, *f});
  return placed;
}

bool FlavorAssigner::place_combinations(const Job& job, const ResourceVec& req, QueueId q,
                                        const QuotaTree& quota, const ClusterAlloc& alloc,
                                        const std::vector<int>& groups,
                                        const std::vector<std::vector<FlavorId>>& candidates,
                                        int32_t preferred, bool have_failure,
                                        FlavorAttempt& at) const {
  const auto& cq = config_.cluster_queues[q];
  std::vector<size_t> pick(groups.size(), 0);
  std::vector<FlavorId> flavors(cq.resource_groups.size(), -1);
  constexpr int kMaxCombinations = 64;
  for (int combo = 0; combo < kMaxCombinations; ++combo) {
    for (size_t gi = 0; gi < groups.size(); ++gi) flavors[groups[gi]] = candidates[gi][pick[gi]];
    std::variant<Placement, PlaceFailure> placed = place_memo(job, flavors, alloc, at);
    if (auto* pl = std::get_if<Placement>(&placed)) {
      Admission& a = at.admission;
      a = Admission{};
      a.job = job.id;
      a.flavors = flavors;
      a.placement = std::move(*pl);
      finish(job, req, q, quota, preferred, a);
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

bool FlavorAssigner::fits_now(Admission& a, const QuotaTree& quota, PendingReason* why) const {
  a.borrowing = false;
  for (const auto& u : a.usage) {
    const int64_t avail = quota.available(a.queue, u.flavor, u.resource);
    if (u.amount > avail) {
      *why = PendingReason{};
      why->code = PendingCode::kQuota;
      why->queue = a.queue;
      why->flavor = u.flavor;
      why->resource = u.resource;
      why->requested = u.amount;
      why->available = std::max<int64_t>(0, avail);
      why->detail =
          "its flavor was chosen against the quota at the start of the cycle (flavorSnapshot: "
          "cycleStart); the cycle's earlier admissions took it";
      return false;
    }
    a.borrowing = a.borrowing || quota.usage(a.queue, u.flavor, u.resource) + u.amount >
                                     quota.nominal(a.queue, u.flavor, u.resource);
  }
  return true;
}

Tier FlavorAssigner::tier_of(const Job& job, QueueId q, TimeNs now) const {
  const FallbackPolicy& fb = config_.cluster_queues[q].fallback;
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

bool FlavorAssigner::assign_tiered(const PendingRecord& p, const Tier& tier, const QuotaTree& quota,
                                   const ClusterAlloc& alloc, TimeNs now, FlavorAttempt& at,
                                   std::deque<Job>& shaped, const Job** used,
                                   bool stop_at_preempt) const {
  *used = &p.job;
  if (tier.after_ns == 0 && p.job.fallback.shapes.empty())
    return assign(p.job, p.queue, quota, alloc, at, INT32_MAX, INT32_MAX,
                  stop_at_preempt);  // the common case: no tier
  // 1. Its own shape on the open flavors; 2. each fallback shape, in order, once they opened.
  bool ok = assign(p.job, p.queue, quota, alloc, at, tier.open, tier.preferred, stop_at_preempt);
  if (!ok && tier.shapes && p.job.pod_sets.size() == 1 && !never_fits(at.reason.code)) {
    PendingReason keep = at.reason;
    std::vector<FlavorId> keep_failed = at.failed_flavors;
    const bool keep_stopped = at.stopped_at_preempt;
    for (size_t i = 0; i < p.job.fallback.shapes.size() && !ok; ++i) {
      shaped.push_back(reshaped(p.job, p.job.fallback.shapes[i]));
      if (assign(shaped.back(), p.queue, quota, alloc, at, tier.open, tier.preferred,
                 stop_at_preempt)) {
        ok = true;
        at.admission.shape = static_cast<int32_t>(i);
        *used = &shaped.back();
      }
    }
    if (!ok) {
      at.reason = std::move(keep);
      at.failed_flavors = std::move(keep_failed);
      at.stopped_at_preempt = keep_stopped;
    }
  }
  if (ok) {
    if (at.admission.downgraded()) at.admission.waited_ns = now - p.job.submit_ns;
    return true;
  }
  // 3. Say when the next flavor of its first resource group opens, if one is still closed.
  if (tier.after_ns > 0 && tier.open < INT32_MAX) {
    const auto& groups = config_.cluster_queues[p.queue].resource_groups;
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

}  // namespace sluice
