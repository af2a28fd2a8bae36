#pragma once
// Internal to the placer: the gang search's scratch state and per-pod search (Placer::Impl),
// shared by placer.cc (the pipeline) and placer_topology.cc (domains, levels and slices).
#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/place/placer.h"

namespace sluice {

namespace placer_detail {

// A node's state inside one gang search, after the pods placed so far.
struct Tent {
  NodeId node = 0;
  int64_t cpu = 0, mem = 0;
  std::vector<int32_t> gpu_free;
  std::vector<uint8_t> slice_used;  // from slice_begin(node)
  int32_t whole_free = 0;
};

// Why candidates were rejected (for the failure message).
struct Reasons {
  int32_t checked = 0, cpu = 0, mem = 0, gpu = 0, locality = 0;
};

struct Cand {
  NodeId node = -1;
  int bin = 0;  // extension_bin(node): before the rank with spec.alignEnds: bins, else 0
  int rank = 0;
  double score = 0;
  int16_t shared_gpu = -1;
  int64_t misaligned = 0;        // misalignment(node)
  std::vector<GpuShare> shares;  // whole GPUs and MIG slices
};

// Total order of candidates: lower extension bin (only with end bins), then lower rank, then
// higher score, then better end alignment (with Placer::set_node_ends), then lower NodeId.
inline bool better(const Cand& a, const Cand& b) {
  if (b.node < 0) return true;
  if (a.bin != b.bin) return a.bin < b.bin;
  if (a.rank != b.rank) return a.rank < b.rank;
  if (a.score != b.score) return a.score > b.score;
  if (a.misaligned != b.misaligned) return a.misaligned < b.misaligned;
  return a.node < b.node;
}

enum class GroupKind : uint8_t {
  kWhole,           // whole_eq(c)
  kWholeNoPartial,  // whole_eq(c) minus nodes already visited through a partial bucket
  kPartial,         // partial_bucket(b)
  kPartialNoWhole,  // partial_bucket(b) among nodes without a whole free GPU
  kMig,             // a free slice of every requested profile
  kCpuNoGpu,        // nodes without GPUs
  kCpuGpuFull,      // GPU nodes with no free GPU milli
  kCpuGpuFree,      // GPU nodes with some free GPU milli
};

struct Group {
  GroupKind kind;
  int param;
  int rank;
};

inline constexpr int kPartialBuckets = ClusterAlloc::kPartialBuckets;

inline std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace placer_detail

using placer_detail::better;
using placer_detail::Cand;
using placer_detail::Group;
using placer_detail::GroupKind;
using placer_detail::kPartialBuckets;
using placer_detail::plural;
using placer_detail::Reasons;
using placer_detail::Tent;

struct Placer::Impl {
  const Placer* self = nullptr;
  // Static tables.
  std::vector<uint8_t> uniform;       // node: all GPUs in one NVLink domain
  std::vector<int32_t> gpu_capacity;  // node: non-MIG GPUs
  // GPU topology ids, flat: GPU g of node n at level l (0 NVLink, 1 NUMA, 2 PCIe switch) is
  // topo[gpu_base[n] + g][l].
  std::vector<int32_t> gpu_base;
  std::vector<std::array<int32_t, 3>> topo;
  std::vector<std::vector<NodeBits>> domain_bits;  // [level][domain]
  std::array<uint8_t, kMaxResources> mig_resource{};
  // Node-state grouping for exhaustive scorers whose score is a function of the node's content
  // (fgd, fgdpack, bestfit): nodes with the same static shape (capacities, GPU models, topology,
  // MIG layout) and the same free state fit and score alike, so only the lowest-id one of each
  // (static class, free state) is evaluated per pod. Ties break by NodeId, so the skipped nodes
  // could never have won: the placement is the one scoring every node gives.
  bool group_states = false;
  std::vector<int32_t> static_class;  // node -> class of equal static shape
  struct Seen {
    uint64_t key = 0;
    uint32_t epoch = 0;
    int32_t static_class = -1;
    // The first node's outcome (rank -1: it did not fit).
    int rank = -1;
    double score = 0;
  };
  std::vector<Seen> seen;  // open addressing, 2^k >= 2 x nodes slots; valid when epoch matches
  uint32_t epoch = 0;
  // Idle nodes (ClusterAlloc::idle_bits) of one static class all share one state, so after the
  // first of them a grouped search skips the rest a word at a time (where each would have been
  // looked up and found seen): class_bits holds each class's nodes (empty when there are more
  // than kMaxIdleClasses), idle_seen the classes' nodes whose idle state this call has met.
  static constexpr size_t kMaxIdleClasses = 256;
  std::vector<NodeBits> class_bits;
  NodeBits idle_seen;
  // Per call.
  const ClusterAlloc* alloc = nullptr;
  const Job* job = nullptr;
  // End alignment (Placer::set_node_ends): the nodes' expected ends, and this job's (0: off).
  const std::vector<TimeNs>* node_end = nullptr;
  TimeNs now = 0;
  TimeNs default_walltime = 0;  // Placer::set_default_walltime
  TimeNs job_end = 0;
  bool end_bins = false;  // Placer::set_node_ends(..., bins)
  // Runtime bins (spec.alignEnds: bins): how much longer node n stays busy if this job goes
  // there, as a power-of-two bin of kEndBinNs: 0 when its running work ends at or after the
  // job (the job adds no node time), 1 under one unit, k+1 for [2^(k-1), 2^k) units. An idle
  // node's extension is the job's whole run, so a busy node is never in a later bin.
  int extension_bin(NodeId n) const {
    if (!end_bins || job_end <= 0) return 0;
    const TimeNs busy_until = std::max((*node_end)[static_cast<size_t>(n)], now);
    if (busy_until >= job_end) return 0;
    return 1 + std::bit_width(static_cast<uint64_t>((job_end - busy_until) / kEndBinNs));
  }
  bool bins_on() const { return end_bins && job_end > 0; }
  // How badly node n's expected end matches this job's, lower first: running on past the job's
  // end costs the gap; ending before it costs more than any such gap (the job keeps the node
  // busy longer) and then the gap too. 0 when alignment is off.
  int64_t misalignment(NodeId n) const {
    if (job_end <= 0) return 0;
    const TimeNs e = (*node_end)[static_cast<size_t>(n)];
    return e >= job_end ? e - job_end : (job_end - e) + (int64_t{1} << 60);
  }
  bool require_nvlink = false;
  SearchOrder order = SearchOrder::kFewestFreeFirst;
  // Scratch (reused between calls; never part of the result's identity).
  NodeBits filter, pref, single, pfit, used_mask, touched_bits, spread;
  std::vector<uint64_t> scan;  // best_node: one group's candidate words (fill_scan)
  std::vector<Tent> touched;
  std::vector<PodShape> shapes;                   // per pod set
  std::vector<std::pair<int32_t, int32_t>> pods;  // (pod set, pod index), largest first
  std::vector<Group> groups;
  std::vector<int16_t> take, freelist;
  std::vector<int32_t> group_ids;    // pick_whole: a level's group ids among the free GPUs
  std::vector<size_t> group_counts;  // ... and their free GPUs
  std::vector<int32_t> used_domains;
  std::vector<PodPlacement> out;
  Cand cur, best;
  // The grouped search's state entry of the node being considered and of the best one (null:
  // not grouped, or a node this gang touched).
  Seen* cur_state = nullptr;
  Seen* best_state = nullptr;
  Reasons reasons;
  int32_t fail_pod_set = -1;
  int32_t max_pods_placed = 0;

