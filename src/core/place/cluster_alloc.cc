#include "core/place/cluster_alloc.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace sluice {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64-style combine: cheap and well spread (used only as a memo key).
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

}  // namespace

std::vector<std::string> gpu_models(const Cluster& cluster) {
  std::vector<std::string> models;
  for (const Node& node : cluster.nodes)
    for (const Gpu& g : node.gpus)
      if (std::find(models.begin(), models.end(), g.model) == models.end())
        models.push_back(g.model);
  return models;
}

ClusterAlloc::ClusterAlloc(const Cluster& cluster) : cluster_(&cluster) {
  auto layout = std::make_shared<Layout>();
  layout_ = layout;
  Layout& w = *layout;
  clock_ = std::make_shared<std::atomic<uint64_t>>(0);
  const auto n = cluster.nodes.size();
  const auto nn = static_cast<int32_t>(n);
  cpu_free_.resize(n);
  mem_free_.resize(n);
  w.gpu_off.assign(n + 1, 0);
  whole_free_.assign(n, 0);
  idx_whole_.assign(n, 0);
  idx_partial_.assign(n, -1);
  hash_.assign(n, 0);
  version_.assign(n, 0);
  w.single_model.assign(n, 1);
  w.whole_capacity.assign(n, 0);
  ready_ = NodeBits(nn);
  idle_ = NodeBits(nn);
  w.gpu_nodes = NodeBits(nn);
  mig_free_.assign(kMaxResources, NodeBits(nn));
  partial_.assign(kPartialBuckets, NodeBits(nn));

  flatten_gpus(cluster, w);
  index_domains(cluster, w);
  // Every node indexed, all of it free.
  for (size_t i = 0; i < n; ++i) {
    ready_.assign(static_cast<NodeId>(i), cluster.nodes[i].ready);
    whole_free_[i] = w.whole_capacity[i];
    index(static_cast<NodeId>(i));
  }
}

// The constructor's step 1: GPUs and MIG slices flattened, models interned.
void ClusterAlloc::flatten_gpus(const Cluster& cluster, Layout& w) {
  const auto n = cluster.nodes.size();
  const auto nn = static_cast<int32_t>(n);
  w.gpu_slice_off.push_back(0);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = cluster.nodes[i];
    cpu_free_[i] = node.cpu_milli;
    mem_free_[i] = node.memory_mib;
    w.gpu_off[i + 1] = w.gpu_off[i] + static_cast<int32_t>(node.gpus.size());
    w.max_gpus = std::max(w.max_gpus, static_cast<int32_t>(node.gpus.size()));
    if (!node.gpus.empty()) w.gpu_nodes.set(static_cast<NodeId>(i));
    for (const Gpu& g : node.gpus) {
      auto it = std::find(w.models.begin(), w.models.end(), g.model);
      if (it == w.models.end()) {
        w.models.push_back(g.model);
        w.model_nodes.emplace_back(nn);
        it = w.models.end() - 1;
      }
      const auto m = static_cast<size_t>(it - w.models.begin());
      w.model_nodes[m].set(static_cast<NodeId>(i));
      if (g.model != node.gpus.front().model) w.single_model[i] = 0;
      w.gpu_model.push_back(static_cast<uint8_t>(m));
      w.gpu_mig.push_back(g.mig.empty() ? 0 : 1);
      gpu_free_.push_back(g.mig.empty() ? static_cast<int32_t>(kMilliPerGpu) : 0);
      if (g.mig.empty()) w.gpu_milli_capacity += kMilliPerGpu;
      if (g.mig.empty()) ++w.whole_capacity[i];
      for (const MigSlice& s : g.mig) {
        slice_used_.push_back(0);
        w.slice_profile.push_back(s.profile);
        w.slice_gpu.push_back(static_cast<int32_t>(gpu_free_.size() - 1));
      }
      w.gpu_slice_off.push_back(static_cast<int32_t>(slice_used_.size()));
    }
  }
  whole_eq_.assign(static_cast<size_t>(w.max_gpus) + 1, NodeBits(nn));
  count_by_whole_.assign(static_cast<size_t>(w.max_gpus) + 1, 0);
  whole_eq_size_.assign(static_cast<size_t>(w.max_gpus) + 1, 0);
}

