#pragma once
// Baseline "DotProd" of the FGD paper (a Tetris-style alignment score): the smallest dot product
// of the node's normalised free vector with the normalised request,
//   dot = c/128000 * r_c/128000 + G/8000 * R_g/8000
// (c free CPU milli, G free GPU milli of the node; r_c, R_g the pod's), scored as the artifact's
// kube-scheduler plugin does: int(100 * (1 - dot / 2)), ties to the node order.
#include "core/place/scorer.h"

namespace sluice::sim::fgd {

class DotProdScorer final : public GpuScorer {
 public:
  std::string_view name() const override { return "dotprod"; }
  SearchOrder order() const override { return SearchOrder::kExhaustive; }
  Scored evaluate(const NodeView& node, const PodShape& pod,
                  std::span<const int16_t> take) const override;
};

}  // namespace sluice::sim::fgd
