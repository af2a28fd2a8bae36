#include "core/scale/consolidation.h"

#include <algorithm>
#include <limits>
#include <map>

#include "core/scale/autoscaler.h"
#include "core/scale/bin.h"

namespace sluice::scale {

namespace {

constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

TimeNs expected_end(const RunningGang& g, TimeNs now) {
  if (g.walltime_ns <= 0) return kNever;
  return std::max(now, g.start_ns + g.walltime_ns);
}

// When its run would end if it restarted now: its walltime less what its last checkpoint kept.
TimeNs restarted_end(const RunningGang& g, TimeNs now) {
  if (g.walltime_ns <= 0) return kNever;
  const TimeNs kept = std::max<TimeNs>(0, g.checkpoint_ns - g.start_ns);
  return now + std::max<TimeNs>(0, g.walltime_ns - kept);
}

PodNeed need_of(const RunningPod& p) {
  PodNeed n;
  n.count = 1;
  n.gpus = static_cast<int32_t>(p.gpus.size());
  n.gpu_milli = p.gpus.size() == 1 ? p.gpus[0].milli : static_cast<int32_t>(kMilliPerGpu);
  n.cpu_milli = p.cpu_milli;
  n.memory_mib = p.memory_mib;
  return n;
}

// Adds (sign 1) or takes (sign -1) a running pod's room to or from `b`.
void give(Bin& b, const RunningPod& p, int sign) {
  b.cpu_milli += sign * p.cpu_milli;
  b.memory_mib += sign * p.memory_mib;
  for (const GpuUse& u : p.gpus) {
    if (u.gpu < 0 || static_cast<size_t>(u.gpu) >= b.gpu_free.size()) continue;
    b.gpu_free[static_cast<size_t>(u.gpu)] += sign * (u.mig ? kMilliPerGpu : u.milli);
  }
}

// A ready node of the pool: its free room, the running jobs on it (indices into
// ScaleInput::running, ascending) and whether all of them may move.
struct NodeView {
  NodeId node = -1;
  Bin room;
  std::vector<size_t> gangs;
  bool movable = true;
};

struct Candidate {
  size_t view = 0;
  TimeNs remaining_ns = 0;
  int32_t busy_gpus = 0;
  int64_t lost = 0;  // milli-GPU-ns
};

// Rule 1: whether pending work could take the pool's room (then nothing moves).
bool blocked(const ScaleInput& in, const ScaleDecision& out, size_t p) {
  const NodePool& pool = (*in.pools)[p];
  for (const ScaleUp& u : out.up)
    if (u.pool == static_cast<int32_t>(p)) return true;
  for (const PendingGang& g : in.pending) {
    if (std::find(g.flavors.begin(), g.flavors.end(), pool.flavor_id) == g.flavors.end()) continue;
    if (std::any_of(g.pods.begin(), g.pods.end(), [&](const PodNeed& n) {
          return n.count > 0 && n.affinity && !node_matches(*n.affinity, pool.node.labels);
        }))
      continue;
    if (!in.gpu_headroom.empty()) {
      const size_t q = static_cast<size_t>(g.queue), f = static_cast<size_t>(pool.flavor_id);
      if (g.queue < 0 || q >= in.gpu_headroom.size() || f >= in.gpu_headroom[q].size() ||
          in.gpu_headroom[q][f] < g.gpu_milli)
        continue;
    }
    return true;
  }
  return false;
}

// Rule 2's parts: the pool's ready nodes with their jobs.
std::vector<NodeView> views_of(const ScaleInput& in, size_t p) {
  const NodePool& pool = (*in.pools)[p];
  std::vector<NodeView> views;
  std::map<NodeId, size_t> index;
  for (const PoolNode& n : in.nodes[p])
    if (n.state == NodeState::kReady) {
      index.emplace(n.node, views.size());
      views.push_back({n.node, empty_bin(pool.node), {}, true});
    }
  for (size_t i = 0; i < in.running.size(); ++i) {
    const RunningGang& g = in.running[i];
    bool movable = g.preemptible && in.now - g.start_ns >= pool.consolidation.after_ns;
    for (const RunningPod& pod : g.pods) {
      movable =
          movable && index.count(pod.node) &&
          std::none_of(pod.gpus.begin(), pod.gpus.end(), [](const GpuUse& u) { return u.mig; });
    }
    for (const RunningPod& pod : g.pods) {
      const auto it = index.find(pod.node);
      if (it == index.end()) continue;
      NodeView& v = views[it->second];
      give(v.room, pod, -1);
      if (v.gangs.empty() || v.gangs.back() != i) v.gangs.push_back(i);
      v.movable = v.movable && movable;
    }
  }
  return views;
}

// Rules 2 and 4: a node worth emptying, with its score (rule 5); false when it is not one.
bool candidate(const ScaleInput& in, const NodePool& pool, const std::vector<NodeView>& views,
               size_t k, Candidate& c) {
  const NodeView& v = views[k];
  if (v.gangs.empty() || !v.movable) return false;
  TimeNs end = in.now;
  c = Candidate{k, 0, 0, 0};
  for (size_t i : v.gangs) {
    const RunningGang& g = in.running[i];
    end = std::max(end, expected_end(g, in.now));
    c.lost += g.gpu_milli * std::max<TimeNs>(0, in.now - g.checkpoint_ns);
  }
  c.remaining_ns = end == kNever ? kNever : end - in.now;
  for (int32_t f : v.room.gpu_free) c.busy_gpus += f < kMilliPerGpu ? 1 : 0;
  // remaining x GPUs >= lost, divided through (no overflow).
  const int64_t per_ns =
      static_cast<int64_t>(std::max<size_t>(1, pool.node.gpus.size())) * kMilliPerGpu;
  return c.remaining_ns >= (c.lost + per_ns - 1) / per_ns;
}

// Rule 3: whether the candidate's jobs fit on the pool's other busy nodes without keeping any
// of them up longer.
bool fits_elsewhere(const ScaleInput& in, const std::vector<NodeView>& views, const Candidate& c) {
  const std::vector<size_t>& moved = views[c.view].gangs;
  const auto is_moved = [&](size_t i) { return std::binary_search(moved.begin(), moved.end(), i); };
  struct Target {
    TimeNs end = 0;
    NodeId node = -1;
    Bin room;
  };
  std::vector<Target> targets;
  for (size_t k = 0; k < views.size(); ++k) {
    if (k == c.view) continue;
    const NodeView& v = views[k];
    Target t{0, v.node, v.room};
    bool busy = false;
    for (size_t i : v.gangs) {
      if (is_moved(i)) continue;
      busy = true;
      t.end = std::max(t.end, expected_end(in.running[i], in.now));
    }
    if (!busy) continue;  // an empty node (or one the moves empty) takes nothing
    for (size_t i : v.gangs)
      if (is_moved(i))
        for (const RunningPod& pod : in.running[i].pods)
          if (pod.node == v.node) give(t.room, pod, 1);
    targets.push_back(std::move(t));
  }
  std::sort(targets.begin(), targets.end(), [](const Target& a, const Target& b) {
    return a.end != b.end ? a.end > b.end : a.node < b.node;
  });
  for (size_t i : moved) {
    const TimeNs end = restarted_end(in.running[i], in.now);
    for (const RunningPod& pod : in.running[i].pods) {
      const PodNeed need = need_of(pod);
      bool placed = false;
      for (Target& t : targets) {
        if (t.end < end) break;  // sorted: no later target ends late enough either
        if (take(t.room, need)) {
          placed = true;
          break;
        }
      }
      if (!placed) return false;
    }
  }
  return true;
}

void consolidate_pool(const ScaleInput& in, size_t p, ScaleDecision& out) {
  const NodePool& pool = (*in.pools)[p];
  const std::vector<NodeView> views = views_of(in, p);
  std::vector<Candidate> cands;
  for (size_t k = 0; k < views.size(); ++k) {
    Candidate c;
    if (candidate(in, pool, views, k, c)) cands.push_back(c);
  }
  std::sort(cands.begin(), cands.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.remaining_ns != b.remaining_ns) return a.remaining_ns > b.remaining_ns;
    if (a.busy_gpus != b.busy_gpus) return a.busy_gpus < b.busy_gpus;
    if (a.lost != b.lost) return a.lost < b.lost;
    return views[a.view].node < views[b.view].node;
  });
  for (const Candidate& c : cands) {
    if (!fits_elsewhere(in, views, c)) continue;
    Consolidate e;
    e.pool = static_cast<int32_t>(p);
    e.node = views[c.view].node;
    for (size_t i : views[c.view].gangs) e.jobs.push_back(in.running[i].job);
    std::sort(e.jobs.begin(), e.jobs.end());
    e.lost_gpu_milli_ns = c.lost;
    e.expected_remaining_ns = c.remaining_ns;
    out.consolidate.push_back(std::move(e));
    return;
  }
}

}  // namespace

void consolidate(const ScaleInput& in, ScaleDecision& out) {
  const std::vector<NodePool>& pools = *in.pools;
  for (size_t p = 0; p < pools.size(); ++p) {
    const Consolidation& c = pools[p].consolidation;
    if (c.after_ns <= 0) continue;
    if (p < in.consolidation_looked_ns.size() && in.consolidation_looked_ns[p] > 0 &&
        in.now - in.consolidation_looked_ns[p] < c.interval_ns)
      continue;
    out.consolidation_looked.push_back(static_cast<int32_t>(p));
    if (!blocked(in, out, p)) consolidate_pool(in, p, out);
  }
}

}  // namespace sluice::scale