// The constructor's step 2: topology domains (ids may exceed domain_names; sized by the largest
// seen).
void ClusterAlloc::index_domains(const Cluster& cluster, Layout& w) {
  const auto n = cluster.nodes.size();
  w.domain_nodes.resize(cluster.levels.size());
  dom_whole_.resize(cluster.levels.size());
  dom_count_.resize(cluster.levels.size());
  for (size_t l = 0; l < cluster.levels.size(); ++l) {
    size_t count = l < cluster.domain_names.size() ? cluster.domain_names[l].size() : 0;
    for (const Node& node : cluster.nodes)
      if (l < node.domains.size() && node.domains[l] >= 0)
        count = std::max(count, static_cast<size_t>(node.domains[l]) + 1);
    w.domain_nodes[l].resize(count);
    dom_whole_[l].assign(count, 0);
    dom_count_[l].assign(count * (static_cast<size_t>(w.max_gpus) + 1), 0);
    for (size_t i = 0; i < n; ++i) {
      const Node& node = cluster.nodes[i];
      if (l < node.domains.size() && node.domains[l] >= 0)
        w.domain_nodes[l][static_cast<size_t>(node.domains[l])].push_back(static_cast<NodeId>(i));
    }
  }
}

int ClusterAlloc::model_index(const std::string& name) const {
  for (size_t m = 0; m < L().models.size(); ++m)
    if (L().models[m] == name) return static_cast<int>(m);
  return -1;
}

bool ClusterAlloc::is_idle(NodeId n) const {
  const size_t i = idx(n);
  const Node& node = cluster_->nodes[i];
  if (!ready_.test(n) || cpu_free_[i] != node.cpu_milli || mem_free_[i] != node.memory_mib ||
      whole_free_[i] != L().whole_capacity[i])
    return false;
  for (int32_t s = slice_begin(n); s < slice_end(n); ++s)
    if (slice_used_[static_cast<size_t>(s)]) return false;
  return true;
}

int32_t ClusterAlloc::partial_max(NodeId n) const {
  int32_t best = 0;
  for (int g = 0; g < gpu_count(n); ++g) {
    const int32_t f = gpu_free_[gpu(n, g)];
    if (f > 0 && f < kMilliPerGpu && f > best) best = f;
  }
  return best;
}

uint64_t ClusterAlloc::compute_hash(NodeId n) const {
  uint64_t h =
      mix(static_cast<uint64_t>(cpu_free_[idx(n)]), static_cast<uint64_t>(mem_free_[idx(n)]));
  // Two GPUs' free milli per step (packed without loss): half the chain of dependent mixes.
  const int count = gpu_count(n);
  int g = 0;
  for (; g + 1 < count; g += 2)
    h = mix(h, static_cast<uint32_t>(gpu_free_[gpu(n, g)]) |
                   uint64_t{static_cast<uint32_t>(gpu_free_[gpu(n, g + 1)])} << 32);
  if (g < count) h = mix(h, static_cast<uint32_t>(gpu_free_[gpu(n, g)]));
  const int32_t s0 = L().gpu_slice_off[static_cast<size_t>(L().gpu_off[idx(n)])];
  const int32_t s1 = L().gpu_slice_off[static_cast<size_t>(L().gpu_off[idx(n) + 1])];
  for (int32_t s = s0; s < s1; ++s) h = mix(h, slice_used_[static_cast<size_t>(s)]);
  return mix(h, ready_.test(n) ? 1 : 2);
}

