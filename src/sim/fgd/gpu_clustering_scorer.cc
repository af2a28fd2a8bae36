#include "sim/fgd/gpu_clustering_scorer.h"

#include <algorithm>
#include <bit>

namespace sluice::sim::fgd {

uint32_t pod_class_bit(const PodShape& pod) {
  if (!pod.gpu_pod()) return 0;
  if (pod.shared()) return 1U << 1;
  return 1U << std::min(31, 1 + pod.gpus);
}

Scored GpuClusteringScorer::evaluate(const NodeView& node, const PodShape& pod,
                                     std::span<const int16_t> /*take*/) const {
  const int16_t gpu = pod.shared() ? tightest_shared_gpu(node, pod) : int16_t{-1};
  if (!pod.gpu_pod()) return {0, gpu};
  constexpr int64_t kMaxSpec = 8 * kMilliPerGpu;
  const int64_t fill = 25 * (kMaxSpec - node.gpu_free_total()) / kMaxSpec;
  const uint32_t classes = (*classes_)[static_cast<size_t>(node.id)];
  const uint32_t mine = pod_class_bit(pod);
  int64_t base = 0;
  if (classes & mine)
    base = std::popcount(classes) == 1 ? 75 : 50;
  else if (classes == 0)
    base = 25;
  return {static_cast<double>(base + fill), gpu};
}

}  // namespace sluice::sim::fgd
