#include "sim/fgd/gpu_packing_scorer.h"

#include <algorithm>

namespace sluice::sim::fgd {

Scored GpuPackingScorer::evaluate(const NodeView& node, const PodShape& pod,
                                  std::span<const int16_t> /*take*/) const {
  const int16_t gpu = pod.shared() ? tightest_shared_gpu(node, pod) : int16_t{-1};
  if (!pod.gpu_pod()) return {0, gpu};
  // 1. Idle node.
  if (node.whole_free == node.gpu_capacity)
    return {static_cast<double>(std::max(33 - node.whole_free, node.whole_free)), gpu};
  // 2. The pod takes fully free GPUs (every whole-GPU pod; a sharing pod when no partly used GPU
  //    fits it).
  const int fully_free_taken =
      pod.shared() ? (node.gpu_free[static_cast<size_t>(gpu)] == kMilliPerGpu ? 1 : 0) : pod.gpus;
  if (fully_free_taken > 0) return {static_cast<double>(std::max(50 - fully_free_taken, 33)), gpu};
  // 3. A sharing pod on a partly used GPU: the less it leaves free, the better.
  const int64_t free_pct = node.gpu_free[static_cast<size_t>(gpu)] * 100 / kMilliPerGpu;
  return {static_cast<double>(std::max<int64_t>(100 - free_pct / 10, 50)), gpu};
}

}  // namespace sluice::sim::fgd
