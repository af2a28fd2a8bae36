#pragma once
// The autoscaler's decision (docs/simulator.md "Autoscaling"): given the node pools, the state
// of each pool's nodes and the pending work the last cycle could not place, which nodes to ask
// for and which to give back. Pure and deterministic (house rules 1, 3, 6): time is `now`, the
// inputs are values, the result is returned; the simulator acts on it on its virtual clock, and
// the server can act on it through a provisioner.
//
// Scale up (as cluster-autoscaler / Kueue's ProvisioningRequest): one request per gang, for a
// pending job whose quota fits now but whose pods had no room in the last cycle, on the first
// pool of the first of its queue's GPU flavors whose empty nodes hold all its pods. Nodes on
// their way and the pool's empty ready nodes are counted first, so a gang asks for no more
// nodes than it needs beyond them; each gang's GPUs come off its queue's quota
// headroom, so a queue with no quota left never starts a node. Scale down: a ready node with no
// pods, idle for the pool's scaleDownAfter, longest idle first, never below minNodes. A pool's
// deferScaleUp holds lower-priority gangs back from its new nodes until they have waited.
// Consolidation (a pool's `consolidation`, core/scale/consolidation.h): a busy node whose
// preemptible work fits now on the pool's other busy nodes is emptied and removed.
#include <cstdint>
#include <vector>

#include "core/model/config.h"
#include "core/scale/consolidation.h"

namespace sluice::scale {

// kLeaving: announced to go (a spot reclaim's notice): it takes no new pods and holds a slot
// of maxNodes until it is gone, but counts as no capacity.
enum class NodeState : uint8_t { kAbsent, kProvisioning, kReady, kLeaving };

// One slot of a pool (a node that may exist), as its caller tracks it.
struct PoolNode {
  NodeId node = -1;  // the cluster's node id of the slot
  NodeState state = NodeState::kAbsent;
  int32_t pods = 0;          // running pods on it (ready only)
  TimeNs idle_since_ns = 0;  // ready and no pods: since when
};

// One pod set of a pending gang: `count` pods, each needing `gpus` devices of `gpu_milli`.
struct PodNeed {
  int32_t count = 0;
  int32_t gpus = 0;
  int32_t gpu_milli = 1000;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  const NodeAffinity* affinity = nullptr;  // nullptr: any node
};

struct PendingGang {
  JobId job = 0;
  QueueId queue = 0;
  std::vector<FlavorId> flavors;  // its queue's GPU flavors, in the queue's order
  std::vector<PodNeed> pods;
  int64_t gpu_milli = 0;  // whole gang
  int32_t priority = 0;   // the job's (NodePool::defer_scale_up)
  TimeNs submit_ns = 0;
};

struct ScaleInput {
  TimeNs now = 0;
  const std::vector<NodePool>* pools = nullptr;
  std::vector<std::vector<PoolNode>> nodes;  // per pool: its slots
  std::vector<PendingGang> pending;          // capacity-bound gangs, in the cycle's rank order
  // GPU quota headroom in milli-GPU per [queue][flavor] (QuotaTree::available); empty: no check.
  std::vector<std::vector<int64_t>> gpu_headroom;
  // Consolidation only (pools with `consolidation`): the running jobs with a pod on a pool's
  // node, and per pool when it last looked for a node to empty (empty: never).
  std::vector<RunningGang> running;
  std::vector<TimeNs> consolidation_looked_ns;
};

struct ScaleUp {
  int32_t pool = 0;
  int32_t nodes = 0;
  JobId job = 0;  // the gang it is for; 0: the pool's minNodes
};

struct ScaleDown {
  int32_t pool = 0;
  NodeId node = -1;
};

struct ScaleDecision {
  std::vector<ScaleUp> up;
  std::vector<ScaleDown> down;
  // A gang held back by a pool's deferScaleUp asks at this time (0: none held back); the caller
  // asks again then.
  TimeNs recheck_ns = 0;
  // Nodes to empty (their jobs go back to pending) and remove now, and the pools that looked
  // for one in this decision (the caller notes the time: ScaleInput::consolidation_looked_ns).
  std::vector<Consolidate> consolidate;
  std::vector<int32_t> consolidation_looked;
  bool empty() const { return up.empty() && down.empty() && consolidate.empty(); }
};

ScaleDecision decide(const ScaleInput& in);

// A job's pods as the autoscaler packs them, and its queue's GPU flavors.
PendingGang gang_of(const Job& job, QueueId queue, const ClusterQueue& cq);

// The pools' nodes appended to `cluster`, max_nodes of each pool, not ready; returns each
// pool's first node id (its slots are [first, first + max_nodes)).
std::vector<NodeId> add_pool_nodes(const std::vector<NodePool>& pools, Cluster& cluster);

}  // namespace sluice::scale
