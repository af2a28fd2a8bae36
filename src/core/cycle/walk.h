#pragma once
// The state of one scheduling cycle (Scheduler::run_cycle): its working copies of quota and
// capacity and the walk over pending jobs. Private to src/core/cycle: cycle_walk.cc walks in
// sluice's composite order, kueue_rounds.cc in Kueue's (SchedulerPolicy ordering: kueue);
// walk_backfill.cc holds the reservations and what they allow, partial_admission.cc Kueue's
// partial admission.
#include <deque>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/cycle/scheduler.h"
#include "core/order/fairness_bounds.h"

namespace sluice {

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

// The state of one cycle: working copies of quota and capacity, per-queue cursors and heads,
// claims, the reservation, preemption attempts, memoised failures; and the result being built.
class Scheduler::Walk {
 public:
  Walk(const Scheduler& s, TimeNs now);
  // 0. Incremental when nothing was freed since the last applied cycle (and see the body).
  void choose_mode(CycleMode mode);
  // Cursors and heads; what the last cycles left in force when incremental.
  void start();
  // 1-6 for every job in rank order. False: an incremental cycle found it is not exact.
  bool walk();
  // 7. Interactive jobs past their timeout that did not start are rejected, not queued.
  void reject_expired_interactive();
  CycleResult finish();
  void release() { lease_.release(); }  // before a nested full cycle

 private:
  // Per-queue cursor: starving jobs (oldest first), then the rest in key order; or, when
  // incremental, the new jobs in the same order.
  struct Cursor {
    PooledSet<SubmitOrder>::const_iterator starving;
    PooledSet<KeyOrder>::const_iterator rest;
    size_t fresh = 0;
    bool in_starving = true;
    JobId strict_blocker = 0;  // StrictFIFO head that did not fit
  };
  // Each queue's head and what picking the best head compares, packed (one pass over 100,000
  // pending jobs compares the heads of every queue per job).
  struct HeadKey {
    double score = 0;  // key + dyn
    TimeNs submit_ns = 0;
    JobId id = 0;
    bool starving = false;  // a head's starving state is fixed within the cycle
  };
  // A failure memoised by (queue, shape) until the next admission or eviction of the cycle.
  struct Failed {
    PendingReason reason;
    std::vector<FlavorId> failed_flavors;
  };
  enum class Next : uint8_t { kGo, kStop, kRestart };
  // A queue head in a round of Kueue's order: whether its flavor assignment borrows, how high
  // in the cohort tree (Kueue's borrowing level: 0 within the queue's nominal quota, else the
  // height of the lowest cohort whose subtree holds it), and the usage it would add (for
  // dominant resource shares).
  struct RoundEntry {
    int q = 0;
    const PendingJob* p = nullptr;
    bool borrows = false;
    int level = 0;
    std::vector<UsageEntry> usage;
  };