void ClusterAlloc::unindex(NodeId n) {
  const size_t i = idx(n);
  const int c = idx_whole_[i];
  whole_eq_[static_cast<size_t>(c)].reset(n);
  --whole_eq_size_[static_cast<size_t>(c)];
  idle_.reset(n);
  if (idx_partial_[i] >= 0) {
    partial_[static_cast<size_t>(idx_partial_[i])].reset(n);
    --partial_size_[static_cast<size_t>(idx_partial_[i])];
  }
  const int32_t s0 = L().gpu_slice_off[static_cast<size_t>(L().gpu_off[i])];
  const int32_t s1 = L().gpu_slice_off[static_cast<size_t>(L().gpu_off[i + 1])];
  for (int32_t s = s0; s < s1; ++s) mig_free_[L().slice_profile[static_cast<size_t>(s)]].reset(n);
  if (ready_.test(n)) {
    --count_by_whole_[static_cast<size_t>(c)];
    total_whole_free_ -= c;
    const Node& node = cluster_->nodes[i];
    for (size_t l = 0; l < L().domain_nodes.size(); ++l) {
      if (l >= node.domains.size() || node.domains[l] < 0) continue;
      const auto d = static_cast<size_t>(node.domains[l]);
      dom_whole_[l][d] -= c;
      --dom_count_[l][d * (static_cast<size_t>(L().max_gpus) + 1) + static_cast<size_t>(c)];
    }
  }
}

void ClusterAlloc::index(NodeId n) {
  const size_t i = idx(n);
  const int c = whole_free_[i];
  idx_whole_[i] = static_cast<int16_t>(c);
  whole_eq_[static_cast<size_t>(c)].set(n);
  ++whole_eq_size_[static_cast<size_t>(c)];
  const int32_t pm = partial_max(n);
  idx_partial_[i] = pm > 0 ? static_cast<int16_t>(pm / 100) : int16_t{-1};
  if (pm > 0) {
    partial_[static_cast<size_t>(pm / 100)].set(n);
    ++partial_size_[static_cast<size_t>(pm / 100)];
  }
  const int32_t s0 = L().gpu_slice_off[static_cast<size_t>(L().gpu_off[i])];
  const int32_t s1 = L().gpu_slice_off[static_cast<size_t>(L().gpu_off[i + 1])];
  for (int32_t s = s0; s < s1; ++s)
    if (!slice_used_[static_cast<size_t>(s)])
      mig_free_[L().slice_profile[static_cast<size_t>(s)]].set(n);
  if (ready_.test(n)) {
    ++count_by_whole_[static_cast<size_t>(c)];
    total_whole_free_ += c;
    const Node& node = cluster_->nodes[i];
    for (size_t l = 0; l < L().domain_nodes.size(); ++l) {
      if (l >= node.domains.size() || node.domains[l] < 0) continue;
      const auto d = static_cast<size_t>(node.domains[l]);
      dom_whole_[l][d] += c;
      ++dom_count_[l][d * (static_cast<size_t>(L().max_gpus) + 1) + static_cast<size_t>(c)];
    }
  }
  if (is_idle(n)) idle_.set(n);
  hash_[i] = compute_hash(n);
  version_[i] = ++*clock_;
}

void ClusterAlloc::apply(const Job& job, const Placement& p, int sign) {
  for (const PodPlacement& pod : p.pods) {
    const NodeId n = pod.node;
    const PodSet& ps = job.pod_sets[static_cast<size_t>(pod.pod_set)];
    unindex(n);
    cpu_free_[idx(n)] -= sign * ps.requests[kCpu];
    mem_free_[idx(n)] -= sign * ps.requests[kMemory];
    for (const GpuShare& s : pod.gpus) {
      const size_t g = gpu(n, s.gpu);
      if (s.mig_slice >= 0) {
        const auto si = static_cast<size_t>(L().gpu_slice_off[g] + s.mig_slice);
        assert(slice_used_[si] == (sign > 0 ? 0 : 1));
        slice_used_[si] = sign > 0 ? 1 : 0;
        continue;
      }
      const bool was_whole = gpu_free_[g] == kMilliPerGpu;
      gpu_free_[g] -= sign * s.milli;
      gpu_milli_used_ += sign * s.milli;
      const bool is_whole = gpu_free_[g] == kMilliPerGpu;
      whole_free_[idx(n)] =
          static_cast<int16_t>(whole_free_[idx(n)] + (is_whole ? 1 : 0) - (was_whole ? 1 : 0));
    }
    index(n);
  }
}

