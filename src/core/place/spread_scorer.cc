#include "core/place/spread_scorer.h"

namespace sluice {

Scored SpreadScorer::evaluate(const NodeView& node, const PodShape& pod,
                              std::span<const int16_t> /*take*/) const {
  if (!pod.gpu_pod()) return {10.0 * cpu_only_tier(node) + 1.0 - cpu_share_after(node, pod), -1};
  const int16_t gpu = pod.shared() ? loosest_shared_gpu(node, pod) : int16_t{-1};
  return {(1.0 - gpu_share_after(node, pod)) + 0.001 * (1.0 - cpu_share_after(node, pod)), gpu};
}

}  // namespace sluice