  const Cluster& cluster() const { return *self->cluster_; }

  const Tent* tent(NodeId n) const {
    if (!touched_bits.test(n)) return nullptr;
    for (const Tent& t : touched)
      if (t.node == n) return &t;
    return nullptr;
  }

  NodeView view(NodeId n) const {
    const Node& node = cluster().nodes[static_cast<size_t>(n)];
    NodeView v;
    v.id = n;
    v.cpu_capacity = node.cpu_milli;
    v.memory_capacity = node.memory_mib;
    v.gpu_model = alloc->gpu_model_span(n);
    v.gpu_capacity = gpu_capacity[static_cast<size_t>(n)];
    if (const Tent* t = tent(n)) {
      v.cpu_free = t->cpu;
      v.memory_free = t->mem;
      v.gpu_free = t->gpu_free;
      v.whole_free = t->whole_free;
      v.state_hash = 0;
    } else {
      v.cpu_free = alloc->cpu_free_milli(n);
      v.memory_free = alloc->memory_free_mib(n);
      v.gpu_free = alloc->gpu_free_span(n);
      v.whole_free = alloc->whole_gpus_free(n);
      v.state_hash = alloc->state_hash(n);
    }
    return v;
  }

  bool slice_used(NodeId n, int32_t s) const {
    if (const Tent* t = tent(n))
      return t->slice_used[static_cast<size_t>(s - alloc->slice_begin(n))] != 0;
    return alloc->slice_used(s);
  }

