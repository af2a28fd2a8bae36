#pragma once
// Bin-pack (sluice's default GPU policy): fill the most allocated node first, so whole nodes stay
// free for large jobs. Search order: fewest free whole GPUs that still fit first (the Placer
// stops at the first bucket with a fit); inside a bucket the score is
//   score = gpu_share_after + 0.001 * cpu_share_after
// (share = allocated / capacity once the pod lands). A shared pod takes the fitting GPU with the
// least free milli. CPU-only pods: cpu_only_tier() first, then the most allocated CPU.
#include "core/place/scorer.h"

namespace sluice {

class BinPackScorer final : public GpuScorer {
 public:
  std::string_view name() const override { return "binpack"; }
  SearchOrder order() const override { return SearchOrder::kFewestFreeFirst; }
  Scored evaluate(const NodeView& node, const PodShape& pod,
                  std::span<const int16_t> take) const override;
};

}  // namespace sluice
