#pragma once
// Best-fit: the node left with the least spare capacity once the pod lands, averaging the CPU
// and GPU shares left over (the BestFit baseline of the FGD paper):
//   leftover = ((c - r_c) / C + (G - r_g) / Gcap) / 2,   score = -leftover
// with c, G the node's free CPU milli and GPU milli, C, Gcap its capacities, r the request.
// Nodes without GPUs count CPU only. A shared pod takes the fitting GPU with the least free
// milli. CPU-only pods: cpu_only_tier() first. Not monotone in free whole GPUs (CPU counts too),
// so the Placer scores every feasible node (up to its cap).
#include "core/place/scorer.h"

namespace sluice {

class BestFitScorer final : public GpuScorer {
 public:
  std::string_view name() const override { return "bestfit"; }
  SearchOrder order() const override { return SearchOrder::kExhaustive; }
  Scored evaluate(const NodeView& node, const PodShape& pod,
                  std::span<const int16_t> take) const override;
};

}  // namespace sluice
