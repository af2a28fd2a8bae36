#pragma once
// Baseline "GpuPacking" of the FGD paper: prefer nodes where the pod fits into partly used GPUs
// (tier 3, sharing pods only), then nodes already in use with few fully free GPUs (tier 2),
// fully idle nodes last (tier 1). Inside a tier: fewer free whole GPUs first.
#include "core/place/scorer.h"

namespace sluice::sim::fgd {

class GpuPackingScorer final : public GpuScorer {
 public:
  std::string_view name() const override { return "gpupacking"; }
  SearchOrder order() const override { return SearchOrder::kExhaustive; }
  Scored evaluate(const NodeView& node, const PodShape& pod, std::span<const int16_t> take) const override;
};

}  // namespace sluice::sim::fgd
