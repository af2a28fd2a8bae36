#pragma once
// Free capacity of every node, GPU and MIG slice, plus the indexes that make placement search
// fast. Invariant (checked by check_invariants): 0 <= free <= capacity for CPU, memory and every
// GPU's milli; a MIG slice is used by at most one pod; every index agrees with the per-node state.
//
// Indexes (all updated incrementally by commit / release / set_ready, O(GPUs of the node)):
//   whole_eq(c)        nodes with exactly c fully free (non-MIG) GPUs, c = 0..max GPUs per node
//   partial_bucket(b)  nodes whose largest partly used GPU has b*100..b*100+99 milli free
//   mig_free(r)        nodes with at least one free MIG slice of profile r
//   ready_bits         nodes that may receive new pods
//   idle_bits          ready nodes with nothing taken: all CPU, memory, GPUs and slices free
//   model_nodes(m)     nodes with at least one GPU of model m (static)
//   per topology domain: sum of free whole GPUs and how many nodes have c free whole GPUs, so a
//   domain that cannot hold a gang is rejected in O(1); counted over ready nodes only.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/model/cluster.h"
#include "core/model/job.h"
#include "core/place/node_bits.h"
#include "core/place/placement.h"

namespace sluice {

// GPU models of a cluster in first-appearance order: the model indexes that ClusterAlloc,
// PodShape::model_mask and the scorers share (at most 64 models are distinguished).
std::vector<std::string> gpu_models(const Cluster& cluster);

class ClusterAlloc {
 public:
  static constexpr int kPartialBuckets = 10;  // 100 milli each

  // Everything free; nodes with ready=false are unusable until set_ready(n, true).
  explicit ClusterAlloc(const Cluster& cluster);

  // Take the pods' requests (CPU, memory from the pod set; GPU milli and MIG slices from the
  // placement's shares). The caller passes placements the Placer produced for this state.
  void commit(const Job& job, const Placement& p);
  // Give them back: the exact inverse of commit (integers, so it never drifts).
  void release(const Job& job, const Placement& p);
  void set_ready(NodeId n, bool ready);
  // The same as `*this = src` for a copy of the same allocation (else it is that assignment),
  // copying only the nodes whose state differs: those changed on either side since the copy.
  // A scheduling cycle refreshes its working copy this way; most nodes do not change between
  // two cycles.
  void assign_from(const ClusterAlloc& src);
  // allocated <= capacity on every GPU and node, nothing negative, indexes consistent.
  bool check_invariants(std::string* why) const;

  const Cluster& cluster() const { return *cluster_; }
  int32_t node_count() const { return static_cast<int32_t>(cpu_free_.size()); }
  bool ready(NodeId n) const { return ready_.test(n); }
  int64_t cpu_free_milli(NodeId n) const { return cpu_free_[idx(n)]; }
  int64_t memory_free_mib(NodeId n) const { return mem_free_[idx(n)]; }
  int32_t gpu_count(NodeId n) const { return L().gpu_off[idx(n) + 1] - L().gpu_off[idx(n)]; }
  // Free milli of GPU `g` of node `n`; 0 for a MIG-partitioned GPU (only its slices count).
  int32_t gpu_free_milli(NodeId n, int g) const { return gpu_free_[gpu(n, g)]; }
  bool gpu_is_mig(NodeId n, int g) const { return L().gpu_mig[gpu(n, g)] != 0; }
  bool mig_slice_used(NodeId n, int g, int slice) const {
    return slice_used_[static_cast<size_t>(L().gpu_slice_off[gpu(n, g)] + slice)] != 0;
  }
  int32_t whole_gpus_free(NodeId n) const { return whole_free_[idx(n)]; }
  std::span<const int32_t> gpu_free_span(NodeId n) const {
    return {gpu_free_.data() + L().gpu_off[idx(n)], static_cast<size_t>(gpu_count(n))};
  }
  std::span<const uint8_t> gpu_model_span(NodeId n) const {
    return {L().gpu_model.data() + L().gpu_off[idx(n)], static_cast<size_t>(gpu_count(n))};
  }
  // MIG slices of a node, flattened: [slice_begin(n), slice_end(n)).
  int32_t slice_begin(NodeId n) const {
    return L().gpu_slice_off[static_cast<size_t>(L().gpu_off[idx(n)])];
  }
  int32_t slice_end(NodeId n) const {
    return L().gpu_slice_off[static_cast<size_t>(L().gpu_off[idx(n) + 1])];
  }
  ResourceId slice_profile(int32_t s) const { return L().slice_profile[static_cast<size_t>(s)]; }
  bool slice_used(int32_t s) const { return slice_used_[static_cast<size_t>(s)] != 0; }
  // (GPU index within its node, slice index within Gpu::mig) of flat slice `s` of node `n`.
  int16_t slice_gpu(NodeId n, int32_t s) const {
    return static_cast<int16_t>(L().slice_gpu[static_cast<size_t>(s)] - L().gpu_off[idx(n)]);
  }
  int16_t slice_index(int32_t s) const {
    return static_cast<int16_t>(
        s - L().gpu_slice_off[static_cast<size_t>(L().slice_gpu[static_cast<size_t>(s)])]);
  }
  // A hash of the node's free state; scorers memoise on it (equal state -> equal hash).
  uint64_t state_hash(NodeId n) const { return hash_[idx(n)]; }

