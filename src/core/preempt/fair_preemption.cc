// Kueue's fair-sharing preemption (SchedulerPolicy fairSharing.enable; Kueue's
// pkg/scheduler/preemption fairPreemptions, KEP 1714): victims come from the ClusterQueues of
// the cohort with the highest dominant resource share (docs/scheduling.md, "Kueue fair
// sharing"), as long as the preemption strategy holds:
//   LessThanOrEqualToFinalShare  the preemptor's share with its job <= the victim queue's share
//                                without the victim
//   LessThanInitialShare         the preemptor's share with its job < the victim queue's share
//                                before the preemption
//
//   1. group the candidates by queue (in cost order within each); every queue's share now;
//      the preemptor queue's share with its job
//   2. repeatedly take the queue of highest share: the preemptor's own queue gives its next
//      candidate; another queue gives its next candidate that the first strategy allows (or
//      that borrowWithinCohort allows: lower priority, at or below the threshold); the others
//      are kept for step 3. A queue that still borrows competes again with its new share
//   3. with a second strategy: one kept candidate per queue, highest share first, while it
//      holds
// Shares compare as integers (dominant_share), or with ordering: kueue as Kueue's CompareDRS
// (a borrower of weight 0 above all others, several of them by what they borrow; unrounded).
//   4. stop once the preemptor fits (borrowing allowed); then put back every victim but the
//      last that it can do without, latest first
#include <algorithm>
#include <map>
#include <tuple>

#include "core/order/drs.h"
#include "core/preempt/preemptor.h"

namespace sluice {

// A queue's candidates in one fair-sharing search. Not in the anonymous namespace: a field of
// Preemptor::FairRun, which has external linkage (GCC's -Wsubobject-linkage in unity builds).
namespace fair_preemption_detail {
struct QueueGroup {
  QueueId queue = 0;
  std::vector<size_t> cands;  // indexes, cost order
  size_t next = 0;
  Drs share;
  bool active = true;
};
}  // namespace fair_preemption_detail
using fair_preemption_detail::QueueGroup;

namespace {

// Negative, 0, positive: a's share below, equal to, above b's (kueue: CompareDRS).
int compare_shares(const Drs& a, const Drs& b, bool kueue) {
  if (kueue) return compare_drs(a, b);
  const int64_t x = rounded_share(a), y = rounded_share(b);
  return x < y ? -1 : (x > y ? 1 : 0);
}

bool strategy_holds(FairStrategy s, const Drs& preemptor_new, const Drs& victim_old,
                    const Drs& victim_new, bool kueue) {
  return s == FairStrategy::kLessThanOrEqualToFinalShare
             ? compare_shares(preemptor_new, victim_new, kueue) <= 0
             : compare_shares(preemptor_new, victim_old, kueue) < 0;
}

// The active group of highest share (ties: the earlier group), or -1.
int highest(const std::vector<QueueGroup>& groups, bool kueue) {
  int best = -1;
  for (size_t k = 0; k < groups.size(); ++k)
    if (groups[k].active &&
        (best < 0 ||
         compare_shares(groups[k].share, groups[static_cast<size_t>(best)].share, kueue) > 0))
      best = static_cast<int>(k);
  return best;
}

}  // namespace

class Preemptor::FairRun {
 public:
  FairRun(const Preemptor& pre, const PendingRecord& p, const Tier& tier, QuotaTree& quota,
          ClusterAlloc& alloc, const std::vector<Candidate>& cands, std::vector<size_t>* chosen,
          FlavorAttempt& trial)
      : pre_(pre),
        config_(pre.config_),
        p_(p),
        tier_(tier),
        quota_(quota),
        alloc_(alloc),
        cands_(cands),
        chosen_(*chosen),
        trial_(trial) {}

  bool run() {
    chosen_.clear();
    group();
    bool fits = first_strategy();
    if (!fits && config_.policy.fair_sharing.strategies.size() > 1) fits = second_strategy();
    if (!fits) return undo();
    put_back();
    return admit() || undo();
  }

 private:
  bool admit() {
    trial_.memo.clear();
    return pre_.assigner_.assign(p_.job, p_.queue, quota_, alloc_, trial_, tier_.open,
                                 tier_.preferred);
  }
  bool take(size_t i) {
    release_in(*cands_[i].r, quota_, alloc_);
    chosen_.push_back(i);
    return admit();
  }
  bool undo() {
    for (size_t k = chosen_.size(); k-- > 0;) commit_in(*cands_[chosen_[k]].r, quota_, alloc_);
    chosen_.clear();
    return false;
  }
  bool borrowing(QueueId vq) const {
    for (FlavorId f = 0; f < quota_.num_flavors(); ++f)
      for (int r = 0; r < kMaxResources; ++r)
        if (quota_.usage(vq, f, static_cast<ResourceId>(r)) >
            quota_.nominal(vq, f, static_cast<ResourceId>(r)))
          return true;
    return false;
  }
  Drs preemptor_share() {
    return dominant_share_parts_with(config_, quota_, p_.queue, p_.queue, request_, +1);
  }
  Drs share_of(QueueId vq) const { return dominant_share_parts(config_, quota_, vq); }
  void group();
  bool first_strategy();
  bool second_strategy();
  void put_back();

