#include "sim/fgd/gpu_clustering_scorer.h"

#include <algorithm>

namespace sluice::sim::fgd {

uint32_t pod_class_bit(const PodShape& pod) {
  if (!pod.gpu_pod()) return 1U << 0;
  if (pod.shared()) return 1U << 1;
  return 1U << std::min(31, 1 + pod.gpus);
}

Scored GpuClusteringScorer::evaluate(const NodeView& node, const PodShape& pod,
                                     std::span<const int16_t> /*take*/) const {
  const bool same = ((*classes_)[static_cast<size_t>(node.id)] & pod_class_bit(pod)) != 0;
  return {(same ? 1000.0 : 0.0) - node.gpu_capacity,
          pod.shared() ? tightest_shared_gpu(node, pod) : int16_t{-1}};
}

}  // namespace sluice::sim::fgd
