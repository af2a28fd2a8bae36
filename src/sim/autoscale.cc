#include "sim/autoscale.h"

#include <algorithm>

#include "core/cycle/scale_input.h"

namespace sluice::sim {

namespace {

constexpr double kNsPerHour = 3600e9;

// Whether a node holds no pod: all its GPUs, CPU and memory are free.
bool node_idle(const ClusterAlloc& alloc, const Node& node, NodeId n) {
  return alloc.whole_gpus_free(n) == alloc.gpu_count(n) &&
         alloc.cpu_free_milli(n) == node.cpu_milli && alloc.memory_free_mib(n) == node.memory_mib;
}

}  // namespace

Fleet::Fleet(const Config& config, std::vector<NodeId> first, uint64_t seed)
    : config_(config), pools_(config.node_pools), first_(std::move(first)), rng_(seed) {
  for (const NodePool& pool : pools_) {
    slots_.emplace_back(static_cast<size_t>(pool.max_nodes));
    PoolFigures f;
    f.name = pool.name;
    f.spot = pool.capacity == CapacityType::kSpot;
    f.gpus_per_node = static_cast<int32_t>(pool.node.gpus.size());
    f.price_per_hour = static_cast<double>(pool.price_micro_per_hour) / 1e6;
    f.consolidation = pool.consolidation.after_ns > 0;
    figures_.push_back(std::move(f));
  }
  live_.assign(pools_.size(), 0);
  looked_ns_.assign(pools_.size(), 0);
}

void Fleet::start(TimeNs now, Scheduler& sched, EventQueue& events) {
  for (size_t p = 0; p < pools_.size(); ++p) {
    const int32_t n = pools_[p].initial_nodes;
    if (n == 0) continue;
    ++figures_[p].requests;
    request(p, n, now, events);
    // The base of the pool is there from the start: ready now, not after the delay.
    for (int32_t k = 0; k < n; ++k) {
      Slot& s = slots_[p][static_cast<size_t>(k)];
      s.state = scale::NodeState::kReady;
      s.idle_since = now;
      sched.set_node_ready(first_[p] + k, true);
    }
  }
}

void Fleet::request(size_t p, int32_t n, TimeNs now, EventQueue& events) {
  for (size_t k = 0; k < slots_[p].size() && n > 0; ++k) {
    Slot& s = slots_[p][k];
    if (s.state != scale::NodeState::kAbsent) continue;
    s.state = scale::NodeState::kProvisioning;
    ++s.gen;
    s.billed_from = now;
    s.busy = false;
    events.push(now + pools_[p].provisioning_delay_ns, EventKind::kNodeJoin,
                static_cast<uint64_t>(first_[p]) + k, s.gen);
    ++live_[p];
    ++figures_[p].nodes_added;
    --n;
  }
  note_count(p, now);
}

void Fleet::remove(size_t p, size_t k, TimeNs now, Scheduler& sched) {
  Slot& s = slots_[p][k];
  if (s.state == scale::NodeState::kAbsent) return;
  sched.set_node_ready(first_[p] + static_cast<NodeId>(k), false);
  figures_[p].node_hours += static_cast<double>(now - s.billed_from) / kNsPerHour;
  s.state = scale::NodeState::kAbsent;
  ++s.gen;  // its pending events are stale
  --live_[p];
  note_count(p, now);
}

void Fleet::note_count(size_t p, TimeNs now) {
  PoolFigures& f = figures_[p];
  f.peak_nodes = std::max(f.peak_nodes, live_[p]);
  if (!f.t_ns.empty() && f.nodes.back() == live_[p]) return;
  if (!f.t_ns.empty() && f.t_ns.back() == now) {
    f.nodes.back() = live_[p];
    if (f.nodes.size() >= 2 && f.nodes[f.nodes.size() - 2] == live_[p]) {
      f.t_ns.pop_back();
      f.nodes.pop_back();
    }
    return;
  }
  f.t_ns.push_back(now);
  f.nodes.push_back(live_[p]);
}

bool Fleet::locate(uint64_t node, size_t& p, size_t& k) const {
  for (p = 0; p < pools_.size(); ++p) {
    const uint64_t first = static_cast<uint64_t>(first_[p]);
    if (node >= first && node < first + slots_[p].size()) {
      k = static_cast<size_t>(node - first);
      return true;
    }
  }
  return false;
}

bool Fleet::handle(const Event& e, TimeNs now, Scheduler& sched, EventQueue& events,
                   const std::function<void(NodeId)>& evict) {
  if (e.kind == EventKind::kScaleCheck) return false;  // step() looks
  size_t p = 0, k = 0;
  if (!locate(e.a, p, k) || slots_[p][k].gen != e.b) return false;
  Slot& s = slots_[p][k];
  const NodeId node = static_cast<NodeId>(e.a);
  const NodePool& pool = pools_[p];
  switch (e.kind) {
    case EventKind::kNodeJoin: {
      if (s.state != scale::NodeState::kProvisioning) return false;
      s.state = scale::NodeState::kReady;
      s.idle_since = now;
      sched.set_node_ready(node, true);
      events.push(now + pool.scale_down_after_ns, EventKind::kScaleCheck);
      if (pool.capacity == CapacityType::kSpot && pool.reclaim.mean_lifetime_ns > 0) {
        const double life_s =
            rng_.exponential(1e9 / static_cast<double>(pool.reclaim.mean_lifetime_ns));
        const TimeNs at = now + static_cast<TimeNs>(life_s * 1e9);
        events.push(std::max(now, at - pool.reclaim.notice_ns), EventKind::kSpotNotice, e.a, s.gen);
        events.push(at, EventKind::kSpotReclaim, e.a, s.gen);
      }
      return true;
    }
    case EventKind::kSpotNotice:
      // Cordoned: no new pods; running ones have the notice to end (or checkpoint).
      if (s.state != scale::NodeState::kReady) return false;
      s.state = scale::NodeState::kLeaving;
      sched.set_node_ready(node, false);
      return false;
    case EventKind::kSpotReclaim:
      evict(node);
      ++figures_[p].reclaims;
      remove(p, k, now, sched);
      return true;
    default:
      return false;
  }
}

void Fleet::step(TimeNs now, Scheduler& sched, EventQueue& events, bool look,
                 const std::function<void(JobId)>& move) {
  const ClusterAlloc& alloc = sched.alloc();
  for (size_t p = 0; p < pools_.size(); ++p)
    for (size_t k = 0; k < slots_[p].size(); ++k) {
      Slot& s = slots_[p][k];
      if (s.state != scale::NodeState::kReady) continue;
      const NodeId n = first_[p] + static_cast<NodeId>(k);
      const bool busy = !node_idle(alloc, config_.cluster.nodes[static_cast<size_t>(n)], n);
      if (s.busy && !busy) {
        s.idle_since = now;
        events.push(now + pools_[p].scale_down_after_ns, EventKind::kScaleCheck);
      }
      s.busy = busy;
    }
  // Consolidation looks every `interval` whatever happened (a job that ended may leave a node
  // worth emptying with nothing pending).
  if (!look && !consolidation_due(now)) return;
  act(scale::decide(input(now, sched)), now, sched, events, move);
}

bool Fleet::consolidation_due(TimeNs now) const {
  for (size_t p = 0; p < pools_.size(); ++p) {
    const Consolidation& c = pools_[p].consolidation;
    if (c.after_ns > 0 && (looked_ns_[p] == 0 || now - looked_ns_[p] >= c.interval_ns)) return true;
  }
  return false;
}

scale::ScaleInput Fleet::input(TimeNs now, const Scheduler& sched) const {
  scale::ScaleInput in;
  in.now = now;
  in.pools = &pools_;
  for (size_t p = 0; p < pools_.size(); ++p) {
    auto& nodes = in.nodes.emplace_back();
    for (size_t k = 0; k < slots_[p].size(); ++k) {
      const Slot& s = slots_[p][k];
      nodes.push_back({first_[p] + static_cast<NodeId>(k), s.state, s.busy ? 1 : 0, s.idle_since});
    }
  }
  if (sched.pending_count() > 0) {
    in.pending = scale::pending_gangs(sched, config_, [&](const Scheduler::PendingJob& p) {
      const auto it = asked_.find(p.job.id);
      return it == asked_.end() || it->second < kMaxAsks;
    });
    in.gpu_headroom = scale::gpu_headroom(sched.quota());
  }
  // The running jobs only when a pool's consolidation may look now (they cost a walk).
  if (consolidation_due(now)) {
    in.running = scale::running_gangs(sched, in.nodes);
    in.consolidation_looked_ns = looked_ns_;
  }
  return in;
}

void Fleet::act(const scale::ScaleDecision& d, TimeNs now, Scheduler& sched, EventQueue& events,
                const std::function<void(JobId)>& move) {
  // A gang held back (deferScaleUp) is looked at again when its wait ends, even if no other
  // event comes by then; one check per distinct time.
  if (d.recheck_ns > now && d.recheck_ns != recheck_ns_) {
    recheck_ns_ = d.recheck_ns;
    events.push(d.recheck_ns, EventKind::kScaleCheck);
  }
  for (const scale::ScaleUp& u : d.up) {
    ++figures_[static_cast<size_t>(u.pool)].requests;
    if (u.job != 0) ++asked_[u.job];
    request(static_cast<size_t>(u.pool), u.nodes, now, events);
  }
  for (const scale::ScaleDown& down : d.down) {
    const size_t p = static_cast<size_t>(down.pool);
    remove(p, static_cast<size_t>(down.node - first_[p]), now, sched);
    ++figures_[p].nodes_removed;
  }
  for (int32_t p : d.consolidation_looked) looked_ns_[static_cast<size_t>(p)] = now;
  // Consolidation: the node's jobs go back to pending, the node goes now, and a cycle at this
  // same time places the jobs on the room the decision found for them.
  for (const scale::Consolidate& c : d.consolidate) {
    const size_t p = static_cast<size_t>(c.pool);
    PoolFigures& f = figures_[p];
    for (JobId id : c.jobs) {
      move(id);
      moved_[id] = {now, p};
    }
    ++f.consolidations;
    f.moves += static_cast<int64_t>(c.jobs.size());
    f.moved_lost_gpu_hours += static_cast<double>(c.lost_gpu_milli_ns) / kMilliPerGpu / kNsPerHour;
    remove(p, static_cast<size_t>(c.node - first_[p]), now, sched);
    ++f.nodes_removed;
    events.push(now, EventKind::kScaleCheck);
  }
}

void Fleet::started(JobId id, TimeNs now) {
  asked_.erase(id);
  const auto it = moved_.find(id);
  if (it == moved_.end()) return;
  if (now > it->second.first) ++figures_[it->second.second].moves_late;
  moved_.erase(it);
}

std::vector<PoolFigures> Fleet::finish(TimeNs end) {
  for (const auto& [id, at] : moved_) ++figures_[at.second].moves_late;  // never started again
  for (size_t p = 0; p < pools_.size(); ++p) {
    for (const Slot& s : slots_[p])
      if (s.state != scale::NodeState::kAbsent)
        figures_[p].node_hours += static_cast<double>(end - s.billed_from) / kNsPerHour;
    figures_[p].cost = figures_[p].node_hours * figures_[p].price_per_hour;
  }
  return std::move(figures_);
}

}  // namespace sluice::sim
