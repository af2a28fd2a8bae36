#pragma once
// The scheduler: pending and running jobs, quota usage and free capacity, and the scheduling
// cycle over them. Pure: no I/O, no threads, no clock; time is passed in. The daemon and the
// simulator both drive this class, so a policy behaves the same in both (house rule 2).
//
// Use: submit() jobs; call run_cycle(now) to get decisions; apply() them; report finish() /
// cancel() / requeue() as jobs end. run_cycle() is const: a what-if costs nothing.
#include <atomic>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/cycle/budget_ledger.h"
#include "core/cycle/pooled_set.h"
#include "core/cycle/reservation.h"
#include "core/decision/decisions.h"
#include "core/decision/records.h"
#include "core/flavor/assigner.h"
#include "core/model/config.h"
#include "core/order/fairness_bounds.h"
#include "core/order/fairness_yield.h"
#include "core/order/score.h"
#include "core/place/cluster_alloc.h"
#include "core/place/node_set.h"
#include "core/place/placer.h"
#include "core/preempt/preemptor.h"
#include "core/preempt/victims.h"
#include "core/quota/quota_tree.h"

namespace sluice {

enum class SubmitStatus : uint8_t {
  kAccepted,
  kInvalid,       // malformed job (no pods, negative request, ...)
  kUnknownQueue,  // no such LocalQueue in the job's namespace
  kDuplicate,     // the id is already known
  kPendingCap,    // a pending cap (LocalQueue, ClusterQueue or cluster) is full: back off
  kNotSelected,   // the ClusterQueue's namespaceSelector does not select the job's namespace
};

struct SubmitResult {
  SubmitStatus status = SubmitStatus::kAccepted;
  std::string message;
  QueueId queue = -1;
};

class Scheduler {
 public:
  using PendingJob = PendingRecord;
  using RunningJob = RunningRecord;
  using BudgetUsage = sluice::BudgetUsage;
  using BudgetSnapshot = sluice::BudgetSnapshot;
  // Totals since construction, for metrics.
  struct Counters {
    int64_t preemptions = 0;
    int64_t lost_gpu_milli_ns = 0;  // GPU work lost to preemption (since last checkpoints)
    int64_t rejected_interactive = 0;
    int64_t rejected_over_budget = 0;  // jobs rejected: namespace over budget (Reject policy)
    int64_t admitted_best_effort = 0;  // jobs admitted as best-effort: namespace over budget
    int64_t admitted_downgraded = 0;   // jobs admitted on a fallback flavor or shape
  };

  explicit Scheduler(std::shared_ptr<const Config> config);
  // Its parts hold references into it: it stays where it was made.
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  const Config& config() const { return *config_; }

  // Admission control for a new job; job.id must be unique and job.submit_ns set by the caller.
  SubmitResult submit(Job job);
  // Resolves the ClusterQueue a job would go to, without submitting it.
  SubmitResult resolve(const Job& job) const;
  // Removes a pending job or stops a running one (its capacity is freed). False if unknown.
  bool cancel(JobId id, TimeNs now);
  // A running job ended: its capacity and quota are released.
  bool finish(JobId id, TimeNs now);
  // A running job goes back to pending (preempted, or its node failed), keeping its submit time.
  bool requeue(JobId id, TimeNs now);
  // A running job saved its work at `at`: preempting it now loses only what came after.
  bool report_checkpoint(JobId id, TimeNs at);
  // A pending job that kept `kept_ns` of its work at its last run's checkpoint restarts with
  // only the rest to do: its walltime estimate is cut by that much (to at least 1 s; an
  // unknown walltime stays unknown). False when it is not pending. The simulator's checkpoint
  // model calls it after a requeue (docs/simulator.md, "Checkpoints").
  bool shorten_pending(JobId id, TimeNs kept_ns);
  // Puts a job back as running where it already runs (daemon restart, configuration reload):
  // the placement and quota usage are taken as given after checking that they fit the current
  // capacity. Fails (message in *why) when the queue is unknown, the id is taken, or a node or
  // GPU of the placement does not exist or is not free; the state is then unchanged.
  bool restore_running(Job job, const Admission& admission, TimeNs start_ns, TimeNs checkpoint_ns,
                       int32_t preemptions, std::string* why);
  // Marks a node usable or not for new placements. Running jobs are the caller's business.
  void set_node_ready(NodeId node, bool ready);