void ClusterAlloc::commit(const Job& job, const Placement& p) {
  apply(job, p, +1);
}
void ClusterAlloc::release(const Job& job, const Placement& p) {
  apply(job, p, -1);
}

void ClusterAlloc::set_ready(NodeId n, bool ready) {
  if (ready_.test(n) == ready) return;
  unindex(n);
  ready_.assign(n, ready);
  index(n);
}

void ClusterAlloc::assign_from(const ClusterAlloc& src) {
  if (layout_ != src.layout_ || clock_ != src.clock_) {
    *this = src;
    return;
  }
  // Most nodes are as they were at the last copy (a cycle's copy: those its trials touched and
  // those the last apply changed): blocks of equal versions are skipped at memcmp's speed, where
  // a compare per node was 12% of a simulation's instructions.
  constexpr NodeId kBlock = 32;
  const NodeId nodes = node_count();
  for (NodeId b = 0; b < nodes; b += kBlock) {
    const NodeId e = std::min(nodes, b + kBlock);
    if (std::memcmp(&version_[idx(b)], &src.version_[idx(b)],
                    static_cast<size_t>(e - b) * sizeof(uint64_t)) == 0)
      continue;
    for (NodeId n = b; n < e; ++n) {
      const size_t i = idx(n);
      if (version_[i] == src.version_[i]) continue;
      // Changed on both sides to the same state (a cycle's admission, tried on the copy and
      // then applied to the source): the indexes already agree, only the version moves.
      if (same_state(src, n)) {
        version_[i] = src.version_[i];
        continue;
      }
      unindex(n);
      cpu_free_[i] = src.cpu_free_[i];
      mem_free_[i] = src.mem_free_[i];
      for (int32_t g = L().gpu_off[i]; g < L().gpu_off[i + 1]; ++g) {
        const auto k = static_cast<size_t>(g);
        gpu_milli_used_ += gpu_free_[k] - src.gpu_free_[k];  // (MIG GPUs: 0 on both sides)
        gpu_free_[k] = src.gpu_free_[k];
      }
      for (int32_t sl = slice_begin(n); sl < slice_end(n); ++sl)
        slice_used_[static_cast<size_t>(sl)] = src.slice_used_[static_cast<size_t>(sl)];
      whole_free_[i] = src.whole_free_[i];
      ready_.assign(n, src.ready_.test(n));
      index(n);
      version_[i] = src.version_[i];
    }
  }
}

bool ClusterAlloc::same_state(const ClusterAlloc& src, NodeId n) const {
  const size_t i = idx(n);
  if (cpu_free_[i] != src.cpu_free_[i] || mem_free_[i] != src.mem_free_[i] ||
      whole_free_[i] != src.whole_free_[i] || ready_.test(n) != src.ready_.test(n))
    return false;
  const auto g0 = static_cast<size_t>(L().gpu_off[i]), g1 = static_cast<size_t>(L().gpu_off[i + 1]);
  const auto s0 = static_cast<size_t>(slice_begin(n)), s1 = static_cast<size_t>(slice_end(n));
  return std::equal(gpu_free_.data() + g0, gpu_free_.data() + g1, src.gpu_free_.data() + g0) &&
         std::equal(slice_used_.data() + s0, slice_used_.data() + s1, src.slice_used_.data() + s0);
}

int64_t ClusterAlloc::total_gpu_milli_free() const {
  int64_t total = 0;
  ready_.for_each([&](NodeId n) {
    for (int32_t f : gpu_free_span(n)) total += f;
    return true;
  });
  return total;
}

int32_t ClusterAlloc::max_whole_gpus_free() const {
  for (int c = L().max_gpus; c > 0; --c)
    if (count_by_whole_[static_cast<size_t>(c)] > 0) return c;
  return 0;
}

