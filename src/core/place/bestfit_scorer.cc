#include "core/place/bestfit_scorer.h"

namespace sluice {

Scored BestFitScorer::evaluate(const NodeView& node, const PodShape& pod,
                               std::span<const int16_t> /*take*/) const {
  const double cpu_left = node.cpu_capacity > 0
                              ? static_cast<double>(node.cpu_free - pod.cpu_milli) /
                                    static_cast<double>(node.cpu_capacity)
                              : 0.0;
  if (node.gpu_capacity == 0) return {10.0 * cpu_only_tier(node) - cpu_left, -1};
  const double gpu_left = static_cast<double>(node.gpu_free_total() - pod.gpu_milli_total()) /
                          (static_cast<double>(node.gpu_capacity) * kMilliPerGpu);
  const double leftover = (cpu_left + gpu_left) / 2.0;
  if (!pod.gpu_pod()) return {10.0 * cpu_only_tier(node) - leftover, -1};
  return {-leftover, pod.shared() ? tightest_shared_gpu(node, pod) : int16_t{-1}};
}

}  // namespace sluice