  const Preemptor& pre_;
  const Config& config_;
  const bool kueue_ = config_.policy.ordering == OrderingMode::kKueue;
  const PendingRecord& p_;
  const Tier& tier_;
  QuotaTree& quota_;
  ClusterAlloc& alloc_;
  const std::vector<Candidate>& cands_;
  std::vector<size_t>& chosen_;
  FlavorAttempt& trial_;
  std::vector<QueueGroup> groups_;
  std::vector<UsageEntry> request_;  // the preemptor's, on each group's first flavor
  std::vector<size_t> kept_;         // candidates the first strategy did not allow
};

// 1. Kueue's candidate order (other queues first, lower priority, most recently started, id),
// grouped by queue with each queue's share now; the preemptor's request.
void Preemptor::FairRun::group() {
  std::vector<size_t> order(cands_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Candidate& x = cands_[a];
    const Candidate& y = cands_[b];
    if (x.other_queue != y.other_queue) return x.other_queue;
    if (x.v->priority != y.v->priority) return x.v->priority < y.v->priority;
    if (x.v->start_ns != y.v->start_ns) return x.v->start_ns > y.v->start_ns;
    return x.v->id < y.v->id;
  });
  std::map<QueueId, size_t> group_of;
  for (size_t i : order) {
    const QueueId vq = cands_[i].r->admission.queue;
    auto [it, fresh] = group_of.emplace(vq, groups_.size());
    if (fresh) groups_.push_back(QueueGroup{vq, {}, 0, share_of(vq), true});
    groups_[it->second].cands.push_back(i);
  }
  const QueueId q = p_.queue;
  const ResourceVec req = p_.job.total_requests();
  for (int r = 0; r < kMaxResources; ++r) {
    const auto res = static_cast<ResourceId>(r);
    const int g = req[r] > 0 ? quota_.group_of(q, res) : -1;
    if (g < 0) continue;
    const auto& flavors = config_.cluster_queues[q].resource_groups[static_cast<size_t>(g)].flavors;
    if (!flavors.empty()) request_.push_back({flavors[0].flavor, res, req[r]});
  }
}

// 2. Each turn takes one candidate or retires a queue: at most cands + queues turns.
bool Preemptor::FairRun::first_strategy() {
  const FairStrategy strategy = config_.policy.fair_sharing.strategies[0];
  Drs mine = preemptor_share();
  for (int g = highest(groups_, kueue_); g >= 0; g = highest(groups_, kueue_)) {
    QueueGroup& group = groups_[static_cast<size_t>(g)];
    group.active = false;
    if (group.queue == p_.queue) {
      if (take(group.cands[group.next++])) return true;
      mine = preemptor_share();
      if (group.next < group.cands.size()) {
        group.share = share_of(group.queue);
        group.active = true;
      }
      continue;
    }
    while (group.next < group.cands.size()) {
      const size_t i = group.cands[group.next++];
      const Drs without = dominant_share_parts_with(config_, quota_, group.queue, group.queue,
                                                    cands_[i].r->admission.usage, -1);
      if (!cands_[i].borrow_victim &&
          !strategy_holds(strategy, mine, group.share, without, kueue_)) {
        kept_.push_back(i);
        continue;
      }
      if (take(i)) return true;
      if (group.next < group.cands.size() && borrowing(group.queue)) {
        group.share = without;
        group.active = true;
      }
      break;
    }
  }
  return false;
}

// 3. The second strategy: the first kept candidate of each queue, highest share first.
bool Preemptor::FairRun::second_strategy() {
  const FairStrategy strategy = config_.policy.fair_sharing.strategies[1];
  const Drs mine = preemptor_share();
  std::vector<QueueGroup> second;
  std::map<QueueId, bool> seen;
  for (size_t i : kept_) {
    const QueueId vq = cands_[i].r->admission.queue;
    if (seen.emplace(vq, true).second) second.push_back(QueueGroup{vq, {i}, 0, share_of(vq), true});
  }
  for (int g = highest(second, kueue_); g >= 0; g = highest(second, kueue_)) {
    QueueGroup& group = second[static_cast<size_t>(g)];
    group.active = false;
    if (strategy_holds(strategy, mine, group.share, Drs{}, kueue_) && take(group.cands[0]))
      return true;
  }
  return false;
}

// 4. Put back what the preemptor can do without, latest first (never the last victim taken).
void Preemptor::FairRun::put_back() {
  for (size_t k = chosen_.size() - 1; k-- > 0;) {
    const RunningRecord& r = *cands_[chosen_[k]].r;
    commit_in(r, quota_, alloc_);
    if (admit()) {
      chosen_.erase(chosen_.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      release_in(r, quota_, alloc_);
    }
  }
}

bool Preemptor::fair_search(const PendingRecord& p, const Tier& tier, QuotaTree& quota,
                            ClusterAlloc& alloc, const std::vector<Candidate>& cands,
                            std::vector<size_t>* chosen, FlavorAttempt& trial) const {
  return FairRun(*this, p, tier, quota, alloc, cands, chosen, trial).run();
}

}  // namespace sluice