  // GPU topology id of GPU g at locality level 0 (NVLink), 1 (NUMA), 2 (PCIe switch).
  int32_t topo_id(NodeId n, int g, int level) const {
    return topo[static_cast<size_t>(gpu_base[static_cast<size_t>(n)] + g)]
               [static_cast<size_t>(level)];
  }

  // Whole GPUs for a pod: 0 ok, 1 too few free GPUs, 2 free but not in one NVLink domain.
  int pick_whole(NodeId n, const NodeView& v, const PodShape& pod, std::vector<GpuShare>& shares) {
    freelist.clear();
    for (size_t g = 0; g < v.gpu_free.size(); ++g)
      if (v.gpu_free[g] == kMilliPerGpu && pod.model_ok(v.gpu_model[g]))
        freelist.push_back(static_cast<int16_t>(g));
    const auto k = static_cast<size_t>(pod.gpus);
    if (freelist.size() < k) return 1;
    auto take_first = [&](int level, int32_t id) {
      size_t got = 0;
      for (int16_t g : freelist) {
        if (got == k) break;
        if (level >= 0 && topo_id(n, g, level) != id) continue;
        shares.push_back({g, -1, kMilliPerGpu});
        ++got;
      }
    };
    if (uniform[static_cast<size_t>(n)]) {
      take_first(-1, 0);
      return 0;
    }
    // 1. The smallest group (NVLink domain, else NUMA node, else PCIe switch) that holds all k:
    //    big groups stay whole for big pods. Ties: lowest id.
    for (int level = 0; level < 3; ++level) {
      // The free GPUs per group id of this level, counted in one pass.
      group_ids.clear();
      group_counts.clear();
      for (int16_t g : freelist) {
        const int32_t id = topo_id(n, g, level);
        const auto at = std::find(group_ids.begin(), group_ids.end(), id) - group_ids.begin();
        if (static_cast<size_t>(at) == group_ids.size()) {
          group_ids.push_back(id);
          group_counts.push_back(0);
        }
        ++group_counts[static_cast<size_t>(at)];
      }
      int32_t best_id = 0;
      size_t best_count = std::numeric_limits<size_t>::max();
      for (size_t j = 0; j < group_ids.size(); ++j) {
        const int32_t id = group_ids[j];
        const size_t count = group_counts[j];
        if (count >= k && (count < best_count || (count == best_count && id < best_id))) {
          best_count = count;
          best_id = id;
        }
      }
      if (best_count != std::numeric_limits<size_t>::max()) {
        take_first(level, best_id);
        return 0;
      }
      if (level == 0 && require_nvlink) return 2;
    }
    // 2. Otherwise the lowest-indexed free GPUs.
    take_first(-1, 0);
    return 0;
  }

  bool pick_mig(NodeId n, const PodShape& pod, const NodeView& v, std::vector<GpuShare>& shares) {
    for (int i = 0; i < pod.mig_count; ++i) {
      const auto [profile, count] = pod.mig[static_cast<size_t>(i)];
      int32_t got = 0;
      for (int32_t s = alloc->slice_begin(n); s < alloc->slice_end(n) && got < count; ++s) {
        if (alloc->slice_profile(s) != profile || slice_used(n, s)) continue;
        const int16_t g = alloc->slice_gpu(n, s);
        if (!pod.model_ok(v.gpu_model[static_cast<size_t>(g)])) continue;
        shares.push_back({g, alloc->slice_index(s), kMilliPerGpu});
        ++got;
      }
      if (got < count) return false;
    }
    return true;
  }

