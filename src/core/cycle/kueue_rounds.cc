// The cycle walk in Kueue's order (SchedulerPolicy ordering: kueue). Kueue's scheduler takes
// one head per ClusterQueue per scheduling cycle and orders those heads; sluice's cycle runs
// such rounds one after the other until every queue is walked, each round on the state the
// earlier ones left (as Kueue's next cycle sees the workloads it admitted).
//
//   1. heads      each queue's head, with the flavor assignment it would get now: whether it
//                 borrows, and the usage it would add
//   2. order      without fair sharing: heads by borrowing level (those that do not borrow
//                 first, then those that borrow lower in the cohort tree), then higher
//                 priority, then earlier submit time, then id (Kueue's entry ordering);
//                 with fair sharing: Kueue's tournament, run again before each pick (shares
//                 change as heads are admitted): at each cohort, a child that does not borrow
//                 with its nominee's usage first, then the lowest dominant resource share with
//                 it, then priority, then time
//   3. decide     each head as the composite walk does (place, else preempt, else pending);
//                 a preemptor's victims keep their quota for the rest of the cycle (Kueue
//                 counts them until they are gone), so nothing else is admitted on it; a head
//                 that needs preemption within its nominal quota and gets none, in a queue
//                 that cannot always reclaim, holds that quota back for the rest of the round
//   4. settle     at the end, each (shape, queue) that failed is tried once more on the state
//                 the cycle leaves, with nothing held back: when none fits, the cycle is
//                 settled and the next one, with nothing freed in between, only looks at the
//                 new jobs (walk_fresh; docs/scheduling.md, "Incremental cycles")
#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>

#include "core/cycle/walk.h"
#include "core/order/drs.h"

