#pragma once
// The simulator's side of autoscaling (docs/simulator.md, "Autoscaling"): the node pools' slots
// on the virtual clock. It asks core/scale's decide() what to do, provisions nodes that join
// after the pool's delay, removes idle ones, draws spot reclaims from its own seeded generator
// (house rule 5), and bills each node from its request to its removal.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/cycle/scheduler.h"
#include "core/scale/autoscaler.h"
#include "sim/event_queue.h"
#include "sim/rng.h"

namespace sluice::sim {

// One pool over a run.
struct PoolFigures {
  std::string name;
  bool spot = false;
  int32_t gpus_per_node = 0;
  double price_per_hour = 0;
  double node_hours = 0;  // billed: from each node's request to its removal
  double cost = 0;        // node_hours x price
  int32_t peak_nodes = 0;
  int64_t requests = 0;       // scale-up requests (one per gang; minNodes count as one)
  int64_t nodes_added = 0;    // nodes requested
  int64_t nodes_removed = 0;  // idle nodes given back
  int64_t reclaims = 0;       // spot nodes taken back by the provider
  // Consolidation (the pool's `consolidation`; reported only when it is on).
  bool consolidation = false;
  int64_t consolidations = 0;       // busy nodes emptied and removed
  int64_t moves = 0;                // jobs they sent back to pending
  int64_t moves_late = 0;           // of those, not started again at the time of the move
  double moved_lost_gpu_hours = 0;  // the moved jobs' work since their last checkpoints
  // The node-count curve (provisioning + ready + leaving): from t_ns[i], nodes[i] nodes.
  std::vector<TimeNs> t_ns;
  std::vector<int32_t> nodes;
};

class Fleet {
 public:
  // `config` holds the pools' nodes (scale::add_pool_nodes) from `first[p]` on.
  Fleet(const Config& config, std::vector<NodeId> first, uint64_t seed);
  bool active() const { return !pools_.empty(); }
  // The pools' initialNodes, ready at `now` (the first arrival).
  void start(TimeNs now, Scheduler& sched, EventQueue& events);
  // A pool event (kNodeJoin, kSpotNotice, kSpotReclaim, kScaleCheck); true when it asks for a
  // cycle. `evict` sends the jobs running on a node back to pending.
  bool handle(const Event& e, TimeNs now, Scheduler& sched, EventQueue& events,
              const std::function<void(NodeId)>& evict);
  // After a batch: notes which nodes went idle, and, when `look` (a cycle ran or a pool event
  // came), asks decide() and acts on its answer. `move` sends a running job back to pending
  // (consolidation; the caller's accounting, then Scheduler::requeue).
  void step(TimeNs now, Scheduler& sched, EventQueue& events, bool look,
            const std::function<void(JobId)>& move);
  // A job started at `now`: the asks made for it served (its count starts again).
  void started(JobId id, TimeNs now);
  // Bills the nodes still up until `end`; the figures per pool.
  std::vector<PoolFigures> finish(TimeNs end);

 private:
  struct Slot {
    scale::NodeState state = scale::NodeState::kAbsent;
    uint64_t gen = 0;        // bumped at each request: events of an earlier life are stale
    TimeNs billed_from = 0;  // the request
    TimeNs idle_since = 0;
    bool busy = false;
  };
  void request(size_t p, int32_t n, TimeNs now, EventQueue& events);
  void remove(size_t p, size_t k, TimeNs now, Scheduler& sched);
  void note_count(size_t p, TimeNs now);
  bool locate(uint64_t node, size_t& p, size_t& k) const;
  scale::ScaleInput input(TimeNs now, const Scheduler& sched) const;
  bool consolidation_due(TimeNs now) const;
  void act(const scale::ScaleDecision& d, TimeNs now, Scheduler& sched, EventQueue& events,
           const std::function<void(JobId)>& move);

  const Config& config_;
  std::vector<NodePool> pools_;
  std::vector<NodeId> first_;
  std::vector<std::vector<Slot>> slots_;
  std::vector<PoolFigures> figures_;
  std::vector<int32_t> live_;  // per pool: slots not absent
  // Scale-up requests made for each job since it last started: a gang that nodes do not help (a
  // constraint the packing does not model) stops asking after kMaxAsks, so the run ends (every
  // loop bounded).
  std::map<JobId, int32_t> asked_;
  static constexpr int32_t kMaxAsks = 8;
  TimeNs recheck_ns_ = 0;          // the last ScaleDecision::recheck_ns pushed as a kScaleCheck
  std::vector<TimeNs> looked_ns_;  // per pool: when consolidation last looked
  // Jobs a consolidation moved and not started since: when, and the pool they left.
  std::map<JobId, std::pair<TimeNs, size_t>> moved_;
  Rng rng_;
};

}  // namespace sluice::sim