  enum class CycleMode : uint8_t {
    kAuto,  // incremental when nothing was freed since the last applied cycle, else full
    kFull,  // always consider every pending job
  };
  // One scheduling cycle on the current state. Deterministic: same state, same `now`, same
  // result, byte for byte. An incremental cycle decides exactly what a full one would admit:
  // when no capacity or quota was freed since the last applied cycle, no job that failed then
  // can fit now, so only new arrivals need a look.
  CycleResult run_cycle(TimeNs now, CycleMode mode = CycleMode::kAuto) const;
  // Whether a full run_cycle() lists every pending job (default) or may stop its walk once
  // every job left would stay pending without effect on the cycle: held back behind a starving
  // job's claim or a StrictFIFO head, or failing for the reason an earlier job of the same
  // queue and shape failed with, where that failure could start no preemption attempt,
  // reservation or hold. The jobs left are then described by CycleResult::summary, a reason per
  // (queue, shape). Decisions are the same either way; with 8,000 jobs queued behind a full
  // cluster a cycle walks only up to the first failures. The daemon and the simulator use it.
  void set_summarize_pending(bool on) { summarize_ = on; }
  // Applies a result of run_cycle() computed on the current state (no mutation in between).
  void apply(const CycleResult& result, TimeNs now);
  // Accumulates fairness debt up to `now` (called by apply/finish; callable on its own).
  void advance_debt(TimeNs now);
  // Accrues namespaces' GPU-hour usage up to `now` (called by apply/finish/requeue/cancel).
  void advance_budgets(TimeNs now) { budgets_.advance(now); }
  // Usage of every configured budget (Config::budgets order) at `now`; pure.
  std::vector<BudgetUsage> budget_usage(TimeNs now) const { return budgets_.usage(now); }
  std::optional<BudgetUsage> budget_usage(const std::string& namespace_, TimeNs now) const {
    return budgets_.usage(namespace_, now);
  }
  // Budget accounting across a restart or a reconfiguration: take a snapshot (exact accrued
  // usage per namespace at `now`, as decimal text), then hand it to the new scheduler after
  // restore_running(). A namespace's usage then continues from the snapshot: GPU time of work
  // that ended before it is kept, running work accrues from the snapshot's time on. Entries of
  // an earlier period, or for namespaces without a budget now, are ignored.
  std::vector<BudgetSnapshot> budget_snapshot(TimeNs now) const { return budgets_.snapshot(now); }
  void restore_budgets(const std::vector<BudgetSnapshot>& snapshot, TimeNs now) {
    budgets_.restore(snapshot, now);
  }
  // Priority of best-effort work (one below the lowest priority class, and below 0).
  int32_t best_effort_priority() const { return best_effort_priority_; }

  // The job as it asked to run (fallback shape and best-effort priority undone): what
  // restore_running() takes back.
  static Job requested_job(RunningJob&& r);
  // Every queue's fairness debt (config order), and the same put back into another scheduler
  // over the same configuration (a copy of the state: start predictions, core/cycle/predict.h).
  const std::vector<FairnessDebt>& debts() const { return debt_; }
  void restore_debts(const std::vector<FairnessDebt>& debts) {
    if (debts.size() == debt_.size()) debt_ = debts;
  }
  // The classes' recent admitted waits (spec.ordering.fairnessYieldPercentile), and the same put
  // back into a copy of the state over the same configuration.
  const RecentWaits& recent_waits() const { return waits_; }
  void restore_recent_waits(const RecentWaits& waits) {
    if (waits_.enabled()) waits_ = waits;
  }
  // The fairness window of a pending job (fairness_bounds.h; narrower with fairness yield).
  TimeNs fairness_window(const Job& job, const FairnessBounds& bounds) const {
    return waits_.window(job.priority, bounds.window_ns);
  }

  // Introspection.
  const PendingJob* find_pending(JobId id) const;
  const RunningJob* find_running(JobId id) const;
  size_t pending_count() const { return pending_.size(); }
  size_t running_count() const { return running_.size(); }
  const std::map<JobId, RunningJob>& running() const { return running_; }
  // Calls f(const PendingJob&) for every pending job, in no particular order (counts and
  // gauges: cost in pending jobs, not in every job ever seen).
  template <class F>
  void for_each_pending(F&& f) const {
    for (const auto& [id, p] : pending_) f(p);
  }
  // Pending job ids of one queue in rank order at `now`.
  std::vector<JobId> pending_in_queue(QueueId q, TimeNs now) const;
  size_t pending_in_queue_count(QueueId q) const { return by_key_[q].size(); }
  const QuotaTree& quota() const { return quota_; }
  const ClusterAlloc& alloc() const { return alloc_; }
  const Counters& counters() const { return counters_; }
  int32_t preemption_count(JobId id) const;
  bool is_interactive(const Job& job, QueueId q) const {
    return job.interactive || config_->cluster_queues[q].interactive;
  }
  const Placer& placer() const { return placer_; }
  const FlavorAssigner& assigner() const { return assigner_; }
  double drf_share(QueueId q) const { return drf_share(q, quota_); }
  double fairness_debt(QueueId q) const;
  // Composite score of a pending job at `now` (for explain and metrics).
  double score(JobId id, TimeNs now) const;
  // Checks the invariants of the whole state (capacity, quota usage == running jobs' usage).
  bool check_invariants(std::string* why) const;