  // Totals over ready nodes.
  int64_t total_gpu_milli_free() const;
  int64_t total_gpu_milli_capacity() const { return L().gpu_milli_capacity; }
  int64_t total_whole_gpus_free() const { return total_whole_free_; }
  int32_t max_whole_gpus_free() const;  // largest whole_gpus_free over ready nodes
  int64_t gpu_milli_used() const { return gpu_milli_used_; }  // all nodes, ready or not

  // Indexes.
  int32_t max_gpus_per_node() const { return L().max_gpus; }
  const NodeBits& ready_bits() const { return ready_; }
  const NodeBits& idle_bits() const { return idle_; }
  const NodeBits& whole_eq(int c) const { return whole_eq_[static_cast<size_t>(c)]; }
  // Nodes (ready or not) in whole_eq(c), in partial_bucket(b): a search skips an empty one.
  int32_t whole_eq_size(int c) const { return whole_eq_size_[static_cast<size_t>(c)]; }
  int32_t partial_bucket_size(int b) const { return partial_size_[static_cast<size_t>(b)]; }
  const NodeBits& partial_bucket(int b) const { return partial_[static_cast<size_t>(b)]; }
  const NodeBits& mig_free(ResourceId r) const { return mig_free_[r]; }
  const NodeBits& gpu_nodes() const { return L().gpu_nodes; }
  int model_count() const { return static_cast<int>(L().models.size()); }
  const std::string& model_name(int m) const { return L().models[static_cast<size_t>(m)]; }
  int model_index(const std::string& name) const;  // -1 when no GPU has this model
  const NodeBits& model_nodes(int m) const { return L().model_nodes[static_cast<size_t>(m)]; }
  bool node_single_model(NodeId n) const { return L().single_model[idx(n)] != 0; }

  int domain_count(int level) const {
    return static_cast<int>(L().domain_nodes[static_cast<size_t>(level)].size());
  }
  const std::vector<NodeId>& domain_nodes(int level, int d) const {
    return L().domain_nodes[static_cast<size_t>(level)][static_cast<size_t>(d)];
  }
  int64_t domain_whole_free(int level, int d) const {
    return dom_whole_[static_cast<size_t>(level)][static_cast<size_t>(d)];
  }
  int32_t domain_max_whole_free(int level, int d) const;

 private:
  static size_t idx(NodeId n) { return static_cast<size_t>(n); }
  size_t gpu(NodeId n, int g) const { return static_cast<size_t>(L().gpu_off[idx(n)] + g); }
  void apply(const Job& job, const Placement& p, int sign);
  void unindex(NodeId n);
  void index(NodeId n);
  int32_t partial_max(NodeId n) const;
  bool is_idle(NodeId n) const;  // recomputed, for index() and check_invariants
  uint64_t compute_hash(NodeId n) const;

  // What never changes after construction, shared by copies (a scheduling cycle copies the
  // whole allocation state; only the free capacity and its indexes need copying).
  struct Layout {
    int32_t max_gpus = 0;
    std::vector<int32_t> gpu_off;  // node -> first GPU (size nodes+1)
    std::vector<uint8_t> gpu_model, gpu_mig;
    std::vector<int32_t> gpu_slice_off;  // GPU -> first slice (size gpus+1)
    std::vector<ResourceId> slice_profile;
    std::vector<int32_t> slice_gpu;  // slice -> global GPU index
    std::vector<uint8_t> single_model;
    std::vector<int16_t> whole_capacity;  // node -> non-MIG GPUs
    NodeBits gpu_nodes;
    std::vector<NodeBits> model_nodes;
    std::vector<std::string> models;
    std::vector<std::vector<std::vector<NodeId>>> domain_nodes;  // [level][domain] -> nodes
    int64_t gpu_milli_capacity = 0;
  };
  // The constructor's first two steps: GPUs and slices flattened, topology domains listed.
  void flatten_gpus(const Cluster& cluster, Layout& w);
  void index_domains(const Cluster& cluster, Layout& w);
  const Layout& L() const { return *layout_; }
  // Whether node n holds what it holds in src (free CPU, memory, GPUs, slices and readiness:
  // what its index entries are computed from).
  bool same_state(const ClusterAlloc& src, NodeId n) const;

  const Cluster* cluster_;
  std::shared_ptr<const Layout> layout_;
  std::vector<int64_t> cpu_free_, mem_free_;
  std::vector<int32_t> gpu_free_;
  std::vector<uint8_t> slice_used_;
  std::vector<int16_t> whole_free_;
  std::vector<int16_t> idx_whole_;    // bucket the node is indexed in
  std::vector<int16_t> idx_partial_;  // partial bucket or -1
  std::vector<uint64_t> hash_;

  NodeBits ready_, idle_;
  std::vector<NodeBits> whole_eq_, partial_, mig_free_;

  std::vector<std::vector<int64_t>> dom_whole_;          // [level][domain]
  std::vector<std::vector<int32_t>> dom_count_;          // [level][domain * (max_gpus+1) + c]
  std::vector<int32_t> count_by_whole_;                  // ready nodes with c free whole GPUs
  std::vector<int32_t> whole_eq_size_;                   // all nodes in whole_eq_[c]
  std::array<int32_t, kPartialBuckets> partial_size_{};  // all nodes in partial_[b]
  int64_t total_whole_free_ = 0;
  int64_t gpu_milli_used_ = 0;
  // Change tracking for assign_from: a clock shared by an allocation and all its copies, and
  // per node the clock value of its last change (equal versions: equal node states).
  std::shared_ptr<std::atomic<uint64_t>> clock_;
  std::vector<uint64_t> version_;
};

}  // namespace sluice
