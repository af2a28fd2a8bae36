#pragma once
// The validated configuration: Kueue's objects (ResourceFlavor, ClusterQueue, LocalQueue,
// WorkloadPriorityClass, Cohort) plus sluice's Cluster and SchedulerPolicy. Produced by
// config/loader.h; every cross reference here is an index that is known to be valid.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model/cluster.h"
#include "core/model/job.h"
#include "core/model/node_affinity.h"
#include "core/model/node_pool.h"
#include "core/model/resources.h"

namespace sluice {

using FlavorId = int32_t;
using CohortId = int32_t;
using QueueId = int32_t;  // ClusterQueue index
using LocalQueueId = int32_t;

struct ResourceFlavor {
  std::string name;
  Labels node_labels;    // a node belongs to the flavor when it carries all of these
  bool implied = false;  // referenced by a ClusterQueue but never defined (warning; no labels)
  std::vector<Taint> node_taints;  // pods must tolerate its NoSchedule / NoExecute taints
  // spec.topologyName: a Kueue topology-aware (TAS) flavor; index into Config::topologies.
  std::optional<int32_t> topology;
};

// Kueue's Topology kind: levels by node label, outermost first. Each level is one of the
// Cluster's levels (Cluster::levels names it after the label) or "node" for
// kubernetes.io/hostname; docs/config.md#topology-kueue.
struct KueueTopology {
  std::string name;
  std::vector<std::string> node_labels;
  std::vector<int32_t> levels;  // parallel: Cluster level index, levels.size() for the node
};

struct ResourceQuota {
  ResourceId resource = 0;
  int64_t nominal = 0;                     // canonical units
  std::optional<int64_t> borrowing_limit;  // nullopt: unlimited (within the cohort)
  std::optional<int64_t> lending_limit;    // nullopt: everything unused may be lent
};

struct FlavorQuotas {
  FlavorId flavor = 0;
  std::vector<ResourceQuota> resources;
  // nullptr when the group covers `r` but this flavor sets no quota for it: the resource is not
  // quota-managed in this flavor (unlimited). The loader warns; see docs/config.md.
  const ResourceQuota* find(ResourceId r) const;
};

struct ResourceGroup {
  std::vector<ResourceId> covered;
  std::vector<FlavorQuotas> flavors;  // tried in this order
};

enum class QueueingStrategy : uint8_t { kBestEffortFIFO, kStrictFIFO };
enum class WithinQueuePolicy : uint8_t { kNever, kLowerPriority, kLowerOrNewerEqualPriority };
enum class ReclaimPolicy : uint8_t { kNever, kLowerPriority, kAny };
enum class BorrowWithinCohortPolicy : uint8_t { kNever, kLowerPriority };

// Kueue's spec.flavorFungibility (v1beta1's Borrow / Preempt read as MayStopSearch), with
// Kueue's defaults (the same in v1beta1 and v1beta2). The flavor assigner acts on both knobs
// (FlavorAssigner::assign); preference is kept, PreemptionOverBorrowing is not acted on.
enum class FungibilityPolicy : uint8_t { kMayStopSearch, kTryNextFlavor };
enum class FungibilityPreference : uint8_t {
  kNone,
  kBorrowingOverPreemption,
  kPreemptionOverBorrowing
};
struct FlavorFungibility {
  FungibilityPolicy when_can_borrow = FungibilityPolicy::kMayStopSearch;
  FungibilityPolicy when_can_preempt = FungibilityPolicy::kTryNextFlavor;
  FungibilityPreference preference = FungibilityPreference::kNone;
};

struct PreemptionConfig {
  WithinQueuePolicy within_cluster_queue = WithinQueuePolicy::kNever;
  ReclaimPolicy reclaim_within_cohort = ReclaimPolicy::kNever;
  BorrowWithinCohortPolicy borrow_within_cohort = BorrowWithinCohortPolicy::kNever;
  std::optional<int32_t> max_priority_threshold;
};

// Fallback tier of a ClusterQueue (spec.sluice.fallback): the first `preferred` flavors of each
// resource group are tried at once; every `after` a job waits, one more flavor of each group
// opens, and after the first `after` its smaller fallback shapes do too. after == 0: off (every
// flavor is tried at once, in order, as in Kueue).
struct FallbackPolicy {
  TimeNs after_ns = 0;
  int32_t preferred = 1;
};

// What happens to new work of a namespace that is over its GPU-hour budget.
enum class OverBudgetPolicy : uint8_t {
  kBestEffort,  // admitted only as preemptible best-effort work (lowest priority)
  kReject,      // rejected with the budget as the reason
};

// A namespace's GPU-hour budget per period (sluice.dev/v1alpha1 Budget). Usage is weighted
// GPU-time of admitted work: a GPU of model m for one hour counts weight(m) GPU-hours (like
// Slurm's billing weights). Periods are fixed-length, starting at anchor + k * period.
struct Budget {
  std::string name;
  std::string namespace_;
  int64_t gpu_hours_milli = 0;  // the budget, in thousandths of a (weighted) GPU-hour
  TimeNs period_ns = 30 * 24 * 3600 * kNsPerSec;
  TimeNs anchor_ns = 0;  // a period boundary on the scheduler's clock
  std::vector<std::pair<std::string, int64_t>> weights_milli;  // GPU model -> weight x 1000
  int64_t default_weight_milli = 1000;                         // models not listed
  int64_t weight_milli(const std::string& model) const;
};

// Kubernetes label selector, matchLabels only (matchExpressions are rejected by the loader).
struct NamespaceSelector {
  bool match_all = false;  // `{}`
  Labels match_labels;     // when !match_all: namespace labels must include all of these
};

// Whether a ClusterQueue's selector selects a namespace. sluice has no Namespace objects: a
// namespace's labels are {kubernetes.io/metadata.name: <name>}, the one Kubernetes always sets.
// No selector (nullopt) selects every namespace (sluice's default; the loader warns).
inline bool selects_namespace(const std::optional<NamespaceSelector>& s, const std::string& ns) {
  if (!s || s->match_all) return true;
  for (const auto& [key, value] : s->match_labels)
    if (key != "kubernetes.io/metadata.name" || value != ns) return false;
  return true;
}

struct ClusterQueue {
  std::string name;
  std::optional<CohortId> cohort;
  std::optional<NamespaceSelector> namespace_selector;  // nullopt: Kueue's default (matches none
                                                        // in Kueue; sluice matches all, warned)
  QueueingStrategy strategy = QueueingStrategy::kBestEffortFIFO;
  std::vector<ResourceGroup> resource_groups;
  PreemptionConfig preemption;
  FlavorFungibility flavor_fungibility;
  double fair_weight = 1.0;  // fairSharing.weight
  // Why it admits nothing ("": active). As in Kueue, a ClusterQueue naming a ResourceFlavor
  // that is not defined is inactive: its jobs wait (PendingCode::kInactive).
  std::string inactive;
  // sluice extensions (spec.sluice: {...}).
  bool preemptible = true;   // may its jobs be preemption victims at all
  bool interactive = false;  // an interactive queue: jobs fail fast; non-preemptible default
  TimeNs default_walltime_ns = 3600 * kNsPerSec;
  TimeNs min_runtime_ns = 0;  // jobs younger than this are never preempted
  int32_t max_pending = 0;    // 0: no cap (LocalQueues may also cap)
  // Priority class of jobs submitted without one ("" = none, value 0). Set by
  // spec.sluice.defaultPriorityClass or a playbook Queue's priorityClassName; always defined in
  // Config::priority_classes when set.
  std::string default_priority_class;
  FallbackPolicy fallback;
  OverBudgetPolicy over_budget = OverBudgetPolicy::kBestEffort;
  // Pods of its jobs may run as uid or gid 0 (securityContext.runAsUser: 0, or a token or an
  // agent mapping that gives root). Off: refused at submission and by the agents.
  bool allow_root_pods = false;
  // spec.sluice.runImagesOnHost: a job with an image may run its command on a node without a
  // container runtime (on the node's own filesystem); else it is refused where none runs.
  bool run_images_on_host = false;
};

struct Cohort {
  std::string name;
  std::optional<CohortId> parent;
  std::vector<ResourceGroup> resource_groups;  // a cohort's own quota (Kueue v1alpha1 Cohort)
  bool implied = false;      // named by a ClusterQueue/Cohort but not defined as an object
  double fair_weight = 1.0;  // fairSharing.weight (Kueue fair sharing)
};

struct LocalQueue {
  std::string name;
  std::string namespace_;
  QueueId cluster_queue = 0;
  int32_t max_pending = 0;  // sluice extension; 0: no cap
};

struct PriorityClass {
  std::string name;
  int32_t value = 0;
};

// GPU scoring policies (docs/placement.md). kFgdPack is FGD's fragmentation measure with a
// packing tie-break: on the Alibaba openb experiment it reaches 95.35% allocation (FGD 95.23).
// kFgdMix (the default) is FGD that follows the observed workload mix: never below FGD on the
// derived workload families of that experiment (docs/placement.md, bench/fgd_mixes.sh).
enum class ScoringPolicy : uint8_t { kBinPack, kSpread, kBestFit, kFgd, kFgdPack, kFgdMix };

struct OrderingWeights {
  double priority = 1.0;
  double age = 1.0;
  double drf = 0.5;
  double debt = 0.5;
  double deadline = 0;  // deadline urgency (core/order/deadline_term.h); 0: off
};

// Which order the cycle admits pending jobs in (docs/scheduling.md, "Ordering").
enum class OrderingMode : uint8_t {
  kComposite,  // sluice's composite score: priority, aging, DRF share, fairness debt
  // Kueue's scheduling cycle: one head per ClusterQueue per round, non-borrowing heads before
  // borrowing ones, then (fair sharing) dominant resource share, priority, submit time; no
  // aging; victims' quota stays in use for the rest of the cycle; a job preempts only within
  // its nominal quota unless borrowWithinCohort (or fair sharing) allows it.
  kKueue,
};

// Kueue's fair-sharing preemption strategies (Configuration fairSharing.preemptionStrategies).
enum class FairStrategy : uint8_t { kLessThanOrEqualToFinalShare, kLessThanInitialShare };

// Kueue's fair sharing (its Configuration's fairSharing): ClusterQueues and Cohorts weighed by
// fairSharing.weight, preemption between ClusterQueues of a cohort by dominant resource share,
// and (with ordering: kueue) heads ordered by it.
struct FairSharing {
  bool enable = false;
  std::vector<FairStrategy> strategies{FairStrategy::kLessThanOrEqualToFinalShare,
                                       FairStrategy::kLessThanInitialShare};
};

struct SchedulerPolicy {
  ScoringPolicy gpu_scoring = ScoringPolicy::kFgdMix;  // docs/placement.md: why
  OrderingMode ordering = OrderingMode::kComposite;
  FairSharing fair_sharing;
  OrderingWeights weights;
  TimeNs aging_horizon_ns = 3600 * kNsPerSec;        // a job waiting this long is "starving"
  TimeNs debt_half_life_ns = 24 * 3600 * kNsPerSec;  // fairness-debt decay
  // spec.ordering.fairnessYieldPercentile: 0 (the default): off. P in 1..99: a job that waited
  // longer than the P-th percentile of its class's recent admitted waits loses the DRF and debt
  // terms (it competes by priority and age: arrival order), core/order/fairness_yield.h.
  int32_t fairness_yield_percentile = 0;
  // spec.ordering.fairnessWithinNominal: 1 (the default): off. s in [0, 1): a job whose queue
  // would stay within its nominal quota with it admitted has its DRF and debt terms scaled by s
  // (0: by priority, age and arrival, as Kueue admits within-nominal work); the terms keep
  // arbitrating jobs that would borrow. core/order/nominal_fairness.h.
  double fairness_within_nominal = 1.0;
  // spec.withoutVictims: what the policy does while no job may ever be preempted (none running
  // is a possible victim and none pending would be one: a cluster of strict work), decided at
  // each cycle's start. ordering: arrival: the composite order drops its DRF and debt terms
  // (priority, age and arrival decide, as Kueue orders); alignEnds: false: placement without end
  // alignment; alignEndsAfter: the spec.alignEndsAfter that applies meanwhile (-1: the same as
  // otherwise). Off by default (the policy in full either way); docs/scheduling.md, "Without
  // victims".
  bool arrival_without_victims = false;
  bool align_without_victims = true;
  TimeNs align_without_victims_after_ns = -1;
  bool acts_without_victims() const {
    return arrival_without_victims || !align_without_victims || align_without_victims_after_ns >= 0;
  }
  TimeNs interactive_timeout_ns = 30 * kNsPerSec;
  int32_t max_pending_total = 0;        // cluster-wide cap on pending jobs; 0: none
  int32_t max_preemptions_per_job = 3;  // a job preempted this often is no longer a victim
  // Reservation + backfill: the highest-ranked job that cannot be placed reserves the nodes it
  // will get when running jobs end (by walltime); later jobs start only if they cannot delay it.
  bool backfill = true;
  // How many jobs hold a reservation at once (spec.backfillDepth): the first `backfill_depth`
  // jobs in rank order that cannot be placed, each on nodes the earlier ones do not reserve.
  int32_t backfill_depth = 1;
  // spec.alignEnds: among nodes the GPU scoring ranks equal, a job with a walltime goes where
  // the running work ends closest after its own expected end (Placer::set_node_ends).
  bool align_ends = false;
  // spec.alignEnds: bins (align_ends is then true too): runtime bins (Stratus) before the GPU
  // scoring: a job goes first where it extends the node's busy time least, in power-of-two bins
  // of minutes (0: the node's running work outlasts the job), then by the GPU scoring, then as
  // the tie-break above (Placer::set_node_ends).
  bool align_ends_bins = false;
  // spec.alignEndsAfter: 0 (the default): every placement aligns. Above 0: a placement aligns
  // only while a job that has waited at least this long waits for room (it holds a backfill
  // reservation, or as a starving job claims capacity); with none, nodes are left to the GPU
  // scoring alone, and release their GPUs one by one for the next small jobs.
  TimeNs align_ends_after_ns = 0;
  // spec.alignEndsYieldToSmall: with alignEnds, a placement aligns only while the job pending the
  // longest among those of the highest priority pending has a pod of more than one GPU; while it
  // asks for one GPU per pod the GPU scoring alone places (core/cycle/align_yield.h).
  bool align_ends_yield_small = false;
  // spec.flavorSnapshot: cycleStart: as Kueue, a job's flavors are chosen against the quota as
  // it was when the cycle started, and a job whose choice no longer fits after the cycle's
  // earlier admissions waits for the next cycle (no other flavor is tried). Off (`live`, the
  // default): flavors are chosen against the quota the cycle's admissions left.
  bool cycle_start_flavors = false;
};

struct Config {
  ResourceCatalog resources;
  std::vector<ResourceFlavor> flavors;
  std::vector<KueueTopology> topologies;
  std::vector<Cohort> cohorts;
  std::vector<ClusterQueue> cluster_queues;
  std::vector<LocalQueue> local_queues;
  std::vector<PriorityClass> priority_classes;
  SchedulerPolicy policy;
  std::vector<Budget> budgets;  // at most one per namespace
  Cluster cluster;
  std::vector<NodePool> node_pools;   // sluice.dev NodePool (core/scale decides on them)
  std::vector<std::string> warnings;  // what the loader accepted but a user should know

  std::optional<FlavorId> find_flavor(const std::string& name) const;
  std::optional<QueueId> find_cluster_queue(const std::string& name) const;
  std::optional<CohortId> find_cohort(const std::string& name) const;
  // Exact (namespace, name) match first, else a queue of that name in namespace "*" (serves
  // every namespace; what a playbook `Queue` becomes).
  std::optional<LocalQueueId> find_local_queue(const std::string& ns,
                                               const std::string& name) const;
  // The job's LocalQueue: the one its reader resolved (Job::local_queue) while it is still the
  // queue the job names in this configuration, else found by (namespace, name).
  std::optional<LocalQueueId> local_queue_of(const Job& job) const;
  // The names of the LocalQueues a job of namespace `ns` may name (its own and those of "*"),
  // in configuration order: the hint an unknown queue's error gives.
  std::vector<std::string> local_queue_names(const std::string& ns) const;
  const PriorityClass* find_priority_class(const std::string& name) const;
  const Budget* find_budget(const std::string& namespace_) const;
};

}  // namespace sluice
