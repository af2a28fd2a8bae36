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

// Kueue's flavor check: every pod set's nodeSelector and required affinity, on the label keys
// the group's flavors use, hold for the flavor's nodeLabels; its pods tolerate the flavor's
// taints. *why says what failed.
bool FlavorAssigner::flavor_allows(const Job& job, QueueId q, int group, FlavorId f,
                                   std::string* why) const {
  const ResourceFlavor& flavor = config_.flavors[static_cast<size_t>(f)];
  static const std::vector<Toleration> kNone;
  const auto& keys = group_keys_[static_cast<size_t>(q)][static_cast<size_t>(group)];
  for (const auto& ps : job.pod_sets) {
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
  }
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

bool FlavorAssigner::assign(const Job& job, QueueId q, const QuotaTree& quota,
                            const ClusterAlloc& alloc, FlavorAttempt& at, int32_t open,
                            int32_t preferred) const {
  const auto& cq = config_.cluster_queues[q];
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
  std::string not_allowed;  // why the last flavor was excluded by selectors or taints
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    bool all_never = true;
    const auto& group = cq.resource_groups[groups[gi]];
    // Flavors past the open ones are the fallback tier's, not yet reachable: "never" only
    // when the job could not fit any of them either, some day.
    const size_t n_open = std::min(group.flavors.size(), static_cast<size_t>(std::max(0, open)));
    if (n_open < group.flavors.size()) all_never = false;
    for (size_t fi = 0; fi < n_open; ++fi) {
      const auto& fq = group.flavors[fi];
      if (!flavor_allows(job, q, groups[gi], fq.flavor, &not_allowed)) continue;
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
      // No flavor looked at for quota: each was excluded by the pods' selectors or taints.
      if (first_quota_failure && !not_allowed.empty()) at.reason.detail = not_allowed;
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
      placed = placer_.place(job, nodes_for(job, flavors, at.scratch), alloc);
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
                                   std::deque<Job>& shaped, const Job** used) const {
  *used = &p.job;
  if (tier.after_ns == 0 && p.job.fallback.shapes.empty())
    return assign(p.job, p.queue, quota, alloc, at);  // the common case: no tier
  // 1. Its own shape on the open flavors; 2. each fallback shape, in order, once they opened.
  bool ok = assign(p.job, p.queue, quota, alloc, at, tier.open, tier.preferred);
  if (!ok && tier.shapes && p.job.pod_sets.size() == 1 &&
      at.reason.code != PendingCode::kNeverFitsQuota) {
    PendingReason keep = at.reason;
    std::vector<FlavorId> keep_failed = at.failed_flavors;
    for (size_t i = 0; i < p.job.fallback.shapes.size() && !ok; ++i) {
      shaped.push_back(reshaped(p.job, p.job.fallback.shapes[i]));
      if (assign(shaped.back(), p.queue, quota, alloc, at, tier.open, tier.preferred)) {
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
