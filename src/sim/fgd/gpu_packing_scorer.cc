#include "sim/fgd/gpu_packing_scorer.h"

namespace sluice::sim::fgd {

Scored GpuPackingScorer::evaluate(const NodeView& node, const PodShape& pod,
                                  std::span<const int16_t> /*take*/) const {
  int16_t gpu = -1;
  int tier = 1;
  if (pod.shared()) {
    gpu = tightest_shared_gpu(node, pod);
    if (gpu >= 0 && node.gpu_free[static_cast<size_t>(gpu)] < kMilliPerGpu) tier = 3;
  }
  if (tier == 1 && node.gpu_free_total() < int64_t{node.gpu_capacity} * kMilliPerGpu) tier = 2;
  return {tier * 1000.0 - node.whole_free, gpu};
}

}  // namespace sluice::sim::fgd