  // Exact feasibility of `pod` on node n; fills c.shares.
  bool fit(NodeId n, const PodShape& pod, const NodeView& v, Cand& c) {
    ++reasons.checked;
    if (v.cpu_free < pod.cpu_milli) return ++reasons.cpu, false;
    if (v.memory_free < pod.memory_mib) return ++reasons.mem, false;
    c.shares.clear();
    if (pod.gpus > 0) {
      if (pod.shared()) {
        if (tightest_shared_gpu(v, pod) < 0) return ++reasons.gpu, false;
      } else {
        const int rc = pick_whole(n, v, pod, c.shares);
        if (rc == 1) return ++reasons.gpu, false;
        if (rc == 2) return ++reasons.locality, false;
      }
    }
    if (pod.mig_count > 0 && !pick_mig(n, pod, v, c.shares)) return ++reasons.gpu, false;
    return true;
  }

  static int32_t partial_max(const NodeView& v) {
    int32_t pm = 0;
    for (int32_t f : v.gpu_free)
      if (f > 0 && f < kMilliPerGpu && f > pm) pm = f;
    return pm;
  }

  // The bucket rank of a node (the same ranks build_groups gives its buckets).
  int rank_of(const NodeView& v, const PodShape& pod) const {
    const int maxg = alloc->max_gpus_per_node();
    const bool most = order == SearchOrder::kMostFreeFirst;
    if (order == SearchOrder::kExhaustive) return 0;
    if (!pod.gpu_pod()) return v.gpu_free.empty() ? 0 : (v.gpu_free_total() == 0 ? 1 : 2);
    if (pod.mig_count > 0) return 0;
    if (!pod.shared()) return most ? maxg - v.whole_free : v.whole_free;
    const int32_t pm = partial_max(v);
    const int pb = pm / 100, mb = pod.gpu_milli / 100;
    if (!most) return (pm > 0 && pb >= mb) ? pb : kPartialBuckets + v.whole_free;
    return v.whole_free >= 1 ? maxg - v.whole_free : maxg + (kPartialBuckets - 1 - pb);
  }

  void build_groups(const PodShape& pod) {
    groups.clear();
    const int maxg = alloc->max_gpus_per_node();
    const bool most = order == SearchOrder::kMostFreeFirst;
    if (!pod.gpu_pod()) {
      groups.push_back({GroupKind::kCpuNoGpu, 0, 0});
      groups.push_back({GroupKind::kCpuGpuFull, 0, 1});
      groups.push_back({GroupKind::kCpuGpuFree, 0, 2});
    } else if (pod.mig_count > 0) {
      groups.push_back({GroupKind::kMig, 0, 0});
    } else if (!pod.shared()) {
      for (int c = pod.gpus; c <= maxg; ++c)
        groups.push_back({GroupKind::kWhole, c, most ? maxg - c : c});
      if (most) std::reverse(groups.begin(), groups.end());
    } else if (!most) {
      pfit.clear();
      for (int b = pod.gpu_milli / 100; b < kPartialBuckets; ++b) {
        groups.push_back({GroupKind::kPartial, b, b});
        pfit |= alloc->partial_bucket(b);
      }
      for (int c = 1; c <= maxg; ++c)
        groups.push_back({GroupKind::kWholeNoPartial, c, kPartialBuckets + c});
    } else {
      for (int c = maxg; c >= 1; --c) groups.push_back({GroupKind::kWhole, c, maxg - c});
      for (int b = kPartialBuckets - 1; b >= pod.gpu_milli / 100; --b)
        groups.push_back({GroupKind::kPartialNoWhole, b, maxg + (kPartialBuckets - 1 - b)});
    }
  }

  // Inlined: the inner loop of best_node(), per 64 nodes of every bucket.
  [[gnu::always_inline]] uint64_t group_word(const Group& g, const PodShape& pod, int32_t i) const {
    switch (g.kind) {
      case GroupKind::kWhole:
        return alloc->whole_eq(g.param).word(i);
      case GroupKind::kWholeNoPartial:
        return alloc->whole_eq(g.param).word(i) & ~pfit.word(i);
      case GroupKind::kPartial:
        return alloc->partial_bucket(g.param).word(i);
      case GroupKind::kPartialNoWhole:
        return alloc->partial_bucket(g.param).word(i) & alloc->whole_eq(0).word(i);
      case GroupKind::kMig: {
        uint64_t w = ~uint64_t{0};
        for (int m = 0; m < pod.mig_count; ++m)
          w &= alloc->mig_free(pod.mig[static_cast<size_t>(m)].first).word(i);
        return w;
      }
      case GroupKind::kCpuNoGpu:
        return ~alloc->gpu_nodes().word(i);
      case GroupKind::kCpuGpuFull:
      case GroupKind::kCpuGpuFree: {
        uint64_t any_partial = 0;
        for (int b = 0; b < kPartialBuckets; ++b) any_partial |= alloc->partial_bucket(b).word(i);
        const uint64_t full =
            alloc->gpu_nodes().word(i) & alloc->whole_eq(0).word(i) & ~any_partial;
        return g.kind == GroupKind::kCpuGpuFull ? full : alloc->gpu_nodes().word(i) & ~full;
      }
    }
    return 0;
  }

