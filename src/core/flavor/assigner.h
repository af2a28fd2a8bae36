#pragma once
// The flavor assigner: for one job of a ClusterQueue, against given (working) quota and
// capacity, the first flavor per resource group whose quota holds the request and whose nodes
// can place it (as Kueue's flavorassigner, with sluice's placement in the loop), or why not.
// Pure and const: it reads the configuration and the state it is handed, nothing else.
#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/decision/decisions.h"
#include "core/decision/records.h"
#include "core/model/config.h"
#include "core/place/cluster_alloc.h"
#include "core/place/node_set.h"
#include "core/place/placer.h"
#include "core/quota/quota_tree.h"

namespace sluice {

// Fallback tier of a pending job at a time: how many flavors of each resource group are open
// (the first `preferred` of them are what it prefers) and whether its fallback shapes are.
struct Tier {
  int32_t open = INT32_MAX;
  int32_t preferred = INT32_MAX;
  bool shapes = true;
  TimeNs after_ns = 0;  // 0: no fallback tier (everything open at once)
};

// Scratch state of one evaluation, reused across jobs of a cycle, and its outcome: the
// admission when one was found, else the reason.
struct FlavorAttempt {
  Admission admission;
  PendingReason reason;
  // Placement failures memoised within a cycle: capacity only shrinks during a cycle, so a
  // shape that did not fit on a node set still does not fit. Clear it when capacity grows.
  struct Memo {
    const Job* job;
    std::vector<FlavorId> flavors;
    PlaceFailure failure;
  };
  std::unordered_map<uint64_t, std::vector<Memo>> memo;
  NodeSet scratch;
  std::vector<FlavorId> failed_flavors;  // flavors of the first placement failure
  bool evaluated = false;
  // whenCanPreempt: MayStopSearch ended the search at a flavor that needs preemption, before
  // a later one that might fit (the caller tries the later ones when nothing is evicted).
  bool stopped_at_preempt = false;
};

class FlavorAssigner {
 public:
  // Both must outlive the assigner.
  FlavorAssigner(const Config& config, const Placer& placer);

  // Tries to admit one job against the given quota and capacity, on the first `open` flavors
  // of each resource group (a later one than the first `preferred` is a downgrade). True with
  // at.admission set; false with at.reason (and at.failed_flavors on a placement failure).
  // Multi-pod-set jobs get flavors pod set by pod set first, as Kueue assigns them (each pod
  // set counting what earlier ones took); when that gives pod sets different flavors and they
  // place, that is the admission (Admission::pod_set_flavors), else the whole job's search.
  // The queue's flavorFungibility steers the search: whenCanBorrow: TryNextFlavor tries every
  // flavor that fits without borrowing before one that borrows; whenCanPreempt: MayStopSearch
  // (with stop_at_preempt) ends it at the first flavor that fails only for want of quota its
  // queue could preempt for (at.stopped_at_preempt).
  bool assign(const Job& job, QueueId q, const QuotaTree& quota, const ClusterAlloc& alloc,
              FlavorAttempt& at, int32_t open = INT32_MAX, int32_t preferred = INT32_MAX,
              bool stop_at_preempt = true) const;
  // Whether an admission chosen against other quota (the cycle's start) still fits `quota`;
  // its borrowing is updated. False with *why (kQuota) when it does not.
  bool fits_now(Admission& a, const QuotaTree& quota, PendingReason* why) const;
  // The job's fallback tier at `now`.
  Tier tier_of(const Job& job, QueueId q, TimeNs now) const;
  // assign() through the job's fallback tier: its own shape on the open flavors, then each
  // fallback shape (a reshaped copy kept in `shaped`; *used points at what was placed). On
  // failure the reason is the one of its own shape, with the next flavor to open.
  bool assign_tiered(const PendingRecord& p, const Tier& tier, const QuotaTree& quota,
                     const ClusterAlloc& alloc, TimeNs now, FlavorAttempt& at,
                     std::deque<Job>& shaped, const Job** used, bool stop_at_preempt = true) const;
  // The nodes a job may use on these flavors (one per resource group, -1 unused): those that
  // carry every flavor's node labels. May return `scratch` after filling it.
  const NodeSet& nodes_for(const std::vector<FlavorId>& flavors, NodeSet& scratch) const;
  // The same less the nodes a pod set's nodeSelector or required affinity excludes.
  const NodeSet& nodes_for(const Job& job, const std::vector<FlavorId>& flavors,
                           NodeSet& scratch) const;
  const Placer& placer() const { return placer_; }
  // Kueue's condition for preempting without borrowing, pod set by pod set as its assigner
  // meets them: each pod set has a flavor (per group) that allows its pods and whose quota
  // holds what earlier pod sets took of it plus its request, now or within the queue's
  // nominal quota.
  bool fits_nominal_per_pod_set(const Job& job, QueueId q, const QuotaTree& quota) const {
    std::vector<std::vector<FlavorId>> per;
    return per_pod_set(job, q, quota, INT32_MAX, &per, Bound::kNominal);
  }