int32_t ClusterAlloc::domain_max_whole_free(int level, int d) const {
  const auto stride = static_cast<size_t>(L().max_gpus) + 1;
  const auto& counts = dom_count_[static_cast<size_t>(level)];
  for (int c = L().max_gpus; c > 0; --c)
    if (counts[static_cast<size_t>(d) * stride + static_cast<size_t>(c)] > 0) return c;
  return 0;
}

bool ClusterAlloc::check_invariants(std::string* why) const {
  auto fail = [&](std::string msg) {
    if (why) *why = std::move(msg);
    return false;
  };
  int64_t total_whole = 0, used = 0;
  std::vector<int32_t> by_whole(count_by_whole_.size(), 0);
  for (NodeId n = 0; n < node_count(); ++n) {
    const Node& node = cluster_->nodes[idx(n)];
    const std::string at = "node " + node.name + ": ";
    if (cpu_free_[idx(n)] < 0 || cpu_free_[idx(n)] > node.cpu_milli)
      return fail(at + "free cpu " + std::to_string(cpu_free_[idx(n)]) + " outside [0, capacity]");
    if (mem_free_[idx(n)] < 0 || mem_free_[idx(n)] > node.memory_mib)
      return fail(at + "free memory " + std::to_string(mem_free_[idx(n)]) +
                  " outside [0, capacity]");
    int whole = 0;
    for (int g = 0; g < gpu_count(n); ++g) {
      const int32_t f = gpu_free_milli(n, g);
      if (gpu_is_mig(n, g)) {
        if (f != 0) return fail(at + "MIG GPU " + std::to_string(g) + " has free milli");
        continue;
      }
      if (f < 0 || f > kMilliPerGpu)
        return fail(at + "GPU " + std::to_string(g) + " free milli " + std::to_string(f));
      used += kMilliPerGpu - f;
      if (f == kMilliPerGpu) ++whole;
    }
    if (whole != whole_free_[idx(n)] || !whole_eq_[static_cast<size_t>(whole)].test(n))
      return fail(at + "whole-GPU index out of date");
    for (int c = 0; c <= L().max_gpus; ++c)
      if (c != whole && whole_eq_[static_cast<size_t>(c)].test(n))
        return fail(at + "indexed in two whole-GPU buckets");
    const int32_t pm = partial_max(n);
    for (int b = 0; b < kPartialBuckets; ++b)
      if (partial_[static_cast<size_t>(b)].test(n) != (pm > 0 && pm / 100 == b))
        return fail(at + "partial-GPU index out of date");
    if (hash_[idx(n)] != compute_hash(n)) return fail(at + "state hash out of date");
    if (idle_.test(n) != is_idle(n)) return fail(at + "idle index out of date");
    if (ready_.test(n)) {
      total_whole += whole;
      ++by_whole[static_cast<size_t>(whole)];
    }
  }
  if (total_whole != total_whole_free_) return fail("total free whole GPUs out of date");
  if (by_whole != count_by_whole_) return fail("count of nodes by free whole GPUs out of date");
  for (int c = 0; c <= L().max_gpus; ++c)
    if (whole_eq_[static_cast<size_t>(c)].count() != whole_eq_size_[static_cast<size_t>(c)])
      return fail("size of a whole-GPU bucket out of date");
  for (int b = 0; b < kPartialBuckets; ++b)
    if (partial_[static_cast<size_t>(b)].count() != partial_size_[static_cast<size_t>(b)])
      return fail("size of a partial-GPU bucket out of date");
  if (used != gpu_milli_used_) return fail("used GPU milli out of date");
  for (size_t l = 0; l < L().domain_nodes.size(); ++l)
    for (size_t d = 0; d < L().domain_nodes[l].size(); ++d) {
      int64_t sum = 0;
      for (NodeId n : L().domain_nodes[l][d])
        if (ready_.test(n)) sum += whole_free_[idx(n)];
      if (sum != dom_whole_[l][d]) return fail("domain summary out of date");
    }
  return true;
}

}  // namespace sluice