  bool ranks_before(const PendingJob& a, const PendingJob& b) const;
  bool starving(const PendingJob& p) const { return is_starving(p.job, policy_, now_); }
  void collect_fresh();
  const PendingJob* head(int q);
  void advance(int q);
  void refresh(int q);
  void next_head(int q);
  int best_queue() const { return winner_.empty() ? -1 : winner_[1]; }
  bool ahead(int a, int b) const;
  void replay(int q);
  Next decide(const PendingJob& p, int q, bool starving);
  bool held_back(const PendingJob& p, int q, bool starving, Next* next);  // step 2
  bool held_reason(const PendingJob& p, int q, PendingReason& reason) const;
  // Whether the claim of starving job `holder` holds back p (order/starvation.h); holds_all:
  // every job.
  bool claim_holds(JobId holder, const PendingJob& p) const;
  bool holds_all(JobId holder) const;
  void reject_over_budget(const PendingJob& p, int q);
  Next preempt(const PendingJob& p, int q, const Tier& tier, bool* admitted);
  bool claim_attempt(const PendingJob& p, int q, bool again, Next* next);
  Next evict_for(const PendingJob& p, const Tier& tier, bool* admitted);
  // Kueue's partial admission (partial_admission.cc).
  Next partial(const PendingJob& p, int q, const Tier& tier, bool over, const Job** used,
               bool* admitted, bool* via_preemption);
  bool backfill_allows(const PendingJob& p, int q, const Job& used);
  // Whether p, as a preemptor, must stay off the reserved nodes (it would run past the start of
  // a higher-ranked job's reservation), and the cordon that keeps its victim search off them.
  bool must_avoid_reservation(const PendingJob& p, int q);
  void cordon_reservation(bool on);
  void reservation_reason(int q, const Reservation& r);
  // The reservations (of other jobs) that p, ending at `end_ns` by its walltime, would delay
  // if it used their nodes: into binding_, first-made first. True when there is one.
  bool binding_reservations(const PendingJob& p, TimeNs end_ns);
  // A further reservation for p (policy backfillDepth), made with the earlier ones' nodes taken
  // out.
  void reserve_more(const PendingJob& p, const std::vector<FlavorId>& flavors);
  void commit(int q, const Job& used, bool over);
  void align_later(int q, const Job& used, const Placement& placement);
  void aim_ends(int q);
  bool someone_waits_for_room(TimeNs after) const;
  bool longest_waiting_needs_a_node();
  bool leave_pending(const PendingJob& p, int q, bool starving, const Failed* known);
  bool fits_idle(const PendingJob& p, const std::vector<FlavorId>& flavors);
  bool all_held() const;
  bool summarize_rest(int64_t& cost);
  bool stop_here(bool held);
  // Kueue's order (ordering: kueue), in kueue_rounds.cc.
  bool walk_rounds();
  bool walk_fresh();
  void note_failure(const PendingJob& p, uint64_t key, bool plain);
  bool settled();
  RoundEntry round_entry(int q, const std::vector<int>& heights);
  size_t pick_fair(const std::vector<RoundEntry>& round, const std::vector<char>& done);
  void hold_victims(size_t first);
  void hold(int sign);
  void reserve_unreclaimable(const PendingJob& p, int q);
  void release_reserved();

