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
#include <vector>

#include "core/cycle/decisions.h"
#include "core/cycle/records.h"
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
};

class FlavorAssigner {
 public:
  // Both must outlive the assigner.
  FlavorAssigner(const Config& config, const Placer& placer);

  // Tries to admit one job against the given quota and capacity, on the first `open` flavors
  // of each resource group (a later one than the first `preferred` is a downgrade). True with
  // at.admission set; false with at.reason (and at.failed_flavors on a placement failure).
  bool assign(const Job& job, QueueId q, const QuotaTree& quota, const ClusterAlloc& alloc,
              FlavorAttempt& at, int32_t open = INT32_MAX, int32_t preferred = INT32_MAX) const;
  // The job's fallback tier at `now`.
  Tier tier_of(const Job& job, QueueId q, TimeNs now) const;
  // assign() through the job's fallback tier: its own shape on the open flavors, then each
  // fallback shape (a reshaped copy kept in `shaped`; *used points at what was placed). On
  // failure the reason is the one of its own shape, with the next flavor to open.
  bool assign_tiered(const PendingRecord& p, const Tier& tier, const QuotaTree& quota,
                     const ClusterAlloc& alloc, TimeNs now, FlavorAttempt& at,
                     std::deque<Job>& shaped, const Job** used) const;
  // The nodes a job may use on these flavors (one per resource group, -1 unused): those that
  // carry every flavor's node labels. May return `scratch` after filling it.
  const NodeSet& nodes_for(const std::vector<FlavorId>& flavors, NodeSet& scratch) const;
  // The same less the nodes a pod set's nodeSelector or required affinity excludes.
  const NodeSet& nodes_for(const Job& job, const std::vector<FlavorId>& flavors,
                           NodeSet& scratch) const;
  const Placer& placer() const { return placer_; }

 private:
  const Config& config_;
  const Placer& placer_;
  bool flavor_allows(const Job& job, QueueId q, int group, FlavorId f, std::string* why) const;

  std::vector<NodeSet> flavor_nodes_;                           // per flavor
  std::vector<std::vector<std::set<std::string>>> group_keys_;  // [queue][group]: label keys
  NodeSet all_nodes_;
};

}  // namespace sluice
