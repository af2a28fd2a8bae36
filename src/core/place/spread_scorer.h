#pragma once
// Spread: the least allocated node first (load balancing, fewer co-located noisy neighbours).
// Search order: most free whole GPUs first; inside a bucket
//   score = (1 - gpu_share_after) + 0.001 * (1 - cpu_share_after)
// A shared pod takes the fitting GPU with the most free milli. CPU-only pods: cpu_only_tier()
// first, then the least allocated CPU.
#include "core/place/scorer.h"

namespace sluice {

class SpreadScorer final : public GpuScorer {
 public:
  std::string_view name() const override { return "spread"; }
  SearchOrder order() const override { return SearchOrder::kMostFreeFirst; }
  Scored evaluate(const NodeView& node, const PodShape& pod,
                  std::span<const int16_t> take) const override;
};

}  // namespace sluice
