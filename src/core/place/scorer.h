#pragma once
// The scoring-policy interface: how good is it to put this pod on this node (and, for a pod that
// shares a GPU, on which GPU)? One small class per policy (binpack_scorer.h, spread_scorer.h,
// bestfit_scorer.h, fgd_scorer.h); the Placer and the FGD experiment (src/sim/fgd) call the very
// same objects, so a policy measured in simulation is the one that runs in production.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "core/model/cluster.h"
#include "core/model/config.h"
#include "core/model/job.h"

namespace sluice {

// One pod's request as the placement engine sees it.
struct PodShape {
  JobId job = 0;
  int32_t pod_set = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpus = 0;                    // GPU devices (whole, or one shared)
  int32_t gpu_milli = 1000;            // per device; < 1000 only with gpus == 1
  uint64_t model_mask = ~uint64_t{0};  // allowed model indexes (ClusterAlloc::model_index)
  int32_t mig_count = 0;               // entries used in `mig`
  std::array<std::pair<ResourceId, int32_t>, 4> mig{};  // (profile, slices) per pod
  uint64_t key = 0;  // hash of everything above except job/pod_set (a memo key)

  bool shared() const { return gpus == 1 && gpu_milli < kMilliPerGpu; }
  bool gpu_pod() const { return gpus > 0 || mig_count > 0; }
  int64_t gpu_milli_total() const { return int64_t{gpus} * gpu_milli; }
  bool model_ok(uint8_t model) const { return (model_mask >> (model & 63)) & 1U; }
  void compute_key();
};

// A node's free state (before the pod) as a scorer sees it.
struct NodeView {
  NodeId id = 0;
  uint64_t state_hash = 0;  // 0: a tentative state inside one gang search (do not memoise)
  int64_t cpu_free = 0, memory_free = 0;
  int64_t cpu_capacity = 0, memory_capacity = 0;
  std::span<const int32_t> gpu_free;   // milli free per GPU (0 for MIG-partitioned GPUs)
  std::span<const uint8_t> gpu_model;  // model index per GPU
  int32_t gpu_capacity = 0;            // non-MIG GPUs
  int32_t whole_free = 0;              // fully free non-MIG GPUs

  int64_t gpu_free_total() const {
    int64_t t = 0;
    for (int32_t f : gpu_free) t += f;
    return t;
  }
};

struct Scored {
  double score = 0;         // higher is better
  int16_t shared_gpu = -1;  // for a shared pod: the GPU it goes to
};

// The order in which the Placer may visit candidate nodes, and whether it may stop early.
enum class SearchOrder : uint8_t {
  kFewestFreeFirst,  // score falls as free capacity grows (bin-pack): stop at the first bucket
  kMostFreeFirst,    // score grows with free capacity (spread): stop at the first bucket
  kExhaustive,       // no such monotonicity: score every feasible node (up to a cap)
};

class GpuScorer {
 public:
  virtual ~GpuScorer() = default;
  virtual std::string_view name() const = 0;
  virtual SearchOrder order() const = 0;
  // Score `pod` on `node`. The node fits the pod's CPU, memory and GPUs. For a whole-GPU pod
  // `take` lists the GPUs it gets; for a shared pod `take` is empty and the scorer picks the GPU
  // (it must return one with gpu_free >= pod.gpu_milli and an allowed model).
  virtual Scored evaluate(const NodeView& node, const PodShape& pod,
                          std::span<const int16_t> take) const = 0;
  // Placement of CPU-only pods: the Placer scores them with the same evaluate(); see
  // cpu_only_tier() for the rule that keeps them off GPU nodes' CPU when it can.
};

// The GPU with the least free milli that still fits a shared pod (ties: lowest index); -1: none.
int16_t tightest_shared_gpu(const NodeView& node, const PodShape& pod);
// The GPU with the most free milli that fits (ties: lowest index); -1: none.
int16_t loosest_shared_gpu(const NodeView& node, const PodShape& pod);

// CPU-only pods and GPU nodes (the rule every sluice policy applies): a CPU-only pod first goes
// to nodes without GPUs, then to GPU nodes whose GPUs are all allocated (their spare CPU can
// serve nobody else), and only then to GPU nodes with free GPUs, where it takes CPU that a GPU
// pod may need. Returns 2, 1 or 0 for those three tiers (higher is better).
int cpu_only_tier(const NodeView& node);

// GPU allocation share of the node after the pod lands (0..1; 0 for a node without GPUs).
double gpu_share_after(const NodeView& node, const PodShape& pod);
double cpu_share_after(const NodeView& node, const PodShape& pod);

// The scorer for a config policy (binpack, spread, bestfit, fgd).
std::shared_ptr<GpuScorer> make_scorer(ScoringPolicy policy);
std::string_view scoring_policy_name(ScoringPolicy policy);
// By name: binpack, spread, bestfit, fgd, fgdpack, fgdmix (scoring_policy_name). nullptr for an
// unknown name.
std::shared_ptr<GpuScorer> make_scorer_named(std::string_view name);

}  // namespace sluice