 private:
  // Rank order within a queue: (-key, submit, id); `job` points at the entry in pending_ (stable
  // in an unordered_map) so a cycle walking the order does not look every id up. Not compared.
  struct KeyOrder {
    double neg_key = 0;
    TimeNs submit_ns = 0;
    JobId id = 0;
    const PendingJob* job = nullptr;
    bool operator<(const KeyOrder& o) const {
      return std::tie(neg_key, submit_ns, id) < std::tie(o.neg_key, o.submit_ns, o.id);
    }
  };
  using SubmitOrder = std::pair<TimeNs, JobId>;

  double drf_share(QueueId q, const QuotaTree& quota) const;
  // What the fairness terms subtract from a job of queue q before their bounds: w_drf x DRF
  // share + w_debt x fairness debt.
  double fairness_penalty(QueueId q, const QuotaTree& quota) const;
  // The factor on that penalty for `job` (spec.ordering.fairnessWithinNominal, 1 when off):
  // the configured scale while queue q would stay within its nominal quota with the job.
  double nominal_factor(QueueId q, const Job& job, const QuotaTree& quota) const;
  // A pending job's time-free key in its queue: queue_key() plus the deadline term.
  double key_of(const Job& job) const;
  void insert_pending(PendingJob p);
  uint64_t intern_shape(const Job& job);  // the shape id of a job (a reference is taken)
  void release_shape(const Job& job, uint64_t id);
  // Removes a pending job; its Job is moved into *taken when given.
  void erase_pending(JobId id, Job* taken = nullptr);
  void release_running(const RunningJob& r);
  // apply(), in its order: this cycle for the next one, victims back to pending, rejected
  // jobs out, admitted jobs running.
  void note_cycle(const CycleResult& result);
  void requeue_victim(const Preemption& pr, TimeNs now);
  void drop_rejected(const Rejection& rj);
  void start_admitted(const Admission& a, TimeNs now);
  void back_to_pending(JobId id, TimeNs since);  // requeue() and requeue_victim()
  void mark_freed() {
    need_full_ = true;
    ++free_epoch_;
  }
  // Running jobs: bookkeeping shared by every way in and out (per-queue index, budgets).
  void running_added(const RunningJob& r);
  void running_removed(const RunningJob& r);
  TimeNs walltime(const Job& job, QueueId q) const {
    return job.walltime_ns > 0 ? job.walltime_ns : config_->cluster_queues[q].default_walltime_ns;
  }
  // End alignment: when a job started at `start` ends by its walltime; with no estimate it is
  // not known to end, as if it ran forever.
  TimeNs expected_end(const Job& job, QueueId q, TimeNs start) const {
    const TimeNs w = walltime(job, q);
    return w > 0 ? start + w : std::numeric_limits<TimeNs>::max();
  }
  // The reservation of a job that cannot be placed now: the earliest time running jobs (and
  // those admitted earlier in this cycle) free enough by their walltimes, and the nodes it gets.
  Reservation reserve(const PendingJob& p, const std::vector<FlavorId>& flavors,
                      const ClusterAlloc& alloc, const std::vector<Admission>& admitted_now,
                      TimeNs now, NodeSet& scratch) const;
  TimeNs interactive_deadline(const Job& job) const {
    return job.submit_ns + config_->policy.interactive_timeout_ns;
  }

  std::shared_ptr<const Config> config_;
  double priority_scale_ = 1;
  double deadline_cap_ = 0;  // most the deadline term adds (deadline_term.h)
  QuotaTree quota_;
  ClusterAlloc alloc_;
  ClusterAlloc empty_alloc_;  // an idle cluster: "could this job ever be placed?"
  Placer placer_;
  FlavorAssigner assigner_;
  Preemptor preemptor_;
  std::vector<std::vector<int64_t>> entitlement_;  // [queue][resource]: sum of nominal

