// One scheduling cycle, Scheduler::run_cycle(): the walk over pending jobs in rank order.
//
//   0. choose_mode   incremental (new jobs only) when nothing was freed since the last cycle
//   1. pick          the best queue head: starving first (oldest), then the highest score
//   2. held          behind a StrictFIFO head or a starving job's claim: stays pending
//   3. budget        a namespace over its GPU-hour budget: rejected, or admitted best-effort
//   4. place         the flavor assigner on the working state; else the preemptor
//   5. backfill      an admission must not delay the reservation of a higher-ranked job
//   6. commit / leave_pending (which may block a StrictFIFO queue, reserve, or claim capacity)
//   7. interactive jobs past their timeout are rejected
#include <algorithm>
#include <deque>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "core/cycle/align_yield.h"
#include "core/cycle/walk.h"
#include "core/order/starvation.h"

namespace sluice {

namespace {

constexpr int kMaxPreemptionAttempts = 16;

}  // namespace

CycleResult Scheduler::run_cycle(TimeNs now, CycleMode mode) const {
  // End alignment: Walk::aim_ends points the placer at the node ends before each job is
  // placed; the placer forgets them when the cycle returns.
  struct NodeEnds {
    const Placer& placer;
    ~NodeEnds() { placer.set_node_ends(nullptr, 0); }
  } ends{placer_};
  Walk w(*this, now);
  w.choose_mode(mode);
  w.start();
  if (!w.walk()) {
    w.release();
    return run_cycle(now, CycleMode::kFull);
  }
  w.reject_expired_interactive();
  return w.finish();
}

Scheduler::Walk::Walk(const Scheduler& s, TimeNs now)
    : s_(s),
      now_(now),
      policy_(s.config_->policy),
      nq_(static_cast<int>(s.by_key_.size())),
      kueue_(policy_.ordering == OrderingMode::kKueue),
      aging_(!kueue_ && policy_.aging_horizon_ns > 0),
      fair_(fairness_bounds(*s.config_, s.priority_scale_)),
      no_victims_(s.nothing_preemptible()),
      by_arrival_(no_victims_ && policy_.arrival_without_victims),
      fair_terms_(!kueue_ && (policy_.weights.drf != 0 || policy_.weights.debt != 0) &&
                  !by_arrival_),
      yield_(fair_terms_ && s.waits_.enabled()),
      nominal_(fair_terms_ && policy_.fairness_within_nominal < 1),
      lease_(s.scratch_.get(), s.quota_, s.alloc_),
      quota_(lease_.quota()),
      alloc_(lease_.alloc()) {
  top_priority_ = top_priority(*s.config_);
  result_.now = now;
  result_.generation = s.submissions_;
  result_.free_epoch = s.free_epoch_;
  result_.without_victims = no_victims_;
}

// Within a queue: starving first (oldest first), then by key, then submit time, then id.
bool Scheduler::Walk::ranks_before(const PendingJob& a, const PendingJob& b) const {
  const bool sa = starving(a), sb = starving(b);
  if (sa != sb) return sa;
  if (!sa && a.key != b.key) return a.key > b.key;
  return std::tie(a.job.submit_ns, a.job.id) < std::tie(b.job.submit_ns, b.job.id);
}

void Scheduler::Walk::choose_mode(CycleMode mode) {
  // Incremental when nothing was freed since the last applied cycle and no older job became
  // starving since (that would change who holds capacity). Kueue's order: also only when the
  // last cycle left every pending job failing on the state it left (CycleResult::settled), no
  // budget can reject or downgrade with time, and no queue can preempt (walk_fresh).
  bool incremental = mode == CycleMode::kAuto && !s_.need_full_ &&
                     (!kueue_ || (s_.kueue_settled_ && s_.config_->budgets.empty()));
  // Preemption: an older job of a queue that preempts failed its queue's attempt in the last
  // full cycle (or never got one: an older job of its queue had it). The attempt fails again
  // while the running jobs it could evict are the same ones (no admission or eviction since:
  // preempt_stale_), none of them passed its minimum runtime since, and every such queue got
  // its attempt then (the per-cycle cap was not reached), and the job that made it is still
  // pending (else an older job that never tried would try now). Budgets can open the right to
  // preempt as time passes (a new period): with them, full cycles as before.
  // Only queues whose policy may preempt make attempts (and count against the cap).
  may_preempt_.assign(nq_, 0);
  bool preempt_pending = false;
  for (int q = 0; q < nq_; ++q) {
    const auto& pc = s_.config_->cluster_queues[q].preemption;
    may_preempt_[q] = pc.within_cluster_queue != WithinQueuePolicy::kNever ||
                      pc.reclaim_within_cohort != ReclaimPolicy::kNever;
    preempt_pending = preempt_pending || (may_preempt_[q] && !s_.by_key_[q].empty());
  }
  // With no running job listed as a possible victim every attempt fails, in a full cycle as in
  // an incremental one (a cluster of non-preemptible work decides as without preemption).
  if (s_.victims_.empty()) preempt_pending = false;
  if (kueue_ && preempt_pending) incremental = false;
  if (incremental && preempt_pending) {
    if (s_.preempt_stale_ || s_.last_preempt_capped_ || !s_.config_->budgets.empty()) {
      incremental = false;
    } else if (!s_.protected_until_.empty()) {
      auto it = s_.protected_until_.lower_bound({s_.last_cycle_ns_ + 1, 0});
      if (it != s_.protected_until_.end() && it->first <= now_) incremental = false;
    }
    for (JobId id : s_.last_preempt_attempted_)
      if (id && !s_.pending_.count(id)) incremental = false;
  }
  // A fallback tier that opened a flavor or shape since the last cycle: the job may fit now.
  if (incremental && !s_.fallback_opens_.empty()) {
    auto it = s_.fallback_opens_.lower_bound({s_.last_cycle_ns_ + 1, 0});
    if (it != s_.fallback_opens_.end() && it->first <= now_) incremental = false;
  }
  // A job that became starving, or outgrew the fairness window, since the last cycle may rank
  // otherwise now (it may hold capacity, or take the reservation).
  auto crossed = [&](TimeNs after_ns) {
    const TimeNs was = s_.last_cycle_ns_ - after_ns;
    const TimeNs is = now_ - after_ns;
    for (int q = 0; q < nq_; ++q) {
      auto it = s_.by_submit_[q].lower_bound({was + 1, 0});
      if (it != s_.by_submit_[q].end() && it->first <= is) return true;
    }
    return false;
  };
  if (incremental && aging_ && crossed(policy_.aging_horizon_ns)) incremental = false;
  if (incremental && fair_terms_ && fair_.window_ns < policy_.aging_horizon_ns &&
      crossed(fair_.window_ns))
    incremental = false;
  if (incremental && yield_)  // and the narrower windows of fairness yield
    for (TimeNs window : s_.waits_.windows(fair_.window_ns))
      if (window < fair_.window_ns && crossed(window)) incremental = false;
  // The order or placement rule for a cluster without victims changed since the last cycle.
  if (incremental && no_victims_ != s_.last_without_victims_ && policy_.acts_without_victims())
    incremental = false;
  incremental_ = incremental;
  if (incremental_) collect_fresh();
  result_.incremental = incremental_;
}

// The jobs an incremental cycle looks at: those submitted since the last applied cycle and
// interactive jobs whose timeout passed (a fresh look, and a reason, before rejection).
void Scheduler::Walk::collect_fresh() {
  fresh_.assign(nq_, {});
  std::set<JobId> seen;
  auto add = [&](JobId id) {
    auto it = s_.pending_.find(id);
    if (it != s_.pending_.end() && seen.insert(id).second)
      fresh_[it->second.queue].push_back(&it->second);
  };
  for (JobId id : s_.new_jobs_) add(id);
  for (const auto& [deadline, id] : s_.interactive_deadlines_) {
    if (deadline > now_) break;
    add(id);
  }
  for (auto& v : fresh_)
    std::sort(v.begin(), v.end(), [&](auto* a, auto* b) { return ranks_before(*a, *b); });
  // A starving job's claim holds back only what a full cycle walks after it: a new job that
  // ranks before a standing holder (starving, and submitted earlier: a job that arrives with
  // an old submit time) would be walked before the claim exists. A full cycle decides then.
  std::vector<const PendingJob*> holders;
  auto add_holder = [&](JobId id) {
    if (!id) return;
    if (auto it = s_.pending_.find(id); it != s_.pending_.end()) holders.push_back(&it->second);
  };
  add_holder(s_.last_held_by_);
  for (JobId id : s_.last_held_root_) add_holder(id);
  for (JobId id : s_.last_held_queue_) add_holder(id);
  for (const auto& v : fresh_)
    for (const PendingJob* f : v)
      for (const PendingJob* h : holders)
        if (starving(*f) && ranks_before(*f, *h)) incremental_ = false;
  if (!incremental_) fresh_.clear();
}

void Scheduler::Walk::start() {
  const Config& config = *s_.config_;
  cur_.resize(nq_);
  for (int q = 0; q < nq_; ++q) {
    cur_[q].starving = s_.by_submit_[q].begin();
    cur_[q].rest = s_.by_key_[q].begin();
  }
  dyn_.assign(nq_, 0);
  heads_.assign(nq_, nullptr);
  head_key_.assign(nq_, {});
  while (leaves_ < nq_) leaves_ *= 2;
  winner_.assign(2 * static_cast<size_t>(leaves_), -1);
  for (int q = 0; q < nq_; ++q) refresh(q);
  held_root_.assign(quota_.num_queues() + config.cohorts.size(), 0);
  held_queue_.assign(nq_, 0);
  budget_used_milli_.assign(config.budgets.size(), 0);
  over_budget_.assign(config.budgets.size(), false);
  for (size_t b = 0; b < config.budgets.size(); ++b) {
    budget_used_milli_[b] = s_.budgets_.used_milli_gpu_hours(static_cast<int32_t>(b), now_);
    over_budget_[b] = s_.budgets_.over(static_cast<int32_t>(b), now_);
  }
  preempt_tried_.assign(nq_, false);
  attempted_.assign(nq_, 0);
  if (policy_.cycle_start_flavors) start_quota_.emplace(quota_);
  reclaim_held_.assign(quota_.num_queues() + config.cohorts.size(), 0);
  if (incremental_) {
    // What the last cycles left in force: the reservation, starving jobs' claims, StrictFIFO
    // blockers and the queues' preemption attempts.
    for (const Reservation& r : s_.last_reservations_)
      if (s_.pending_.count(r.job)) reservations_.push_back(r);
    held_by_ = s_.last_held_by_;
    if (!s_.last_held_root_.empty()) held_root_ = s_.last_held_root_;
    if (!s_.last_held_queue_.empty()) held_queue_ = s_.last_held_queue_;
    auto any = [](const std::vector<JobId>& v) {
      return std::any_of(v.begin(), v.end(), [](JobId id) { return id != 0; });
    };
    claims_ = held_by_ || any(held_root_) || any(held_queue_);
    for (int q = 0; q < nq_ && q < static_cast<int>(s_.last_strict_blockers_.size()); ++q)
      cur_[q].strict_blocker = s_.last_strict_blockers_[q];
    for (int q = 0; q < nq_ && q < static_cast<int>(s_.last_preempt_attempted_.size()); ++q)
      if (s_.last_preempt_attempted_[q]) {
        attempted_[q] = s_.last_preempt_attempted_[q];
        ++preempt_attempts_;
        if (config.cluster_queues[q].preemption.reclaim_within_cohort != ReclaimPolicy::kNever)
          reclaim_held_[quota_.root(q)] = 1;
      }
  }
  summarize_ = s_.summarize_ && !incremental_ && !kueue_;
  if (summarize_) walked_other_.assign(nq_, 0);
  if (!incremental_ && !s_.summarize_) result_.pending.reserve(s_.pending_.size());
  for (int q = 0; q < nq_; ++q) next_head(q);
}

const Scheduler::PendingJob* Scheduler::Walk::head(int q) {
  Cursor& c = cur_[q];
  if (incremental_) return c.fresh < fresh_[q].size() ? fresh_[q][c.fresh] : nullptr;
  while (true) {
    if (c.in_starving) {
      if (c.starving != s_.by_submit_[q].end()) {
        const PendingJob& p = s_.pending_.at(c.starving->second);
        if (starving(p)) return &p;
      }
      c.in_starving = false;
    }
    if (c.rest == s_.by_key_[q].end()) return nullptr;
    // (is_starving() on the copy of the submit time in the order: the job itself is not
    // touched until it is picked.)
    if (!(aging_ && now_ - c.rest->submit_ns >= policy_.aging_horizon_ns)) return c.rest->job;
    ++c.rest;  // already served from the starving list
  }
}

void Scheduler::Walk::advance(int q) {
  Cursor& c = cur_[q];
  if (incremental_)
    ++c.fresh;
  else if (c.in_starving)
    ++c.starving;
  else
    ++c.rest;
}

void Scheduler::Walk::refresh(int q) {
  dyn_[q] = by_arrival_ ? 0 : s_.fairness_penalty(q, quota_);
  if (heads_[q]) {
    head_key_[q].score = head_score(heads_[q]->key, q, heads_[q]->job.submit_ns, heads_[q]);
    replay(q);
  }
}

void Scheduler::Walk::next_head(int q) {
  heads_[q] = head(q);
  const PendingJob* p = heads_[q];
  if (!p) return replay(q);
  const Cursor& c = cur_[q];
  if (!incremental_ && !c.in_starving) {
    // From the order's copies; fetch the job meanwhile: it is read when it is picked, after
    // the other queues' heads had their turn.
    const char* line = reinterpret_cast<const char*>(p);
    for (const char* end = pending_hot_end(*p); line < end; line += 64) __builtin_prefetch(line);
#if defined(__GLIBCXX__)
    // And the order's next node where it is below this one (the start of its right subtree;
    // else the next is an ancestor, already read): the walk's step to it missed the cache.
    if (const auto* right = c.rest._M_node->_M_right) __builtin_prefetch(right);
#endif
    head_key_[q] = {head_score(-c.rest->neg_key, q, c.rest->submit_ns, p), c.rest->submit_ns,
                    c.rest->id, false};
  } else {
    head_key_[q] = {head_score(p->key, q, p->job.submit_ns, p), p->job.submit_ns, p->job.id,
                    starving(*p)};
  }
  replay(q);
}

// Could the job be placed on an idle cluster (on these flavors' nodes)? Remembered per shape.
bool Scheduler::Walk::fits_idle(const PendingJob& p, const std::vector<FlavorId>& flavors) {
  auto place = [&]() {
    return std::holds_alternative<Placement>(s_.placer_.place(
        p.job, s_.assigner_.nodes_for(p.job, flavors, attempt_.scratch), s_.empty_alloc_));
  };
  CycleScratch* kept = lease_.kept();
  if (!kept) return place();
  auto& memo = kept->fits_idle;
  auto key = std::make_pair(p.shape, flavors);
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  if (memo.size() >= 100'000) memo.clear();  // shapes come and go: bound it
  const bool fits = place();
  memo.emplace(std::move(key), fits);
  return fits;
}

// Why a job of queue q is held back, if it is: behind a StrictFIFO head that did not fit, or
// behind a starving job's claim (on the whole cluster, its cohort tree or its queue).
bool Scheduler::Walk::held_reason(const PendingJob& p, int q, PendingReason& reason) const {
  reason.queue = q;
  const JobId strict = cur_[q].strict_blocker;
  const auto blocker = strict ? s_.pending_.find(strict) : s_.pending_.end();
  if (blocker != s_.pending_.end() && !ranks_before(p, blocker->second)) {
    reason.code = PendingCode::kStrictFifoBlocked;
    reason.blocker = strict;
    return true;
  }
  const int root = quota_.root(q);
  for (JobId holder : {held_by_, held_root_[root], held_queue_[q]}) {
    if (holder && claim_holds(holder, p)) {
      reason.code = PendingCode::kHeldForStarving;
      reason.blocker = holder;
      return true;
    }
  }
  return false;
}

bool Scheduler::Walk::claim_holds(JobId holder, const PendingJob& p) const {
  return sluice::claim_holds(s_.pending_.at(holder).job, p.job, policy_, top_priority_, now_);
}

bool Scheduler::Walk::holds_all(JobId holder) const {
  return claim_holds_all(s_.pending_.at(holder).job, policy_, top_priority_, now_);
}

// Every queue with jobs left to walk is under a starving job's claim (claims only grow within
// a cycle, so this stays true).
bool Scheduler::Walk::all_held() const {
  if (held_by_ && holds_all(held_by_)) return true;
  for (int k = 0; k < nq_; ++k) {
    if (!heads_[k]) continue;
    const JobId r = held_root_[quota_.root(k)], own = held_queue_[k];
    if (!(r && holds_all(r)) && !(own && holds_all(own))) return false;
  }
  return true;
}

// Whether every job left to walk would stay pending without effect on the rest of the cycle,
// as the walk would decide it; if so, their summary goes into the result. A held queue holds
// all its rest (they rank after its head). Otherwise no job left may be starving (those come
// first) or be decided otherwise than by shape, and every shape left must have failed in this
// queue already (the memo: it fails again, for the same reason) for a reason that would start
// no preemption attempt, reservation or StrictFIFO block.
bool Scheduler::Walk::summarize_rest(int64_t& cost) {
  // A claim that holds back only some classes (order/starvation.h) decides job by job, not by
  // queue or shape: no summary while one is in force.
  auto limited = [&](JobId holder) { return holder && !holds_all(holder); };
  if (limited(held_by_)) return false;
  for (int q = 0; q < nq_; ++q)
    if (limited(held_queue_[q]) || limited(held_root_[quota_.root(q)])) return false;
  std::vector<PendingSummary> out;
  for (int q = 0; q < nq_; ++q) {
    if (!heads_[q]) continue;
    ++cost;
    PendingSummary sum;
    sum.queue = q;
    if (held_reason(*heads_[q], q, sum.reason)) {
      sum.held = true;
      out.push_back(std::move(sum));
      continue;
    }
    if (head_key_[q].starving || walked_other_[q] < s_.not_by_shape_[q]) return false;
    const bool strict = s_.config_->cluster_queues[q].strategy == QueueingStrategy::kStrictFIFO;
    for (const auto& [shape, count] : s_.shape_counts_[q]) {
      ++cost;
      const uint64_t key = shape * static_cast<uint64_t>(nq_) + static_cast<uint64_t>(q);
      if (auto w = walked_.find(key); w != walked_.end() && w->second >= count) continue;
      auto f = failed_.find(key);
      if (f == failed_.end()) return false;
      const PendingReason& r = f->second.reason;
      const bool fits_quota_some_day = !never_fits(r.code);
      if ((may_preempt_[q] && fits_quota_some_day && !preempt_tried_[q]) ||
          (policy_.backfill && reservations_.size() < depth() &&
           r.code == PendingCode::kPlacement) ||
          (strict && fits_quota_some_day))
        return false;
      sum.by_shape.emplace_back(shape, r);
    }
    std::sort(sum.by_shape.begin(), sum.by_shape.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    out.push_back(std::move(sum));
  }
  result_.summary = std::move(out);
  return true;
}

// After a job stayed pending: whether the walk stops here, the rest summarised.
bool Scheduler::Walk::stop_here(bool held) {
  if (!summarize_) return false;
  ++quiet_;
  if (quiet_ < next_look_ && !(held && all_held())) return false;
  int64_t cost = 0;
  if (summarize_rest(cost)) return true;
  next_look_ = quiet_ + std::max<int64_t>(4, cost);
  return false;
}

// Whether queue a's head goes before queue b's: starving first (oldest), then the highest
// score, then the oldest; a queue without a head goes last. Ties keep the lower index (the
// tree prefers its left side), as a scan of the queues in order would.
bool Scheduler::Walk::ahead(int a, int b) const {
  if (a < 0 || !heads_[a]) return false;
  if (b < 0 || !heads_[b]) return true;
  const HeadKey& x = head_key_[a];
  const HeadKey& y = head_key_[b];
  if (x.starving != y.starving) return x.starving;
  if (!x.starving && x.score != y.score) return x.score > y.score;
  return std::tie(x.submit_ns, x.id) < std::tie(y.submit_ns, y.id);
}

void Scheduler::Walk::replay(int q) {
  size_t i = static_cast<size_t>(leaves_ + q);
  winner_[i] = heads_[q] ? q : -1;
  for (i /= 2; i >= 1; i /= 2) {
    const int l = winner_[2 * i], r = winner_[2 * i + 1];
    winner_[i] = ahead(r, l) ? r : (l >= 0 ? l : r);
  }
}

bool Scheduler::Walk::walk() {
  if (kueue_) return incremental_ ? walk_fresh() : walk_rounds();
  while (true) {
    const int q = best_queue();  // 1.
    if (q < 0) return true;
    const bool starving = head_key_[q].starving;
    const PendingJob& p = *heads_[q];
    advance(q);
    next_head(q);
    if (summarize_) {
      if (p.by_shape)
        ++walked_[p.shape * static_cast<uint64_t>(nq_) + static_cast<uint64_t>(q)];
      else
        ++walked_other_[q];
    }
    switch (decide(p, q, starving)) {
      case Next::kGo:
        continue;
      case Next::kStop:
        return true;
      case Next::kRestart:
        return false;
    }
  }
}

// Steps 2-6 for one job.
Scheduler::Walk::Next Scheduler::Walk::decide(const PendingJob& p, int q, bool starving) {
  if (Next next; held_back(p, q, starving, &next)) return next;
  // 3. Budget: a namespace over its GPU-hour budget gets new work in only as preemptible
  // best-effort work, or not at all, as its queue says.
  const bool over = p.budget >= 0 && over_budget_[static_cast<size_t>(p.budget)];
  if (over && s_.config_->cluster_queues[q].over_budget == OverBudgetPolicy::kReject) {
    reject_over_budget(p, q);
    return Next::kGo;
  }
  // 4. Try it (through its fallback tier); when it does not fit, its queue's preemption policy
  // may evict running work. Best-effort work never preempts.
  ++result_.evaluated;
  if (!s_.node_end_.empty()) aim_ends(q);
  const Tier tier = s_.assigner_.tier_of(p.job, q, now_);
  const bool plain = tier.after_ns == 0 && p.job.fallback.shapes.empty();
  const uint64_t fkey = p.shape * static_cast<uint64_t>(nq_) + static_cast<uint64_t>(q);
  const Failed* known = nullptr;
  if (plain)
    if (auto it = failed_.find(fkey); it != failed_.end()) known = &it->second;
  const Job* used = &p.job;
  bool admitted = false;
  // flavorSnapshot: cycleStart: flavors chosen on the cycle's starting quota; a choice that no
  // longer fits waits for the next cycle, without preempting (`skipped`).
  bool skipped = false;
  auto assign = [&](bool stop_at_preempt) {
    const QuotaTree& basis = start_quota_ ? *start_quota_ : quota_;
    bool ok = s_.assigner_.assign_tiered(p, tier, basis, alloc_, now_, attempt_, shaped_, &used,
                                         stop_at_preempt);
    if (ok && start_quota_ &&
        !s_.assigner_.fits_now(attempt_.admission, quota_, &attempt_.reason)) {
      ok = false;
      skipped = true;
    }
    return ok;
  };
  if (known) {
    attempt_.reason = known->reason;  // (its failed flavors are read from `known` below)
  } else {
    admitted = assign(true);
  }
  bool via_preemption = false;
  if (!admitted && !over && !skipped) {
    if (preempt(p, q, tier, &via_preemption) == Next::kRestart) return Next::kRestart;
    admitted = via_preemption;
  }
  // whenCanPreempt: MayStopSearch stopped at a flavor needing preemption and nothing was
  // evicted there: the later flavors, as Kueue tries them when one has no candidates.
  if (!admitted && !known && !skipped && attempt_.stopped_at_preempt) admitted = assign(false);
  // Partial admission: fewer pods of the pod sets that allow it, fitting now or by preemption.
  if (!admitted && !known && !skipped && partially_admissible(p.job)) {
    if (partial(p, q, tier, over, &used, &admitted, &via_preemption) == Next::kRestart)
      return Next::kRestart;
  }
  if (!admitted && !known && plain)
    failed_.emplace(fkey, Failed{attempt_.reason, attempt_.failed_flavors});
  if (!admitted && !known && kueue_ && !incremental_) note_failure(p, fkey, plain);
  // Kueue's incremental cycle is exact while it admits nothing (walk_fresh).
  if (admitted && kueue_ && incremental_) return Next::kRestart;
  // 5. Backfill (a preemptor's search already stayed off the reserved nodes where it had to:
  // evict_for; it is not placed again elsewhere, its victims were chosen for where they run).
  if (admitted && !via_preemption) admitted = backfill_allows(p, q, *used);
  // 6. Commit it, or leave it pending.
  if (admitted) {
    if (incremental_ && reclaim_held_[quota_.root(q)]) return Next::kRestart;
    commit(q, *used, over);
    return Next::kGo;
  }
  if (kueue_ && !incremental_ && !skipped && attempt_.reason.code == PendingCode::kQuota)
    reserve_unreclaimable(p, q);
  return leave_pending(p, q, starving, known) ? Next::kStop : Next::kGo;
}

// 2. Held back: behind a StrictFIFO head, or behind a starving job's claim (looked at only
// where there is one: most jobs of a full cycle are in queues with neither). True with *next
// set when it is: the job stays pending.
bool Scheduler::Walk::held_back(const PendingJob& p, int q, bool starving, Next* next) {
  if (!cur_[q].strict_blocker && !claims_) return false;
  PendingDecision pd;
  pd.job = p.job.id;
  pd.starving = starving;
  if (!held_reason(p, q, pd.reason)) return false;
  result_.pending.push_back(std::move(pd));
  *next = stop_here(true) ? Next::kStop : Next::kGo;
  return true;
}

void Scheduler::Walk::reject_over_budget(const PendingJob& p, int q) {
  const Budget& b = s_.config_->budgets[static_cast<size_t>(p.budget)];
  Rejection rj;
  rj.job = p.job.id;
  rj.reason.code = PendingCode::kOverBudget;
  rj.reason.queue = q;
  rj.reason.detail = b.namespace_;
  rj.reason.requested = budget_used_milli_[static_cast<size_t>(p.budget)];
  rj.reason.available = b.gpu_hours_milli;
  result_.rejected.push_back(std::move(rj));
}

// 4b. At most one preemption attempt per queue and kMaxPreemptionAttempts per cycle bound the
// cost; *admitted says whether this one made room.
Scheduler::Walk::Next Scheduler::Walk::preempt(const PendingJob& p, int q, const Tier& tier,
                                               bool* admitted) {
  *admitted = false;
  if (never_fits(attempt_.reason.code)) return Next::kGo;
  Next next = Next::kGo;
  if (!claim_attempt(p, q, /*again=*/false, &next)) return next;
  return evict_for(p, tier, admitted);
}

// Whether p makes its queue's preemption attempt of this cycle (false with *next to return).
// `again`: the job that made it may make it again (at reduced counts: partial admission).
bool Scheduler::Walk::claim_attempt(const PendingJob& p, int q, bool again, Next* next) {
  // With no running job listed as a possible victim every search fails: none is made, and no
  // queue holds an attempt that would make the next incremental cycle's admissions in its
  // cohort restart as full cycles (choose_mode treats the cluster as without preemption too).
  if (!may_preempt_[q] || s_.victims_.empty()) return false;
  if (preempt_tried_[q]) return again && attempted_[q] == p.job.id;
  // Incremental: a full cycle would give the queue's attempt to the older job that holds it,
  // unless this one ranks before it.
  if (incremental_ && attempted_[q] && !ranks_before(p, s_.pending_.at(attempted_[q])))
    return false;
  if (preempt_attempts_ >= kMaxPreemptionAttempts) {
    // Incremental cycles stop being exact past the cap: a full cycle decides instead.
    if (incremental_) {
      *next = Next::kRestart;
      return false;
    }
    capped_ = true;
    return false;
  }
  preempt_tried_[q] = true;
  if (!attempted_[q]) ++preempt_attempts_;
  attempted_[q] = p.job.id;
  return true;
}

// The victim search for p on the cycle's working state; *admitted when it made room.
Scheduler::Walk::Next Scheduler::Walk::evict_for(const PendingJob& p, const Tier& tier,
                                                 bool* admitted) {
  *admitted = false;
  PendingReason keep = attempt_.reason;
  const size_t first_victim = result_.preempted.size();
  const bool avoid = !kueue_ && must_avoid_reservation(p, p.queue);
  if (avoid) cordon_reservation(true);
  if (kueue_) hold(-1);  // (earlier victims are gone for a preemptor: kueue_rounds.cc)
  const bool found = s_.preemptor_.preempt(p, tier, s_.victims_, quota_, alloc_, now_, evicted_,
                                           attempt_, result_.preempted);
  if (kueue_) hold(+1);
  if (avoid) cordon_reservation(false);
  if (!found) {
    attempt_.reason = std::move(keep);
    if (avoid) reservation_reason(p.queue, *binding_.front());
    return Next::kGo;
  }
  // An eviction frees capacity that older jobs might use: a full cycle decides instead.
  if (incremental_) return Next::kRestart;
  *admitted = true;
  if (kueue_) hold_victims(first_victim);
  if (attempt_.admission.downgraded()) attempt_.admission.waited_ns = now_ - p.job.submit_ns;
  for (int k = 0; k < nq_; ++k) refresh(k);  // victims' queues lost usage
  return Next::kGo;
}

// 6a. The admission goes into the working state and the result.
void Scheduler::Walk::commit(int q, const Job& used, bool over) {
  failed_.clear();  // quota and capacity changed
  Admission& a = attempt_.admission;
  a.best_effort = over;
  alloc_.commit(used, a.placement);
  if (!s_.node_end_.empty()) align_later(q, used, a.placement);
  for (const auto& u : a.usage) quota_.add_usage(q, u.flavor, u.resource, u.amount);
  refresh(q);
  result_.admitted.push_back(std::move(a));
}

// End alignment for the job about to be placed (its queue q gives the default walltime): on
// the cycle's node ends, or off while spec.alignEndsAfter finds nobody waiting for room, or
// while nothing is preemptible and spec.withoutVictims says so (or sets its own threshold).
void Scheduler::Walk::aim_ends(int q) {
  const TimeNs after = no_victims_ && policy_.align_without_victims_after_ns >= 0
                           ? policy_.align_without_victims_after_ns
                           : policy_.align_ends_after_ns;
  const bool on = (policy_.align_without_victims || !no_victims_) &&
                  (after <= 0 || someone_waits_for_room(after)) &&
                  (!policy_.align_ends_yield_small || longest_waiting_needs_a_node());
  const std::vector<TimeNs>* ends = cycle_node_end_.empty() ? &s_.node_end_ : &cycle_node_end_;
  s_.placer_.set_node_ends(on ? ends : nullptr, now_, policy_.align_ends_bins);
  if (on) s_.placer_.set_default_walltime(s_.config_->cluster_queues[q].default_walltime_ns);
}

// spec.alignEndsAfter: a job that has waited at least that long holds a backfill reservation,
// or a starving job claims capacity (it has waited the aging horizon).
bool Scheduler::Walk::someone_waits_for_room(TimeNs after) const {
  if (held_by_) return true;
  for (const Reservation& r : reservations_) {
    auto it = s_.pending_.find(r.job);
    if (it != s_.pending_.end() && now_ - it->second.job.submit_ns >= after) return true;
  }
  return false;
}

// spec.alignEndsYieldToSmall: whether the job pending the longest among those of the highest
// priority pending has a pod of more than one GPU (align_yield.h). Decided once a cycle, on the
// jobs pending when it started (a queue's jobs by submit time: its first of the top class is
// the only one of them that can win).
bool Scheduler::Walk::longest_waiting_needs_a_node() {
  if (longest_needs_node_ >= 0) return longest_needs_node_ != 0;
  AlignYield yield;
  for (int q = 0; q < nq_; ++q)
    for (const auto& [submit, id] : s_.by_submit_[q]) {
      const Job& job = s_.pending_.at(id).job;
      yield.offer(job);
      if (job.priority >= top_priority_) break;
    }
  longest_needs_node_ = yield.aligns() ? 1 : 0;
  return longest_needs_node_ != 0;
}

// End alignment: the later placements of this cycle see this admission's expected end on its
// nodes (the scheduler's own node ends move when the cycle is applied).
void Scheduler::Walk::align_later(int q, const Job& used, const Placement& placement) {
  if (cycle_node_end_.empty()) cycle_node_end_ = s_.node_end_;  // the next aim_ends uses it
  const TimeNs end = s_.expected_end(used, q, now_);
  for (const auto& pod : placement.pods) {
    TimeNs& e = cycle_node_end_[static_cast<size_t>(pod.node)];
    e = std::max(e, end);
  }
}

// 6b. It stays pending: it may block its StrictFIFO queue, reserve for backfill, or (starving)
// claim capacity. True when the walk stops here, the rest summarised.
bool Scheduler::Walk::leave_pending(const PendingJob& p, int q, bool starving,
                                    const Failed* known) {
  // (Built where it stays: a full cycle lists every job, a decision's moves were a tenth of it.)
  PendingDecision& pd = result_.pending.emplace_back();
  pd.job = p.job.id;
  pd.starving = starving;
  pd.reason = std::move(attempt_.reason);
  const PendingReason& reason = pd.reason;  // (the list does not grow until this returns)
  const auto& failed_flavors = known ? known->failed_flavors : attempt_.failed_flavors;
  if (s_.config_->cluster_queues[q].strategy == QueueingStrategy::kStrictFIFO &&
      !never_fits(reason.code))
    cur_[q].strict_blocker = p.job.id;
  // The highest-ranked jobs that cannot be placed reserve what they will get.
  if (policy_.backfill && reservations_.size() < depth() && !starving &&
      reason.code == PendingCode::kPlacement)
    reserve_more(p, failed_flavors);
  // A starving job that could fit some day holds capacity for itself.
  if (starving && !never_fits(reason.code)) {
    if (reason.code != PendingCode::kPlacement) {
      // Quota: if the queue can borrow, other queues of its cohort tree must stop taking what
      // it needs; if it cannot, only its own queue's usage matters.
      if (reason.flavor >= 0 && !quota_.can_borrow(q, reason.flavor, reason.resource))
        held_queue_[q] = p.job.id;
      else
        held_root_[quota_.root(q)] = p.job.id;
      claims_ = true;
    } else if (fits_idle(p, failed_flavors)) {
      held_by_ = p.job.id;  // fits an idle cluster: worth draining capacity for
      claims_ = true;
    }
  }
  return stop_here(false);
}

void Scheduler::Walk::reject_expired_interactive() {
  const auto& deadlines = s_.interactive_deadlines_;
  if (deadlines.empty() || deadlines.begin()->first > now_) return;
  std::set<JobId> expired;
  for (const auto& [deadline, id] : deadlines) {
    if (deadline > now_) break;
    expired.insert(id);
  }
  std::vector<PendingDecision> keep;
  keep.reserve(result_.pending.size());
  for (auto& pd : result_.pending) {
    if (expired.erase(pd.job)) {
      result_.rejected.push_back({pd.job, std::move(pd.reason)});
    } else {
      keep.push_back(std::move(pd));
    }
  }
  result_.pending = std::move(keep);
  // Those the walk did not reach (it stopped, summarising the rest) have their summary's reason.
  for (const auto& a : result_.admitted) expired.erase(a.job);
  for (const auto& rj : result_.rejected) expired.erase(rj.job);
  for (JobId id : expired) {
    const PendingJob& p = s_.pending_.at(id);
    if (const PendingReason* why = summarized_reason(result_.summary, p.queue, p.shape))
      result_.rejected.push_back({id, *why});
  }
}

// What this cycle leaves for the next incremental one, and the result.
CycleResult Scheduler::Walk::finish() {
  result_.preempt_attempted = std::move(attempted_);
  result_.preempt_capped = capped_;
  result_.strict_blockers.resize(nq_);
  for (int q = 0; q < nq_; ++q) result_.strict_blockers[q] = cur_[q].strict_blocker;
  result_.held_by = held_by_;
  result_.held_root = std::move(held_root_);
  result_.held_queue = std::move(held_queue_);
  if (!reservations_.empty()) {
    result_.reservation = std::move(reservations_.front());
    result_.later_reservations.assign(std::make_move_iterator(reservations_.begin() + 1),
                                      std::make_move_iterator(reservations_.end()));
  }
  return std::move(result_);
}

}  // namespace sluice