  const Scheduler& s_;
  const TimeNs now_;
  const SchedulerPolicy& policy_;
  const int nq_;
  const bool kueue_;  // ordering: kueue
  const bool aging_;  // jobs may be starving (an aging horizon, composite order)
  const FairnessBounds fair_;
  const bool no_victims_;  // no job, running or pending, may be preempted (spec.withoutVictims)
  const bool by_arrival_;  // and the DRF and debt terms are off for it
  const bool fair_terms_;  // the composite has DRF or debt terms
  const bool yield_;       // and fairness yield (spec.ordering.fairnessYieldPercentile) is on
  const bool nominal_;     // and fairness within nominal (spec.ordering.fairnessWithinNominal)
  CycleResult result_;
  ScratchLease lease_;
  QuotaTree& quota_;
  ClusterAlloc& alloc_;
  FlavorAttempt attempt_;
  bool incremental_ = false;
  FlavorAttempt probe_;  // Kueue's order: the heads' flavor assignments at a round's start
  std::vector<std::pair<QueueId, UsageEntry>> held_;  // Kueue's order: victims' quota kept
  // Kueue's order: quota held back for heads that could not reclaim it, until the round ends.
  std::vector<std::pair<QueueId, UsageEntry>> reserved_;
  // Kueue's order, full cycles: a job per (shape, queue) that failed on its own (not by the
  // memo), looked at again on the state the cycle leaves (settled()); and whether a job failed
  // that this does not cover (a fallback tier, partial admission).
  std::unordered_map<uint64_t, const PendingJob*> settle_;
  bool unsettled_ = false;
  std::vector<char> may_preempt_;
  std::vector<std::vector<const PendingJob*>> fresh_;
  std::vector<Cursor> cur_;
  std::vector<double> dyn_;  // fairness penalty of each queue (>= 0); refreshed when it admits
  // A head's score: its key less its queue's fairness penalty, bounded (fairness_bounds.h).
  // (`p` is read only with fairness yield on, where its class picks the window, or fairness
  // within nominal, where its request scales the penalty.)
  double head_score(double key, int q, TimeNs submit_ns, const PendingJob* p) const {
    const TimeNs window = yield_ ? s_.fairness_window(p->job, fair_) : fair_.window_ns;
    const double penalty = nominal_ ? dyn_[q] * s_.nominal_factor(q, p->job, quota_) : dyn_[q];
    return key + bounded_fairness(penalty, fair_, now_ - submit_ns, window);
  }
  std::vector<const PendingJob*> heads_;
  std::vector<HeadKey> head_key_;
  // The heads in a tournament tree: winner_[1] is best_queue(), leaves at leaves_ + q (-1: no
  // head). A head that changes replays its path to the root: log2(queues) comparisons per
  // decision instead of a scan of every queue.
  int leaves_ = 1;
  std::vector<int> winner_;
  // Capacity held for a starving job: globally (placement) or for one cohort tree (quota), or
  // its own queue when it cannot borrow.
  JobId held_by_ = 0;
  int32_t top_priority_ = 0;  // highest class value: its starving jobs' claims hold every job
  std::vector<JobId> held_root_;
  std::vector<JobId> held_queue_;
  bool claims_ = false;  // whether any of the three above holds a claim
  // The backfill reservations in force, in rank order of their jobs: the first is the
  // highest-ranked job that could not be placed; up to policy backfillDepth in all.
  std::vector<Reservation> reservations_;
  // End alignment: the scheduler's node ends with this cycle's admissions, once it has one.
  std::vector<TimeNs> cycle_node_end_;
  // spec.alignEndsYieldToSmall: -1 not yet decided this cycle, else longest_waiting_needs_a_node().
  int8_t longest_needs_node_ = -1;
  size_t depth() const { return static_cast<size_t>(std::max<int32_t>(1, policy_.backfill_depth)); }
  std::vector<const Reservation*> binding_;  // binding_reservations()'s answer
  std::vector<NodeId> cordoned_;             // reserved nodes taken out for a preemptor's search
  // Budgets: usage at `now` of every namespace that has one (constant within the cycle: work
  // admitted now has not run yet).
  std::vector<int64_t> budget_used_milli_;
  std::vector<bool> over_budget_;
  std::deque<Job> shaped_;          // fallback shapes tried this cycle (the memo points into it)
  std::deque<PendingJob> reduced_;  // partial admission: reduced jobs evicted for this cycle
  // Nodes a backfilled job may use: those of its flavors outside the binding reservations.
  NodeSet backfill_nodes_;
  std::vector<JobId> backfill_for_;  // the binding reservations' jobs it was made for
  std::vector<FlavorId> backfill_flavors_;
  int preempt_attempts_ = 0;
  std::vector<bool> preempt_tried_;
  std::vector<JobId> attempted_;  // the job that has (or holds from the last cycles) the attempt
  bool capped_ = false;
  // Cohort trees where a held attempt may reclaim: an admission there changes which running
  // jobs count as borrowing (reclaimable), so the held attempt might succeed in a full cycle.
  std::vector<char> reclaim_held_;
  std::set<JobId> evicted_;
  // flavorSnapshot: cycleStart: the quota as the cycle found it, which flavors are chosen on.
  std::optional<QuotaTree> start_quota_;
  // Failures by (interned shape, queue) until the next admission or eviction of the cycle: the
  // same request against the same quota and capacity fails again, for the same reason. This is
  // what makes a pass over 100,000 pending jobs behind a full cluster cheap. Only for jobs
  // without a fallback tier (theirs depends on how long they waited).
  std::unordered_map<uint64_t, Failed> failed_;
  // Summarising (set_summarize_pending; full cycles only). What the walk reached so far: jobs
  // by (shape, queue) key and, per queue, those not decided by their shape; and after how many
  // more jobs left pending to look again whether the rest can be summarised (as many as the
  // last look cost: looks stay a fraction of the walk).
  bool summarize_ = false;
  std::unordered_map<uint64_t, int64_t> walked_;
  std::vector<int64_t> walked_other_;
  int64_t quiet_ = 0, next_look_ = 1;
};

}  // namespace sluice
