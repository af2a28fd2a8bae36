#include "core/scale/autoscaler.h"

#include <algorithm>

#include "core/scale/bin.h"

namespace sluice::scale {

namespace {

// Packs the gang's pods first fit onto `spare` (nodes on their way, shared by every gang of the
// decision), then onto new empty nodes of `pool`, at most `room` of them. Returns the new nodes
// it needs and updates `spare` (the new nodes' leftovers join it); -1, `spare` unchanged, when
// the gang does not fit.
int32_t pack(const PendingGang& gang, const NodePool& pool, std::vector<Bin>& spare, int32_t room) {
  for (const PodNeed& p : gang.pods)
    if (p.count > 0 && p.affinity && !node_matches(*p.affinity, pool.node.labels)) return -1;
  std::vector<Bin> bins = spare;
  const size_t old = bins.size();
  for (const PodNeed& p : gang.pods) {
    for (int32_t k = 0; k < p.count; ++k) {
      bool placed = false;
      for (Bin& b : bins)
        if (take(b, p)) {
          placed = true;
          break;
        }
      if (placed) continue;
      if (static_cast<int32_t>(bins.size() - old) >= room) return -1;
      bins.push_back(empty_bin(pool.node));
      if (!take(bins.back(), p)) return -1;  // larger than one node of the pool
    }
  }
  spare = std::move(bins);
  return static_cast<int32_t>(spare.size() - old);
}

int32_t count_in(const std::vector<PoolNode>& nodes, NodeState s) {
  return static_cast<int32_t>(
      std::count_if(nodes.begin(), nodes.end(), [s](const PoolNode& n) { return n.state == s; }));
}

// The gang's queue's GPU headroom in `flavor`; nullptr when there is no check (empty table).
// A queue or flavor outside the table has none.
int64_t* headroom_of(std::vector<std::vector<int64_t>>& headroom, const PendingGang& g,
                     FlavorId flavor, int64_t& none) {
  none = 0;
  if (headroom.empty()) return nullptr;
  if (g.queue < 0 || static_cast<size_t>(g.queue) >= headroom.size()) return &none;
  auto& row = headroom[static_cast<size_t>(g.queue)];
  if (flavor < 0 || static_cast<size_t>(flavor) >= row.size()) return &none;
  return &row[static_cast<size_t>(flavor)];
}

bool untouched(const Bin& b, const Node& shape) {
  return b.cpu_milli == shape.cpu_milli && b.memory_mib == shape.memory_mib &&
         std::all_of(b.gpu_free.begin(), b.gpu_free.end(),
                     [](int32_t g) { return g == kMilliPerGpu; });
}

// spareNodes: the empty nodes coming or ready that no pending gang took, topped up to the
// pool's spare count (within maxNodes).
void keep_spare(const std::vector<NodePool>& pools, const std::vector<std::vector<Bin>>& spare,
                const std::vector<size_t>& own, std::vector<int32_t>& room, ScaleDecision& out) {
  for (size_t p = 0; p < pools.size(); ++p) {
    if (pools[p].spare_nodes <= 0) continue;
    int32_t empty = 0;
    for (size_t k = 0; k < own[p]; ++k) empty += untouched(spare[p][k], pools[p].node) ? 1 : 0;
    const int32_t n = std::min(room[p], pools[p].spare_nodes - empty);
    if (n <= 0) continue;
    out.up.push_back({static_cast<int32_t>(p), n, 0});
    room[p] -= n;
  }
}

// Whether `pool`'s deferScaleUp holds `g` back at `now`; when it does, `recheck` is lowered to
// the time it stops.
bool deferred(const NodePool& pool, const PendingGang& g, TimeNs now, TimeNs& recheck) {
  const DeferScaleUp& d = pool.defer_scale_up;
  if (d.after_ns <= 0 || g.priority >= d.below_priority) return false;
  const TimeNs at = g.submit_ns + d.after_ns;
  if (at <= now) return false;
  recheck = recheck == 0 ? at : std::min(recheck, at);
  return true;
}

void scale_up(const ScaleInput& in, ScaleDecision& out) {
  const std::vector<NodePool>& pools = *in.pools;
  std::vector<int32_t> room(pools.size());  // nodes each pool may still add
  std::vector<std::vector<Bin>> spare(pools.size());
  for (size_t p = 0; p < pools.size(); ++p) {
    const auto& nodes = in.nodes[p];
    const int32_t live =
        count_in(nodes, NodeState::kProvisioning) + count_in(nodes, NodeState::kReady);
    room[p] = std::max(0, std::min(pools[p].max_nodes, static_cast<int32_t>(nodes.size())) - live -
                              count_in(nodes, NodeState::kLeaving));
    // Nodes coming, and ready ones that hold nothing (a gang still pending beside one needs more
    // than it, or cannot use it at all: either way another node of the same shape is not asked
    // for on its account).
    for (const PoolNode& n : nodes)
      if (n.state == NodeState::kProvisioning || (n.state == NodeState::kReady && n.pods == 0))
        spare[p].push_back(empty_bin(pools[p].node));
    if (live < pools[p].min_nodes) {
      const int32_t n = std::min(room[p], pools[p].min_nodes - live);
      if (n > 0) out.up.push_back({static_cast<int32_t>(p), n, 0});
      for (int32_t k = 0; k < n; ++k) spare[p].push_back(empty_bin(pools[p].node));
      room[p] -= n;
    }
  }
  std::vector<size_t> own(pools.size());  // spare bins present before the gangs' new nodes
  for (size_t p = 0; p < pools.size(); ++p) own[p] = spare[p].size();
  auto headroom = in.gpu_headroom;
  for (const PendingGang& g : in.pending) {
    // No pool may grow: the rest could only take room on nodes already coming; nothing to ask.
    if (std::all_of(room.begin(), room.end(), [](int32_t r) { return r == 0; })) break;
    bool done = false;
    for (size_t k = 0; k < g.flavors.size() && !done; ++k) {
      const FlavorId f = g.flavors[k];
      int64_t none = 0;
      int64_t* left = headroom_of(headroom, g, f, none);
      if (left && *left < g.gpu_milli) continue;  // its queue has no quota left here
      for (size_t p = 0; p < pools.size() && !done; ++p) {
        if (pools[p].flavor_id != f || deferred(pools[p], g, in.now, out.recheck_ns)) continue;
        std::vector<Bin> trial = spare[p];
        const int32_t n = pack(g, pools[p], trial, room[p]);
        if (n < 0) continue;
        if (left) *left -= g.gpu_milli;
        spare[p] = std::move(trial);
        room[p] -= n;
        if (n > 0) out.up.push_back({static_cast<int32_t>(p), n, g.job});
        done = true;
      }
    }
  }
  keep_spare(pools, spare, own, room, out);
}

void scale_down(const ScaleInput& in, ScaleDecision& out) {
  const std::vector<NodePool>& pools = *in.pools;
  for (size_t p = 0; p < pools.size(); ++p) {
    const auto& nodes = in.nodes[p];
    int32_t live = count_in(nodes, NodeState::kProvisioning) + count_in(nodes, NodeState::kReady);
    // Empty nodes beyond the pool's spare count may go (nodes coming count as empty).
    int32_t empty = count_in(nodes, NodeState::kProvisioning);
    for (const PoolNode& n : nodes) empty += n.state == NodeState::kReady && n.pods == 0 ? 1 : 0;
    int32_t removable = std::max(0, empty - pools[p].spare_nodes);
    std::vector<const PoolNode*> idle;
    for (const PoolNode& n : nodes)
      if (n.state == NodeState::kReady && n.pods == 0 &&
          in.now - n.idle_since_ns >= pools[p].scale_down_after_ns)
        idle.push_back(&n);
    std::stable_sort(idle.begin(), idle.end(), [](const PoolNode* a, const PoolNode* b) {
      return a->idle_since_ns != b->idle_since_ns ? a->idle_since_ns < b->idle_since_ns
                                                  : a->node < b->node;
    });
    for (const PoolNode* n : idle) {
      if (live <= pools[p].min_nodes || removable-- <= 0) break;
      out.down.push_back({static_cast<int32_t>(p), n->node});
      --live;
    }
  }
}

}  // namespace

ScaleDecision decide(const ScaleInput& in) {
  ScaleDecision out;
  if (!in.pools || in.pools->empty() || in.nodes.size() != in.pools->size()) return out;
  scale_up(in, out);
  scale_down(in, out);
  // A pool that grows in this decision gives nothing back in it.
  std::erase_if(out.down, [&](const ScaleDown& d) {
    return std::any_of(out.up.begin(), out.up.end(),
                       [&](const ScaleUp& u) { return u.pool == d.pool; });
  });
  consolidate(in, out);
  return out;
}

PendingGang gang_of(const Job& job, QueueId queue, const ClusterQueue& cq) {
  PendingGang g;
  g.job = job.id;
  g.queue = queue;
  for (const ResourceGroup& rg : cq.resource_groups)
    if (std::find(rg.covered.begin(), rg.covered.end(), kGpu) != rg.covered.end())
      for (const FlavorQuotas& fq : rg.flavors) g.flavors.push_back(fq.flavor);
  for (const PodSet& ps : job.pod_sets) {
    PodNeed p;
    p.count = ps.count;
    p.gpus = ps.gpus;
    p.gpu_milli = ps.gpu_milli;
    p.cpu_milli = ps.requests[kCpu];
    p.memory_mib = ps.requests[kMemory];
    p.affinity = ps.node && ps.node->constrains_nodes() ? ps.node.get() : nullptr;
    g.pods.push_back(p);
  }
  g.gpu_milli = job.total_requests()[kGpu];
  g.priority = job.priority;
  g.submit_ns = job.submit_ns;
  return g;
}

std::vector<NodeId> add_pool_nodes(const std::vector<NodePool>& pools, Cluster& cluster) {
  std::vector<NodeId> first;
  for (const NodePool& pool : pools) {
    first.push_back(static_cast<NodeId>(cluster.nodes.size()));
    for (int32_t k = 0; k < pool.max_nodes; ++k) {
      Node n = pool.node;
      n.name = pool.name_prefix + std::to_string(k);
      n.ready = false;
      n.domains.assign(cluster.levels.size(), 0);
      cluster.nodes.push_back(std::move(n));
    }
  }
  return first;
}

}  // namespace sluice::scale
