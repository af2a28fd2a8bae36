#pragma once
// Baseline "GpuClustering" of the FGD paper: pods of one class (CPU-only, sharing, 1-GPU, 2-GPU,
// ...) cluster on the same nodes: prefer a node already running a pod of the pod's class, then
// smaller nodes (fewer GPUs). Needs to know which classes run where: the experiment keeps that
// table (pods never leave in the experiment) and the scorer reads it.
#include <cstdint>
#include <vector>

#include "core/place/scorer.h"

namespace sluice::sim::fgd {

// Bit of a pod's class: 0 CPU-only, 1 sharing, 1 + k for k whole GPUs (capped at 31).
uint32_t pod_class_bit(const PodShape& pod);

class GpuClusteringScorer final : public GpuScorer {
 public:
  explicit GpuClusteringScorer(const std::vector<uint32_t>* classes_by_node) : classes_(classes_by_node) {}
  std::string_view name() const override { return "gpuclustering"; }
  SearchOrder order() const override { return SearchOrder::kExhaustive; }
  Scored evaluate(const NodeView& node, const PodShape& pod, std::span<const int16_t> take) const override;

 private:
  const std::vector<uint32_t>* classes_;
};

}  // namespace sluice::sim::fgd
