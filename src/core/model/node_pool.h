#pragma once
// A pool of nodes of one shape that an autoscaler grows and shrinks (sluice.dev NodePool,
// docs/config.md): the shape of each node, how many there may be, what one costs, how long one
// takes to join and how long one may stay idle, and for spot capacity how often the provider
// takes one back. The decisions live in core/scale; the simulator and the server act on them.
#include <cstdint>
#include <string>
#include <vector>

#include "core/model/cluster.h"
#include "core/model/resources.h"

namespace sluice {

enum class CapacityType : uint8_t { kOnDemand, kSpot };
// The label every pool node carries: "spot" or "on-demand" (a job refuses spot by selecting
// `sluice.dev/capacity-type: on-demand`, or NotIn [spot]).
inline constexpr const char* kCapacityTypeLabel = "sluice.dev/capacity-type";

// Spot reclaims as the simulator draws them: each node's lifetime is exponential with this
// mean, and the provider announces the reclaim `notice_ns` before it takes the node.
struct SpotReclaim {
  TimeNs mean_lifetime_ns = 0;  // 0: never reclaimed
  TimeNs notice_ns = 120 * kNsPerSec;
};

// How `sluice serve` starts and stops a pool's nodes (docs/autoscaling.md): an executable
// called as `COMMAND... create|delete POOL NODE`, the node's shape in its environment, or a
// webhook (exactly one of the two) that gets the same as a JSON body in a POST. Neither: the
// server acts on no node of the pool (the simulator needs none).
struct Provisioner {
  std::vector<std::string> command;
  std::string webhook_url;        // http(s)://HOST[:PORT]/PATH
  std::string bearer_token_file;  // the webhook's token, read at each call; never logged
  bool configured() const { return !command.empty() || !webhook_url.empty(); }
  TimeNs timeout_ns = 60 * kNsPerSec;        // one call; past it it is killed (timeout)
  TimeNs retry_after_ns = 30 * kNsPerSec;    // after a failed call, its slot waits this long
  TimeNs join_timeout_ns = 600 * kNsPerSec;  // created, but no agent registered: deleted
};

// Lower-priority work waits for room on the nodes there are before it asks for new ones: a
// pending gang of priority below `below_priority` counts for scale-up only once it has waited
// `after_ns` since its submit time (Job::submit_ns: the simulator keeps a requeued job's, the
// server ages a preempted one from its preemptor's).
// Room freed by work that ends goes to it instead of to new nodes; higher-priority work asks at
// once as before. after_ns 0 (the default): off, every gang asks at once.
struct DeferScaleUp {
  int32_t below_priority = 0;
  TimeNs after_ns = 0;
};

// Consolidation (Karpenter's): a ready node whose running pods could all run now on the pool's
// other busy nodes is emptied (its jobs go back to pending, as a preemption sends them, and the
// next cycle places them there) and removed at once. Only preemptible work moves, never a job
// that started less than `after_ns` ago, and at most one node per pool every `interval_ns`
// (core/scale/consolidation.h has the rule). after_ns 0 (the default): off.
struct Consolidation {
  TimeNs after_ns = 0;
  TimeNs interval_ns = 60 * kNsPerSec;
};

struct NodePool {
  std::string name;
  std::string flavor;       // the ResourceFlavor whose quota its nodes serve
  int32_t flavor_id = -1;   // resolved FlavorId
  std::string name_prefix;  // node names: prefix + index (default: the pool's name + "-")
  Node node;                // the shape; labels include the flavor's node labels
  int32_t min_nodes = 0;
  int32_t max_nodes = 0;
  // Nodes up when the pool starts (the simulator's time zero; default minNodes).
  int32_t initial_nodes = 0;
  // Empty nodes kept ready beyond what pending work asks for (cluster-autoscaler's
  // "overprovisioning"): work that arrives finds room without the provisioning delay.
  int32_t spare_nodes = 0;
  // Price of one node-hour in millionths of the currency unit (integer, house rule 4).
  int64_t price_micro_per_hour = 0;
  CapacityType capacity = CapacityType::kOnDemand;
  TimeNs provisioning_delay_ns = 0;              // from the request until the node is ready
  TimeNs scale_down_after_ns = 600 * kNsPerSec;  // idle this long: the node is removed
  SpotReclaim reclaim;                           // spot only
  DeferScaleUp defer_scale_up;                   // default: off
  Consolidation consolidation;                   // default: off
  Provisioner provisioner;                       // the server's (docs/autoscaling.md)
};

}  // namespace sluice