  void next_epoch() {
    if (++epoch == 0) {
      for (Seen& e : seen) e = Seen{};
      epoch = 1;
    }
  }

  // The entry of node n's static class and free state (ClusterAlloc's 64-bit state hash, which
  // the FGD memo trusts as well) this epoch; `fresh` says whether n is the first node of it.
  // A later node of the same entry fits and scores exactly like the first one, which has a
  // lower id.
  Seen& state_of(NodeId n, bool& fresh) {
    const int32_t sc = static_class[static_cast<size_t>(n)];
    uint64_t key = alloc->state_hash(n) ^ ((static_cast<uint64_t>(sc) + 1) * 0x9e3779b97f4a7c15ULL);
    key ^= key >> 31;
    const size_t mask = seen.size() - 1;
    for (size_t i = key & mask;; i = (i + 1) & mask) {
      Seen& e = seen[i];
      if (e.epoch != epoch) {
        e = Seen{};
        e.key = key;
        e.epoch = epoch;
        e.static_class = sc;
        fresh = true;
        return e;
      }
      if (e.key == key && e.static_class == sc) {
        fresh = false;
        return e;
      }
    }
  }

  // Node n shares state entry e with an earlier node, so it fits and scores alike; only end
  // alignment can make it better. When the best node has that state too, n takes its place
  // if it aligns better (same GPUs: same state); when another state ties e on rank and score,
  // n is evaluated in full; otherwise it cannot win.
  void consider_same_state(NodeId n, const PodShape& pod, Seen& e) {
    if (job_end <= 0 || e.rank < 0 || best.node < 0) return;
    if (best_state == &e) {
      Cand c;
      c.node = n;
      c.bin = extension_bin(n);
      c.rank = best.rank;
      c.score = best.score;
      c.misaligned = misalignment(n);
      if (better(c, best)) {
        best.node = n;
        best.bin = c.bin;
        best.misaligned = c.misaligned;
      }
    } else if (e.rank == best.rank && e.score == best.score) {
      cur_state = &e;
      consider(n, pod);
      cur_state = nullptr;
    }
  }

  void consider(NodeId n, const PodShape& pod) {
    const NodeView v = view(n);
    if (!fit(n, pod, v, cur)) return;
    take.clear();
    for (const GpuShare& s : cur.shares)
      if (s.mig_slice < 0) take.push_back(s.gpu);
    const Scored sc = self->scorer_->evaluate(v, pod, take);
    cur.node = n;
    cur.bin = extension_bin(n);
    cur.rank = rank_of(v, pod);
    cur.score = sc.score;
    cur.misaligned = misalignment(n);
    cur.shared_gpu = -1;
    if (pod.shared()) {
      cur.shared_gpu = sc.shared_gpu;
      const auto g = static_cast<size_t>(cur.shared_gpu);
      if (cur.shared_gpu < 0 || g >= v.gpu_free.size() || v.gpu_free[g] < pod.gpu_milli ||
          !pod.model_ok(v.gpu_model[g]))
        cur.shared_gpu = tightest_shared_gpu(v, pod);  // a scorer's bad pick never over-allocates
    }
    if (better(cur, best)) {
      best.node = cur.node;
      best.bin = cur.bin;
      best.rank = cur.rank;
      best.score = cur.score;
      best.misaligned = cur.misaligned;
      best_state = cur_state;
      best.shared_gpu = cur.shared_gpu;
      best.shares = cur.shares;
    }
  }