namespace sluice {

namespace {

// A head's path from its root (cohort or, without one, the queue itself) down to its queue,
// with each node's dominant resource share once the head's usage is added.
struct SharePath {
  std::vector<int> nodes;
  std::vector<Drs> shares;
  std::vector<char> borrows;  // the node uses more than its subtree quota of what the head asks
};

// Each node's height in the cohort tree (Kueue's getNodeHeight): 0 for a queue or an empty
// cohort, else the distance to its furthest leaf.
std::vector<int> node_heights(const QuotaTree& quota) {
  std::vector<int> h(static_cast<size_t>(quota.num_nodes()), 0);
  for (int n = 0; n < quota.num_nodes(); ++n) {
    int d = 1;
    for (int p = quota.parent(n), steps = 0; p >= 0 && steps < quota.num_nodes();
         p = quota.parent(p), ++d, ++steps)
      h[static_cast<size_t>(p)] = std::max(h[static_cast<size_t>(p)], d);
  }
  return h;
}

// Kueue's borrowing level of queue q using `amount` more of (f, r)
// (FindHeightOfLowestSubtreeThatFits): 0 within its nominal quota or without a cohort, else the
// height of the lowest cohort on its path whose subtree holds what the nodes below it cannot
// keep from the cohort (their guaranteed quota), or the root's when none does.
int borrowing_level(const QuotaTree& quota, const std::vector<int>& heights, QueueId q, FlavorId f,
                    ResourceId r, int64_t amount) {
  if (quota.parent(q) < 0 || quota.node_usage(q, f, r) + amount <= quota.node_subtree(q, f, r))
    return 0;
  auto local = [&](int node) {
    return std::max<int64_t>(0, quota.node_guaranteed(node, f, r) - quota.node_usage(node, f, r));
  };
  int64_t remaining = amount - local(q);
  int top = q;
  for (int c = quota.parent(q); c >= 0; c = quota.parent(c)) {
    if (quota.node_usage(c, f, r) + remaining <= quota.node_subtree(c, f, r))
      return heights[static_cast<size_t>(c)];
    remaining -= local(c);
    top = c;
  }
  return heights[static_cast<size_t>(top)];
}

}  // namespace

bool Scheduler::Walk::walk_rounds() {
  const bool fair = policy_.fair_sharing.enable;
  auto kueue_less = [](const RoundEntry& a, const RoundEntry& b) {
    if (a.level != b.level) return a.level < b.level;
    const Job& x = a.p->job;
    const Job& y = b.p->job;
    if (x.priority != y.priority) return x.priority > y.priority;
    return std::tie(x.submit_ns, x.id) < std::tie(y.submit_ns, y.id);
  };
  std::vector<RoundEntry> round;
  std::vector<char> done;
  const std::vector<int> heights = node_heights(quota_);
  // Every round moves each queue that has a head on by one job: at most as many rounds as the
  // longest queue has jobs.
  while (true) {
    round.clear();
    probe_.memo.clear();  // capacity may have grown (evictions) since the last round
    for (int q = 0; q < nq_; ++q)
      if (heads_[q]) round.push_back(round_entry(q, heights));  // 1.
    if (round.empty()) {
      result_.settled = settled();  // 4.
      return true;
    }
    if (!fair) std::sort(round.begin(), round.end(), kueue_less);  // 2.
    done.assign(round.size(), 0);
    for (size_t k = 0; k < round.size(); ++k) {
      const size_t i = fair ? pick_fair(round, done) : k;
      done[i] = 1;
      const RoundEntry& e = round[i];
      advance(e.q);                                // (its next job waits for the next round)
      const Next next = decide(*e.p, e.q, false);  // 3.
      if (next != Next::kGo) {
        release_reserved();
        return next == Next::kStop;
      }
    }
    release_reserved();  // (Kueue's next cycle starts from the usage as it is)
    for (const auto& e : round) next_head(e.q);
  }
}

// Kueue's incremental cycle: the new jobs (and interactive jobs whose timeout passed), queue by
// queue in rank order, on the state as the last cycle left it, with nothing held back. Exact
// while none of them is admitted (else a full cycle decides): the last cycle was settled (every
// older job fails on that state) and nothing was freed since, so every older job fails again
// in a full cycle, whatever rounds the new jobs shift it into and whatever the heads before it
// hold back (that only adds usage); the new ones fail on the same state, and a full cycle only
// adds usage before them. Nothing is admitted, so the order across queues does not matter; a
// queue's StrictFIFO head is the first job that fails, as in a full cycle.
bool Scheduler::Walk::walk_fresh() {
  for (int q = 0; q < nq_; ++q)
    for (const PendingJob* p : fresh_[q])
      if (decide(*p, q, false) != Next::kGo) return false;
  result_.settled = true;
  return true;
}

// A full cycle's job that failed on its own: a job of its (shape, queue) is tried again at the
// end (settled()); a failure that depends on more than the shape leaves the cycle unsettled.
void Scheduler::Walk::note_failure(const PendingJob& p, uint64_t key, bool plain) {
  if (!plain || partially_admissible(p.job))
    unsettled_ = true;
  else
    settle_.try_emplace(key, &p);
}

// Whether every job left pending fails on the state the cycle leaves (its admissions in, nothing
// held back): each (shape, queue) that failed, tried on every flavor. A failure by the memo is
// a failure of its shape and queue; a held job stays behind its StrictFIFO head, which fails.
bool Scheduler::Walk::settled() {
  if (unsettled_ || !result_.preempted.empty() || !held_.empty()) return false;
  for (const auto& [key, p] : settle_) {
    if (!s_.node_end_.empty()) aim_ends(p->queue);
    const Job* used = &p->job;
    const Tier tier = s_.assigner_.tier_of(p->job, p->queue, now_);
    if (s_.assigner_.assign_tiered(*p, tier, quota_, alloc_, now_, attempt_, shaped_, &used,
                                   /*stop_at_preempt=*/false))
      return false;
  }
  return true;
}

Scheduler::Walk::RoundEntry Scheduler::Walk::round_entry(int q, const std::vector<int>& heights) {
  RoundEntry e;
  e.q = q;
  e.p = heads_[q];
  const Job& job = e.p->job;
  // The level: the highest of its usage's (at least 1 when it borrows).
  auto level = [&] {
    int l = 0;
    for (const auto& u : e.usage)
      l = std::max(l, borrowing_level(quota_, heights, q, u.flavor, u.resource, u.amount));
    return e.borrows ? std::max(l, 1) : 0;
  };
  if (s_.assigner_.assign(job, q, quota_, alloc_, probe_)) {
    e.borrows = probe_.admission.borrowing;
    e.usage = probe_.admission.usage;
    e.level = level();
    return e;
  }
  // It does not fit now (Kueue would preempt, or leave it waiting): it borrows when no flavor
  // of a group holds the request within the queue's nominal quota; its usage is counted on
  // each group's first flavor.
  const ResourceVec req = job.total_requests();
  const auto& cq = s_.config_->cluster_queues[q];
  for (int r = 0; r < kMaxResources; ++r) {
    const auto res = static_cast<ResourceId>(r);
    const int g = req[r] > 0 ? quota_.group_of(q, res) : -1;
    if (g < 0) continue;
    const auto& flavors = cq.resource_groups[static_cast<size_t>(g)].flavors;
    bool within = false;
    for (const auto& fq : flavors)
      if (!quota_.managed(q, fq.flavor, res) ||
          quota_.usage(q, fq.flavor, res) + req[r] <= quota_.nominal(q, fq.flavor, res)) {
        within = true;
        break;
      }
    e.borrows = e.borrows || !within;
    if (!flavors.empty() && quota_.managed(q, flavors[0].flavor, res))
      e.usage.push_back({flavors[0].flavor, res, req[r]});
  }
  e.level = level();
  return e;
}

// Kueue's fair-sharing tournament over the heads not yet picked this round; returns the
// winner's index. Heads of different root cohorts (or without a cohort) do not compete on
// shares: among their winners, priority, then time, then id decides.
size_t Scheduler::Walk::pick_fair(const std::vector<RoundEntry>& round,
                                  const std::vector<char>& done) {
  const Config& config = *s_.config_;
  std::vector<SharePath> paths(round.size());
  std::vector<size_t> open;
  for (size_t i = 0; i < round.size(); ++i) {
    if (done[i]) continue;
    open.push_back(i);
    const RoundEntry& e = round[i];
    SharePath& path = paths[i];
    for (const auto& u : e.usage) quota_.add_usage(e.q, u.flavor, u.resource, u.amount);
    for (int node = e.q, steps = 0; node >= 0 && steps < quota_.num_nodes();
         node = quota_.parent(node), ++steps) {
      path.nodes.push_back(node);
      path.shares.push_back(dominant_share_parts(config, quota_, node));
      bool borrows = false;
      for (const auto& u : e.usage)
        borrows = borrows || quota_.node_usage(node, u.flavor, u.resource) >
                                 quota_.node_subtree(node, u.flavor, u.resource);
      path.borrows.push_back(quota_.parent(node) >= 0 && borrows);
    }
    for (const auto& u : e.usage) quota_.add_usage(e.q, u.flavor, u.resource, -u.amount);
    std::reverse(path.nodes.begin(), path.nodes.end());
    std::reverse(path.shares.begin(), path.shares.end());
    std::reverse(path.borrows.begin(), path.borrows.end());
  }
  // a before b at depth d (their paths agree up to d - 1): the node at depth d that does not
  // borrow what its head asks for first (Kueue's FairSharingPrioritizeNonBorrowing), then the
  // lower share (Kueue's CompareDRS: weight 0 that borrows last, those by how much they borrow),
  // then higher priority, then earlier submit time, then id.
  auto before = [&](size_t a, size_t b, size_t d) {
    if (d > 0 && paths[a].borrows[d] != paths[b].borrows[d]) return !paths[a].borrows[d];
    if (d > 0)
      if (const int c = compare_drs(paths[a].shares[d], paths[b].shares[d]); c != 0) return c < 0;
    const Job& x = round[a].p->job;
    const Job& y = round[b].p->job;
    if (x.priority != y.priority) return x.priority > y.priority;
    return std::tie(x.submit_ns, x.id) < std::tie(y.submit_ns, y.id);
  };
  // The winner among `ids`, whose paths agree up to depth d: each child at depth d + 1
  // nominates its winner; the children compete on their shares with their nominee.
  auto best_in = [&](auto&& self, const std::vector<size_t>& ids, size_t d) -> size_t {
    std::map<int, std::vector<size_t>> by_child;
    for (size_t id : ids) by_child[paths[id].nodes[d + 1]].push_back(id);
    size_t best = SIZE_MAX;
    for (const auto& [child, group] : by_child) {
      const size_t nominee =
          paths[group[0]].nodes.size() == d + 2 ? group[0] : self(self, group, d + 1);
      if (best == SIZE_MAX || before(nominee, best, d + 1)) best = nominee;
    }
    return best;
  };
  std::map<int, std::vector<size_t>> by_root;
  for (size_t id : open) by_root[paths[id].nodes[0]].push_back(id);
  size_t best = SIZE_MAX;
  for (const auto& [root, group] : by_root) {
    const size_t nominee =
        paths[group[0]].nodes.size() == 1 ? group[0] : best_in(best_in, group, 0);
    if (best == SIZE_MAX || before(nominee, best, 0)) best = nominee;
  }
  return best;
}

// Kueue counts a preemptor's victims until they are gone: their quota stays in use for the
// rest of this cycle, on top of the preemptor's (their capacity is free: the preemptor runs
// where they ran), for every job that would fit without preemption. A later preemptor sees
// them gone (Kueue's fit check of a preempting entry removes the cycle's earlier targets):
// hold(-1) before its search, hold(+1) after.
void Scheduler::Walk::hold_victims(size_t first) {
  for (size_t i = first; i < result_.preempted.size(); ++i) {
    const RunningRecord& r = s_.running_.at(result_.preempted[i].victim);
    for (const auto& u : r.admission.usage) {
      held_.push_back({r.admission.queue, u});
      quota_.add_usage(r.admission.queue, u.flavor, u.resource, u.amount);
    }
  }
}

// Kueue's reserveCapacityForUnreclaimablePreempt: a head whose request is within its queue's
// nominal quota but does not fit the quota free now, and that got no victims, in a queue whose
// reclaimWithinCohort is not Any (it cannot count on reclaiming what others borrow), holds back
// min(request, nominal - usage) until the round ends: the heads after it cannot borrow that.
// The flavor is, per resource group, the first whose nominal quota holds the request (where
// Kueue's flavor assigner finds preemption possible without borrowing); with none, nothing is
// held (Kueue holds up to the borrowing limit when preempting while borrowing: not done here).
void Scheduler::Walk::reserve_unreclaimable(const PendingJob& p, int q) {
  const auto& cq = s_.config_->cluster_queues[q];
  if (cq.preemption.reclaim_within_cohort == ReclaimPolicy::kAny || quota_.parent(q) < 0) return;
  const ResourceVec req = p.job.total_requests();
  std::vector<UsageEntry> keep;
  for (const auto& group : cq.resource_groups) {
    if (std::none_of(group.covered.begin(), group.covered.end(),
                     [&](ResourceId r) { return req[r] > 0; }))
      continue;
    bool found = false;
    for (const auto& fq : group.flavors) {
      bool within = true;
      for (ResourceId r : group.covered)
        within = within && (req[r] <= 0 || !quota_.managed(q, fq.flavor, r) ||
                            req[r] <= quota_.nominal(q, fq.flavor, r));
      if (!within) continue;
      for (ResourceId r : group.covered)
        if (req[r] > 0 && quota_.managed(q, fq.flavor, r) &&
            quota_.usage(q, fq.flavor, r) < quota_.nominal(q, fq.flavor, r))
          keep.push_back(
              {fq.flavor, r,
               std::min(req[r], quota_.nominal(q, fq.flavor, r) - quota_.usage(q, fq.flavor, r))});
      found = true;
      break;
    }
    if (!found) return;
  }
  for (const auto& u : keep) {
    quota_.add_usage(q, u.flavor, u.resource, u.amount);
    reserved_.push_back({q, u});
  }
}

void Scheduler::Walk::release_reserved() {
  for (const auto& [q, u] : reserved_) quota_.add_usage(q, u.flavor, u.resource, -u.amount);
  reserved_.clear();
}

void Scheduler::Walk::hold(int sign) {
  for (const auto& [q, u] : held_) quota_.add_usage(q, u.flavor, u.resource, sign * u.amount);
}

}  // namespace sluice