  std::unordered_map<JobId, PendingJob> pending_;
  // Interned shapes of pending jobs (by shape hash; a shape lives while a job has it).
  struct ShapeRef {
    Job proto;  // only what same_shape() compares is set
    uint64_t id = 0;
    int64_t refs = 0;
  };
  std::unordered_map<uint64_t, std::vector<ShapeRef>> shapes_;
  uint64_t next_shape_ = 1;
  // Per queue; nodes pooled per queue, so that a cycle's walk reads them packed (pooled_set.h).
  std::vector<PooledSet<KeyOrder>> by_key_;
  std::vector<PooledSet<SubmitOrder>> by_submit_;
  // Per queue: pending jobs with by_shape set, counted by shape, and the number of the others
  // (what a cycle summarising its walk must know of the jobs it did not reach).
  std::vector<std::unordered_map<uint64_t, int64_t>> shape_counts_;
  std::vector<int64_t> not_by_shape_;
  std::vector<int32_t> pending_per_local_queue_;
  std::map<JobId, RunningJob> running_;
  VictimIndex victims_;  // the running jobs that may ever be preempted
  // Running jobs by expected end (start + walltime, then id): the reservation walks them in
  // this order and usually stops after a few hundred, so it neither copies nor sorts them all.
  RunningEnds ends_;
  // End alignment (spec.alignEnds): per node, the expected ends of the pods running on it, and
  // the latest of them (0: none); empty when off.
  std::vector<std::multiset<TimeNs>> node_ends_;
  std::vector<TimeNs> node_end_;
  void track_node_ends(const RunningJob& r, int sign);
  BudgetLedger budgets_;
  int32_t best_effort_priority_ = -1;
  // Times at which a pending job's fallback tier opens a flavor or its shapes: an incremental
  // cycle is not enough once one of them passed (the job may fit now without anything freed).
  std::set<std::pair<TimeNs, JobId>> fallback_opens_;
  std::vector<FairnessDebt> debt_;
  RecentWaits waits_;  // recent admitted waits per class (fairness yield; off by default)
  std::map<JobId, int32_t> preempt_count_;                    // jobs preempted at least once
  std::set<std::pair<TimeNs, JobId>> interactive_deadlines_;  // pending interactive jobs
  Counters counters_;
  bool summarize_ = false;

  // Incremental-cycle bookkeeping.
  bool need_full_ = true;     // something was freed (or nothing applied yet)
  uint64_t free_epoch_ = 0;   // bumped whenever capacity, quota or a blocker is freed
  uint64_t submissions_ = 0;  // sequence number of the latest submission
  // Submitted since the last applied cycle, in order: every submission adds one, so the last
  // one's sequence number is submissions_ and the others' follow from their places.
  std::vector<JobId> new_jobs_;
  TimeNs last_cycle_ns_ = 0;
  // Kueue's order: the last applied cycle left every pending job failing on the state it left
  // (CycleResult::settled); with nothing freed since, they fail again (walk_fresh).
  bool kueue_settled_ = false;
  bool last_without_victims_ = false;
  // Pending jobs that would be possible victims once running (spec.withoutVictims).
  int64_t pending_victims_ = 0;
  bool may_be_victim(const PendingJob& p) const {
    return p.job.preemptible && config_->cluster_queues[p.queue].preemptible;
  }
  // No job, running or pending, may ever be preempted (spec.withoutVictims applies).
  bool nothing_preemptible() const { return victims_.empty() && pending_victims_ == 0; }
  std::vector<JobId> last_strict_blockers_;
  JobId last_held_by_ = 0;
  std::vector<JobId> last_held_root_;
  std::vector<JobId> last_held_queue_;
  std::vector<Reservation> last_reservations_;  // the reservations in force, in order
  // Preemption in incremental cycles (see run_cycle): whether running jobs were added or
  // evicted since the last full cycle's preemption attempts, who made each queue's attempt, and
  // whether that cycle hit the cap on attempts. protected_until_: listed victims still inside
  // their queue's minimum runtime, by the time they leave it.
  bool preempt_stale_ = true;
  std::vector<JobId> last_preempt_attempted_;
  bool last_preempt_capped_ = true;
  std::set<std::pair<TimeNs, JobId>> protected_until_;
  uint64_t workload_refreshed_at_ = 0;  // submissions_ when FGD's typical pods were last set
  void refresh_workload();
  // FGD's workload, the pods of every pending and running job by shape, kept as they come and
  // go (a refresh reads it instead of walking every job); empty under other scoring policies.
  bool counts_workload_ = false;
  PodShapeCounts workload_;
  void count_workload(const Job& job, int64_t sign) {
    if (counts_workload_) placer_.count_workload(job, sign, workload_);
  }

  // The working copies of quota and capacity a cycle decides on, kept from one cycle to the
  // next: copy-assignment reuses their buffers, where a fresh copy of 1,250 nodes' state
  // allocated and freed some forty arrays per cycle. One cycle holds them at a time (a nested
  // or concurrent run_cycle makes its own copies).
  struct CycleScratch {
    std::atomic<bool> busy{false};
    std::optional<QuotaTree> quota;
    std::optional<ClusterAlloc> alloc;
    // Whether a shape (interned id; ids are never reused) fits the idle cluster on a list of
    // flavors: a starving job's test for holding capacity, the same answer every cycle.
    std::map<std::pair<uint64_t, std::vector<FlavorId>>, bool> fits_idle;
  };
  class ScratchLease;
  class Walk;  // one run_cycle(), in cycle_walk.cc
  std::unique_ptr<CycleScratch> scratch_ = std::make_unique<CycleScratch>();
};

}  // namespace sluice
