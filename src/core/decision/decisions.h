#pragma once
// What one scheduling cycle decides: returned values, applied by the caller (house rule 6).
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/config.h"
#include "core/place/placement.h"

namespace sluice {

// Usage charged to a ClusterQueue's quota for one flavor and resource.
struct UsageEntry {
  FlavorId flavor = 0;
  ResourceId resource = 0;
  int64_t amount = 0;
  bool operator==(const UsageEntry&) const = default;
};

struct Admission {
  JobId job = 0;
  QueueId queue = 0;
  std::vector<FlavorId> flavors;  // per resource group of the queue; -1 where unused
  // Per pod set where pod sets got different flavors of a group (Kueue assigns each pod set its
  // own): pod_set_flavors[i][g] is pod set i's flavor of group g (-1: it requests nothing of
  // g). Empty when every pod set uses `flavors` (which then names, per group, the flavor of
  // the first pod set using it).
  std::vector<std::vector<FlavorId>> pod_set_flavors;
  std::vector<UsageEntry> usage;
  Placement placement;
  bool borrowing = false;  // some usage is above the queue's nominal quota
  // Fallback tier: set when the job got less than it preferred. preferred_flavor is the first
  // flavor of the resource group that was downgraded (-1: not downgraded), shape the index into
  // job.fallback.shapes it runs with (-1: as requested), waited_ns how long it had been pending.
  FlavorId preferred_flavor = -1;
  int32_t shape = -1;
  // Partial admission: pods per pod set it runs with, where some pod set runs fewer than its
  // count (down to its min_count); empty: as requested.
  std::vector<int32_t> pod_set_counts;
  TimeNs waited_ns = 0;
  // Admitted as preemptible best-effort work (lowest priority) because its namespace is over
  // its GPU-hour budget.
  bool best_effort = false;
  bool downgraded() const { return preferred_flavor >= 0 || shape >= 0; }
  // Pod set i's flavors, per resource group.
  const std::vector<FlavorId>& flavors_of(size_t pod_set) const {
    return pod_set < pod_set_flavors.size() ? pod_set_flavors[pod_set] : flavors;
  }
  // Every flavor it uses, each once: per group in group order, then pod set order.
  std::vector<FlavorId> flavors_used() const;
  bool operator==(const Admission&) const = default;
};

// Whether pod sets that both use a resource group got different flavors of it (per[i][g] is
// pod set i's flavor of group g, -1 where it uses none).
bool pod_sets_differ(const std::vector<std::vector<FlavorId>>& per);

enum class PendingCode : uint8_t {
  kQuota,              // the queue (with its cohort) has too little of a flavor/resource now
  kNeverFitsQuota,     // larger than the queue could ever get, or a resource it has no quota for
  kPlacement,          // quota fits, but no placement exists now (detail says why)
  kStrictFifoBlocked,  // behind the head of a StrictFIFO queue that does not fit
  kHeldForStarving,    // capacity is held for a job that waited past the aging horizon
  kReservation,        // it would delay the reservation of a higher-ranked job (backfill)
  kOverBudget,         // rejected: the namespace is over its GPU-hour budget (overBudget: Reject)
  kInactive,           // its ClusterQueue is inactive (ClusterQueue::inactive says why, in detail)
};

// Whether a job pending for this reason cannot start before the configuration changes: it does
// not preempt, block its StrictFIFO queue or hold capacity.
inline bool never_fits(PendingCode c) {
  return c == PendingCode::kNeverFitsQuota || c == PendingCode::kInactive;
}

struct PendingReason {
  PendingCode code = PendingCode::kQuota;
  QueueId queue = 0;
  FlavorId flavor = -1;
  ResourceId resource = 0;
  int64_t requested = 0;
  int64_t available = 0;
  JobId blocker = 0;          // kStrictFifoBlocked / kHeldForStarving / kReservation
  TimeNs reserved_in_ns = 0;  // kReservation: how long until the blocker's reservation starts
  // Fallback tier: the next flavor that opens for this job and in how long (-1: none).
  FlavorId fallback_flavor = -1;
  TimeNs fallback_in_ns = 0;
  // kOverBudget: the namespace (in detail), its usage and budget in milli GPU-hours this period
  // (in requested / available).
  PlaceFailCode place_code = PlaceFailCode::kInsufficient;
  int32_t pods_needed = 0;
  int32_t pods_fit = 0;
  std::string detail;
  bool operator==(const PendingReason&) const = default;
};

struct PendingDecision {
  JobId job = 0;
  PendingReason reason;
  bool starving = false;
  bool operator==(const PendingDecision&) const = default;
};

// A running job evicted so that `preemptor` can start in the same cycle.
enum class PreemptReason : uint8_t {
  kWithinClusterQueue,   // a higher-priority job of the same ClusterQueue
  kReclaimWithinCohort,  // the preemptor's queue takes back quota the victim's queue borrowed
};

struct Preemption {
  JobId victim = 0;
  JobId preemptor = 0;
  PreemptReason reason = PreemptReason::kWithinClusterQueue;
  // borrowWithinCohort: the victim's queue was borrowing and the preemptor borrows too (reason
  // is then kReclaimWithinCohort).
  bool borrow_within_cohort = false;
  TimeNs grace_ns = 0;            // signal first; kill after this (the victim's checkpoint grace)
  int64_t lost_gpu_milli_ns = 0;  // GPU work since the victim's last checkpoint (or start)
  bool operator==(const Preemption&) const = default;
};

// An interactive job that could not start within the interactive timeout, or a job of a
// namespace over its GPU-hour budget whose queue rejects such work (reason.code kOverBudget):
// removed, not queued.
struct Rejection {
  JobId job = 0;
  PendingReason reason;  // why it could not start
  bool operator==(const Rejection&) const = default;
};

// Capacity promised to the highest-ranked job that cannot start now: the nodes it will be placed
// on once running jobs end by their walltime estimates.
struct Reservation {
  JobId job = 0;  // 0: none
  TimeNs start_ns = 0;
  std::vector<NodeId> nodes;  // ascending
  bool operator==(const Reservation&) const = default;
};

// Pending jobs of one ClusterQueue that a cycle summarised instead of listing one by one
// (Scheduler::set_summarize_pending): once every job left to walk would stay pending without
// effect on the rest of the cycle (held back, or failing exactly as an earlier job of its queue
// and shape failed), the walk stops. A summary covers every job of its queue that was pending
// when the cycle ran and is named nowhere in the result. (Such a job's PendingDecision::starving
// is what is_starving() says of it at the cycle's time: held jobs may be starving.)
struct PendingSummary {
  QueueId queue = 0;
  bool held = false;     // all of them are held back, for `reason`
  PendingReason reason;  // when held
  // Else: the reason by the job's shape (Scheduler::PendingJob::shape), ascending by shape.
  std::vector<std::pair<uint64_t, PendingReason>> by_shape;
  bool operator==(const PendingSummary&) const = default;
};

struct CycleResult {
  TimeNs now = 0;
  // Incremental: only jobs that arrived since the last applied cycle were considered (nothing
  // was freed since, so every older pending job keeps its reason); `pending` lists new jobs only.
  bool incremental = false;
  uint64_t generation = 0;  // submissions seen by this cycle (Scheduler bookkeeping)
  uint64_t free_epoch = 0;  // releases seen by this cycle (Scheduler bookkeeping)
  // Kueue's order: every job the cycle left pending fails on the state it leaves, with nothing
  // held back (Scheduler bookkeeping: the next cycle may then be incremental).
  bool settled = false;
  // No job, running or pending, was a possible victim when the cycle started
  // (spec.withoutVictims: the cycle ordered and placed as the policy says for that case;
  // Scheduler bookkeeping).
  bool without_victims = false;
  // Blockers left at the end of the cycle (Scheduler bookkeeping for the next incremental one).
  std::vector<JobId> strict_blockers;           // per ClusterQueue, 0 = none
  JobId held_by = 0;                            // starving job holding capacity cluster-wide
  Reservation reservation;                      // backfill reservation in force after this cycle
  std::vector<Reservation> later_reservations;  // with backfillDepth > 1: the next ones, in order
  std::vector<JobId> held_root;   // per quota-tree node: starving job holding its cohort
  std::vector<JobId> held_queue;  // per ClusterQueue: starving job holding its queue
  // Per ClusterQueue: the pending job that made (or, incremental, holds) the queue's preemption
  // attempt, 0 = none; and whether the per-cycle cap on attempts left a queue without one.
  std::vector<JobId> preempt_attempted;
  bool preempt_capped = false;
  std::vector<Admission> admitted;       // in decision order
  std::vector<PendingDecision> pending;  // in rank order
  std::vector<PendingSummary> summary;   // jobs left unlisted, by ascending queue (see above)
  std::vector<Preemption> preempted;     // victims; each preemptor is in `admitted`
  std::vector<Rejection> rejected;       // interactive jobs past their timeout
  int64_t evaluated = 0;                 // jobs for which quota/placement was actually computed
  bool operator==(const CycleResult&) const = default;
};

// The reason a summary gives a job of queue q with this shape; nullptr when none covers it.
const PendingReason* summarized_reason(const std::vector<PendingSummary>& summary, QueueId q,
                                       uint64_t shape);

// Plain-words rendering of a pending reason, e.g.
//   "ClusterQueue team-a: nvidia.com/gpu on flavor h100 exhausted (needs 8, 4 available
//    including borrowing)".
std::string describe(const PendingReason& reason, const Config& config);

// Plain words for what an admission got instead of what the job preferred, e.g.
//   "downgraded from h100-reserved to a100-reserved after 10m0s pending"; "" when nothing.
std::string describe(const Admission& admission, const Config& config);

// The flavors an admission gives, e.g. "flavor h100" or, where pod sets got different ones,
// "flavors launcher: on-demand, workers: spot" (pod set names from `job`).
std::string describe_flavors(const Admission& admission, const Job& job, const Config& config);

// Go-style duration: "10m0s", "1h2m3s", "45s", "0s" (whole seconds).
std::string format_duration(TimeNs ns);

// Integer with thousands separators: 1012 -> "1,012".
std::string format_thousands(int64_t v);

}  // namespace sluice