  // This group's candidates of `mask`, one word per 64 nodes, into `scan`: the switch on the
  // group's kind is taken once per group, not once per word. False when the group's own index
  // is empty (scan is left as it was).
  bool fill_scan(const Group& g, const PodShape& pod, const NodeBits& mask) {
    if (((g.kind == GroupKind::kWhole || g.kind == GroupKind::kWholeNoPartial) &&
         alloc->whole_eq_size(g.param) == 0) ||
        (g.kind == GroupKind::kPartial && alloc->partial_bucket_size(g.param) == 0))
      return false;
    const auto words = static_cast<size_t>(mask.word_count());
    scan.resize(words);
    const uint64_t* m = mask.data();
    const uint64_t* t = touched_bits.data();
    const uint64_t* a = nullptr;
    if (g.kind == GroupKind::kWhole || g.kind == GroupKind::kWholeNoPartial)
      a = alloc->whole_eq(g.param).data();
    else if (g.kind == GroupKind::kPartial)
      a = alloc->partial_bucket(g.param).data();
    if (g.kind == GroupKind::kWholeNoPartial) {
      const uint64_t* p = pfit.data();
      for (size_t i = 0; i < words; ++i) scan[i] = m[i] & ~t[i] & a[i] & ~p[i];
    } else if (a != nullptr) {
      for (size_t i = 0; i < words; ++i) scan[i] = m[i] & ~t[i] & a[i];
    } else {
      for (size_t i = 0; i < words; ++i)
        scan[i] = (m[i] & ~t[i]) ? m[i] & ~t[i] & group_word(g, pod, static_cast<int32_t>(i)) : 0;
    }
    return true;
  }

  // Evaluates node n of the current search; whether it fits (cur.node == n). In a grouped
  // search a node whose state was seen this call is only compared on end alignment.
  bool visit(NodeId n, const PodShape& pod, bool grouped) {
    Seen* entry = nullptr;
    if (grouped) {
      bool fresh = false;
      entry = &state_of(n, fresh);
      if (!fresh) {
        consider_same_state(n, pod, *entry);
        return false;
      }
    }
    cur.node = -1;
    cur_state = entry;
    consider(n, pod);
    cur_state = nullptr;
    if (entry && cur.node == n) {
      entry->rank = cur.rank;
      entry->score = cur.score;
    }
    return cur.node == n;
  }

  // The best node for `pod` among `mask`; false when none fits.
  bool best_node(const PodShape& pod, const NodeBits& mask) {
    best.node = -1;
    best_state = nullptr;
    // End bins come before the rank, so no bucket order can stop the search early.
    const bool monotone = order != SearchOrder::kExhaustive && !bins_on();
    const int32_t cap = monotone ? std::max(1, self->options_.candidates_per_bucket)
                                 : self->options_.max_candidates;
    // 1. Nodes this gang already touched (their indexed state is stale).
    for (const Tent& t : touched)
      if (mask.test(t.node)) consider(t.node, pod);
    // 2. Buckets in order (one node per equal state when every feasible node is scored).
    build_groups(pod);
    const bool grouped = group_states && !monotone && cap <= 0 && !bins_on();
    if (grouped) next_epoch();
    // Only the first idle node of a class counts: the later ones could win only on end
    // alignment (consider_same_state), which is off without a job end.
    const bool skip_idle = grouped && job_end <= 0 && !class_bits.empty();
    if (skip_idle) idle_seen.clear();
    int32_t total = 0;
    for (const Group& g : groups) {
      if (monotone && best.node >= 0 && best.rank < g.rank) break;
      if (!fill_scan(g, pod, mask)) {  // an empty group: as if scanned and found nothing
        if (monotone && best.node >= 0) break;
        continue;
      }
      int32_t feasible = 0;
      bool stop = false;
      for (int32_t i = 0; i < mask.word_count() && !stop; ++i) {
        uint64_t w = scan[static_cast<size_t>(i)];
        if (!w) continue;
        uint64_t idle = 0;  // idle_seen has no words unless the skip is on
        if (skip_idle) {
          idle = alloc->idle_bits().word(i);
          w &= ~(idle & idle_seen.word(i));
        }
        while (w && !stop) {
          const NodeId n = i * 64 + std::countr_zero(w);
          w &= w - 1;
          if (idle >> (n % 64) & 1) {
            const NodeBits& same =
                class_bits[static_cast<size_t>(static_class[static_cast<size_t>(n)])];
            idle_seen |= same;
            w &= ~(idle & same.word(i));
          }
          if (!visit(n, pod, grouped)) continue;
          ++feasible;
          ++total;
          if (monotone ? feasible >= cap : (cap > 0 && total >= cap)) stop = true;
        }
      }
      if (stop || (monotone && best.node >= 0)) break;
    }
    return best.node >= 0;
  }

