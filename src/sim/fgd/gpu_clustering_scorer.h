#pragma once
// Baseline "GpuClustering" of the FGD paper: GPU pods of one class (sharing, 1-GPU, 2-GPU, ...)
// cluster on the same nodes. The artifact's integer kube-scheduler score (ties: node order):
//   fill = 25 * (8000 - free GPU milli of the node) / 8000        (0..25, integer)
//   node runs only this class: 75 + fill;  this class among others: 50 + fill;
//   node runs no GPU pod: 25 + fill;       only other classes: fill;   CPU-only pods: 0.
// Which classes run where is kept by the experiment (pods never leave there); the scorer reads it.
#include <cstdint>
#include <vector>

#include "core/place/scorer.h"

namespace sluice::sim::fgd {

// Bit of a GPU pod's class: 1 sharing, 1 + k for k whole GPUs (capped at 31); 0 for CPU-only.
uint32_t pod_class_bit(const PodShape& pod);

class GpuClusteringScorer final : public GpuScorer {
 public:
  explicit GpuClusteringScorer(const std::vector<uint32_t>* classes_by_node)
      : classes_(classes_by_node) {}
  std::string_view name() const override { return "gpuclustering"; }
  SearchOrder order() const override { return SearchOrder::kExhaustive; }
  Scored evaluate(const NodeView& node, const PodShape& pod,
                  std::span<const int16_t> take) const override;

 private:
  const std::vector<uint32_t>* classes_;
};

}  // namespace sluice::sim::fgd