 private:
  // What a pod set's flavor must hold: the quota free now, what the queue could ever get, or
  // either of the free quota and the queue's nominal quota.
  enum class Bound : uint8_t { kNow, kSomeDay, kNominal };
  const Config& config_;
  const Placer& placer_;
  bool flavor_allows(const Job& job, QueueId q, int group, FlavorId f, std::string* why) const;
  bool pod_set_allows(const PodSet& ps, QueueId q, int group, FlavorId f, std::string* why) const;
  // Step 1 of assign(): the resource groups the job touches, ascending; false (at.reason set)
  // when it requests a resource its queue cannot grant.
  bool groups_of(QueueId q, const QuotaTree& quota, const ResourceVec& req,
                 std::vector<int>* groups, FlavorAttempt& at) const;
  // Kueue's assignment pod set by pod set: per group a pod set touches, the first open flavor
  // that allows its pods and whose quota holds its request plus what earlier pod sets took of
  // it (whenCanBorrow: TryNextFlavor: the first that does so without borrowing, if any).
  // (*out)[i][g]; false when some pod set finds none. `bound`: what the quota must hold.
  bool per_pod_set(const Job& job, QueueId q, const QuotaTree& quota, int32_t open,
                   std::vector<std::vector<FlavorId>>* out, Bound bound = Bound::kNow) const;
  // Step 3 of assign(): per group, the open flavors whose quota holds the whole request, in the
  // order the queue's flavorFungibility says; false (at.reason set) when some group has none.
  bool quota_candidates(const Job& job, QueueId q, const QuotaTree& quota, const ResourceVec& req,
                        const std::vector<int>& groups, int32_t open, bool stop_at_preempt,
                        std::vector<std::vector<FlavorId>>& candidates, FlavorAttempt& at) const;
  // Places a job whose pod sets have different flavors, pod set by pod set, each on its
  // flavors' nodes; true with at.admission's placement and flavors set.
  bool place_per_pod_set(const Job& job, const std::vector<std::vector<FlavorId>>& per,
                         const ClusterAlloc& alloc, FlavorAttempt& at) const;
  // Step 4 of assign(): the flavor combinations of `candidates` in order (first group varies
  // slowest); the first that places is the admission. Without one, at.reason is the first
  // placement failure (kept when `have_failure`: step 2's).
  bool place_combinations(const Job& job, const ResourceVec& req, QueueId q, const QuotaTree& quota,
                          const ClusterAlloc& alloc, const std::vector<int>& groups,
                          const std::vector<std::vector<FlavorId>>& candidates, int32_t preferred,
                          bool have_failure, FlavorAttempt& at) const;
  // The job placed on `flavors`' nodes, or the failure this cycle already found for the same
  // shape and flavors (at.memo).
  std::variant<Placement, PlaceFailure> place_memo(const Job& job,
                                                   const std::vector<FlavorId>& flavors,
                                                   const ClusterAlloc& alloc,
                                                   FlavorAttempt& at) const;
  // The admission's usage, borrowing and fallback downgrade from its flavors.
  void finish(const Job& job, const ResourceVec& req, QueueId q, const QuotaTree& quota,
              int32_t preferred, Admission& a) const;

  std::vector<NodeSet> flavor_nodes_;                           // per flavor
  std::vector<std::vector<std::set<std::string>>> group_keys_;  // [queue][group]: label keys
  NodeSet all_nodes_;
};

}  // namespace sluice
