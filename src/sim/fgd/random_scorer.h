#pragma once
// Baseline "Random" of the FGD paper: a uniformly random feasible node. The randomness is a hash
// of (seed, job, node), so a run is reproducible and place() stays deterministic. Lives in sim/
// because only the experiment wants it: in production it is never a sensible policy.
#include <cstdint>

#include "core/place/scorer.h"

namespace sluice::sim::fgd {

class RandomScorer final : public GpuScorer {
 public:
  explicit RandomScorer(uint64_t seed) : seed_(seed) {}
  std::string_view name() const override { return "random"; }
  SearchOrder order() const override { return SearchOrder::kExhaustive; }
  Scored evaluate(const NodeView& node, const PodShape& pod,
                  std::span<const int16_t> take) const override;

 private:
  uint64_t seed_;
};

}  // namespace sluice::sim::fgd