  Tent& touch(NodeId n) {
    for (Tent& t : touched)
      if (t.node == n) return t;
    Tent t;
    t.node = n;
    t.cpu = alloc->cpu_free_milli(n);
    t.mem = alloc->memory_free_mib(n);
    const auto gf = alloc->gpu_free_span(n);
    t.gpu_free.assign(gf.begin(), gf.end());
    for (int32_t s = alloc->slice_begin(n); s < alloc->slice_end(n); ++s)
      t.slice_used.push_back(alloc->slice_used(s) ? 1 : 0);
    t.whole_free = alloc->whole_gpus_free(n);
    touched_bits.set(n);
    touched.push_back(std::move(t));
    return touched.back();
  }

  void apply(const PodShape& pod, const Cand& c, std::vector<GpuShare>& shares_out) {
    Tent& t = touch(c.node);
    t.cpu -= pod.cpu_milli;
    t.mem -= pod.memory_mib;
    shares_out = c.shares;
    if (pod.shared()) shares_out.push_back({c.shared_gpu, -1, pod.gpu_milli});
    for (const GpuShare& s : shares_out) {
      if (s.mig_slice >= 0) {
        const int32_t base = alloc->slice_begin(c.node);
        for (int32_t sl = base; sl < alloc->slice_end(c.node); ++sl)
          if (alloc->slice_gpu(c.node, sl) == s.gpu && alloc->slice_index(sl) == s.mig_slice)
            t.slice_used[static_cast<size_t>(sl - base)] = 1;
        continue;
      }
      auto& f = t.gpu_free[static_cast<size_t>(s.gpu)];
      if (f == kMilliPerGpu) --t.whole_free;
      f -= s.milli;
    }
  }

  void clear_touched() {
    for (const Tent& t : touched) touched_bits.reset(t.node);
    touched.clear();
  }

  // Pod `index` of pod set `ps` onto `best`: the tentative state and the output.
  void take_best(const PodShape& pod, int32_t ps, int32_t index) {
    PodPlacement pp;
    pp.node = best.node;
    pp.pod_set = ps;
    pp.pod_index = index;
    apply(pod, best, pp.gpus);
    out.push_back(std::move(pp));
  }

  // A pod set with PodSet::max_per_node: `mask` less the nodes that already hold that many of
  // its pods in this gang (the result is `mask` itself for a set without the limit, so other
  // jobs search exactly as before). May return `spread`, which it overwrites.
  const NodeBits& room_for(int32_t ps, const NodeBits& mask) {
    const int32_t limit = job->pod_sets[static_cast<size_t>(ps)].max_per_node;
    if (limit <= 0) return mask;
    spread = mask;
    for (const PodPlacement& p : out) {
      if (p.pod_set != ps || !spread.test(p.node)) continue;
      int32_t on_node = 0;
      for (const PodPlacement& q : out) on_node += q.pod_set == ps && q.node == p.node;
      if (on_node >= limit) spread.reset(p.node);
    }
    return spread;
  }

  // Places every pod inside `mask`. pref_level >= 0: prefer domains (or nodes) already used.
  bool place_all(const NodeBits& mask, int pref_level) {
    clear_touched();
    out.clear();
    used_domains.clear();
    if (pref_level >= 0) used_mask.clear();
    const int levels = static_cast<int>(cluster().levels.size());
    for (const auto& [ps, index] : pods) {
      const PodShape& pod = shapes[static_cast<size_t>(ps)];
      reasons = Reasons{};
      bool found = false;
      const NodeBits& room = room_for(ps, mask);
      if (pref_level >= 0 && !touched.empty()) {
        const NodeBits& used = pref_level == levels ? touched_bits : used_mask;
        pref = room;
        pref &= used;
        found = best_node(pod, pref);
      }
      if (!found) found = best_node(pod, room);
      if (!found) {
        fail_pod_set = ps;
        max_pods_placed = std::max(max_pods_placed, static_cast<int32_t>(out.size()));
        clear_touched();
        return false;
      }
      take_best(pod, ps, index);
      if (pref_level >= 0 && pref_level < levels) {
        const auto& doms = cluster().nodes[static_cast<size_t>(best.node)].domains;
        const int32_t d = static_cast<size_t>(pref_level) < doms.size()
                              ? doms[static_cast<size_t>(pref_level)]
                              : -1;
        if (d >= 0 &&
            std::find(used_domains.begin(), used_domains.end(), d) == used_domains.end()) {
          used_domains.push_back(d);
          used_mask |= domain_bits[static_cast<size_t>(pref_level)][static_cast<size_t>(d)];
        }
      }
    }
    max_pods_placed = std::max(max_pods_placed, static_cast<int32_t>(out.size()));
    clear_touched();
    return true;
  }

