// Kueue's partial admission (its PodSetReducer, in the proportional form its scheduler tests
// pin down): a job whose pod sets carry a minCount and that fits neither whole nor by
// preemption starts with fewer pods. A cut of k (out of the total the variable pod sets may
// give up) takes from each of them in proportion to what it may give, rounded down:
//
//   count_i(k) = count_i - (count_i - minCount_i) * k / total
//
// and a binary search finds the smallest cut whose counts fit now or that preemption could make
// fit (the predicate Kueue's reducer searches with: an assignment that fits, or one whose
// preemption finds victims). The preemption probes run on copies of the cycle's quota and
// capacity; only the chosen cut evicts, through the queue's one attempt of the cycle (a job
// that made it whole may make it again reduced).
#include "core/cycle/walk.h"

namespace sluice {

namespace {

struct Reducer {
  std::vector<int32_t> full, delta;
  int64_t total = 0;

  explicit Reducer(const Job& job) {
    for (const auto& ps : job.pod_sets) {
      full.push_back(ps.count);
      delta.push_back(ps.min_count > 0 && ps.min_count < ps.count ? ps.count - ps.min_count : 0);
      total += delta.back();
    }
  }
  std::vector<int32_t> counts(int64_t k) const {
    std::vector<int32_t> c(full.size());
    for (size_t i = 0; i < c.size(); ++i)
      c[i] = full[i] - static_cast<int32_t>(delta[i] * k / total);
    return c;
  }
};

}  // namespace

Scheduler::Walk::Next Scheduler::Walk::partial(const PendingJob& p, int q, const Tier& tier,
                                               bool over, const Job** used, bool* admitted,
                                               bool* via_preemption) {
  const Reducer red(p.job);
  if (red.total == 0) return Next::kGo;
  const QuotaTree& basis = start_quota_ ? *start_quota_ : quota_;
  // May it preempt at all (best-effort work, a queue that never preempts and a queue whose
  // attempt another job made may not; the cycle's cap is checked when the attempt is made)?
  const bool may_evict =
      !over && may_preempt_[q] && (!preempt_tried_[q] || attempted_[q] == p.job.id);
  // Why the whole job waits, and on which flavors, if nothing fits (the probes overwrite them).
  const PendingReason whole = attempt_.reason;
  const std::vector<FlavorId> whole_flavors = attempt_.failed_flavors;
  auto wait_whole = [&] {
    attempt_.reason = whole;
    attempt_.failed_flavors = whole_flavors;
  };
  FlavorAttempt trial;
  auto fits_now = [&](const Job& j) {
    if (!s_.assigner_.assign(j, q, basis, alloc_, attempt_, tier.open, tier.preferred, false))
      return false;
    return !start_quota_ || s_.assigner_.fits_now(attempt_.admission, quota_, &attempt_.reason);
  };
  auto fits_evicting = [&](const PendingJob& rec) {  // on copies: nothing changes
    QuotaTree quota = quota_;
    if (kueue_)  // as evict_for(): earlier victims' held quota is gone for a preemptor
      for (const auto& [hq, u] : held_) quota.add_usage(hq, u.flavor, u.resource, -u.amount);
    ClusterAlloc alloc = alloc_;
    std::set<JobId> evicted = evicted_;
    std::vector<Preemption> out;
    return s_.preemptor_.preempt(rec, tier, s_.victims_, quota, alloc, now_, evicted, trial, out);
  };
  // The reduced job of cut k; kept for the cycle (the placement memo points into it).
  auto reduced = [&](int64_t k) -> PendingJob& {
    reduced_.push_back(p);
    reduced_.back().job = with_counts(p.job, red.counts(k));
    return reduced_.back();
  };
  auto fits = [&](int64_t k) {
    const PendingJob& rec = reduced(k);
    return fits_now(rec.job) || (may_evict && fits_evicting(rec));
  };
  // The smallest cut that fits: the largest counts.
  if (!fits(red.total)) {
    wait_whole();
    return Next::kGo;
  }
  int64_t lo = 1, hi = red.total;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (fits(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const PendingJob& rec = reduced(lo);
  if (fits_now(rec.job)) {
    *admitted = true;
  } else {
    Next next = Next::kGo;
    if (!claim_attempt(p, q, /*again=*/true, &next)) {
      wait_whole();
      return next;
    }
    if (evict_for(rec, tier, via_preemption) == Next::kRestart) return Next::kRestart;
    *admitted = *via_preemption;
  }
  if (!*admitted) {
    wait_whole();
    return Next::kGo;
  }
  attempt_.admission.pod_set_counts = red.counts(lo);
  *used = &rec.job;
  return Next::kGo;
}

}  // namespace sluice
