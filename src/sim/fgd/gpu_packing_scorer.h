#pragma once
// Baseline "GpuPacking" of the FGD paper, with the artifact's integer kube-scheduler scores
// (0..100; ties go to the node order):
//   a sharing pod that fits a partly used GPU   100 - (free% of that GPU)/10, at least 50
//   a pod that needs fully free GPUs of a node in use   50 - fully free GPUs it takes, at least 33
//   an idle node                                max(33 - its GPUs, its GPUs)
//   CPU-only pods                               0 everywhere (node order decides)
// GPUs are taken tightest first.
#include "core/place/scorer.h"

namespace sluice::sim::fgd {

class GpuPackingScorer final : public GpuScorer {
 public:
  std::string_view name() const override { return "gpupacking"; }
  SearchOrder order() const override { return SearchOrder::kExhaustive; }
  Scored evaluate(const NodeView& node, const PodShape& pod,
                  std::span<const int16_t> take) const override;
};

}  // namespace sluice::sim::fgd