  // ---- placer_topology.cc: domains, coarser levels and slices ----
  std::vector<std::pair<int32_t, int32_t>> slice_pods;  // (pod set, index): the order slices cut
  std::vector<NodeBits> slice_masks;                    // per slice layer
  std::vector<int32_t> cand_domains;
  mutable std::vector<std::pair<int64_t, int32_t>> dom_keys;  // candidate_domains' sort
  // Domains of `level` (nodes at the node level) whose free whole GPUs could hold `need` with
  // `max_whole` on one node, fewest free first (most under spread), ties by id; *most_free: the
  // largest free count of one domain.
  void candidate_domains(int level, const NodeBits& mask, int64_t need, int32_t max_whole,
                         std::vector<int32_t>* out, int64_t* most_free) const;
  // Nodes of domain d of `level` (a node id at the node level), within `mask`, into *out.
  void domain_mask(int level, int32_t d, const NodeBits& mask, NodeBits* out) const;
  // The whole gang inside `mask`: every pod, or slice by slice when the job has slices.
  bool place_gang(const NodeBits& mask);
  // The gang inside one domain of `level`; counts the domains tried.
  bool place_in_one_domain(int level, int64_t need, int32_t max_whole, int32_t* tried,
                           int64_t* most_free);
  // slice_pods[begin, end) as slices of layer `layer` inside `mask`, after the pods already
  // placed; false leaves the tentative state as it was.
  bool place_slices(const NodeBits& mask, size_t layer, size_t begin, size_t end);
  bool place_pods(const NodeBits& mask, size_t begin, size_t end);
  // Whole GPUs and the largest whole-GPU pod among slice_pods[begin, end).
  std::pair<int64_t, int32_t> whole_gpus(size_t begin, size_t end) const;

  // Placer::place's steps (placer.cc), in order. `Outcome` is what place() returns.
  using Outcome = std::variant<Placement, PlaceFailure>;
  struct Needs {  // of the job's pods, over every pod set
    bool gpu_job = false;
    int64_t whole_needed = 0;  // whole GPUs in all
    int32_t max_whole = 0;     // the most whole GPUs of one pod
  };
  // Per-job setup: the job, the allocation, its expected end (end alignment), the search order.
  void begin(const Job& job, const ClusterAlloc& alloc);
  // 1. One PodShape per pod set into `shapes`.
  Needs shape_pods(const Job& job, uint64_t mask);
  // 2-3. The candidate mask into `filter` (node set, readiness, GPU model), then the O(1)
  // rejections from the cluster-wide summaries; the failure when nothing can fit.
  std::optional<PlaceFailure> filter_nodes(const Job& job, const NodeSet& nodes, uint64_t mask,
                                           const Needs& needs, const std::string& models,
                                           const std::string& where);
  // 4. `pods`, largest first (GPU milli, MIG slices, CPU, memory; then pod set, index).
  void order_pods(const Job& job);
  // 5. In one domain of the job's topology level (required), or preferred: of that level, else
  // of each coarser level in turn (Kueue's order); nullopt: go on to step 6.
  std::optional<Outcome> place_in_topology(const Job& job, const Needs& needs);
  // 6. Unrestricted (or preferred: spill, domains already used first; slices stay whole);
  // nullopt: no place, and step 7 says why.
  std::optional<Outcome> place_anywhere(const Job& job, const std::string& where);
  // 7. Why not, in words.
  PlaceFailure why_not(const Job& job, const std::string& models, const std::string& where) const;
  // The placed pods (out), by pod set and index.
  Placement take_placement();
  // The job's topology level where the cluster has it (the cluster's level count: the node
  // level), else -1.
  int32_t topology_level(const Job& job) const;
  // A level's name: "node" below the cluster's levels.
  std::string level_name(int32_t level) const;
};

}  // namespace sluice
